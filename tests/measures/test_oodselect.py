"""OODSelect tool: probit correlation, model split, soft selection, greedy baseline, random subsets, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from genlab.measures.oodselect import (
    _pearson_np,
    bootstrap_subset_r,
    greedy_path,
    probit,
    random_subset_correlations,
    resolve_ks,
    run_oodselect,
    soft_select,
    split_models,
    subset_correlation,
)

torch.set_num_threads(1)


def planted_pool(m: int = 90, n: int = 200, planted: int = 40, noise: float = 0.0, seed: int = 0):
    """A noiseless pool: model m has skill c_m = its ID accuracy; example j has a difficulty u_j shared by all
    models, and model m answers it correctly iff its skill on it exceeds u_j. The skill is c_m on ordinary
    examples and 1.3 - c_m (the inverse line) on the first ``planted`` examples. ``noise`` perturbs each model's
    skill per example (sd), blurring the structure."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.4, 0.9, m)
    skill = np.tile(c[:, None], (1, n))
    skill[:, :planted] = 1.3 - c[:, None]
    skill = skill + noise * rng.normal(size=(m, n))
    u = rng.uniform(0.45, 0.85, n)  # every example separates some models from others
    return (skill > u[None, :]).astype(float), c


def test_probit_known_values_and_clamp():
    assert probit(np.array([0.5]))[0] == pytest.approx(0.0, abs=1e-12)
    assert probit(np.array([0.8413447460685429]))[0] == pytest.approx(1.0, abs=1e-9)
    ends = probit(np.array([0.0, 1.0]))
    assert np.all(np.isfinite(ends)) and ends[0] == pytest.approx(-ends[1])
    t = probit(torch.tensor([0.0, 0.975, 1.0], dtype=torch.float64))
    assert torch.isfinite(t).all() and float(t[1]) == pytest.approx(1.959964, abs=1e-5)


def test_subset_correlation_matches_numpy_corrcoef_on_probits():
    rng = np.random.default_rng(1)
    correct = (rng.random((30, 50)) < rng.uniform(0.2, 0.9, (30, 1))).astype(float)
    acc = rng.uniform(0.3, 0.9, 30)
    idx = np.arange(10, 35)
    ref = np.corrcoef(probit(correct[:, idx].mean(1)), probit(acc))[0, 1]
    assert subset_correlation(correct, acc, idx) == pytest.approx(ref, abs=1e-5)
    mask = np.zeros(50, bool)
    mask[idx] = True
    both = subset_correlation(correct, acc, np.stack([mask, ~mask]))
    assert both[0] == pytest.approx(ref, abs=1e-5) and both.shape == (2,)
    assert _pearson_np(probit(correct.mean(1))[:, None], probit(acc))[0] == pytest.approx(
        subset_correlation(correct, acc), abs=1e-12
    )


def test_split_models_is_a_partition_and_keeps_groups_together():
    sp = split_models(100, seed=3)
    allidx = np.concatenate([sp.train, sp.val, sp.test])
    assert sorted(allidx) == list(range(100))
    assert (len(sp.train), len(sp.val), len(sp.test)) == (60, 20, 20)
    groups = np.repeat(np.arange(25), 4)  # 4 checkpoints per run
    sp = split_models(100, seed=0, groups=groups)
    for a, b in ((sp.train, sp.test), (sp.train, sp.val), (sp.val, sp.test)):
        assert not set(groups[a]) & set(groups[b])
    assert split_models(100, seed=5).test.tolist() == split_models(100, seed=5).test.tolist()
    with pytest.raises(ValueError, match="summing to 1"):
        split_models(10, (0.5, 0.5, 0.5))


def test_random_subsets_have_size_k_and_track_full_set():
    correct, acc = planted_pool(planted=0)
    rr = random_subset_correlations(correct, acc, 100, 50, np.random.default_rng(0))
    assert rr.shape == (50,)
    full = subset_correlation(correct, acc)
    assert full > 0.5 and abs(rr.mean() - full) < 0.15


def test_soft_select_recovers_planted_subgroup_and_loss_decreases():
    correct, acc = planted_pool(m=120, n=200, planted=40)
    sp = split_models(120, seed=0)
    sels = soft_select(correct[sp.train], acc[sp.train], [20, 40], correct[sp.val], acc[sp.val],
                       lrs=(0.1,), lams=(1.0,), steps=400, seed=0)
    for sel in sels:
        assert len(sel.indices) == sel.k  # hard top-k
        assert np.mean(sel.indices < 40) >= 0.9  # precision on the planted group
        r_test = subset_correlation(correct[sp.test], acc[sp.test], sel.indices)
        assert r_test < -0.5
    # training objective at the selected mask is far below the initial random mask's
    assert sels[1].train_r < subset_correlation(correct[sp.train], acc[sp.train]) - 1.0


