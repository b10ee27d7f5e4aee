"""genlab: a laboratory for generalization in machine learning.

``genlab.run(study, preset="quick", **overrides)`` runs a study from Python and returns its result,
``genlab.sweep(study, grid, seeds=...)`` runs a grid of them (see :mod:`genlab.api`), and
``genlab.load_runs()`` / ``genlab.load_claims()`` read the run store as pandas DataFrames. The package import
stays light: nothing heavy loads until a function is called.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def run(study: str, preset: str = "quick", **kwargs: Any) -> Any:
    """Run one study (or read back its finished run); see :func:`genlab.api.run`."""
    from genlab.api import run as _run

    return _run(study, preset, **kwargs)


def sweep(study: str, grid: dict[str, Any], preset: str = "quick", **kwargs: Any) -> Any:
    """Run a study over a grid of config values and seeds; see :func:`genlab.api.sweep`."""
    from genlab.api import sweep as _sweep

    return _sweep(study, grid, preset, **kwargs)


def load_runs(root: Any = "runs", study: str | None = None, preset: str | None = None) -> Any:
    """The finished runs under ``root`` as a pandas DataFrame, one row per run (config and scalar metrics)."""
    from genlab.harness.export import load_runs as _load

    return _load(root, study, preset)


def load_claims(root: Any = "runs", study: str | None = None, preset: str | None = None) -> Any:
    """Every claim of the finished runs under ``root`` as a pandas DataFrame, with its verdict and test."""
    from genlab.harness.export import load_claims as _load

    return _load(root, study, preset)
