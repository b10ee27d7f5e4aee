"""SCIP's tree size with our branching rule equals the node count of our own simple branch-and-bound.

How the comparison is made exact (tiny multi-dimensional 0-1 knapsacks, 8 items, float data):

* the optimum is found by exhaustive enumeration of all 2^8 points and given to both as the incumbent, so the set
  of nodes branch-and-bound processes no longer depends on the order it visits them (a node is processed iff its
  parent was branched; it is branched iff its LP is feasible, beats the optimum and is fractional);
* SCIP runs with presolve, cuts, heuristics, propagation, conflict analysis and symmetry handling off;
* SCIP also discards, without processing, children whose *pseudo-objective* (every variable at its best local
  bound) cannot beat the incumbent — unless the node selector happens to pick them first, which would make the
  count order-dependent. Two free continuous variables z1 + z2 >= 0 (objective −z1 − z2, zero at every LP optimum)
  make every pseudo-objective infinite and switch that mechanism off; a single free variable would not do, SCIP
  turns a one-variable row into a bound;
* float data make every LP optimum unique (no ties in value/weight ratios), so HiGHS and SoPlex return the same
  vertex, and the same branching score (mostfrac / objgain mixtures; SCIP's pseudo-costs have no reference) with
  the same tie-break picks the same variable.
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from genlab.bnc.policies import MixturePolicy, choose, classic_scores
from genlab.bnc.solver import SolverSettings, solve
from genlab.data.mip import MIP, knapsack

PURE_BB = SolverSettings(node_limit=100_000, presolve="off", separating="off", heuristics="off", propagation=False,
                         conflict=False, symmetry=False)


def brute_force(m: MIP) -> tuple[float, np.ndarray]:
    """The optimum of a 0-1 maximisation by enumerating every point."""
    x = np.array(list(itertools.product([0.0, 1.0], repeat=m.n_vars)))
    feasible = np.all(x @ m.A.T <= m.b + 1e-9, axis=1)
    values = x[feasible] @ m.c
    return float(values.max()), x[feasible][values.argmax()]


def reference_nodes(m: MIP, weights: np.ndarray, opt: float) -> int:
    """Nodes of a textbook depth-first B&B with the optimum known, branching on the same score."""
    count = 0

    def node(lb: np.ndarray, ub: np.ndarray) -> None:
        nonlocal count
        count += 1
        lp = linprog(-m.c, A_ub=m.A, b_ub=m.b, bounds=list(zip(lb, ub)), method="highs")
        if lp.status != 0 or -lp.fun <= opt + 1e-9 * max(1.0, abs(opt)):
            return  # infeasible, or cannot beat the incumbent
        frac = lp.x - np.floor(lp.x)
        cand = np.flatnonzero((frac > 1e-6) & (frac < 1 - 1e-6))
        if cand.size == 0:
            return
        k = cand[choose(classic_scores(frac[cand], np.zeros(cand.size), m.c[cand]) @ weights, cand)]
        for value in (0.0, 1.0):
            lo, hi = lb.copy(), ub.copy()
            lo[k] = hi[k] = value
            node(lo, hi)

    node(np.zeros(m.n_vars), np.ones(m.n_vars))
    return count


def with_free_pair(m: MIP) -> MIP:
    """Append z1, z2 free with z1 + z2 >= 0 and objective −(z1 + z2): same optimum, infinite pseudo-objective."""
    a = np.vstack([np.hstack([m.A, np.zeros((m.n_rows, 2))]), np.r_[np.zeros(m.n_vars), 1.0, 1.0]])
    return MIP(m.name, "max", np.r_[m.c, -1.0, -1.0], a, [*m.kinds, ">="], np.r_[m.b, 0.0],
               np.r_[m.lb, -np.inf, -np.inf], np.r_[m.ub, np.inf, np.inf], np.r_[m.integer, False, False],
               [*m.names, "z1", "z2"])


@pytest.mark.parametrize("seed", range(4))
def test_scip_tree_size_equals_reference_bb(seed, tmp_path):
    m = knapsack(np.random.default_rng(seed), items=8, rows=3, integral=False, capacity_frac=0.3)
    path = with_free_pair(m).write(tmp_path / "tiny.lp")
    opt, x = brute_force(m)
    incumbent = {**{f"x{j}": x[j] for j in range(m.n_vars)}, "z1": 0.0, "z2": 0.0}
    for w in ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.0, 0.5]):
        w = np.asarray(w)
        res = solve(path, MixturePolicy(w), PURE_BB, incumbent=incumbent)
        assert res.status == "optimal" and res.primal_bound == pytest.approx(opt)
        assert res.nodes == reference_nodes(m, w, opt), f"seed {seed}, weights {w}"
        assert res.nodes == 1 + 2 * res.decisions  # every branching creates two processed children


def test_reference_sees_the_branching_order(tmp_path):
    """The comparison is not vacuous: on these instances the branching score changes the tree size."""
    sizes = set()
    for seed in range(4):
        m = knapsack(np.random.default_rng(seed), items=8, rows=3, integral=False, capacity_frac=0.3)
        opt, _ = brute_force(m)
        sizes.add(tuple(reference_nodes(m, np.asarray(w), opt) for w in ([1.0, 0, 0], [0, 0, 1.0])))
    assert any(a != b for a, b in sizes)
