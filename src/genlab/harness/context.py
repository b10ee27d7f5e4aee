"""RunContext: what a study's ``run`` gets besides its config — seed, device, paths, logging, progress, time
series records, in-study parallelism (:meth:`RunContext.map`), figures (:meth:`RunContext.save_figure`), timings
(:meth:`RunContext.timer`) and checkpoints."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from genlab.harness.io import atomic_write_bytes, atomic_write_json, read_json, to_jsonable

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class RunContext:
    seed: int
    out_dir: Path
    cfg: Any = None
    device: str = "cpu"
    quiet: bool = False
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("genlab.run"))
    timings: dict[str, float] = field(default_factory=dict)
    captions: dict[str, str] = field(default_factory=dict)
    live: Any = None  # a trackers.LiveRun: each record is also sent to MLflow / TensorBoard as it happens

    def __post_init__(self) -> None:
        self.out_dir = Path(self.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)

    # -- randomness ---------------------------------------------------------------------------
    def rng(self, *stream: int | str) -> np.random.Generator:
        """A numpy Generator derived from the run's seed and an optional stream id (e.g. ``ctx.rng("data", 2)``)."""
        return np.random.default_rng(self.seed_for(*stream))

    def seed_for(self, *stream: int | str) -> int:
        """A 32-bit integer seed derived from the run's seed and a stream id; same inputs, same seed."""
        words = [self.seed] + [int.from_bytes(str(s).encode(), "little") % (2**32) for s in stream]
        return int(np.random.SeedSequence(words).generate_state(1)[0])

    def torch_generator(self, *stream: int | str):  # -> torch.Generator (torch imported lazily)
        import torch

        g = torch.Generator(device="cpu")
        g.manual_seed(self.seed_for(*stream))
        return g

    # -- parallelism inside a run -------------------------------------------------------------
    def processes(self, requested: int) -> int:
        """How many processes a study may start for its own independent jobs: ``requested``, or 1 when this
        run already executes in a runner's worker (process pool or Ray), where the runner owns the cores."""
        return 1 if os.environ.get("GENLAB_WORKER") == "1" else max(1, requested)

    def map(self, fn: Callable[[T], R], jobs: Sequence[T], processes: int = 1, desc: str = "") -> list[R]:
        """``[fn(job) for job in jobs]``, on ``ctx.processes(processes)`` spawned worker processes (one torch
        thread each) when that is more than one. ``fn`` must be a module-level function and each job must seed
        itself, so the result never depends on the number of processes. A worker's exception is raised here;
        there is no silent serial fallback, and ``fork`` is never used (unsafe after torch/OpenMP start)."""
        from genlab.harness.workers import map_jobs

        return map_jobs(fn, list(jobs), self.processes(processes), self.progress, desc or "jobs")

    # -- figures and timings ------------------------------------------------------------------
    @staticmethod
    def pyplot() -> Any:
        """matplotlib.pyplot on the non-interactive Agg backend (figures are files, never windows)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt

    def save_figure(self, fig: Any, name: str, caption: str = "", dpi: int = 90) -> Path:
        """Save a matplotlib figure as ``figures/<name>.png``, close it, and remember its caption (what is
        plotted) for the report. Returns the path."""
        plt = self.pyplot()
        path = self.figures_dir / (name if name.endswith(".png") else f"{name}.png")
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        plt.close(fig)
        if caption:
            self.captions[path.name] = caption
        return path

    @contextmanager
    def timer(self, name: str) -> Iterator[None]:
        """Time a block (wall seconds, summed over repeats). Timings go to the run's ``env.json``, never into
        metrics: they measure the machine, not the result."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start

    # -- paths --------------------------------------------------------------------------------
    @property
    def figures_dir(self) -> Path:
        path = self.out_dir / "figures"
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- logging and progress -----------------------------------------------------------------
    def log(self, message: str) -> None:
        self.logger.info(message)
        if not self.quiet:
            print(f"  {message}", file=sys.stderr, flush=True)

    def progress(self, iterable: Iterable[T], total: int | None = None, desc: str = "") -> Iterator[T]:
        """Iterate with progress on stderr: a rich bar with count, elapsed time and ETA on a terminal, a plain
        line every few seconds when piped or logged; silent when the run is quiet (as inside ``reproduce``)."""
        from genlab.harness.progress import track

        return track(iterable, total, desc or "working", self.quiet)

    # -- records (time series) ----------------------------------------------------------------
    def record(self, **values: Any) -> None:
        """Append one line to ``records.jsonl`` (e.g. ``ctx.record(step=10, loss=0.3, arm="full")``)."""
        record = to_jsonable(values)
        with open(self.out_dir / "records.jsonl", "a") as fh:
            fh.write(json.dumps(record) + "\n")
        if self.live is not None:
            self.live.log(record)

    def records(self) -> list[dict[str, Any]]:
        path = self.out_dir / "records.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    # -- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self, state: Mapping[str, Any], name: str = "checkpoint") -> None:
        """Persist a flat mapping atomically: tensors and arrays to ``<name>.safetensors``, everything else
        (JSON-able) to ``<name>.json``. No pickle: loading a checkpoint never executes code."""
        from safetensors.numpy import save

        arrays = {k: _as_array(v) for k, v in state.items() if _is_array(v)}
        rest = {k: v for k, v in state.items() if k not in arrays}
        atomic_write_bytes(self.out_dir / f"{name}.safetensors", save(arrays))
        atomic_write_json(self.out_dir / f"{name}.json", {"arrays": sorted(arrays), "values": to_jsonable(rest)})

    def load_checkpoint(self, name: str = "checkpoint") -> dict[str, Any] | None:
        """The mapping saved by :meth:`save_checkpoint` (arrays as numpy), or None if there is none."""
        meta_path, data_path = self.out_dir / f"{name}.json", self.out_dir / f"{name}.safetensors"
        if not (meta_path.exists() and data_path.exists()):
            return None
        from safetensors.numpy import load

        state = dict(read_json(meta_path)["values"])
        state.update(load(data_path.read_bytes()))
        return state


def _is_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) or hasattr(v, "detach")


def _as_array(v: Any) -> np.ndarray:
    return np.ascontiguousarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
