"""The bnc-sample-complexity study's own numbers: the gap statistic against a closed form, and each claim check on
metrics built by hand (no solver needed; the smoke test runs the whole study)."""

import math

import numpy as np
import pytest

from genlab.harness import RunContext
from genlab.harness.errors import ConfigError
from genlab.studies import bnc_sample_complexity as mod

Study = mod.BncSampleComplexity


def test_gap_statistic_matches_closed_form(tmp_path):
    """One policy, costs H·Bernoulli(1/2) on a large pool: E|mean of N − p·H| ≈ H·sqrt(2/π)·(1/2)/sqrt(N)."""
    cfg = Study.config("quick", {"ns": (25, 100), "resamples": 4000})
    rng = np.random.default_rng(0)
    cost = cfg.node_limit * (rng.random((4000, 1)) < 0.5).astype(float)
    gaps = Study()._gaps(cost, cfg, RunContext(seed=0, out_dir=tmp_path))
    for n in (25, 100):
        expected = cfg.node_limit * math.sqrt(2 / math.pi) * 0.5 / math.sqrt(n)
        assert gaps["by_n"][str(n)]["mean"] == pytest.approx(expected, rel=0.06)
        assert gaps["by_n"][str(n)]["within"] >= 1 - cfg.delta  # Hoeffding: violations have probability <= δ
    assert gaps["slope"] == pytest.approx(-0.5, abs=0.05)


def test_constant_costs_have_no_gap(tmp_path):
    cfg = Study.config("smoke")
    gaps = Study()._gaps(np.full((6, 3), 7.0), cfg, RunContext(seed=0, out_dir=tmp_path))
    assert all(row["max"] == 0.0 and row["within"] == 1.0 for row in gaps["by_n"].values())


def _erm_metrics(gains, ps, learned=5):
    pure = {s: {"index": i, "gain_mean": g, "gain_p": p} for i, (s, g, p) in
            enumerate(zip(("mostfrac", "pscost", "objgain"), gains, ps))}
    return {"erm": {"pure": pure, "learned": learned, "learned_test": 10.0}}


def test_erm_claim():
    cfg = Study.config("quick")
    check = mod._erm_claim
    assert check(_erm_metrics([3, 2, 1], [0.001, 0.002, 0.003]), cfg).held is True
    assert check(_erm_metrics([3, 2, 1], [0.001, 0.002, 0.4]), cfg).held is None
    assert check(_erm_metrics([3, -2, 1], [0.001, 0.002, 0.4]), cfg).held is False
    assert check(_erm_metrics([3, 2, 0], [0.001, 0.002, 1.0], learned=2), cfg).held is False  # ERM = a pure score


def _stair(mismatches=(), complete=True, pieces=5, breaks=2, patterns=40):
    return {"complete": complete, "inconsistent": 0, "mismatches": list(mismatches), "run_pieces": pieces,
            "breakpoints": [0.1] * breaks, "sign_patterns": patterns, "distinct_costs": 3}


def test_staircase_claim():
    cfg = Study.config("quick", {"staircase_instances": 2})
    assert mod._staircase_claim({"staircase": [_stair(), _stair()]}, cfg).held is True
    assert mod._staircase_claim({"staircase": [_stair(), _stair(mismatches=[0.5])]}, cfg).held is False
    assert mod._staircase_claim({"staircase": [_stair(), _stair(complete=False)]}, cfg).held is False
    assert mod._staircase_claim({"staircase": [_stair(pieces=50, patterns=40)] * 2}, cfg).held is False
    assert mod._staircase_claim({"staircase": [_stair()]}, cfg).held is None  # too few instances traced


def test_gap_claim():
    cfg = Study.config("quick", {"ns": (10, 20)})
    bounds = {"classes": {"mix": {"eps": {"10": 9000.0, "20": 7000.0}}}}
    row = {"max": 30.0, "eps": 60.0}
    ok = {"gap": {"by_n": {"10": {**row, "within": 1.0}, "20": {**row, "within": 0.96}}}, "bounds": bounds}
    assert mod._gap_claim(ok, cfg).held is True
    ok["gap"]["by_n"]["20"]["within"] = 0.9
    assert mod._gap_claim(ok, cfg).held is False


def test_config_validation():
    for bad in ({"pool": 2}, {"ns": (20, 10)}, {"delta": 1.5}, {"presolve": "max"}, {"family": "setcover"},
                {"slope_lo": 0.0, "slope_hi": -1.0}, {"resamples": 5}):
        with pytest.raises(ConfigError):
            Study.config("quick", bad)
    for preset in ("smoke", "quick", "full"):
        Study.config(preset)
