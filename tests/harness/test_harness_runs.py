import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from genlab.harness.claims import NOT_REPRODUCED, REPRODUCED
from genlab.harness.runner import RunSpec, execute, run_many, run_study
from genlab.harness.store import finished_runs, is_finished


def test_run_writes_the_store_and_computes_verdicts(tmp_path):
    r = run_study("toy-mean", "smoke", seed=3, root=tmp_path)
    d = r.run_dir
    assert d.parent == tmp_path / "toy-mean" / "smoke"
    for name in ("config.json", "metrics.json", "claims.json", "env.json", "records.jsonl", "figures/mean.png"):
        assert (d / name).exists(), name
    meta = json.loads((d / "config.json").read_text())
    assert meta["seed"] == 3 and meta["config"]["n"] == 50
    assert [v.verdict for v in r.verdicts] == [REPRODUCED, REPRODUCED if r.metrics["mean"] < 0 else NOT_REPRODUCED]
    assert r.verdicts[0].numbers["err"] == pytest.approx(abs(r.metrics["mean"] - 0.5))
    assert len((d / "records.jsonl").read_text().splitlines()) == 3
    assert not list(d.glob("**/*.tmp"))


def test_same_seed_same_numbers_different_seed_different(tmp_path):
    a = run_study("toy-mean", "smoke", seed=1, root=tmp_path / "a")
    b = run_study("toy-mean", "smoke", seed=1, root=tmp_path / "b")
    c = run_study("toy-mean", "smoke", seed=2, root=tmp_path / "c")
    assert a.metrics == b.metrics and a.run_hash == b.run_hash
    assert a.metrics["mean"] != c.metrics["mean"]


def test_finished_runs_are_skipped_unless_forced(tmp_path):
    first = run_study("toy-mean", "smoke", root=tmp_path)
    stamp = (first.run_dir / "env.json").stat().st_mtime_ns
    again = run_study("toy-mean", "smoke", root=tmp_path)
    assert again.skipped and again.metrics == first.metrics
    assert (first.run_dir / "env.json").stat().st_mtime_ns == stamp
    forced = run_study("toy-mean", "smoke", root=tmp_path, force=True)
    assert not forced.skipped and forced.metrics == first.metrics
    assert len((first.run_dir / "records.jsonl").read_text().splitlines()) == 3  # not appended twice


