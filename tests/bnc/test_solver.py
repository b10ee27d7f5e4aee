"""The SCIP wrapper: determinism, the tie-break, the cap, the decision log, and one-line errors for bad input."""

import sys

import numpy as np
import pytest

from genlab.bnc import BncInputError, MixturePolicy, ReLUPolicy, SolverMissingError, choose, classic_scores
from genlab.bnc.solver import SolverSettings, find_instances, scip, solve
from genlab.data.mip import knapsack

FAST = SolverSettings(node_limit=300)


@pytest.fixture(scope="module")
def instance(tmp_path_factory):
    path = tmp_path_factory.mktemp("mip") / "k.lp"
    # a 14-item, 2-row correlated knapsack that needs a few dozen nodes even with SCIP's cuts
    knapsack(np.random.default_rng([1, 3]), items=14, rows=2).write(path)
    return path


def test_same_settings_same_tree(instance):
    runs = [solve(instance, MixturePolicy([0.3, 0.3, 0.4]), FAST) for _ in range(2)]
    assert runs[0].summary() == runs[1].summary()
    assert runs[0].nodes > 10 and runs[0].decisions > 0 and runs[0].lp_iterations > 0
    assert runs[0].wall_s > 0  # measured, but kept out of summary()
    assert "wall_s" not in runs[0].summary()


def test_policies_change_the_tree(instance):
    costs = {tuple(w): solve(instance, MixturePolicy(w), FAST).cost for w in np.eye(3)}
    assert len(set(costs.values())) > 1


def test_node_limit_caps_the_cost(instance):
    res = solve(instance, MixturePolicy([1, 0, 0]), SolverSettings(node_limit=5))
    assert res.status == "nodelimit" and res.capped and res.cost == 5 and res.nodes == 5


def test_decision_log_follows_the_policy(instance):
    policy = MixturePolicy([0.2, 0.5, 0.3])
    res = solve(instance, policy, FAST, record=True)
    assert len(res.log) == res.decisions > 0
    for d in res.log:
        assert d.features.shape == (d.index.size, 3)
        assert np.all((d.features >= 0) & (d.features <= 1)) and np.allclose(d.features.max(axis=0)[:1], 1.0)
        assert d.chosen == choose(policy.scores(d.features), d.index)


def test_all_equal_scores_branch_on_the_lowest_index(instance):
    """Zero weights make every score 0: every decision must take the candidate with the smallest SCIP index."""
    res = solve(instance, MixturePolicy([0.0, 0.0, 0.0]), FAST, record=True)
    assert sum(d.index.size > 1 for d in res.log) > 5  # real ties, many times
    assert all(d.index[d.chosen] == d.index.min() for d in res.log)


@pytest.mark.parametrize("weights", [[0.0, 0.0, 0.0], [0.5, 0.0, 0.5]])
def test_tree_does_not_depend_on_the_candidate_order(instance, monkeypatch, weights):
    """The tie-break is the variable index, not the position in SCIP's candidate list: reversing the list SCIP
    hands over gives the same tree, node for node."""
    import genlab.bnc.solver as solver

    before = solve(instance, MixturePolicy(weights), FAST, record=True)
    original = solver.lp_candidates
    monkeypatch.setattr(solver, "lp_candidates", lambda m: tuple(list(x)[::-1] for x in original(m)))
    after = solve(instance, MixturePolicy(weights), FAST, record=True)
    assert after.summary() == before.summary()
    assert [d.index[d.chosen] for d in after.log] == [d.index[d.chosen] for d in before.log]
    assert any(d.index.size > 1 and d.index[0] > d.index[-1] for d in after.log)  # the order really was reversed


def test_choose_ties_and_order():
    assert choose([1.0, 3.0, 3.0], [5, 9, 7]) == 2  # tie between 9 and 7 -> index 7
    assert choose([0.0, 0.0], [4, 2]) == 1
    assert choose([2.0, 1.0], [9, 0]) == 0  # a higher score beats a lower index
    with pytest.raises(ValueError):
        choose([], [])
    with pytest.raises(ValueError):
        choose([np.nan, 1.0], [0, 1])


