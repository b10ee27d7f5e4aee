"""The catalog of the studies that ship with genlab: what ``genlab list`` and ``genlab show`` print, without
importing the studies (and torch) — those commands start in well under a second.

``genlab/studies/catalog.json`` holds, per study, what :func:`genlab.harness.describe.describe` computes from the
code (paper, summary, presets, config keys with types, defaults and allowed values, claims with their kind, text
and thresholds). It is generated: ``python -m genlab.harness.catalog`` rewrites it, and a test fails when it no
longer matches the code. Studies registered outside ``genlab.studies`` are described from their class.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

_NAME = "catalog.json"


def build() -> dict[str, dict[str, Any]]:
    """Describe every study in ``genlab.studies`` from its code (imports them all)."""
    from genlab.harness.describe import describe_class
    from genlab.harness.study import all_studies

    return {name: describe_class(cls) for name, cls in all_studies().items() if cls.__module__.startswith("genlab.")}


def load() -> dict[str, dict[str, Any]]:
    """The shipped catalog (empty when missing or unreadable: callers then import the studies)."""
    path = files("genlab.studies") / _NAME
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write() -> str:
    """Regenerate ``genlab/studies/catalog.json`` in the source tree; returns its path."""
    path = files("genlab.studies") / _NAME
    text = json.dumps(build(), indent=1, sort_keys=True) + "\n"
    with open(str(path), "w") as fh:
        fh.write(text)
    return str(path)


if __name__ == "__main__":
    print(write())
