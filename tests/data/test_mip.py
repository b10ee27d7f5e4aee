"""MIP generators and the .lp / .mps writers: seeded, well formed, and read back by SCIP as the same problem."""

import itertools

import numpy as np
import pytest

from genlab.data.mip import MIP, facility_location, generate, knapsack, set_cover, to_lp, to_mps, write_family


def _brute_max(m: MIP) -> float:
    x = np.array(list(itertools.product([0.0, 1.0], repeat=m.n_vars)))
    ok = np.all(x @ m.A.T <= m.b + 1e-9, axis=1)
    return float((x[ok] @ m.c).max())


def _brute_min_cover(m: MIP) -> float:
    x = np.array(list(itertools.product([0.0, 1.0], repeat=m.n_vars)))
    ok = np.all(x @ m.A.T >= m.b - 1e-9, axis=1)
    return float((x[ok] @ m.c).min())


def test_same_seed_same_instance():
    for fam in ("knapsack", "setcover", "facility"):
        a, b = generate(fam, np.random.default_rng(3)), generate(fam, np.random.default_rng(3))
        assert to_lp(a) == to_lp(b)
        assert to_lp(a) != to_lp(generate(fam, np.random.default_rng(4)))


def test_knapsack_correlation_classes():
    rng = np.random.default_rng(0)
    strong = knapsack(rng, items=50, rows=1, correlation="strong", value_range=1000)
    np.testing.assert_array_equal(strong.c - strong.A[0], 100.0)  # v = w + R/10
    weak = knapsack(rng, items=200, rows=1, correlation="weak", value_range=1000)
    assert np.all(np.abs(weak.c - weak.A[0]) <= 100) and np.all(weak.c >= 1)
    inv = knapsack(rng, items=50, rows=1, correlation="inverse")
    np.testing.assert_array_equal(inv.A[0] - inv.c, 100.0)
    multi = knapsack(rng, items=30, rows=3)
    assert multi.A.shape == (3, 30) and np.all(multi.b == np.floor(0.5 * multi.A.sum(axis=1)))
    assert multi.sense == "max" and multi.integer.all() and np.all(multi.ub == 1)
    with pytest.raises(ValueError):
        knapsack(rng, correlation="none")


def test_set_cover_rows_are_covered_twice():
    m = set_cover(np.random.default_rng(1), rows=50, cols=30, density=0.02)
    assert np.all(m.A.sum(axis=1) >= 2) and set(np.unique(m.A)) <= {0.0, 1.0}
    assert m.sense == "min" and m.kinds == [">="] * 50


def test_facility_location_structure():
    m = facility_location(np.random.default_rng(2), facilities=4, customers=6, ratio=2.0)
    assert m.n_vars == 4 + 24 and m.integer[:4].all() and not m.integer[4:].any()
    assert m.kinds.count("=") == 6 and m.n_rows == 6 + 4 + 24 + 1
    cap = -m.A[6:10, :4].diagonal()  # capacity rows: Σ_j d_j x_ij − s_i y_i <= 0
    demand = m.A[6, 4:10]
    assert cap.sum() >= 2.0 * demand.sum() - 4  # capacities rounded up from ratio x total demand


@pytest.mark.parametrize("fmt", ["lp", "mps"])
def test_scip_reads_the_same_problem(tmp_path, fmt):
    from genlab.bnc.policies import MixturePolicy
    from genlab.bnc.solver import SolverSettings, solve

    s = SolverSettings(node_limit=10_000)
    k = knapsack(np.random.default_rng(5), items=10, rows=2, integral=False)
    res = solve(k.write(tmp_path / f"k.{fmt}"), MixturePolicy([0, 1, 0]), s)
    assert res.primal_bound == pytest.approx(_brute_max(k), rel=1e-9)
    c = set_cover(np.random.default_rng(6), rows=12, cols=10, density=0.2)
    res = solve(c.write(tmp_path / f"c.{fmt}"), MixturePolicy([0, 1, 0]), s)
    assert res.primal_bound == pytest.approx(_brute_min_cover(c))
    f = facility_location(np.random.default_rng(7), facilities=3, customers=5)
    res = solve(f.write(tmp_path / f"f.{fmt}"), MixturePolicy([0, 1, 0]), s)
    assert res.status == "optimal" and res.int_vars == 3


def test_writers_handle_free_and_negative(tmp_path):
    m = MIP("t", "min", [1.0, -2.5, 0.0], [[1.0, 1.0, -1.0]], ["="], [3.0], [-np.inf, 0.0, -1.0],
            [np.inf, 4.0, 1.0], [False, True, True])
    lp, mps = to_lp(m), to_mps(m)
    assert "-inf <= x0 <= +inf" in lp and "- 2.5 x1" in lp and "General\nx1 x2" in lp
    assert " FR bnd x0" in mps and " UP bnd x1 4" in mps and "'INTORG'" in mps and " LO bnd x2 -1" in mps
    with pytest.raises(ValueError):
        m.write(tmp_path / "t.txt")
    with pytest.raises(ValueError):
        MIP("t", "max", [1.0], [[1.0]], ["<"], [1.0], 0.0, 1.0, True)


def test_write_family_is_prefix_stable(tmp_path):
    a = write_family("knapsack", tmp_path / "a", 3, seed=9, items=8)
    b = write_family("knapsack", tmp_path / "b", 5, seed=9, items=8)
    assert [p.read_text() for p in a] == [p.read_text() for p in b[:3]]
    with pytest.raises(ValueError):
        write_family("tsp", tmp_path, 1)
