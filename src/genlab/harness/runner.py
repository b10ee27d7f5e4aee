"""Executing runs: one run (``run_study``), and many runs serially, on a local process pool or on Ray.

Every backend calls the same :func:`execute` on a :class:`RunSpec`, so the metrics are identical for the
same study, config and seed whatever runs them.
"""

from __future__ import annotations

import importlib
import os
import platform
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from genlab.harness.claims import Verdict
from genlab.harness.config import config_to_dict, run_hash
from genlab.harness.context import RunContext
from genlab.harness.errors import ConfigError, GenlabError, RunError
from genlab.harness.io import atomic_write_json, to_jsonable
from genlab.harness.store import (
    DONE,
    FAILED,
    INTERRUPTED,
    RUNNING,
    DamagedRun,
    StoredRun,
    check_run_dir,
    clear_interrupted,
    run_dir,
    run_lock,
)
from genlab.harness.study import get_study
from genlab.harness.trackers import open_live

Backend = Literal["serial", "local", "ray"]
BACKENDS: tuple[str, ...] = ("serial", "local", "ray")


@dataclass(frozen=True)
class RunSpec:
    """Everything that identifies and places one run."""

    study: str
    preset: str = "quick"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    root: str = "runs"
    force: bool = False
    device: str = "cpu"
    quiet: bool = True
    module: str | None = None  # module that registers the study, for studies outside genlab.studies
    track: tuple[str, ...] = ()  # trackers that receive the run's records live (genlab.harness.trackers)


@dataclass
class RunResult:
    study: str
    preset: str
    seed: int
    run_hash: str
    run_dir: Path
    config: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    wall_time: float = 0.0
    skipped: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def resolve(spec: RunSpec) -> tuple[type, Any, str, Path]:
    """Study class, config, hash and directory of a spec (raises ConfigError / UnknownStudyError)."""
    if spec.module:
        importlib.import_module(spec.module)
    if isinstance(spec.seed, bool) or not isinstance(spec.seed, int) or not 0 <= spec.seed < 2**32:
        raise ConfigError(f"--seed must be an integer in [0, 2^32), got {spec.seed!r}")
    check_device(spec.device)
    study_cls = get_study(spec.study)
    cfg = study_cls.config(spec.preset, spec.overrides)
    h = run_hash(study_cls.name, cfg, spec.seed)
    return study_cls, cfg, h, run_dir(Path(spec.root), study_cls.name, spec.preset, h)


def check_device(device: str) -> None:
    """Accept only devices this machine has: cpu, cuda[:N] with CUDA available, mps on Apple silicon."""
    if device == "cpu":
        return
    import torch

    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {device}: this machine has no CUDA device (torch {torch.__version__})")
        index = device.partition(":")[2]
        if index and (not index.isdigit() or int(index) >= torch.cuda.device_count()):
            raise ConfigError(f"--device {device}: there are {torch.cuda.device_count()} CUDA device(s)")
        return
    if device == "mps":
        if not torch.backends.mps.is_available():
            raise ConfigError("--device mps: MPS is not available on this machine")
        return
    raise ConfigError(f"--device must be cpu, cuda, cuda:N or mps, got {device!r}")


def execute(spec: RunSpec) -> RunResult:
    """Run one study (or read it back if already finished and not forced), holding the run's lock so that a
    second process asking for the same run waits and then reads it back. Only a complete run is written as
    finished; a run that raises is recorded as failed with its error, and the error propagates."""
    study_cls, cfg, h, path = resolve(spec)
    check_run_dir(Path(spec.root), path)  # never through a link, never over someone else's files
    result = RunResult(spec.study, spec.preset, spec.seed, h, path, config_to_dict(cfg))
    with run_lock(path, on_wait=lambda: _say_waiting(spec, path)):
        if not spec.force:
            try:
                stored = StoredRun.load(path)
            except DamagedRun:
                stored = None
            if stored is not None:
                result.metrics, result.verdicts = stored.metrics, stored.verdicts
                result.wall_time, result.skipped = float(stored.env.get("wall_time", 0.0)), True
                return result
        if spec.force:
            shutil.rmtree(path, ignore_errors=True)
        else:
            clear_interrupted(path)
        return _compute(study_cls, cfg, spec, path, result)


