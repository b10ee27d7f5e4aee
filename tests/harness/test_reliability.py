"""Failure behaviour of the run store: damaged runs, concurrent runs, SIGKILL of a pool's parent, Ctrl-C, and
runs that fail part-way."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from genlab.harness.runner import run_study
from genlab.harness.store import scan, status

CLI = [sys.executable, "-c", "import toy_studies; from genlab.cli import main; main()"]


def _cli(*args, env=None, **kw):
    return subprocess.run([*CLI, *args], env={**os.environ, **(env or {})}, capture_output=True, text=True, **kw)


DAMAGE = {
    "truncated metrics": lambda d: (d / "metrics.json").write_text('{"mean": 0.'),
    "truncated claims": lambda d: (d / "claims.json").write_text("[{"),
    "truncated config": lambda d: (d / "config.json").write_text('{"study": "toy'),
    "deleted claims": lambda d: (d / "claims.json").unlink(),
    "garbage env": lambda d: (d / "env.json").write_bytes(b"\xff\xfe\x00garbage"),
    "claims of another shape": lambda d: (d / "claims.json").write_text('[{"claim": 3, "verdict": "maybe"}]'),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_run_is_named_left_out_and_recomputed(tmp_path, damage):
    good = run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    bad = run_study("toy-mean", "smoke", seed=1, root=tmp_path)
    DAMAGE[damage](bad.run_dir)
    runs, damaged = scan(tmp_path)
    assert [r.seed for r in runs] == [0] and len(damaged) == 1 and str(bad.run_dir) in damaged[0]
    for args in (["report", str(tmp_path), "--preset", "smoke"], ["list", "--root", str(tmp_path)]):
        out = _cli(*args)
        assert out.returncode == 0, out.stderr
        assert "damaged run left out" in out.stderr and str(bad.run_dir) in out.stderr
    again = run_study("toy-mean", "smoke", seed=1, root=tmp_path)
    assert not again.skipped and again.metrics == bad.metrics and scan(tmp_path)[1] == []
    assert run_study("toy-mean", "smoke", seed=0, root=tmp_path).skipped and good.run_dir.exists()


def _run_dirs(root: Path) -> list[Path]:
    return [p for p in (root / "toy-mean" / "smoke").iterdir() if p.is_dir()]


def _wait_for(path: Path, proc, timeout=60.0, count=1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(list(path.parent.glob(path.name + ".*"))) >= count:
            return sorted(int(p.suffix[1:]) for p in path.parent.glob(path.name + ".*"))
        if proc.poll() is not None:
            raise AssertionError(f"exited early: {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError("never started")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def _all_gone(pids, timeout=15.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_two_processes_on_the_same_run_do_not_corrupt_it(tmp_path):
    marker = tmp_path / "started"
    env = {**os.environ, "TOY_SLEEP": "10", "TOY_STARTED": str(marker)}  # long enough for the second to start
    args = ["run", "toy-mean", "--preset", "smoke", "--root", str(tmp_path / "store"), "--json"]
    first = subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(marker, first)
    second = _cli(*args, env={"TOY_SLEEP": "0", "TOY_STARTED": str(marker)})
    out_first, err_first = first.communicate(timeout=60)
    assert first.returncode == 0 and second.returncode == 0, (err_first, second.stderr)
    assert "waiting for it" in second.stderr and json.loads(second.stdout)["skipped"] is True
    assert json.loads(out_first)["claims"] == json.loads(second.stdout)["claims"]
    (run_dir,) = _run_dirs(tmp_path / "store")
    assert len((run_dir / "records.jsonl").read_text().splitlines()) == 3 and status(run_dir) == "done"


@pytest.mark.slow
def test_sigkill_of_the_parent_takes_the_pool_workers_with_it(tmp_path):
    marker = tmp_path / "started"
    env = {**os.environ, "TOY_SLEEP": "60", "TOY_STARTED": str(marker)}
    args = ["reproduce", "toy-mean", "-p", "smoke", "--seeds", "2", "--jobs", "2", "--root", str(tmp_path), "-q"]
    proc = subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = _wait_for(marker, proc, count=2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _all_gone(workers), "orphan workers kept computing"
    assert not any(status(d) == "done" for d in _run_dirs(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_promptly_and_says_so(tmp_path, jobs):
    marker = tmp_path / "started"
    env = {**os.environ, "TOY_SLEEP": "60", "TOY_STARTED": str(marker)}
    args = ["reproduce", "toy-mean", "-p", "smoke", "--seeds", "2", "--jobs", jobs, "--root", str(tmp_path), "-q"]
    # a terminal's foreground job has the default Ctrl-C handling, even when these tests run in a background job
    # (which a non-interactive shell starts with SIGINT ignored, an ignore its children would inherit)
    proc = subprocess.Popen(
        [*CLI, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    workers = _wait_for(marker, proc)
    t0 = time.time()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    _, err = proc.communicate(timeout=30)
    assert time.time() - t0 < 15 and proc.returncode == 130
    assert "interrupted; finished runs are kept" in err
    assert _all_gone(workers)
    states = {status(d) for d in _run_dirs(tmp_path)}
    assert "running" not in states and "done" not in states


def test_a_run_that_fails_part_way_is_recorded_failed_and_never_finished(tmp_path, monkeypatch):
    import toy_studies

    def broken_figures(self, metrics, ctx):
        raise RuntimeError("figure backend exploded")

    monkeypatch.setattr(toy_studies.ToyMean, "figures", broken_figures)
    with pytest.raises(RuntimeError):
        run_study("toy-mean", "smoke", root=tmp_path)
    (run_dir,) = _run_dirs(tmp_path)
    env = json.loads((run_dir / "env.json").read_text())
    assert env["status"] == "failed" and "figure backend exploded" in env["error"]
    assert not (run_dir / "metrics.json").exists() and not (run_dir / "claims.json").exists()
    assert scan(tmp_path) == ([], [])