def test_classic_scores():
    f = classic_scores(np.array([0.5, 0.1, 0.8]), np.array([2.0, 4.0, 0.0]), np.array([-1.0, 10.0, 2.0]))
    np.testing.assert_allclose(f[:, 0], [1.0, 0.2, 0.4])  # min(f, 1-f) / 0.5
    np.testing.assert_allclose(f[:, 1], [0.5, 1.0, 0.0])
    np.testing.assert_allclose(f[:, 2], np.array([0.5, 1.0, 0.4]) / 1.0)  # |c| min(f,1-f) = .5, 1, .4
    assert np.all(classic_scores(np.array([0.5]), np.array([0.0]), np.array([0.0]))[:, 1:] == 0)  # no 0/0


def test_relu_policy_pure_equals_mixture_pure():
    feats = np.random.default_rng(0).random((6, 3))
    for k, name in enumerate(("mostfrac", "pscost", "objgain")):
        np.testing.assert_allclose(ReLUPolicy.pure(name).scores(feats), feats[:, k])
        np.testing.assert_allclose(MixturePolicy.pure(name).scores(feats), feats[:, k])
    assert ReLUPolicy.n_params(4) == 21 and ReLUPolicy.pure("pscost").structure.params == 21
    with pytest.raises(ValueError):
        ReLUPolicy(np.zeros(5))
    with pytest.raises(ValueError):
        MixturePolicy([1.0, np.inf, 0.0])


def test_lp_and_mps_files_hold_the_same_problem(tmp_path):
    """Same optimum from both formats. (Their trees may differ: SCIP's MPS reader orders the variables
    differently, and the variable order — the tie-break, the LP's column order — is part of the instance.)"""
    m = knapsack(np.random.default_rng(4), items=14, rows=2)
    a, b = m.write(tmp_path / "k.lp"), m.write(tmp_path / "k.mps")
    ra, rb = (solve(p, MixturePolicy([0, 1, 0]), FAST) for p in (a, b))
    assert ra.status == rb.status == "optimal" and ra.primal_bound == rb.primal_bound
    assert solve(b, MixturePolicy([0, 1, 0]), FAST).summary() == rb.summary()


# -- bad input: one clear error ------------------------------------------------------------------------------

BAD_LP = "Maximize\n obj: 3 x + 2 y\nSubject To\n c0: x + y <=\nEnd\n"
INFEASIBLE_LP = "Minimize\n obj: x\nSubject To\n c0: x >= 2\n c1: x <= 1\nBounds\n 0 <= x <= 5\nGeneral\n x\nEnd\n"
UNBOUNDED_LP = "Maximize\n obj: x + y\nSubject To\n c0: x - y >= 2\nBounds\n x >= 0\n y >= 0\nGeneral\n x\nEnd\n"


@pytest.mark.parametrize(("text", "words"), [(BAD_LP, "cannot read"), (INFEASIBLE_LP, "infeasible"),
                                             (UNBOUNDED_LP, "unbounded")])
def test_bad_instances_raise_one_line(tmp_path, capfd, text, words):
    path = tmp_path / "bad.lp"
    path.write_text(text)
    with pytest.raises(BncInputError) as err:
        solve(path, MixturePolicy([1, 0, 0]), FAST)
    assert words in str(err.value) and "\n" not in str(err.value)
    out, errout = capfd.readouterr()
    assert "ERROR" not in out + errout  # SCIP's own C-level messages are captured, not printed


def test_missing_files_and_dirs(tmp_path):
    with pytest.raises(BncInputError, match="no such MIP file"):
        solve(tmp_path / "nope.lp", MixturePolicy([1, 0, 0]))
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(BncInputError, match="not a MIP file"):
        solve(tmp_path / "x.txt", MixturePolicy([1, 0, 0]))
    with pytest.raises(BncInputError, match="no .lp or .mps"):
        find_instances(tmp_path)


def test_bad_settings():
    for bad in (SolverSettings(node_limit=0), SolverSettings(presolve="aggressive"), SolverSettings(seed=-1)):
        with pytest.raises(BncInputError):
            bad.validate()


def test_missing_solver_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyscipopt", None)
    with pytest.raises(SolverMissingError, match="pip install pyscipopt"):
        scip()


def test_policy_errors_inside_scip_are_raised(instance):
    class Broken(MixturePolicy):
        def scores(self, features):
            raise RuntimeError("broken scorer")

    with pytest.raises(RuntimeError, match="broken scorer"):
        solve(instance, Broken([1, 0, 0]), FAST)
