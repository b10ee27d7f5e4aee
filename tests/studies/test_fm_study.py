"""Claim checks and config validation of the flow-matching study, on hand-made metrics."""

from __future__ import annotations

import numpy as np
import pytest

from genlab.harness import ConfigError
from genlab.studies.flow_matching import FlowMatching, _curve_tstar

SEEDS = 8  # as in quick
NOISE = np.linspace(-1.0, 1.0, SEEDS)  # seed-to-seed variation, so paired tests see spread


def _metrics(copy_small=0.8, err_last=2.0, hyb_early=0.0, efm_fd=20.0):
    cfm_fd = [20.0 + 2 * z for z in NOISE]
    return {
        "collapse": {"gmm_dims": [2, 64, 1024],
                     "tstar_replicates": {"gmm2": [1.0] * 5, "gmm64": [0.6, 0.65, 0.6, 0.55, 0.6],
                                          "gmm1024": [0.3, 0.3, 0.35, 0.3, 0.25]}},
        "train": {"n_values": [10, 1000], "error_ts": [0.1, 0.5, 0.9],
                  "copy_fraction": [[copy_small + 0.05 * z, 0.0] for z in NOISE],
                  "approx_error": [[[0.1, 0.1, 0.2], [0.2, 0.5, err_last + 0.1 * z]] for z in NOISE]},
        "hybrid": {"taus": [0.0, 0.2, 0.6, 1.0], "nn_dist": [[3.0, 2.9 + 0.01 * z, 2.0, 0.0] for z in NOISE],
                   "copy_fraction": [[0.0, hyb_early + 0.01 * z if hyb_early else 0.0, 0.1, 1.0] for z in NOISE],
                   "tau_half": [1.0] * SEEDS},
        "compare": {"methods": {
            "cfm": {"fd": cfm_fd, "mmd": [0.003] * SEEDS, "copy": [0.2] * SEEDS},
            "otcfm": {"fd": [25.0 + z for z in NOISE], "mmd": [0.004] * SEEDS, "copy": [0.1] * SEEDS},
            "efm16": {"fd": [efm_fd + 2 * z + 0.2 * z * z for z in NOISE], "mmd": [0.003] * SEEDS,
                      "copy": [0.2] * SEEDS}}},
    }


def _verdicts(m):
    return [v.verdict for v in FlowMatching.verdicts(m, FlowMatching.config("quick"))]


def test_all_claims_hold_on_paper_like_numbers():
    assert _verdicts(_metrics()) == ["reproduced"] * 6


def test_claims_fail_when_numbers_contradict_the_paper():
    v = _verdicts(_metrics(copy_small=0.1, err_last=0.1, hyb_early=0.5, efm_fd=30.0))
    # the EFM comparison is withheld: no network memorises even at the smallest n, so the target cannot matter
    assert v == ["reproduced", "not reproduced", "not reproduced", "not reproduced", "reproduced", "inconclusive"]
    assert _verdicts(_metrics(efm_fd=30.0))[5] == "not reproduced"  # 50 % worse than CFM where it can matter
    m = _metrics()
    m["hybrid"]["copy_fraction"][1] = [0.0, 0.0, 0.1, 0.9]  # u* all the way must copy on every seed (identity)
    assert _verdicts(m)[4] == "not reproduced"
    m = _metrics()
    m["collapse"]["tstar_replicates"]["gmm1024"] = [0.7] * 5  # later at d = 1024 than at d = 64
    assert _verdicts(m)[0] == "not reproduced"


def test_efm_is_judged_on_paired_relative_differences_with_a_margin():
    # CFM is the better baseline; the margin is 10 % of it, seed by seed
    ev = FlowMatching.claims[5].check(_metrics(efm_fd=21.0), FlowMatching.config("quick"))
    assert ev.held is True and ev.test.n == SEEDS  # about 5 % worse: inside the margin
    assert ev.numbers["cfm_copy_smallest_n"] == pytest.approx(0.8)
    assert _verdicts(_metrics(efm_fd=24.0))[5] == "not reproduced"  # about 20 % worse on every seed
    m = _metrics()
    m["compare"]["methods"]["efm16"]["fd"] = [16.0, 25.0, 22.5, 19.0, 26.0, 17.0, 24.0, 21.0]  # undecided
    assert _verdicts(m)[5] == "inconclusive"


def test_efm_base_is_the_better_baseline_present():
    # quick has only the CFM baseline; with OT-CFM present and better, EFM is held to OT-CFM
    m = _metrics(efm_fd=21.0)
    del m["compare"]["methods"]["otcfm"]
    ev = FlowMatching.claims[5].check(m, FlowMatching.config("quick"))
    assert ev.held is True and "fd_efm16_rel_to_cfm" in ev.numbers
    m = _metrics(efm_fd=21.0)
    m["compare"]["methods"]["otcfm"]["fd"] = [17.0 + z for z in NOISE]  # now OT-CFM is better: EFM ~ 24 % worse
    ev = FlowMatching.claims[5].check(m, FlowMatching.config("quick"))
    assert ev.held is False and ev.numbers["fd_efm16_rel_to_otcfm"] == pytest.approx(0.235, abs=0.01)


def test_a_diverged_seed_is_a_failed_unit_not_an_error():
    m = _metrics()
    m["compare"]["methods"]["efm16"]["fd"][2] = float("nan")
    ev = FlowMatching.claims[5].check(m, FlowMatching.config("quick"))
    assert ev.test.failed == 1 and "failed" in ev.note


def test_fewer_than_five_seeds_cannot_decide():
    m = _metrics()
    m["train"]["copy_fraction"] = m["train"]["copy_fraction"][:3]
    assert _verdicts(m)[1] == "inconclusive"


def test_quick_decides_the_central_claim_with_paired_seeds():
    cfg = FlowMatching.config("quick")
    assert cfg.seeds >= 5 and cfg.paired and cfg.efm_margin == 0.1  # margin fixed before the runs
    assert cfg.n_compare in cfg.n_values and min(cfg.n_values) == 10  # the compared CFM nets are the n = 100 ones
    with pytest.raises((ConfigError, ValueError)):
        FlowMatching.config("quick", {"baselines": ("otcfm",)}).validate()


def test_tstar_and_config_validation():
    assert _curve_tstar([0.1, 0.2, 0.3], [0.5, 0.95, 1.0], 0.9) == 0.2
    assert _curve_tstar([0.1, 0.2], [0.5, 0.6], 0.9) == 1.0
    with pytest.raises((ConfigError, ValueError)):
        FlowMatching.config("quick", {"efm_banks": (1,)}).validate()
    with pytest.raises((ConfigError, ValueError)):
        FlowMatching.config("quick", {"dataset": "folder"}).validate()
