"""The run context's shared services: ctx.map, ctx.save_figure, ctx.timer and pickle-free checkpoints."""

import json
import os

import numpy as np
import pytest

from genlab.harness.context import RunContext
from genlab.harness.runner import run_study


def _square_with_worker_flag(x: int) -> tuple[int, str | None, int]:
    import torch

    return x * x, os.environ.get("GENLAB_WORKER"), torch.get_num_threads()


def _boom(x: int) -> int:
    if x == 2:
        raise ValueError("job 2 failed")
    return x


def test_map_is_ordered_and_the_same_serial_or_in_processes(tmp_path):
    ctx = RunContext(seed=0, out_dir=tmp_path, quiet=True)
    serial = ctx.map(_square_with_worker_flag, range(5), processes=1)
    pooled = ctx.map(_square_with_worker_flag, range(5), processes=2)
    assert [r[0] for r in serial] == [r[0] for r in pooled] == [0, 1, 4, 9, 16]
    assert {r[1] for r in pooled} == {"1"} and {r[2] for r in pooled} == {1}  # spawned workers, one thread


def test_map_raises_a_worker_error_and_never_falls_back_silently(tmp_path):
    ctx = RunContext(seed=0, out_dir=tmp_path, quiet=True)
    with pytest.raises(ValueError, match="job 2 failed"):
        ctx.map(_boom, range(4), processes=2)


def test_map_inside_a_runner_worker_runs_serially(tmp_path, monkeypatch):
    monkeypatch.setenv("GENLAB_WORKER", "1")
    ctx = RunContext(seed=0, out_dir=tmp_path, quiet=True)
    assert ctx.processes(4) == 1
    assert [r[1] for r in ctx.map(_square_with_worker_flag, range(3), processes=4)] == ["1"] * 3


def test_save_figure_and_timer_land_in_env_not_metrics(tmp_path):
    r = run_study("toy-mean", "smoke", seed=0, root=tmp_path)
    env = json.loads((r.run_dir / "env.json").read_text())
    assert env["figures"] == ["mean.png"] and env["captions"] == {"mean.png": "the sample mean"}
    assert "figures" in env["timings"] and not any("time" in k for k in r.metrics)


def test_timer_sums_repeats(tmp_path):
    ctx = RunContext(seed=0, out_dir=tmp_path, quiet=True)
    for _ in range(2):
        with ctx.timer("fit"):
            pass
    assert set(ctx.timings) == {"fit"} and ctx.timings["fit"] >= 0


def test_checkpoints_round_trip_without_pickle(tmp_path):
    import torch

    ctx = RunContext(seed=0, out_dir=tmp_path, quiet=True)
    assert ctx.load_checkpoint() is None
    ctx.save_checkpoint({"w": torch.arange(6.0).reshape(2, 3), "b": np.ones(3), "step": 7, "note": "x"})
    state = ctx.load_checkpoint()
    assert state["step"] == 7 and state["note"] == "x"
    np.testing.assert_array_equal(state["w"], np.arange(6.0).reshape(2, 3))
    assert not list(tmp_path.glob("*.pkl"))