def test_killed_run_leaves_finished_runs_intact_and_reruns_cleanly(tmp_path):
    done = run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    done_bytes = {p.name: p.read_bytes() for p in done.run_dir.glob("*.json")}
    marker = tmp_path / "started"
    env = {**os.environ, "TOY_SLEEP": "60", "TOY_STARTED": str(marker)}
    cmd = [sys.executable, "-c", "import toy_studies; from genlab.cli import main; main()"]
    args = ["run", "toy-mean", "--preset", "smoke", "--seed", "1", "--root", str(tmp_path), "--quiet"]
    proc = subprocess.Popen(cmd + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not marker.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.stderr.read().decode() if proc.poll() is not None else "run never started"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    interrupted = next(p for p in (tmp_path / "toy-mean" / "smoke").iterdir() if p != done.run_dir)
    assert not is_finished(interrupted) and not (interrupted / "metrics.json").exists()
    assert {p.name: p.read_bytes() for p in done.run_dir.glob("*.json")} == done_bytes
    assert [r.seed for r in finished_runs(tmp_path)] == [0]
    rerun = run_study("toy-mean", "smoke", seed=1, root=tmp_path)
    assert not rerun.skipped and rerun.run_dir == interrupted and is_finished(interrupted)
    assert len((interrupted / "records.jsonl").read_text().splitlines()) == 3  # stale records were cleared
    assert sorted(r.seed for r in finished_runs(tmp_path)) == [0, 1]


def _specs(root, seeds=(0, 1, 2)):
    return [RunSpec("toy-mean", "smoke", {"n": 200}, s, str(root)) for s in seeds]


def test_process_pool_matches_serial(tmp_path):
    serial = run_many(_specs(tmp_path / "serial"), "serial")
    pool = run_many(_specs(tmp_path / "pool"), "local", jobs=2)
    assert [r.metrics for r in pool] == [r.metrics for r in serial]
    assert [r.seed for r in pool] == [0, 1, 2]


def test_the_pool_starts_the_longest_runs_first_and_returns_results_in_spec_order(tmp_path):
    from genlab.harness.runner import _longest_first

    specs = [RunSpec(name, "quick", {}, 0, str(tmp_path)) for name in ("phi-curve", "toy-mean", "dit-locality",
                                                                       "margin-bounds")]
    assert [specs[i].study for i in _longest_first(specs)] == ["dit-locality", "phi-curve", "margin-bounds",
                                                               "toy-mean"]  # toy-mean has no typical time
    mixed = [RunSpec("toy-mean", "smoke", {"n": 200}, s, str(tmp_path / "mixed")) for s in (2, 0, 1)]
    assert [r.seed for r in run_many(mixed, "local", jobs=2)] == [2, 0, 1]


def test_a_failing_run_does_not_stop_the_others(tmp_path):
    specs = [*_specs(tmp_path, (0,)), RunSpec("toy-mean", "smoke", {"fail": True}, 1, str(tmp_path))]
    results = run_many(specs, "local", jobs=2)
    assert results[0].ok and not results[1].ok and "asked to fail" in results[1].error
    assert not is_finished(results[1].run_dir)


@pytest.mark.slow
def test_ray_matches_serial(tmp_path):
    pytest.importorskip("ray")
    serial = run_many(_specs(tmp_path / "serial"), "serial")
    ray_results = run_many(_specs(tmp_path / "ray"), "ray", jobs=2)
    assert [r.metrics for r in ray_results] == [r.metrics for r in serial]
    assert all(Path(r.run_dir).is_absolute() and is_finished(r.run_dir) for r in ray_results)


def test_execute_rejects_non_dict_metrics(tmp_path, monkeypatch):
    import toy_studies

    monkeypatch.setattr(toy_studies.ToyMean, "run", lambda self, cfg, ctx: [1, 2])
    with pytest.raises(Exception, match="must return a dict"):
        execute(RunSpec("toy-mean", "smoke", root=str(tmp_path)))


def test_global_generators_are_seeded_per_run(tmp_path, monkeypatch):
    import random

    import numpy as np
    import torch
    import toy_studies

    def run(self, cfg, ctx):
        return {"py": random.random(), "np": float(np.random.rand()), "torch": float(torch.rand(1))}

    monkeypatch.setattr(toy_studies.ToyMean, "run", run)
    monkeypatch.setattr(toy_studies.ToyMean, "figures", lambda self, m, ctx: [])
    a = run_study("toy-mean", "smoke", seed=5, root=tmp_path / "a").metrics
    random.random(), np.random.rand(), torch.rand(3)  # disturb the global state between runs
    b = run_study("toy-mean", "smoke", seed=5, root=tmp_path / "b").metrics
    c = run_study("toy-mean", "smoke", seed=6, root=tmp_path / "c").metrics
    assert a == b and a != c


def test_store_files_get_ordinary_permissions(tmp_path):
    import stat

    from genlab.harness.io import _umask

    r = run_study("toy-mean", "smoke", root=tmp_path)
    mode = stat.S_IMODE((r.run_dir / "metrics.json").stat().st_mode)
    assert mode == 0o666 & ~_umask()


def test_studies_run_their_own_jobs_serially_inside_runner_workers(tmp_path, monkeypatch):
    from genlab.harness.context import RunContext

    ctx = RunContext(seed=0, out_dir=tmp_path)
    monkeypatch.delenv("GENLAB_WORKER", raising=False)
    assert ctx.processes(4) == 4 and ctx.processes(0) == 1
    monkeypatch.setenv("GENLAB_WORKER", "1")
    assert ctx.processes(4) == 1


