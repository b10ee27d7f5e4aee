"""The exact staircase μ ↦ tree size: validity intervals by hand, and a traced staircase against grid solves."""

import math

import numpy as np
import pytest

from genlab.bnc.policies import MixturePolicy
from genlab.bnc.solver import Decision, SolverSettings, solve
from genlab.bnc.staircase import pair_lines, trace, validity
from genlab.data.mip import knapsack

W0, W1 = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])  # μ = 0: pscost, μ = 1: mostfrac


def test_validity_by_hand():
    # scores along the line: s = (1 − μ) pscost + μ mostfrac
    # a: (mf .2, pc 1.0) -> 1 − .8μ ; b: (mf 1.0, pc .5) -> .5 + .5μ ; c: (mf .6, pc .6) -> .6
    feats = np.array([[0.2, 1.0, 0.0], [1.0, 0.5, 0.0], [0.6, 0.6, 0.0]])
    d = Decision(feats, np.array([0, 1, 2]), chosen=0)  # a wins at μ = 0
    lo, hi = validity(d, W0, W1)
    # a − b = .5 − 1.3μ (root 5/13), a − c = .4 − .8μ (root 1/2): a stays best until 5/13
    assert lo == -math.inf and hi == pytest.approx(5 / 13)
    d = Decision(feats, np.array([0, 1, 2]), chosen=1)  # b wins for μ > 5/13 (and b − c = −.1 + .5μ > 0 for μ > .2)
    lo, hi = validity(d, W0, W1)
    assert lo == pytest.approx(5 / 13) and hi == math.inf
    alpha, beta = pair_lines(d, W0, W1)
    assert np.allclose(alpha, [0.5, 0.4, -0.1]) and np.allclose(beta, [-1.3, -0.8, 0.5])


def test_permanent_ties_are_not_roots():
    # identical features in the two columns the line uses: a tie for every μ, decided by the index
    feats = np.array([[0.7, 0.7, 0.1], [0.7, 0.7, 0.9]])
    assert validity(Decision(feats, np.array([3, 8]), chosen=0), W0, W1) == (-math.inf, math.inf)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    path = tmp_path_factory.mktemp("st") / "k.lp"
    knapsack(np.random.default_rng([7, 2]), items=14, rows=2).write(path)  # ~30 nodes, ~10 pieces
    settings = SolverSettings(node_limit=200)
    return path, settings, trace(path, W0, W1, settings, max_runs=60)


def test_traced_staircase_covers_the_segment(traced):
    _, _, st = traced
    assert st.complete and st.slivers == 0 and st.inconsistent == 0
    assert st.pieces[0].start == 0.0 and st.pieces[-1].end == 1.0
    for a, b in zip(st.pieces, st.pieces[1:]):
        assert a.end == pytest.approx(b.start, abs=1e-12) and a.signature != b.signature
    assert st.runs == len(st.pieces)  # one solve per piece of constant decisions
    assert len(st.pieces) > 1 and st.distinct_costs > 1  # the line crosses several trees
    assert len(st.breakpoints) <= len(st.pieces) - 1 < st.sign_patterns
    assert len(st.roots_chosen) <= st.roots_all


def test_traced_staircase_predicts_independent_solves(traced):
    path, settings, st = traced
    for mu in np.linspace(0.0, 1.0, 9):
        cost = solve(path, MixturePolicy(W0 + mu * (W1 - W0)), settings).cost
        assert cost in st.costs_at(float(mu)), mu