def test_soft_select_on_iid_pool_does_not_generalize_a_negative_line():
    """No planted subgroup: whatever the selector finds on training models must not be strongly negative on
    held-out models (otherwise it would be overfitting N free logits to M models)."""
    rng = np.random.default_rng(4)
    m, n = 120, 200
    c = rng.uniform(0.55, 0.9, m)
    correct = (rng.random((m, n)) < c[:, None]).astype(float)
    acc = np.clip(c + 0.02 * rng.normal(size=m), 0, 1)
    rep = run_oodselect(correct, acc, (20, 50), lrs=(0.1,), lams=(1.0,), steps=300, n_random=20, greedy=False)
    for k in rep.ks:
        assert rep.r_selected[k]["train"] < rep.r_selected[k]["test"]  # it does overfit the training models...
        assert rep.r_selected[k]["test"] > 0.0  # ...but that does not carry to held-out ones


def test_greedy_path_is_nested_and_finds_planted_group():
    correct, acc = planted_pool(m=80, n=150, planted=30)
    order = greedy_path(correct, acc, 30, seed_size=5)
    assert len(order) == len(set(order.tolist())) == 30
    assert np.all(order[:15] < 30)  # the first half of the path is all planted...
    assert np.mean(order < 30) >= 0.7  # ...then the myopic greedy starts to pad with ordinary examples
    assert subset_correlation(correct, acc, order[:30]) < -0.5


def test_r2_loss_finds_uncorrelated_subsets():
    correct, acc = planted_pool(m=120, n=200, planted=40)
    sp = split_models(120, seed=1)
    (sel,) = soft_select(correct[sp.train], acc[sp.train], [60], correct[sp.val], acc[sp.val],
                         loss="r2", steps=300, lrs=(0.1,), lams=(1.0,))
    # both pure groups have |r| > 0.9; the r^2 objective mixes them into a subset with (almost) no relation
    assert abs(subset_correlation(correct, acc)) > 0.9 and abs(subset_correlation(correct, acc, np.arange(40))) > 0.9
    assert abs(sel.val_r) < 0.3 and abs(sel.train_r) < 0.15


def test_run_oodselect_report_and_errors():
    correct, acc = planted_pool(m=90, n=200, planted=40, noise=0.01)
    rep = run_oodselect(correct, acc, (0.1, 0.2, 0.5), lrs=(0.1,), lams=(1.0,), steps=300, n_random=30)
    assert rep.ks == [20, 40, 100]
    d = rep.to_dict()
    json.dumps(d)
    assert d["r_full"]["test"] > 0.3
    assert rep.r_selected[40]["test"] < -0.3 < rep.r_random[40]["mean"]
    assert rep.warnings == []
    with pytest.raises(ValueError, match="models"):
        run_oodselect(correct[:10], acc, (5,))
    with pytest.raises(ValueError, match="0/1"):
        run_oodselect(correct * 0.5, acc, (5,))
    with pytest.raises(ValueError, match="k="):
        resolve_ks([1000], 200)
    assert resolve_ks([0.25, 10, 10.0], 100) == [10, 25]


# ---------------------------------------------------------------------------------------------------------------
# CLI (registered on a throwaway Typer app, as the lead registers it on the real one)
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def app():
    import typer

    from genlab.commands.oodselect import oodselect

    a = typer.Typer()
    a.command("oodselect")(oodselect)
    a.command("noop")(lambda: None)  # a second command keeps typer from collapsing to a single-command app
    return a


def _write_inputs(tmp_path, m=90, n=120, planted=30):
    correct, acc = planted_pool(m=m, n=n, planted=planted, noise=0.01)
    models = [f"m{i}" for i in range(m)]
    ex = [f"x{j}" for j in range(n)]
    with open(tmp_path / "correct.csv", "w") as fh:
        fh.write("model," + ",".join(ex) + "\n")
        for name, row in zip(models[::-1], correct[::-1]):  # row order differs from the ID file: matched by name
            fh.write(name + "," + ",".join(str(int(v)) for v in row) + "\n")
    with open(tmp_path / "id_acc.csv", "w") as fh:
        fh.write("model,id_acc,group\n")
        for i, (name, a) in enumerate(zip(models, acc)):
            fh.write(f"{name},{a:.6f},run{i // 3}\n")
    np.save(tmp_path / "correct.npy", correct)
    return correct, acc


