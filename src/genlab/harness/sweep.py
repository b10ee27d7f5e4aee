"""Sweeps: a grid of config overrides × seeds, and the table of mean ± standard error per grid cell."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from genlab.harness.config import field_types, parse_value
from genlab.harness.errors import ConfigError
from genlab.harness.runner import RunResult


def parse_grid(config_cls: type, grid: Iterable[str]) -> dict[str, list[Any]]:
    """``["lr=0.1,0.01", "tasks=parity;s3,a4"]`` -> typed value lists. Values split on ';' if present, else ','."""
    types_ = field_types(config_cls)
    out: dict[str, list[Any]] = {}
    for item in grid:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not values.strip():
            raise ConfigError(f"--grid expects key=v1,v2,..., got {item!r}")
        if key not in types_:
            raise ConfigError(f"unknown config key {key!r} in --grid; valid keys: {', '.join(sorted(types_))}")
        parts = values.split(";") if ";" in values else values.split(",")
        out[key] = [parse_value(p.strip(), types_[key], key) for p in parts if p.strip()]
    return out


def expand(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a grid, in a stable order (an empty grid is one empty cell)."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Scalar leaves of a nested metrics dict as ``a/b/c -> value``."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "/"))
        elif isinstance(value, int | float):  # bools included
            out[name] = float(value)
    return out


def mean_se(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean (nan when n < 2) and n, ignoring NaNs."""
    arr = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    n = len(arr)
    if n == 0:
        return math.nan, math.nan, 0
    se = float(arr.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return float(arr.mean()), se, n


def table(
    cells: list[dict[str, Any]], results: list[RunResult], metrics: Sequence[str] | None = None, max_metrics: int = 6
) -> tuple[list[str], list[dict[str, Any]]]:
    """Rows of ``{cell values..., metric: (mean, se, n)}``; results are matched to cells by their config."""
    flat = [flatten(r.metrics) if r.ok else {} for r in results]
    if metrics is None:
        seen: list[str] = []
        for f in flat:
            seen.extend(k for k in f if k not in seen)
        metrics = seen[:max_metrics]
    rows = []
    for cell in cells:
        members = [
            f for r, f in zip(results, flat) if all(_plain(r.config.get(k)) == _plain(v) for k, v in cell.items())
        ]
        row: dict[str, Any] = dict(cell)
        for m in metrics:
            row[m] = mean_se([f[m] for f in members if m in f])
        rows.append(row)
    return list(metrics), rows


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v