def _compute(study_cls: type, cfg: Any, spec: RunSpec, path: Path, result: RunResult) -> RunResult:
    path.mkdir(parents=True, exist_ok=True)
    meta = {"study": study_cls.name, "preset": spec.preset, "seed": spec.seed, "hash": result.run_hash}
    atomic_write_json(path / "config.json", {**meta, "config": config_to_dict(cfg)})
    started = datetime.now(UTC).isoformat(timespec="seconds")
    atomic_write_json(path / "env.json", {"status": RUNNING, "started": started, "pid": os.getpid()})
    device = spec.device if study_cls.accelerated else "cpu"
    live = open_live(spec.track, Path(spec.root), study_cls.name, spec.preset, spec.seed, result.run_hash)
    ctx = RunContext(seed=spec.seed, out_dir=path, cfg=cfg, device=device, quiet=spec.quiet, live=live)
    if device != spec.device:  # shown even when quiet: the user asked for something they do not get
        print(f"warning: {study_cls.name} runs on the CPU only (it does not move its models to a device); "
              f"--device {spec.device} is ignored for it", file=sys.stderr, flush=True)
    seed_global_generators(ctx.seed_for("global"))
    study = study_cls()
    t0 = time.perf_counter()
    try:
        metrics = to_jsonable(study.run(cfg, ctx))
        if not isinstance(metrics, dict):
            raise RunError(f"{study_cls.name}.run must return a dict of metrics, got {type(metrics).__name__}")
        with ctx.timer("figures"):
            figures = [Path(p) for p in study.figures(metrics, ctx)]
        verdicts = study_cls.verdicts(metrics, cfg)
    except BaseException as exc:  # Ctrl-C included: never leave a run that looks finished or running
        state = INTERRUPTED if isinstance(exc, KeyboardInterrupt | SystemExit) else FAILED
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        atomic_write_json(path / "env.json", {"status": state, "started": started, "error": error})
        if live is not None:
            live.close(failed=True)
        raise
    if live is not None:
        live.close()
    wall = time.perf_counter() - t0
    atomic_write_json(path / "metrics.json", metrics)
    atomic_write_json(path / "claims.json", [v.to_dict() for v in verdicts])
    atomic_write_json(path / "env.json", _env(spec, started, wall, figures, ctx))  # last: the "done" marker
    result.metrics, result.verdicts, result.wall_time = metrics, verdicts, wall
    return result


def _say_waiting(spec: RunSpec, path: Path) -> None:
    print(f"{spec.study} seed {spec.seed}: another genlab process is computing {path}; waiting for it", file=sys.stderr)


def recheck_runs(root: Path | str) -> tuple[int, list[str]]:
    """Recompute the verdicts of every finished run under ``root`` from its stored metrics and config (no
    re-run) and rewrite its ``claims.json``. Returns (verdicts changed, lines naming runs that could not be
    rechecked: unknown study, or a stored config the study no longer accepts)."""
    from genlab.harness.config import build_config
    from genlab.harness.store import finished_runs
    from genlab.harness.study import all_studies

    changed, skipped = 0, []
    for run in finished_runs(Path(root)):
        study_cls = all_studies().get(run.study)
        if study_cls is None:
            skipped.append(f"{run.path}: no study named {run.study!r}")
            continue
        try:
            cfg = build_config(study_cls.Config, run.config)
        except ConfigError as exc:
            skipped.append(f"{run.path}: {exc}")
            continue
        verdicts = study_cls.verdicts(run.metrics, cfg)
        old = {v.key: v.verdict for v in run.verdicts}
        changed += sum(old.get(v.key) != v.verdict for v in verdicts)
        atomic_write_json(run.path / "claims.json", [v.to_dict() for v in verdicts])
    return changed, skipped


