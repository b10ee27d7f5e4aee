"""What ``genlab show STUDY`` prints: config keys with types, defaults, preset values and allowed values; claims
with their kind and the config keys that set their thresholds; metric names from the newest stored run."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from genlab.harness.config import field_ranges, field_types
from genlab.harness.io import flat_scalars
from genlab.harness.store import scan
from genlab.harness.study import get_study


def describe(name: str, root: Path | str = "runs") -> dict[str, Any]:
    """A study as ``genlab show`` prints it: from the shipped catalog when it is there (no study is imported),
    else from its class; plus the metric names of its newest stored run under ``root``."""
    from genlab.harness.catalog import load

    info = load().get(name)
    if info is None:
        info = describe_class(get_study(name))
    metrics, source, damaged = _stored_metric_names(name, Path(root))
    return {**info, "metrics": metrics, "metrics_from": source, "damaged": damaged}


def describe_class(cls: Any) -> dict[str, Any]:
    """What the code says about a study: paper, presets, config keys, claims (JSON-able)."""
    quick = cls.config("quick")
    presets = {p: cls.config(p) for p in cls.presets}
    ranges = field_ranges(cls.Config)
    config = []
    for key, tp in field_types(cls.Config).items():
        default = getattr(quick, key)
        config.append(
            {
                "key": key,
                "type": _type_name(tp),
                "default": show_value(default),
                "presets": {p: show_value(v) for p, c in presets.items() if (v := getattr(c, key)) != default},
                "allowed": _allowed(tp, ranges.get(key)),
            }
        )
    claims = [
        {
            "key": c.key,
            "kind": c.kind,
            "text": c.text_for(quick),
            "thresholds": [f"{f}={getattr(quick, f)}" for f in c.fields()],
        }
        for c in cls.claims
    ]
    return {
        "name": cls.name,
        "paper": cls.paper.title,
        "arxiv": cls.paper.arxiv,
        "url": cls.paper.url,
        "summary": cls.summary,
        "docs": f"docs/studies/{cls.name}.md",
        "presets": list(cls.presets),
        "config": config,
        "claims": claims,
    }


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


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return "choice"
    return str(tp).replace("typing.", "") if get_origin(tp) else getattr(tp, "__name__", str(tp))


def _allowed(tp: Any, rng: Any) -> str:
    if get_origin(tp) is Literal:
        return " | ".join(map(str, get_args(tp)))
    if get_origin(tp) in (typing.Union,) and type(None) in get_args(tp):
        tp = next(a for a in get_args(tp) if a is not type(None))
    if rng is None:
        return ""
    if rng.lo is None and rng.hi is None:
        return "finite" if rng.finite else "any"
    if rng.hi is None:
        return f">= {rng.lo:g}"
    if rng.lo is None:
        return f"<= {rng.hi:g}"
    return f"{rng.lo:g} .. {rng.hi:g}"


def show_value(value: Any) -> str:
    """A config value as ``--set`` takes it: tuples comma-joined, floats short."""
    if isinstance(value, tuple | list):
        return ",".join(show_value(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)



