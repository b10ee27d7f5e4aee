"""What ``genlab show STUDY`` prints: config keys with types, defaults, preset values and allowed values; claims
with their kind and the config keys that set their thresholds; metric names from the newest stored run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from genlab.harness.catalog import describe_class, load
from genlab.harness.io import flat_scalars
from genlab.harness.store import scan
from genlab.harness.study import get_study


def describe(name: str, root: Path | str = "runs") -> dict[str, Any]:
    """A study as ``genlab show`` prints it: from the shipped catalog when it is there (no study is imported),
    else from its class; plus the metric names of its newest stored run under ``root``."""
    info = load().get(name)
    if info is None:
        info = describe_class(get_study(name))
    metrics, source, damaged = _stored_metric_names(name, Path(root))
    return {**info, "metrics": metrics, "metrics_from": source, "damaged": damaged}


def _stored_metric_names(study: str, root: Path) -> tuple[list[str], str, list[str]]:
    """Metric and claim-number names of the study's newest stored run, its path, and the damaged runs seen."""
    stored, damaged = scan(root)
    runs = [r for r in stored if r.study == study]
    if not runs:
        return [], "", damaged
    newest = runs[-1]
    names = list(flat_scalars(newest.metrics))
    for v in newest.verdicts:
        names += [f"claim:{v.key}/{k}" for k in flat_scalars(v.numbers)]
    return names, str(newest.path), damaged