def seed_global_generators(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators, so that code which draws from them (rather than
    from ``ctx.rng``) is still the same for the same run seed in any process."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


def _env(spec: RunSpec, started: str, wall: float, figures: list[Path], ctx: RunContext) -> dict[str, Any]:
    import numpy

    import genlab

    versions = {"python": platform.python_version(), "numpy": numpy.__version__, "genlab": genlab.__version__}
    for name in ("torch", "scipy", "sklearn"):
        mod = sys.modules.get(name)
        if mod is not None:
            versions[name] = getattr(mod, "__version__", "?")
    return {
        "status": DONE,
        "started": started,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_time": round(wall, 3),
        "seed": spec.seed,
        "device": ctx.device,
        "device_requested": spec.device,
        "host": platform.node(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
        "figures": [str(p.name) for p in figures],
        "captions": {p.name: ctx.captions[p.name] for p in figures if p.name in ctx.captions},
        "timings": {k: round(v, 3) for k, v in ctx.timings.items()},
    }


def execute_safely(spec: RunSpec) -> RunResult:
    """:func:`execute`, with a failure turned into a RunResult carrying the error (for pools and Ray)."""
    from genlab.harness.torch_setup import setup_torch

    if os.environ.get("GENLAB_WORKER") == "1":
        setup_torch(1)
    try:
        return execute(spec)
    except Exception as exc:  # a failed run must not take the others down
        try:
            _, cfg, h, path = resolve(spec)
            config = config_to_dict(cfg)
        except GenlabError:
            h, path, config = "", Path(spec.root), {}
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return RunResult(spec.study, spec.preset, spec.seed, h, path, config, error=detail)


def run_study(
    study: str,
    preset: str = "quick",
    overrides: Mapping[str, Any] | None = None,
    seed: int = 0,
    root: str | Path = "runs",
    force: bool = False,
    device: str = "cpu",
    quiet: bool = True,
    track: tuple[str, ...] = (),
) -> RunResult:
    """Run one study in this process and return its result (raises on failure); ``track`` streams its records
    to those trackers as it runs."""
    return execute(RunSpec(study, preset, dict(overrides or {}), seed, str(root), force, device, quiet,
                           track=tuple(track)))  # fmt: skip


def prepare(specs: Iterable[RunSpec], backend: str = "serial", jobs: int = 1) -> list[RunSpec]:
    """Validate a batch before any work starts: backend, jobs, study names and configs. Each spec gets the
    module that registers its study, so worker processes can import studies registered outside genlab.studies."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if jobs < 1:
        raise ConfigError(f"--jobs must be >= 1, got {jobs}")
    return [replace(spec, module=spec.module or resolve(spec)[0].__module__) for spec in specs]


def run_many(
    specs: Iterable[RunSpec],
    backend: Backend = "serial",
    jobs: int = 1,
    address: str | None = None,
    on_done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Run specs on a backend; results come back in the order of ``specs``. Failures are results with ``error``."""
    specs = prepare(specs, backend, jobs)
    if backend == "serial" or (backend == "local" and (jobs == 1 or len(specs) <= 1)):
        results = []
        for spec in specs:
            results.append(execute_safely(spec))
            if on_done:
                on_done(results[-1])
        return results
    if backend == "local":
        return _run_pool(specs, jobs, on_done)
    return _run_ray(specs, jobs, address, on_done)


def _longest_first(specs: list[RunSpec]) -> list[int]:
    """Indices of ``specs``, longest expected run first (the typical times measured for the release; unknown ones
    last): a pool that starts the long runs first does not end waiting on one of them."""
    from genlab.harness.study import typical_seconds

    def expected(spec: RunSpec) -> float:
        return (typical_seconds(spec.study) or {}).get(spec.preset, 0.0)

    return sorted(range(len(specs)), key=lambda i: -expected(specs[i]))


def _run_pool(specs: list[RunSpec], jobs: int, on_done: Callable[[RunResult], None] | None) -> list[RunResult]:
    from genlab.harness.workers import run_in_pool

    order = _longest_first(specs)
    done = run_in_pool(execute_safely, [specs[i] for i in order], jobs,
                       on_done=(lambda _i, r: on_done(r)) if on_done else None)  # fmt: skip
    results: list[RunResult] = [None] * len(specs)  # type: ignore[list-item]
    for i, r in zip(order, done):
        results[i] = r
    return results


def _run_ray(
    specs: list[RunSpec], jobs: int, address: str | None, on_done: Callable[[RunResult], None] | None
) -> list[RunResult]:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("the ray backend needs Ray: pip install 'genlab[ray]'") from exc

    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True}
        if address:
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = jobs
        kwargs["runtime_env"] = {"env_vars": {"GENLAB_WORKER": "1", "OMP_NUM_THREADS": "1"}}
        ray.init(**kwargs)
    try:
        remote = ray.remote(num_cpus=1)(execute_safely)
        # Run directories are absolute so that workers on other nodes with a shared filesystem write the same store.
        refs = [remote.remote(_absolute(spec)) for spec in specs]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[RunResult | None] = [None] * len(specs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            i = index[done[0]]
            results[i] = ray.get(done[0])
            if on_done:
                on_done(results[i])
        return [r for r in results if r is not None]
    finally:
        if started_here:
            ray.shutdown()


def _absolute(spec: RunSpec) -> RunSpec:
    return replace(spec, root=str(Path(spec.root).resolve()))
