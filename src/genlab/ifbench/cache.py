"""Derived, re-buildable caches under ``cache_dir()``, built off the critical path.

A run that finds a cache missing answers from the original source in memory (langdetect's profiles, the tagger's
JSON) and starts :func:`build_in_background`: a detached ``python -m genlab.ifbench.cache NAME`` process that
writes the cache file atomically (temporary file, then rename) and exits, so the first run is not slowed by
writing tens of megabytes, and later runs read the cache. ``GENLAB_CACHE_BUILD=inline`` builds in the calling
process instead (tests, benchmarks), ``off`` never builds. One builder per file at a time (an exclusive marker).
``genlab ifbench setup`` builds them all up front.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["build", "build_in_background", "mode", "prebuild"]

BUILDERS = ("langdetect", "tagger")


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


def build_in_background(name: str, target: Path, source: str = "") -> None:
    """Start building cache ``name`` (one of :data:`BUILDERS`) into ``target`` unless one is being built; never
    raises (a cache is an optimisation)."""
    if mode() == "off" or target.exists():
        return
    if mode() == "inline":
        build(name, target, source)
        return
    if not _claim(target):
        return
    try:
        env = {**os.environ, "GENLAB_CACHE_BUILD": "inline"}
        subprocess.Popen([sys.executable, "-m", "genlab.ifbench.cache", name, str(target), source], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except OSError:
        target.with_name(target.name + ".building").unlink(missing_ok=True)


def build(name: str, target: Path, source: str = "") -> None:
    """Build cache ``name`` into ``target`` in this process (errors are swallowed: the cache stays absent)."""
    try:
        if name == "langdetect":
            from genlab.ifbench.langid import _build_sqlite

            _build_sqlite(target)
        elif name == "tagger":
            from genlab.ifbench.nlp import _build_tagger_db

            _build_tagger_db(Path(source), target)
    except Exception:
        pass
    finally:
        target.with_name(target.name + ".building").unlink(missing_ok=True)


def prebuild() -> dict[str, str]:
    """Build every missing cache now, in this process (``genlab ifbench setup``); returns {name: path}."""
    from genlab.ifbench import langid, nlp

    done = {}
    target = langid.profiles_cache_path()
    if not target.exists():
        build("langdetect", target)
    done["langdetect"] = str(target)
    weights = nlp._find_resource("taggers/averaged_perceptron_tagger_eng")
    if weights is not None:
        src = weights / "averaged_perceptron_tagger_eng.weights.json"
        target = nlp._tagger_db(src)
        if not target.exists():
            build("tagger", target, str(src))
        done["tagger"] = str(target)
    return done


if __name__ == "__main__":
    build(sys.argv[1], Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
