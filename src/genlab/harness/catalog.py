"""The catalog of the studies that ship with genlab: what ``genlab list`` and ``genlab show`` print, without
importing the studies (and torch) — those commands start in well under a second.

``genlab/studies/catalog.json`` holds, per study, what :func:`describe_class` computes from the code (paper,
summary, presets, config keys with types, defaults and allowed values, claims with their kind, text and
thresholds). It is generated: ``python -m genlab.harness.catalog`` rewrites it, and a test fails when it no
longer matches the code. Studies registered outside ``genlab.studies`` are described from their class.
"""

from __future__ import annotations

import json
import typing
from importlib.resources import files
from typing import Any, Literal, get_args, get_origin

from genlab.harness.config import field_ranges, field_types

_NAME = "catalog.json"


def build() -> dict[str, dict[str, Any]]:
    """Describe every study in ``genlab.studies`` from its code (imports them all)."""
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
            **({"requires": list(c.requires)} if c.requires else {}),
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


if __name__ == "__main__":
    print(write())