def test_cli_csv_json_and_outputs(app, tmp_path):
    from typer.testing import CliRunner

    _write_inputs(tmp_path)
    res = CliRunner().invoke(app, ["oodselect", "--correct", str(tmp_path / "correct.csv"), "--id-acc",
                                   str(tmp_path / "id_acc.csv"), "--k", "15,30", "--steps", "200", "--lrs", "0.1",
                                   "--lams", "1", "--n-random", "20", "--json", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert [r["k"] for r in rep["per_k"]] == [15, 30]
    sel = rep["per_k"][1]
    assert np.mean([int(e[1:]) < 30 for e in sel["example_ids"]]) > 0.7
    assert sel["selected"]["test"] < 0 < rep["r_full"]["test"]
    assert (tmp_path / "out" / "scatter.png").stat().st_size > 1000
    assert (tmp_path / "out" / "selected_k30.csv").read_text().count("\n") == 31
    # runs (groups) never straddle the split
    groups = np.arange(90) // 3
    assert not set(groups[rep["split"]["train"]]) & set(groups[rep["split"]["test"]])
    # same result from the .npy in ID-file order
    res2 = CliRunner().invoke(app, ["oodselect", "--correct", str(tmp_path / "correct.npy"), "--id-acc",
                                    str(tmp_path / "id_acc.csv"), "--k", "15,30", "--steps", "200", "--lrs", "0.1",
                                    "--lams", "1", "--n-random", "20", "--json"])
    assert res2.exit_code == 0, res2.output
    assert json.loads(res2.stdout)["per_k"][1]["indices"] == sel["indices"]


def test_cli_predictions_with_labels(app, tmp_path):
    from typer.testing import CliRunner

    correct, acc = _write_inputs(tmp_path, m=60, n=50, planted=10)
    labels = np.arange(50) % 3
    preds = np.where(correct > 0, labels[None], (labels[None] + 1) % 3)
    with open(tmp_path / "preds.csv", "w") as fh:
        fh.write("model," + ",".join(f"x{j}" for j in range(50)) + "\n")
        for i, row in enumerate(preds):
            fh.write(f"m{i}," + ",".join(map(str, row)) + "\n")
    with open(tmp_path / "labels.csv", "w") as fh:
        fh.write("example,label\n" + "".join(f"x{j},{labels[j]}\n" for j in range(50)[::-1]))
    args = ["oodselect", "--correct", str(tmp_path / "preds.csv"), "--id-acc", str(tmp_path / "id_acc.csv"),
            "--k", "10", "--steps", "50", "--lrs", "0.1", "--lams", "1", "--n-random", "5", "--json", "--no-greedy"]
    res = CliRunner().invoke(app, [*args, "--labels", str(tmp_path / "labels.csv")])
    assert res.exit_code == 0, res.output
    test = json.loads(res.stdout)["split"]["test"]
    expected = subset_correlation(correct[test], acc[test])
    assert json.loads(res.stdout)["r_full"]["test"] == pytest.approx(expected, abs=1e-4)
    # predictions without --labels: a clear error, exit code 2
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "--labels" in res.output


@pytest.mark.parametrize(
    "mutate, message",
    [
        ("drop_model", "model names differ"),
        ("npy_rows", "rows (models)"),
        ("bad_acc", "in [0, 1]"),
        ("bad_k", "neither a fraction"),
        ("labels_count", "labels but the predictions"),
    ],
)
def test_cli_errors_are_one_sentence_exit_2(app, tmp_path, mutate, message):
    from typer.testing import CliRunner

    correct, _ = _write_inputs(tmp_path, m=30, n=20, planted=5)
    c, a, k = tmp_path / "correct.csv", tmp_path / "id_acc.csv", "5"
    extra: list[str] = []
    if mutate == "drop_model":
        lines = a.read_text().splitlines()
        a.write_text("\n".join(lines[:-1]) + "\n")
    elif mutate == "npy_rows":
        np.save(tmp_path / "short.npy", correct[:-2])
        c = tmp_path / "short.npy"
    elif mutate == "bad_acc":
        lines = a.read_text().splitlines()
        lines[1] = "m0,1.5,run0"
        a.write_text("\n".join(lines) + "\n")
    elif mutate == "bad_k":
        k = "500"
    elif mutate == "labels_count":
        np.save(tmp_path / "y.npy", np.zeros(7))
        np.save(tmp_path / "c.npy", correct)
        c = tmp_path / "c.npy"
        extra = ["--labels", str(tmp_path / "y.npy")]
    res = CliRunner().invoke(app, ["oodselect", "--correct", str(c), "--id-acc", str(a), "--k", k, "--steps", "20",
                                   *extra])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split()).replace("│", "").replace("  ", " ") or message in res.output
    assert "Traceback" not in res.output


def test_bootstrap_subset_r_brackets_the_point_estimate_and_narrows_with_models():
    correct, acc = planted_pool(m=200, n=120, planted=40, noise=0.3, seed=2)
    for idx in (np.arange(40), np.arange(40, 120)):
        r = subset_correlation(correct, acc, idx)
        lo, hi = bootstrap_subset_r(correct, acc, idx, seed=0)
        assert lo < r < hi and hi - lo < 0.3
    lo_few, hi_few = bootstrap_subset_r(correct[:30], acc[:30], np.arange(40), seed=0)
    assert hi_few - lo_few > hi - lo  # fewer held-out models, wider interval


def test_exact_select_is_the_brute_force_minimum_and_refuses_large_problems():
    import itertools

    from genlab.measures.oodselect import exact_select

    rng = np.random.default_rng(4)
    correct = (rng.random((25, 11)) < 0.6).astype(float)
    id_acc = rng.random(25) * 0.5 + 0.4
    idx, r = exact_select(correct, id_acc, 4, chunk=37)  # several chunks, one of them partial
    brute = min(itertools.combinations(range(11), 4), key=lambda s: subset_correlation(correct, id_acc, np.array(s)))
    assert tuple(idx) == brute and r == pytest.approx(subset_correlation(correct, id_acc, np.array(brute)))
    with pytest.raises(ValueError, match="exceed max_subsets"):
        exact_select(correct, id_acc, 5, max_subsets=100)
