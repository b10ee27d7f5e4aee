"""RunContext: what a study's ``run`` gets besides its config — seed, device, paths, logging, progress,
time series records and checkpoints."""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from genlab.harness.io import atomic_write_bytes, to_jsonable

T = TypeVar("T")


@dataclass
class RunContext:
    seed: int
    out_dir: Path
    cfg: Any = None
    device: str = "cpu"
    quiet: bool = False
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("genlab.run"))

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
        """Iterate with a progress bar on stderr (rich), silent when quiet or not a terminal."""
        if self.quiet or not sys.stderr.isatty():
            yield from iterable
            return
        from rich.progress import Progress

        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        with Progress(transient=True) as bar:
            task = bar.add_task(desc or "working", total=total)
            for item in iterable:
                yield item
                bar.advance(task)

    # -- records (time series) ----------------------------------------------------------------
    def record(self, **values: Any) -> None:
        """Append one line to ``records.jsonl`` (e.g. ``ctx.record(step=10, loss=0.3, arm="full")``)."""
        with open(self.out_dir / "records.jsonl", "a") as fh:
            fh.write(json.dumps(to_jsonable(values)) + "\n")

    def records(self) -> list[dict[str, Any]]:
        path = self.out_dir / "records.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    # -- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self, state: Any, name: str = "checkpoint") -> None:
        """Persist any picklable state (torch tensors included) atomically; resumes read it back."""
        atomic_write_bytes(self.out_dir / f"{name}.pkl", pickle.dumps(state))

    def load_checkpoint(self, name: str = "checkpoint") -> Any | None:
        path = self.out_dir / f"{name}.pkl"
        return pickle.loads(path.read_bytes()) if path.exists() else None
