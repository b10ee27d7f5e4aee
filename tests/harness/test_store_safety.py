"""The run store touches nothing outside itself and one damaged run never breaks the store (issue 37: items 1, 4).

A symbolic link below the store's root is never followed (run refuses it, one line, exit 2; list and report leave
it out); a folder holding files genlab did not write is never cleared; and any damage to a stored run's files
(wrong types, absurd nesting, a figure that is a folder or a broken link) is a "damaged run left out" warning for
list, report, show and reproduce, and a recompute for run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genlab.harness.runner import run_study
from genlab.harness.store import DamagedRun, StoredRun, check_run_dir, clear_interrupted, scan


@pytest.fixture
def toy_dir(tmp_path) -> Path:
    """Where toy-mean's smoke run with seed 0 lives under tmp_path/runs (computed once, then removed)."""
    result = run_study("toy-mean", "smoke", seed=0, root=tmp_path / "probe")
    return tmp_path / "runs" / result.run_dir.relative_to(tmp_path / "probe")


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "keep").write_text("x")
    (victim / "sub" / "deep").write_text("y")
    return victim


def _untouched(victim: Path) -> bool:
    return sorted(str(p.relative_to(victim)) for p in victim.rglob("*")) == ["keep", "sub", "sub/deep"]


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("level", [0, 1, 2])  # the run folder, its preset folder, its study folder
def test_a_symlink_in_the_store_is_refused_and_its_target_untouched(tmp_path, toy_dir, cli, level, force):
    victim = _victim(tmp_path)
    link = toy_dir.parents[level - 1] if level else toy_dir
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim, target_is_directory=True)
    code, _, err = cli("run", "toy-mean", "-p", "smoke", "--root", str(tmp_path / "runs"),
                        *(["--force"] if force else []))  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1 and "symbolic link" in err and str(link) in err
    assert _untouched(victim)


def test_a_symlinked_run_is_left_out_when_reading(tmp_path, toy_dir, cli):
    real = run_study("toy-mean", "smoke", seed=0, root=tmp_path / "elsewhere").run_dir
    toy_dir.parent.mkdir(parents=True)
    toy_dir.symlink_to(real, target_is_directory=True)
    runs, damaged = scan(tmp_path / "runs")
    assert runs == [] and len(damaged) == 1 and "symbolic link" in damaged[0]
    code, _, err = cli("list", "--root", str(tmp_path / "runs"))
    assert code == 0 and "damaged run left out" in err


def test_a_folder_with_foreign_files_is_never_cleared(tmp_path, toy_dir, cli):
    toy_dir.mkdir(parents=True)
    (toy_dir / "thesis.tex").write_text("years of work")
    code, _, err = cli("run", "toy-mean", "-p", "smoke", "--root", str(tmp_path / "runs"))
    assert code == 2 and "did not write" in err and (toy_dir / "thesis.tex").read_text() == "years of work"
    with pytest.raises(Exception, match="did not write"):
        check_run_dir(tmp_path / "runs", toy_dir)


def test_clearing_an_interrupted_run_removes_a_link_not_its_target(tmp_path):
    victim = _victim(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "env.json").write_text('{"status": "failed"}')
    (run / "figures").symlink_to(victim, target_is_directory=True)
    clear_interrupted(run)
    assert list(run.iterdir()) == [] and _untouched(victim)


def _edit(name: str, change):
    def apply(d: Path) -> None:
        data = json.loads((d / name).read_text())
        change(data)
        (d / name).write_text(json.dumps(data))

    return apply


def _deep(n: int) -> str:
    return '{"a": ' * n + "1" + "}" * n


def _figure(kind: str):
    def apply(d: Path) -> None:
        fig = d / "figures" / "extra.png"
        fig.parent.mkdir(exist_ok=True)
        if kind == "folder":
            fig.mkdir()
        else:
            fig.symlink_to(d / "no-such-file.png")

    return apply


