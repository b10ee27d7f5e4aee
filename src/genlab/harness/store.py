"""The run store: ``<root>/<study>/<preset>/<hash>/`` with config, metrics, records, claims, env and figures.

A run directory is *finished* when ``env.json`` says ``"status": "done"`` (it is written last, atomically) and
its config, metrics and claims files read back. A directory that claims to be done but whose files are torn,
missing or not what genlab writes is *damaged*: it is reported by path and treated as unfinished, so ``run`` and
``reproduce`` recompute it while ``report`` and ``list`` show everything else. Anything else is an interrupted
(or failed) run: it is cleared and restarted, keeping ``checkpoint*`` files (and the records written beside
them) so a study that supports it can resume.

Each run has a lock file beside its directory (``.<hash>.lock``): two processes never compute, clear or write
the same run at once; the second waits and then reads the first's result.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genlab.harness.claims import Verdict
from genlab.harness.io import read_json

DONE = "done"
FAILED = "failed"
RUNNING = "running"
INTERRUPTED = "interrupted"


class DamagedRun(ValueError):
    """A run directory marked done whose files cannot be read back; the message names the file."""


def run_dir(root: Path, study: str, preset: str, run_hash: str) -> Path:
    return Path(root) / study / preset / run_hash


def status(path: Path) -> str | None:
    """The run's state: done / running / failed / interrupted, or None if there is no readable ``env.json``.
    A directory marked running whose lock nobody holds was left by a process that died: it reads
    ``interrupted``."""
    try:
        env = read_json(Path(path) / "env.json")
    except (OSError, ValueError):
        return None
    state = env.get("status") if isinstance(env, dict) else None
    if state == RUNNING and not _locked(Path(path)):
        return INTERRUPTED
    return state


def _lock_file(path: Path) -> Path:
    return path.parent / f".{path.name}.lock"


def _locked(path: Path) -> bool:
    from filelock import FileLock, Timeout

    lock_path = _lock_file(path)
    if not lock_path.exists():
        return False
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def is_finished(path: Path) -> bool:
    """Done and every file readable: a damaged run is not finished (it will be recomputed)."""
    try:
        StoredRun.load(path)
    except DamagedRun:
        return False
    return True


@contextmanager
def run_lock(path: Path, on_wait: Any = None) -> Iterator[None]:
    """Hold the run's lock (a file beside its directory). If another process holds it, call ``on_wait()`` once
    and block until it is released."""
    from filelock import FileLock, Timeout

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(_lock_file(path)))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_wait is not None:
            on_wait()
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def clear_interrupted(path: Path) -> None:
    """Remove what an interrupted or failed attempt left, except checkpoints (and records if a checkpoint
    exists). Call it only while holding the run's lock."""
    path = Path(path)
    if not path.exists():
        return
    has_checkpoint = any(path.glob("checkpoint*"))
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
        """Read a finished run; raises :class:`DamagedRun` naming the first file that is missing or torn (or
        when the run is not finished)."""
        path = Path(path)
        env = _read(path / "env.json")
        if not isinstance(env, dict) or env.get("status") != DONE:
            raise DamagedRun(f"{path / 'env.json'}: the run is not finished")
        meta, metrics, claims = (_read(path / name) for name in ("config.json", "metrics.json", "claims.json"))
        if not (isinstance(meta, dict) and {"study", "preset", "seed", "hash", "config"} <= set(meta)):
            raise DamagedRun(f"{path / 'config.json'}: not a genlab run config")
        if not isinstance(metrics, dict):
            raise DamagedRun(f"{path / 'metrics.json'}: metrics are not a JSON object")
        if not isinstance(claims, list):
            raise DamagedRun(f"{path / 'claims.json'}: claims are not a JSON list")
        try:
            verdicts = [Verdict.from_dict(c) for c in claims]
        except (ValueError, TypeError, AttributeError) as exc:
            raise DamagedRun(f"{path / 'claims.json'}: {exc}") from None
        return cls(
            path=path,
            study=str(meta["study"]),
            preset=str(meta["preset"]),
            seed=int(meta["seed"]),
            run_hash=str(meta["hash"]),
            config=dict(meta["config"]),
            metrics=metrics,
            verdicts=verdicts,
            env=env,
            figures=sorted((path / "figures").glob("*.png")),
        )


def _read(path: Path) -> Any:
    try:
        return read_json(path)
    except FileNotFoundError:
        raise DamagedRun(f"{path}: missing") from None
    except (OSError, ValueError) as exc:  # torn or non-JSON (UnicodeDecodeError is a ValueError)
        raise DamagedRun(f"{path}: unreadable ({type(exc).__name__})") from None


def scan(root: Path) -> tuple[list[StoredRun], list[str]]:
    """Every finished run under ``root`` (oldest first), and one line per damaged run directory. Runs that are
    running, failed or interrupted are neither."""
    root = Path(root)
    if not root.exists():
        return [], []
    runs, damaged = [], []
    for env in root.glob("*/*/*/env.json"):
        if status(env.parent) not in (DONE, None):
            continue  # running, failed or interrupted: not a result, not damage
        try:
            runs.append(StoredRun.load(env.parent))
        except DamagedRun as exc:
            damaged.append(str(exc))
    return sorted(runs, key=lambda r: str(r.env.get("finished", ""))), sorted(damaged)


def finished_runs(root: Path) -> list[StoredRun]:
    """Every finished, readable run under ``root``, oldest first (damaged ones are left out; see :func:`scan`)."""
    return scan(root)[0]
