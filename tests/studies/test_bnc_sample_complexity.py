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


def _erm_metrics(gains, learned=5, n=12):
    """A cost table: policy 5 (learned) costs 50 ± noise; pure score j costs 50 + gains[j] ± noise."""
    rng = np.random.default_rng(0)
    cost = np.zeros((n, 6))
    cost[:, 5] = 50 + rng.normal(0, 1, n)
    for j, g in enumerate(gains):
        cost[:, j] = cost[:, 5] + g + rng.normal(0, 1, n)
    pure = {s: {"index": i, "gain_mean": float(g)} for i, (s, g) in
            enumerate(zip(("mostfrac", "pscost", "objgain"), gains))}
    return {"table": {"cost": cost.tolist()},
            "erm": {"pure": pure, "learned": learned, "learned_test": 50.0, "test": list(range(n))}}


def test_erm_claim():
    cfg = Study.config("quick")
    check = mod._erm_claim
    ev = check(_erm_metrics([5, 4, 3]), cfg)
    assert ev.held is True and ev.test.method == "t" and ev.test.n == 12
    assert check(_erm_metrics([5, 4, 0]), cfg).held is None  # no difference from objgain: the CI straddles 0
    assert check(_erm_metrics([5, -4, 3]), cfg).held is False  # pscost is clearly better
    assert check(_erm_metrics([5, 4, 3], n=4), cfg).held is None  # 4 held-out instances < 5 units
    assert check(_erm_metrics([5, 4, 0], learned=2), cfg).held is None  # ERM = a pure score: withheld


def _stair(mismatches=(), complete=True, pieces=5, breaks=2, patterns=40):
    return {"complete": complete, "inconsistent": 0, "mismatches": list(mismatches), "run_pieces": pieces,
            "breakpoints": [0.1] * breaks, "sign_patterns": patterns, "distinct_costs": 3}


def test_staircase_claim():
    cfg = Study.config("quick", {"staircase_instances": 2})
    ev = mod._staircase_claim({"staircase": [_stair(), _stair()]}, cfg)
    assert ev.held is True and ev.test.method == "exact"
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
    kinds = {c.key: c.kind for c in Study.claims}
    assert kinds["gap-within-epsilon"] == kinds["gap-rate"] == "identity"  # they hold on random cost tables
    assert kinds["erm-beats-pure"] == kinds["staircase"] == "empirical"


def test_config_validation():
    for bad in ({"pool": 2}, {"ns": (20, 10)}, {"delta": 1.5}, {"presolve": "max"}, {"family": "setcover"},
                {"slope_lo": 0.0, "slope_hi": -1.0}, {"resamples": 5}):
        with pytest.raises(ConfigError):
            Study.config("quick", bad)
    for preset in ("smoke", "quick", "full"):
        Study.config(preset)


def _trace(starts, ends, costs, lines=3):
    return {"starts": starts, "ends": ends, "costs": costs, "comparisons_all": lines, "complete": True}


def test_staircase_erm_on_hand_made_staircases():
    """Two instances: A steps 10 -> 4 at mu = 0.5, B is 8 on [0, 0.3), 2 on (0.3, 1] with a point piece at 0."""
    a = _trace([0.0, 0.5], [0.5, 1.0], [10, 4])
    b = _trace([0.0, 0.0, 0.3], [0.0, 0.3, 1.0], [5, 8, 2])
    fit = mod.staircase_erm([a, b])
    assert fit["mu"] > 0.5 and fit["train_mean"] == 3.0  # (4 + 2) / 2 on (0.5, 1]
    # distinct vectors: (10,5) at 0, (10,8) on (0,0.3), (10,2) on (0.3,0.5), (4,2) on (0.5,1]; boundaries 0.3
    # and 0.5 are ambiguous and left out
    assert fit["a_s"] == 4 and fit["lines"] == 6
    assert mod._cost_at(b, 0.0) == 5 and mod._cost_at(b, 0.3) is None and mod._cost_at(a, 0.7) == 4


def test_massart_claim_is_withheld_when_vacuous():
    cfg = Study.config("quick")
    ms = {"train_mean": 40.0, "held_out_costs": [41, 45, 38, 50, 44, 39], "mu": 0.2, "a_s": 5, "lines": 9,
          "held_out_mean": 42.8, "eps_exact": 30.0, "eps_lines": 35.0, "eps_lattice": 20.0, "complete": True}
    ev = mod._massart_claim({"massart": ms}, cfg)
    assert ev.held is True and ev.test.n == 6 and ev.numbers["measured_gap"] == pytest.approx(2.8)
    assert mod._massart_claim({"massart": dict(ms, eps_exact=1.0)}, cfg).held is None  # CI straddles 1
    assert mod._massart_claim({"massart": dict(ms, eps_exact=-5.0)}, cfg).held is False
    ev = mod._massart_claim({"massart": dict(ms, eps_exact=250.0)}, cfg)  # >= H = 200: vacuous
    assert ev.held is None and "vacuous" in ev.note
    assert mod._massart_claim({}, cfg).held is None
