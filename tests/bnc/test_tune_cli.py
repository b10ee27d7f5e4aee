"""ERM over instances and the ``genlab bnc`` command line (including one-line errors with exit code 2)."""

import json
import sys

import numpy as np
import pytest

from genlab.bnc import BncInputError
from genlab.bnc.policies import SCORES, MixturePolicy, ReLUPolicy, simplex_lattice
from genlab.bnc.solver import SolverSettings
from genlab.bnc.tune import candidates, erm, mixture_candidates, pure_positions, relu_candidates, split, tune
from genlab.cli import main
from genlab.data.mip import write_family
from genlab.measures import bnc_bounds as bb


def test_simplex_lattice():
    lat = simplex_lattice(3)
    assert lat.shape == (10, 3) and np.allclose(lat.sum(axis=1), 1.0)
    assert lat[0].tolist() == [1.0, 0.0, 0.0] and len({tuple(r) for r in lat}) == 10
    assert simplex_lattice(1).tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_candidate_sets():
    assert len(mixture_candidates(15)) == 15 and len(mixture_candidates(14)) == 10 and len(mixture_candidates(3)) == 3
    relu = relu_candidates(6, seed=1)
    assert len(relu) == 6 and [type(p) for p in relu] == [ReLUPolicy] * 6
    assert [p.theta.tolist() for p in relu_candidates(6, seed=1)] == [p.theta.tolist() for p in relu]
    for kind in ("mixture", "relu"):
        pos = pure_positions(candidates(kind, 8))
        assert sorted(pos) == sorted(SCORES)
    with pytest.raises(BncInputError):
        candidates("tree", 5)
    with pytest.raises(BncInputError):
        mixture_candidates(2)


def test_erm_and_split():
    assert erm(np.array([[5, 3, 3], [1, 3, 2]])) == 2  # column means 3, 3, 2.5
    assert erm(np.array([[5, 3, 4], [1, 3, 2]])) == 0  # means 3, 3, 3: ties go to the first column
    train, test = split(10, 0.3, seed=4)
    assert len(test) == 3 and sorted(np.r_[train, test].tolist()) == list(range(10))
    assert split(10, 0.3, seed=4)[1].tolist() == test.tolist()
    with pytest.raises(BncInputError):
        split(1, 0.5, 0)


@pytest.fixture(scope="module")
def mips(tmp_path_factory):
    d = tmp_path_factory.mktemp("mips")
    write_family("knapsack", d, 4, seed=7, items=12, rows=2)
    return d


def test_tune_report(mips):
    paths = sorted(mips.glob("*.lp"))
    settings = SolverSettings(node_limit=80)
    rep = tune(paths, "mixture", 6, settings, test_frac=0.5, seed=0)
    cost = rep.table.cost
    assert cost.shape == (4, 6) and rep.n_train == rep.n_test == 2
    train = [rep.table.instances.index(name) for name in rep.train_instances]
    test = [rep.table.instances.index(name) for name in rep.test_instances]
    assert sorted(train + test) == [0, 1, 2, 3]
    best = rep.table.policies.index(rep.learned)
    assert rep.train_mean == min(cost[train, j].mean() for j in range(6)) == cost[train, best].mean()
    assert rep.test_mean == cost[test, best].mean()
    assert rep.eps_finite == pytest.approx(bb.epsilon_finite(2, 0.05, 80, 6))
    assert rep.eps_class > 80  # the continuous class's certificate is vacuous at this size
    assert set(rep.pure) == set(SCORES) and 0 <= best < 6
    again = tune(paths, "mixture", 6, settings, test_frac=0.5, seed=0)
    assert np.array_equal(again.table.cost, cost) and again.learned == rep.learned


# -- the command line ----------------------------------------------------------------------------------------


def run_cli(args, capture):
    """(exit code, captured output) of one ``genlab`` command."""
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capture.readouterr()


def test_cli_bound_json(capsys):
    main(["bnc", "bound", "--candidates", "5", "--cap", "10", "--decisions", "10", "--n", "10,1000", "--json"])
    out = json.loads(capsys.readouterr().out)
    mix = out["classes"][0]
    assert mix["params"] == 3 and mix["pdim"] == bb.pdim_bound(3, 5, 10)
    assert out["classes"][1]["params"] == 21
    assert mix["eps"]["1000"] == pytest.approx(bb.epsilon_uniform(1000, 0.05, 10, 3, 5, 10))


def test_cli_generate_solve_tune(mips, tmp_path, capsys):
    main(["bnc", "generate", "setcover:rows=20,cols=15", "--count", "2", "--out", str(tmp_path / "sc")])
    assert sorted(p.name for p in (tmp_path / "sc").iterdir()) == ["setcover_0.lp", "setcover_1.lp"]
    main(["bnc", "solve", str(mips / "knapsack_0.lp"), "--weights", "0,1,0", "--node-limit", "80", "--json"])
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["status"] in ("optimal", "nodelimit") and res["cost"] <= 80
    main(["bnc", "tune", "--instances", str(mips), "--budget", "3", "--node-limit", "80", "--out",
          str(tmp_path / "t")])
    text = capsys.readouterr().out
    assert "learned:" in text and "held-out" in text and "certified" in text
    assert json.loads((tmp_path / "t" / "tune.json").read_text())["n_candidates"] == 3


BAD_LP = "Maximize\n obj: x\nSubject To\n c0: x <=\nEnd\n"
INFEASIBLE_LP = "Minimize\n obj: x\nSubject To\n c0: x >= 2\n c1: x <= 1\nBounds\n 0 <= x <= 5\nGeneral\n x\nEnd\n"
UNBOUNDED_LP = "Maximize\n obj: x + y\nSubject To\n c0: x - y >= 2\nBounds\n x >= 0\n y >= 0\nGeneral\n x\nEnd\n"


