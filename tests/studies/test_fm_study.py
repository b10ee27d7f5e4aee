"""Claim checks and config validation of the flow-matching study, on hand-made metrics."""

from __future__ import annotations

import pytest

from genlab.harness import ConfigError
from genlab.studies.flow_matching import FlowMatching, _curve_tstar


def _metrics(copy_small=0.8, err_last=2.0, hyb_early=0.0, efm_fd=20.0):
    return {
        "collapse": {"gmm_dims": [2, 64, 1024], "tstar": {"gmm2": 1.0, "gmm64": 0.6, "gmm1024": 0.3}},
        "train": {"n_values": [10, 1000], "error_ts": [0.1, 0.5, 0.9],
                  "copy_fraction": [[copy_small, 0.0]] * 3,
                  "approx_error": [[[0.1, 0.1, 0.2], [0.2, 0.5, err_last]]] * 3},
        "hybrid": {"taus": [0.0, 0.2, 0.6, 1.0], "nn_dist": [[3.0, 2.9, 2.0, 0.0]] * 3,
                   "copy_fraction": [[0.0, hyb_early, 0.1, 1.0]] * 3, "tau_half": [1.0] * 3},
        "compare": {"methods": {"cfm": {"fd": [20.0, 21.0, 22.0], "mmd": [0.003] * 3},
                                "otcfm": {"fd": [25.0, 26.0, 27.0], "mmd": [0.004] * 3},
                                "efm16": {"fd": [efm_fd, efm_fd + 1, efm_fd + 2], "mmd": [0.003] * 3}}},
    }


def _verdicts(m):
    return [v.verdict for v in FlowMatching.verdicts(m, FlowMatching.config("quick"))]


def test_all_claims_hold_on_paper_like_numbers():
    assert _verdicts(_metrics()) == ["reproduced"] * 6


def test_claims_fail_when_numbers_contradict_the_paper():
    v = _verdicts(_metrics(copy_small=0.1, err_last=0.1, hyb_early=0.5, efm_fd=30.0))
    assert v == ["reproduced", "not reproduced", "not reproduced", "not reproduced", "reproduced", "not reproduced"]
    m = _metrics()
    m["hybrid"]["copy_fraction"][1] = [0.0, 0.0, 0.1, 0.9]  # u* all the way must copy on every seed
    assert _verdicts(m)[4] == "not reproduced"


def test_efm_is_judged_on_paired_differences_with_a_margin():
    # the best baseline is CFM (FD 21 on average): the margin is 0.1 * 21 = 2.1
    assert _verdicts(_metrics(efm_fd=21.0))[5] == "reproduced"  # worse by 1.0 on every seed: inside the margin
    assert _verdicts(_metrics(efm_fd=24.0))[5] == "not reproduced"  # worse by 4.0 on every seed
    m = _metrics()
    m["compare"]["methods"]["efm16"]["fd"] = [18.0, 25.0, 22.5]  # paired differences -2, 4, 0.5: undecided
    assert _verdicts(m)[5] == "inconclusive"


def test_seed_disagreement_is_inconclusive():
    m = _metrics()
    m["train"]["copy_fraction"] = [[0.8, 0.0], [0.2, 0.0], [0.9, 0.0]]
    assert _verdicts(m)[1] == "inconclusive"


def test_tstar_and_config_validation():
    assert _curve_tstar([0.1, 0.2, 0.3], [0.5, 0.95, 1.0], 0.9) == 0.2
    assert _curve_tstar([0.1, 0.2], [0.5, 0.6], 0.9) == 1.0
    with pytest.raises((ConfigError, ValueError)):
        FlowMatching.config("quick", {"efm_banks": (1,)}).validate()
    with pytest.raises((ConfigError, ValueError)):
        FlowMatching.config("quick", {"dataset": "folder"}).validate()