DAMAGE = {
    "seed is text": _edit("config.json", lambda c: c.update(seed="abc")),
    "seed is null": _edit("config.json", lambda c: c.update(seed=None)),
    "seed is negative": _edit("config.json", lambda c: c.update(seed=-3)),
    "config is a number": _edit("config.json", lambda c: c.update(config=5)),
    "config is a list": _edit("config.json", lambda c: c.update(config=[["n", 1]])),
    "preset is not the folder's": _edit("config.json", lambda c: c.update(preset="<script>alert(1)</script>")),
    "metrics nested 200,000 deep": lambda d: (d / "metrics.json").write_text(_deep(200_000)),
    "metrics nested 500 deep": lambda d: (d / "metrics.json").write_text(_deep(500)),
    "env nested 200,000 deep": lambda d: (d / "env.json").write_text('{"status": "done", "x": ' + _deep(200_000) + "}"),
    "wall_time is text": _edit("env.json", lambda e: e.update(wall_time="abc")),
    "wall_time is null": _edit("env.json", lambda e: e.update(wall_time=None)),
    "captions is a list": _edit("env.json", lambda e: e.update(captions=[])),
    "versions is text": _edit("env.json", lambda e: e.update(versions="x")),
    "wall_time is 10**400": _edit("env.json", lambda e: e.update(wall_time=10**400)),
    "a figure is a folder": _figure("folder"),
    "a figure is a broken link": _figure("link"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_every_damage_is_a_run_left_out_never_a_failure(tmp_path, cli, damage):
    root = tmp_path / "runs"
    good = run_study("toy-mean", "smoke", seed=0, root=root)
    bad = run_study("toy-mean", "smoke", seed=1, root=root)
    DAMAGE[damage](bad.run_dir)
    with pytest.raises(DamagedRun):
        StoredRun.load(bad.run_dir)
    runs, damaged = scan(root)
    assert [r.seed for r in runs] == [0] and len(damaged) == 1 and str(bad.run_dir) in damaged[0]
    for args in (["list"], ["report", str(root), "--preset", "smoke"]):
        code, _, err = cli(*args, *(["--root", str(root)] if args[0] != "report" else []))
        assert code == 0, err
        assert "damaged run left out" in err and str(bad.run_dir) in err
    assert cli("show", "toy-mean", "--root", str(root))[0] == 0
    again = run_study("toy-mean", "smoke", seed=1, root=root)
    assert not again.skipped and again.metrics == bad.metrics and scan(root)[1] == []
    assert run_study("toy-mean", "smoke", seed=0, root=root).skipped and good.run_dir.exists()


JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.just(10**400) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
FILES = ("config.json", "metrics.json", "claims.json", "env.json")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FILES), key=st.text(max_size=8), value=JSON, replace_all=st.booleans())
def test_any_json_in_a_stored_file_is_read_or_left_out(tmp_path_factory, name, key, value, replace_all):
    """Whatever valid JSON replaces a stored file (or one of its keys), the run reads back or is left out as
    damaged; and a run that reads back renders in the report."""
    from genlab.harness.report import write_report

    root = tmp_path_factory.mktemp("store")
    run = run_study("toy-mean", "smoke", seed=0, root=root).run_dir
    data = json.loads((run / name).read_text())
    if replace_all or not isinstance(data, dict):
        data = value
    else:
        data[key if key else next(iter(data))] = value
    (run / name).write_text(json.dumps(data))
    try:
        StoredRun.load(run)
    except DamagedRun:
        assert len(scan(root)[1]) <= 1
        return
    write_report(root, root / "r.html", presets=None)


@pytest.mark.parametrize("damage", ["seed is text", "metrics nested 200,000 deep", "a figure is a folder"])
def test_reproduce_recomputes_a_damaged_run(tmp_path, cli, damage):
    root = tmp_path / "runs"
    bad = run_study("toy-mean", "smoke", seed=1, root=root)
    DAMAGE[damage](bad.run_dir)
    code, _, err = cli("reproduce", "toy-mean", "-p", "smoke", "--seeds", "2", "--backend", "serial",
                        "--root", str(root), "--quiet")  # fmt: skip
    assert code == 0, err
    assert StoredRun.load(bad.run_dir).metrics == bad.metrics and scan(root)[1] == []
