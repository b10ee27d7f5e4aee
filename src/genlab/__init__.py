"""genlab: a laboratory for generalization in machine learning.

``genlab.run(study, preset="quick", **overrides)`` runs a study from Python and returns its result (see
:mod:`genlab.api`). The package import stays light: nothing heavy loads until a function is called.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def run(study: str, preset: str = "quick", **kwargs: Any) -> Any:
    """Run one study (or read back its finished run); see :func:`genlab.api.run`."""
    from genlab.api import run as _run

    return _run(study, preset, **kwargs)
