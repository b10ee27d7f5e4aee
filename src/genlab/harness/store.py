"""The run store: ``<root>/<study>/<preset>/<hash>/`` with config, metrics, records, claims, env and figures.

A run directory is *finished* when ``env.json`` says ``"status": "done"`` (it is written last, atomically).
Anything else is an interrupted run: it is cleared and restarted, keeping ``checkpoint*.pkl`` (and the
records written beside them) so a study that supports it can resume.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genlab.harness.claims import Verdict
from genlab.harness.io import read_json

DONE = "done"


def run_dir(root: Path, study: str, preset: str, run_hash: str) -> Path:
    return Path(root) / study / preset / run_hash


def is_finished(path: Path) -> bool:
    env = Path(path) / "env.json"
    if not env.exists():
        return False
    try:
        return read_json(env).get("status") == DONE
    except ValueError:  # a torn file cannot happen with atomic writes, but a hand-edited one can
        return False


def clear_interrupted(path: Path) -> None:
    """Remove what an interrupted attempt left, except checkpoints (and records if a checkpoint exists)."""
    path = Path(path)
    if not path.exists():
        return
    has_checkpoint = any(path.glob("checkpoint*.pkl"))
    for child in path.iterdir():
        keep = child.name.startswith("checkpoint") or (has_checkpoint and child.name == "records.jsonl")
        if keep:
            continue
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()


@dataclass
class StoredRun:
    """A finished run read back from disk."""

    path: Path
    study: str
    preset: str
    seed: int
    run_hash: str
    config: dict[str, Any]
    metrics: dict[str, Any]
    verdicts: list[Verdict]
    env: dict[str, Any]
    figures: list[Path] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> StoredRun:
        path = Path(path)
        meta = read_json(path / "config.json")
        claims = read_json(path / "claims.json") if (path / "claims.json").exists() else []
        return cls(
            path=path,
            study=meta["study"],
            preset=meta["preset"],
            seed=meta["seed"],
            run_hash=meta["hash"],
            config=meta["config"],
            metrics=read_json(path / "metrics.json"),
            verdicts=[Verdict.from_dict(c) for c in claims],
            env=read_json(path / "env.json"),
            figures=sorted((path / "figures").glob("*.png")),
        )


def finished_runs(root: Path) -> list[StoredRun]:
    """Every finished run under ``root``, oldest first."""
    root = Path(root)
    if not root.exists():
        return []
    runs = [StoredRun.load(p.parent) for p in root.glob("*/*/*/env.json") if is_finished(p.parent)]
    return sorted(runs, key=lambda r: r.env.get("finished", ""))
