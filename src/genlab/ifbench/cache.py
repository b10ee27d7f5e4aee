"""Derived, re-buildable caches under ``cache_dir()``, built off the critical path.

A run that finds a cache missing answers from the original source in memory (langdetect's profiles, the tagger's
JSON) and starts :func:`build_in_background`: a detached ``python -m genlab.ifbench.cache NAME`` process that
writes the cache file atomically (temporary file, then rename) and exits, so the first run is not slowed by
writing tens of megabytes, and later runs read the cache. ``GENLAB_CACHE_BUILD=inline`` builds in the calling
process instead (tests, benchmarks), ``off`` never builds. One builder per file at a time (an exclusive marker).
``genlab ifbench setup`` builds them all up front (``genlab.ifbench.langid.build_cache``,
``genlab.ifbench.nlp.build_tagger_cache``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["build", "build_in_background", "cache_dir", "mode"]


def mode() -> str:
    """"background" (default), "inline" or "off", from ``GENLAB_CACHE_BUILD``."""
    m = os.environ.get("GENLAB_CACHE_BUILD", "background").strip().lower()
    return m if m in ("background", "inline", "off") else "background"


def _claim(target: Path) -> bool:
    """An exclusive marker next to ``target`` (a stale one, older than 10 minutes, is taken over)."""
    marker = target.with_name(target.name + ".building")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
        return True
    except FileExistsError:
        try:
            if time.time() - marker.stat().st_mtime > 600:
                marker.unlink()
                return _claim(target)
        except OSError:
            pass
        return False
    except OSError:
        return False


def cache_dir() -> Path:
    """Where derived, re-buildable data is cached (``$GENLAB_CACHE``, else ``$XDG_CACHE_HOME/genlab``, else
    ``~/.cache/genlab``), under ``ifbench/``."""
    base = os.environ.get("GENLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "genlab"
    )
    return Path(base) / "ifbench"


def build_in_background(builder: Callable[..., None], target: Path, *args: str) -> None:
    """Start ``builder(target, *args)`` in a detached process unless ``target`` exists or is being built; never
    raises (a cache is an optimisation). ``builder`` is a module-level function, named to the child process by
    its module and name (as multiprocessing does), so this module imports none of the modules it builds for."""
    if mode() == "off" or target.exists():
        return
    if mode() == "inline":
        build(builder, target, *args)
        return
    if not _claim(target):
        return
    import subprocess  # here: importing this module stays cheap on the evaluation's critical path

    try:
        env = {**os.environ, "GENLAB_CACHE_BUILD": "inline"}
        cmd = [sys.executable, "-m", "genlab.ifbench.cache", builder.__module__, builder.__qualname__, str(target)]
        subprocess.Popen([*cmd, *args], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        target.with_name(target.name + ".building").unlink(missing_ok=True)


def build(builder: Callable[..., None], target: Path, *args: str) -> None:
    """``builder(target, *args)`` in this process (errors are swallowed: the cache stays absent)."""
    try:
        builder(target, *args)
    except Exception:
        pass
    finally:
        target.with_name(target.name + ".building").unlink(missing_ok=True)


def _main(module: str, name: str, target: str, *args: str) -> None:
    import importlib

    if hasattr(os, "nice"):  # a background optimisation: leave the CPU to the evaluation that started it
        os.nice(10)

    build(getattr(importlib.import_module(module), name), Path(target), *args)


if __name__ == "__main__":
    _main(*sys.argv[1:])
