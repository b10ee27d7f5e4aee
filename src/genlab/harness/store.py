"""The run store: ``<root>/<study>/<preset>/<hash>/`` with config, metrics, records, claims, env and figures.

A run directory is *finished* when ``env.json`` says ``"status": "done"`` (it is written last, atomically) and
its config, metrics and claims files read back. A directory that claims to be done but whose files are torn,
missing or not what genlab writes is *damaged*: it is reported by path and treated as unfinished, so ``run`` and
``reproduce`` recompute it while ``report`` and ``list`` show everything else. Anything else is an interrupted
(or failed) run: it is cleared and restarted, keeping ``checkpoint*`` files (and the records written beside
them) so a study that supports it can resume.

Each run has a lock file beside its directory (``.<hash>.lock``): two processes never compute, clear or write
the same run at once; the second waits and then reads the first's result.

The store never follows a symbolic link below its root (a study, preset or run folder that is a link is refused,
and left out when reading), and never clears a folder that holds files genlab did not write.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genlab.harness.claims import Verdict
from genlab.harness.errors import ConfigError
from genlab.harness.io import read_json

DONE = "done"
FAILED = "failed"
RUNNING = "running"
INTERRUPTED = "interrupted"


class DamagedRun(ValueError):
    """A run directory marked done whose files cannot be read back; the message names the file."""


class StoreError(ConfigError):
    """A run folder genlab will not write: reached through a symbolic link, not a folder, or holding files that
    genlab did not write. The message names the path."""


MAX_DEPTH = 64  # nesting of a stored JSON file; genlab writes a few levels, anything deeper is not its file
OWN_FILES = ("config.json", "env.json")  # the first files genlab writes into a run folder


def check_run_dir(root: Path, path: Path) -> None:
    """Refuse (:class:`StoreError`) a run folder that genlab must not clear or write: one reached through a
    symbolic link below ``root`` (the study, preset or run folder), one that is not a folder, or a non-empty
    folder without genlab's own files (someone else's data)."""
    root, path = Path(root), Path(path)
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        if here.is_symlink():
            raise StoreError(f"{here} is a symbolic link: genlab never writes through a link in its run store "
                             "(remove the link, or give --root the real folder)")
        if here.exists() and not here.is_dir():
            raise StoreError(f"{here} is not a folder: the run store needs it for its runs; move it away")
    if path.is_dir() and not any((path / f).exists() for f in OWN_FILES):
        foreign = [c.name for c in path.iterdir() if not (c.name.startswith(".") and c.name.endswith(".tmp"))]
        if foreign:
            raise StoreError(f"{path} holds files genlab did not write ({', '.join(sorted(foreign)[:3])}"
                             f"{', ...' if len(foreign) > 3 else ''}): move them away; genlab will not delete them")


def run_dir(root: Path, study: str, preset: str, run_hash: str) -> Path:
    return Path(root) / study / preset / run_hash


def status(path: Path) -> str | None:
    """The run's state: done / running / failed / interrupted, or None if there is no readable ``env.json``.
    A directory marked running whose lock nobody holds was left by a process that died: it reads
    ``interrupted``."""
    try:
        env = read_json(Path(path) / "env.json")
    except (OSError, ValueError, RecursionError):
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
        if child.is_dir() and not child.is_symlink():  # a link is removed, never followed
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
        _check_meta(path, meta)
        _check_env(path, env)
        if not isinstance(metrics, dict):
            raise DamagedRun(f"{path / 'metrics.json'}: metrics are not a JSON object")
        if not isinstance(claims, list):
            raise DamagedRun(f"{path / 'claims.json'}: claims are not a JSON list")
        try:
            verdicts = [Verdict.from_dict(c) for c in claims]
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise DamagedRun(f"{path / 'claims.json'}: {exc}") from None
        figures = sorted((path / "figures").glob("*.png"))
        for fig in figures:
            if fig.is_symlink() or not fig.is_file():
                raise DamagedRun(f"{fig}: not a regular file (a folder or a link)")
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
            figures=figures,
        )


def _check_meta(path: Path, meta: dict[str, Any]) -> None:
    """config.json names this very folder (study / preset / hash) with a seed and a config object."""
    where = path / "config.json"
    for key, folder in (("study", path.parent.parent.name), ("preset", path.parent.name), ("hash", path.name)):
        if meta[key] != folder:
            raise DamagedRun(f"{where}: {key} is {str(meta[key])[:40]!r}, but the run's folder says {folder!r}")
    seed = meta["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise DamagedRun(f"{where}: seed is {str(seed)[:40]!r}, not an integer >= 0")
    if not isinstance(meta["config"], dict):
        raise DamagedRun(f"{where}: config is a {type(meta['config']).__name__}, not a JSON object")


_ENV_TYPES = {"wall_time": (int, float), "finished": (str,), "started": (str,), "captions": (dict,),
              "versions": (dict,), "figures": (list,), "timings": (dict,), "platform": (str,)}  # fmt: skip


def _check_env(path: Path, env: dict[str, Any]) -> None:
    where = path / "env.json"
    for key, types in _ENV_TYPES.items():
        value = env.get(key)
        if key in env and (not isinstance(value, types) or isinstance(value, bool)):
            raise DamagedRun(f"{where}: {key} is {str(value)[:40]!r}, not a {types[0].__name__}")
    wall = env.get("wall_time", 0.0)
    if not 0 <= wall < 1e9:  # compared, never converted: an integer of 400 digits is damage, not an overflow
        raise DamagedRun(f"{where}: wall_time is {wall!r}, not a duration")
    if not all(isinstance(v, str) for v in env.get("captions", {}).values()):
        raise DamagedRun(f"{where}: captions are not text")


def _depth(obj: Any) -> int:
    """How deep a parsed JSON value nests (iteratively: no recursion on a hostile file)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack.extend((v, level + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def _read(path: Path) -> Any:
    if path.is_symlink():
        raise DamagedRun(f"{path}: a link, not a file genlab wrote")
    try:
        value = read_json(path)
    except FileNotFoundError:
        raise DamagedRun(f"{path}: missing") from None
    except (OSError, ValueError) as exc:  # torn or non-JSON (UnicodeDecodeError is a ValueError)
        raise DamagedRun(f"{path}: unreadable ({type(exc).__name__})") from None
    except RecursionError:
        raise DamagedRun(f"{path}: nested deeper than genlab ever writes") from None
    if _depth(value) > MAX_DEPTH:
        raise DamagedRun(f"{path}: nested deeper than {MAX_DEPTH} levels (genlab never writes that)")
    return value


def scan(root: Path) -> tuple[list[StoredRun], list[str]]:
    """Every finished run under ``root`` (oldest first), and one line per damaged run directory. Runs that are
    running, failed or interrupted are neither."""
    root = Path(root)
    if not root.exists():
        return [], []
    if not root.is_dir():
        raise StoreError(f"{root} is a file, not a run store (a folder)")
    runs, damaged = [], []
    for env in root.glob("*/*/*/env.json"):
        linked = next((p for p in (env.parent.parent.parent, env.parent.parent, env.parent) if p.is_symlink()), None)
        if linked is not None:
            damaged.append(f"{linked}: a symbolic link (genlab neither reads nor writes through links in its store)")
            continue
        if status(env.parent) not in (DONE, None):
            continue  # running, failed or interrupted: not a result, not damage
        try:
            runs.append(StoredRun.load(env.parent))
        except DamagedRun as exc:
            damaged.append(str(exc))
    return sorted(runs, key=lambda r: str(r.env.get("finished", ""))), sorted(set(damaged))


def finished_runs(root: Path) -> list[StoredRun]:
    """Every finished, readable run under ``root``, oldest first (damaged ones are left out; see :func:`scan`)."""
    return scan(root)[0]
