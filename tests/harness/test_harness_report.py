import json

import pytest

from genlab.harness.decision import mean_se
from genlab.harness.io import flat_scalars
from genlab.harness.report import claims_rows, latest_groups, tally, write_report
from genlab.harness.runner import recheck_runs, run_study
from genlab.harness.store import finished_runs
from genlab.harness.sweep import expand


def test_report_groups_seeds_and_keeps_latest_config(tmp_path):
    for seed in (0, 1):
        run_study("toy-mean", "smoke", seed=seed, root=tmp_path)
    run_study("toy-mean", "quick", {"n": 30}, seed=0, root=tmp_path)
    groups = latest_groups(finished_runs(tmp_path))
    assert sorted((g[0].preset, len(g)) for g in groups) == [("quick", 1), ("smoke", 2)]
    rows = claims_rows(groups)
    smoke = [r for r in rows if r["preset"] == "smoke"]
    assert len(smoke) == 2 and smoke[0]["seeds"] == [0, 1] and "seed 1:" in smoke[0]["numbers"]
    path = write_report(tmp_path, presets=None)
    text = path.read_text()
    assert text.count('<tr class="claim">') == len(rows) and "toy-mean" in text and "the sample mean" in text
    assert text.count('<tr class="study">') == 2  # the overview: one row per study and preset
    quick_only = write_report(tmp_path).read_text()  # quick by default: smoke verdicts never reach the tally
    assert quick_only.count('<tr class="claim">') == 2
    assert sum(tally(latest_groups(finished_runs(tmp_path), ("quick",)))["empirical"].values()) == 2


def test_claims_are_matched_by_key_not_position(tmp_path):
    """A stored run whose claims are in another order still combines each claim with itself."""
    a = run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    b = run_study("toy-mean", "smoke", seed=1, root=tmp_path)
    path = b.run_dir / "claims.json"
    path.write_text(json.dumps(list(reversed(json.loads(path.read_text())))))
    rows = claims_rows(latest_groups(finished_runs(tmp_path), ("smoke",)))
    by_key = {r["key"]: r for r in rows}
    assert set(by_key) == {"mean-close", "mean-negative"} and by_key["mean-close"]["seeds"] == [0, 1]
    # each run's exact value is one unit of the pooled test: two runs are too few units to decide
    assert by_key["mean-close"]["verdict"] == "inconclusive" and "2 runs pooled" in by_key["mean-close"]["note"]
    assert a.verdicts[0].key == "mean-close"


def test_recheck_recomputes_verdicts_from_stored_metrics(tmp_path):
    r = run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    claims = r.run_dir / "claims.json"
    stored = json.loads(claims.read_text())
    stored[0]["verdict"] = "not reproduced"  # as if an older check had decided otherwise
    claims.write_text(json.dumps(stored))
    changed, skipped = recheck_runs(tmp_path)
    assert changed == 1 and skipped == []
    assert json.loads(claims.read_text())[0]["verdict"] == "reproduced"


def test_empty_store_report(tmp_path):
    assert "No finished runs yet" in write_report(tmp_path).read_text()


def test_sweep_helpers():
    assert expand({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert expand({}) == [{}]
    assert flat_scalars({"a": {"b": 1, "c": [1]}, "d": True, "e": None}) == {"a/b": 1.0, "d": 1.0}
    mean, se, n = mean_se([1.0, 2.0, 3.0, float("nan")])
    assert (mean, n) == (2.0, 3) and abs(se - (1 / 3**0.5)) < 1e-12


def _report_with_history(tmp_path):
    run_study("toy-mean", "quick", {"n": 30}, seed=0, root=tmp_path)
    run_study("toy-mean", "quick", {"n": 40}, seed=0, root=tmp_path)  # supersedes the n=30 group
    run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    return write_report(tmp_path)


def test_report_structure_links_anchors_and_superseded_runs(tmp_path):
    from html.parser import HTMLParser

    class Collect(HTMLParser):
        def __init__(self):
            super().__init__()
            self.ids, self.hrefs, self.stack, self.sortable = [], [], [], 0

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            self.ids += [a["id"]] if "id" in a else []
            self.hrefs += [a["href"]] if "href" in a else []
            self.sortable += tag == "table" and a.get("class") == "sortable"
            if tag not in ("img", "br", "meta"):
                self.stack.append(tag)

        def handle_endtag(self, tag):
            assert self.stack and self.stack.pop() == tag, f"unbalanced </{tag}>"

    text = _report_with_history(tmp_path).read_text()
    page = Collect()
    page.feed(text)
    assert page.stack == [] and len(page.ids) == len(set(page.ids))  # well nested, unique anchors
    assert "toy-mean--quick" in page.ids and "#toy-mean--quick" in page.hrefs
    assert "https://arxiv.org/abs/0000.00000" in page.hrefs  # each study section links its paper
    assert "Superseded runs" in text and page.sortable == 3  # overview, the study's claims, superseded runs
    assert "Other presets in the store: smoke" in text and "the sample mean" in text  # the caption


def test_report_renders_and_sorts_in_a_headless_browser(tmp_path):
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no headless browser on this machine (the structural test above still runs)")
    path = _report_with_history(tmp_path)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert 'data-sortable="ready"' in dom  # the inline script ran without errors
    assert dom.count("<img") >= 1 and "toy-mean--quick" in dom


def test_report_shows_each_claims_test_and_a_forest_plot(tmp_path):
    run_study("toy-mean", "quick", {"n": 30}, seed=0, root=tmp_path)
    text = write_report(tmp_path).read_text()
    assert "forest plot of toy-mean" in text and "exact, n=1" in text  # the test of each claim, and its picture
    assert 'href="../' in text or "docs/studies/toy-mean.md</code>" in text  # docs links never absolute paths
    assert "file://" not in text


def test_strings_from_the_store_are_escaped(tmp_path):
    """A preset name or caption read from a stored file is text, never markup."""
    r = run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    cfg = json.loads((r.run_dir / "config.json").read_text())
    evil = "<script>alert(1)</script>"
    cfg["preset"] = evil
    (r.run_dir / "config.json").write_text(json.dumps(cfg))
    env = json.loads((r.run_dir / "env.json").read_text())
    env["captions"] = {"mean.png": evil}
    (r.run_dir / "env.json").write_text(json.dumps(env))
    for presets in (("quick",), None):
        text = write_report(tmp_path, presets=presets).read_text()
        assert evil not in text and "&lt;script&gt;" in text


def test_a_store_with_only_smoke_runs_says_how_to_see_them(tmp_path):
    run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    text = write_report(tmp_path).read_text()
    assert "No finished runs of preset quick yet" in text and "genlab report --preset smoke" in text
