"""``genlab bnc`` on large trees and bad options (issue 37, items 5 and 7): the bounds work in log space (M₁ has
hundreds of digits), ``tune --out`` leaves nothing behind when it fails, and bad options are one line, exit 2."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlab.measures import bnc_bounds as bb


@pytest.mark.parametrize("k, cap", [(14, 300), (14, 1000), (3, 1000), (200, 100_000)])
def test_bound_on_large_trees_is_strict_json(cli, k, cap):
    code, out, err = cli("bnc", "bound", "--candidates", str(k), "--cap", str(cap), "--json")
    assert code == 0, err
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    for row in data["classes"]:
        assert row["log2_m1"] > cap * math.log2(k) - 1 and row["pdim"] > 0
        assert all(math.isfinite(v) and v > 0 for v in row["eps"].values())


def test_bound_with_no_decisions_is_strict_json(cli):
    code, out, _ = cli("bnc", "bound", "--candidates", "3", "--cap", "10", "--decisions", "0", "--json")
    assert code == 0 and json.loads(out)["classes"][0]["log2_m1"] is None


@settings(max_examples=80, deadline=None)
@given(k=st.integers(1, 40), s=st.integers(0, 600), w=st.integers(1, 60), pieces=st.integers(1, 16),
       boundaries=st.integers(0, 8), degree=st.integers(1, 3), n=st.integers(1, 10**6))
def test_log_space_agrees_with_exact_integers(monkeypatch_module, k, s, w, pieces, boundaries, degree, n):
    """The log-space path (used when M₁ is huge) gives the exact-integer path's numbers where both can run: here
    it takes over from M₁ ≥ 2^64 on (in use, from 2^4032 on)."""
    args = (w, k, s, pieces, boundaries, degree)
    exact = bb.pdim_bound(*args), bb.log_cost_vectors(n, *args)
    monkeypatch_module.setattr(bb, "EXACT_BITS", 128)
    logs = bb.pdim_bound(*args), bb.log_cost_vectors(n, *args)
    monkeypatch_module.undo()
    assert logs[0] == exact[0]
    assert logs[1] == pytest.approx(exact[1], rel=1e-9, abs=1e-9)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_tune_with_its_default_node_limit(tmp_path, cli):
    code, out, err = cli("bnc", "tune", "--instances", "knapsack", "--count", "4", "--json",
                          "--out", str(tmp_path / "o"))  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["pdim_class"] > 0 and len(list((tmp_path / "o" / "instances").glob("*.lp"))) == 4


def test_a_failed_tune_leaves_nothing_in_out(tmp_path, cli, monkeypatch):
    import genlab.bnc.tune as tune_mod

    def broken(*a, **k):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(tune_mod, "tune", broken)
    code, _, _ = cli("bnc", "tune", "--instances", "knapsack", "--count", "4", "--out", str(tmp_path / "o"))
    assert code != 0 and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["tune", "--instances", "knapsack", "--count", "4", "--policy", "relu", "--hidden", "0"], "--hidden"),
        (["tune", "--instances", "knapsack", "--count", "4", "--policy", "relu", "--hidden", "-1"], "--hidden"),
        (["tune", "--instances", "knapsack", "--count", "4", "--budget", "1000000000"], "--budget"),
        (["tune", "--instances", "knapsack", "--count", "1000000000"], "--count"),
        (["bound", "--candidates", "3", "--cap", "10", "--n", "1e400"], "--n"),
        (["bound", "--candidates", "3", "--cap", "10", "--hidden", "0"], "ReLU"),
    ],
)
def test_bad_options_are_one_line_exit_2(tmp_path, cli, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("bnc", *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []
