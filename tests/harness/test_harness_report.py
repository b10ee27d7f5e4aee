from genlab.harness.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict
from genlab.harness.report import claims_rows, combine, latest_groups, write_report
from genlab.harness.runner import run_study
from genlab.harness.store import finished_runs
from genlab.harness.sweep import expand, flatten, mean_se


def test_combine_over_seeds():
    r, n = Verdict("c", REPRODUCED, {}), Verdict("c", NOT_REPRODUCED, {})
    assert combine([r, r]) == REPRODUCED and combine([n]) == NOT_REPRODUCED and combine([r, n]) == INCONCLUSIVE


def test_report_groups_seeds_and_keeps_latest_config(tmp_path):
    for seed in (0, 1):
        run_study("toy-mean", "smoke", seed=seed, root=tmp_path)
    run_study("toy-mean", "quick", {"n": 30}, seed=0, root=tmp_path)
    groups = latest_groups(finished_runs(tmp_path))
    assert sorted((g[0].preset, len(g)) for g in groups) == [("quick", 1), ("smoke", 2)]
    rows = claims_rows(groups)
    smoke = [r for r in rows if r["preset"] == "smoke"]
    assert len(smoke) == 2 and smoke[0]["seeds"] == [0, 1] and "seed 1:" in smoke[0]["numbers"]
    path = write_report(tmp_path)
    text = path.read_text()
    assert text.count("<tr>") == 1 + len(rows) and "toy-mean" in text


def test_empty_store_report(tmp_path):
    assert "No finished runs yet" in write_report(tmp_path).read_text()


def test_sweep_helpers():
    assert expand({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert expand({}) == [{}]
    assert flatten({"a": {"b": 1, "c": [1]}, "d": True}) == {"a/b": 1.0, "d": 1.0}
    mean, se, n = mean_se([1.0, 2.0, 3.0, float("nan")])
    assert (mean, n) == (2.0, 3) and abs(se - (1 / 3**0.5)) < 1e-12