def test_cli_bad_file_exits_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "bad.lp"
    path.write_text(BAD_LP)
    code, cap = run_cli(["bnc", "solve", str(path)], capsys)
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:") and cap.out == ""


@pytest.mark.parametrize(("text", "status"), [(INFEASIBLE_LP, "infeasible"), (UNBOUNDED_LP, "unbounded")])
def test_cli_solve_reports_infeasible_and_unbounded_as_a_status(tmp_path, capsys, text, status):
    path = tmp_path / "m.lp"
    path.write_text(text)
    code, cap = run_cli(["bnc", "solve", str(path), "--json", "--sol", str(tmp_path / "s.sol")], capsys)
    out = json.loads(cap.out)
    assert code == 0 and out["status"] in (status, "inforunbd") and out["sol"] is None
    assert not (tmp_path / "s.sol").exists()  # no solution, nothing written


def test_cli_solve_passes_scip_params_and_writes_the_solution(mips, tmp_path, capsys):
    sol = tmp_path / "best.sol"
    first = str(sorted(mips.glob("*.lp"))[0])
    code, cap = run_cli(["bnc", "solve", first, "--scip-param", "limits/nodes=1", "--sol", str(sol),
                         "--heuristics", "default", "--json"], capsys)
    out = json.loads(cap.out)
    assert code == 0 and out["status"] in ("nodelimit", "optimal") and out["nodes"] <= 1 and out["gap"] >= 0
    assert out["solve_s"] >= 0 and out["sol"] == str(sol)
    lines = sol.read_text().splitlines()
    assert lines[0].startswith("objective value:")
    assert float(lines[0].split(":")[1]) == pytest.approx(out["primal_bound"])
    code, cap = run_cli(["bnc", "solve", str(sorted(mips.glob("*.lp"))[0])], capsys)
    assert code == 0 and "gap" in cap.out and "optimal" in cap.out


@pytest.mark.parametrize(("args", "words"), [
    (["--scip-param", "limits/tme=60"], "did you mean limits/time"),
    (["--scip-param", "limits/nodes=2.5"], "limits/nodes: bad value '2.5'"),
    (["--scip-param", "limits/nodes"], "write name=value"),
    (["--scip-param", "lp/threads=-5"], "lp/threads: bad value"),
])
def test_cli_bad_scip_params_are_one_line(mips, capfd, args, words):
    code, cap = run_cli(["bnc", "solve", str(sorted(mips.glob("*.lp"))[0]), *args], capfd)
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and words in lines[0]  # SCIP's own C-level messages are captured


@pytest.mark.parametrize(("spec", "words"), [
    ("knapsack:itemz=3", "knapsack has no option 'itemz'; did you mean 'items'?"),
    ("knapsack:items=3.5", "knapsack option items must be a whole number, got '3.5'"),
    ("setcover:density=lots", "setcover option density must be a number"),
    ("knapsack:integral=maybe", "integral must be true or false"),
])
def test_cli_generator_option_errors_name_the_option(tmp_path, capsys, spec, words):
    code, cap = run_cli(["bnc", "generate", spec, "--out", str(tmp_path / "m")], capsys)
    assert code == 2 and words in cap.err and "signature" not in cap.err and "()" not in cap.err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("args", [
    ["bnc", "tune", "--instances", "nowhere"],
    ["bnc", "tune", "--instances", "knapsack:items", "--count", "2"],
    ["bnc", "tune", "--instances", "knapsack", "--policy", "forest", "--count", "2"],
    ["bnc", "solve", "missing.lp"],
    ["bnc", "solve", "missing.lp", "--presolve", "max"],
    ["bnc", "bound", "--candidates", "0", "--cap", "10"],
])
def test_cli_bad_options_exit_2(capsys, args):
    code, cap = run_cli(args, capsys)
    assert code == 2 and len([ln for ln in cap.err.splitlines() if ln.strip()]) == 1


def test_cli_tune_dir_with_an_infeasible_instance(mips, tmp_path, capsys):
    d = tmp_path / "mixed"
    d.mkdir()
    (d / "a.lp").write_text((mips / "knapsack_0.lp").read_text())
    (d / "b.lp").write_text(INFEASIBLE_LP)
    code, cap = run_cli(["bnc", "tune", "--instances", str(d), "--budget", "3", "--node-limit", "20"], capsys)
    assert code == 2 and "infeasible" in cap.err


def test_cli_missing_solver(monkeypatch, tmp_path, capsys, mips):
    monkeypatch.setitem(sys.modules, "pyscipopt", None)
    code, cap = run_cli(["bnc", "solve", str(mips / "knapsack_0.lp")], capsys)
    assert code == 2 and "pip install pyscipopt" in cap.err


def test_mixture_policy_describe():
    assert MixturePolicy([0.5, 0.25, 0.25]).describe() == "mixture(mostfrac=0.5, pscost=0.25, objgain=0.25)"


@pytest.mark.parametrize(("where", "words"), [("folder", "is a folder; give a file name"),
                                              ("missing/dir/best.sol", "No such file or directory")])
def test_cli_solve_sol_to_a_bad_place_is_one_line(mips, tmp_path, capsys, where, words):
    target = tmp_path if where == "folder" else tmp_path / where
    code, cap = run_cli(["bnc", "solve", str(sorted(mips.glob("*.lp"))[0]), "--sol", str(target)], capsys)
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and words in lines[0] and cap.out == ""
    assert not (tmp_path / "missing").exists()
