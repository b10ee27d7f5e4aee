"""Sweeps: a grid of config overrides × seeds, and the table of results per grid cell.

By default a sweep tabulates what the study is about: each claim's verdict over the cell's seeds (their tests'
units pooled, as the report does) and the study's headline metrics, mean ± standard error over seeds.
``--metric`` picks columns instead: a metric path (``acc/id``) or a number a claim reports
(``claim:<key>/<number>``); an unknown name is an error that lists the close ones.
"""

from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from genlab.harness.claims import combine_claims
from genlab.harness.config import field_types, parse_value
from genlab.harness.decision import mean_se
from genlab.harness.errors import ConfigError
from genlab.harness.io import flat_scalars
from genlab.harness.runner import RunResult

CLAIM_PREFIX = "claim:"


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


MAX_RUNS = 10_000  # runs one reproduce / sweep command may ask for (each is a study run)


def check_run_count(count: int, what: str) -> None:
    """Refuse, before anything is built, a command that asks for more than MAX_RUNS runs."""
    if count > MAX_RUNS:
        raise ConfigError(f"{what} is {count:,} runs; at most {MAX_RUNS:,} per command (split it up)")


def grid_size(grid: Mapping[str, Sequence[Any]]) -> int:
    """Cells of the grid's Cartesian product, counted without building it."""
    return math.prod(len(v) for v in grid.values())


def expand(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a grid, in a stable order (an empty grid is one empty cell)."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def cell_label(cell: Mapping[str, Any]) -> str:
    """``lam=0.1, n=200`` (what progress lines print)."""
    return ", ".join(f"{k}={v}" for k, v in cell.items()) or "defaults"


def run_values(result: RunResult) -> dict[str, float]:
    """Every scalar a run offers a sweep: its metrics and the numbers its claims report (``claim:key/name``)."""
    values = flat_scalars(result.metrics)
    for v in result.verdicts:
        values.update({f"{CLAIM_PREFIX}{v.key}/{k}": x for k, x in flat_scalars(v.numbers).items()})
    return values


def check_metrics(requested: Sequence[str], available: set[str]) -> None:
    unknown = [m for m in requested if m not in available]
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(available), n=5, cutoff=0.4)
        hint = f"; close names: {', '.join(close)}" if close else f"; {len(available)} names exist (see --json)"
        raise ConfigError(f"unknown --metric {unknown[0]!r}{hint}")


def table(
    study_cls: type,
    cells: list[dict[str, Any]],
    results: list[RunResult],
    metrics: Sequence[str] | None = None,
) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows ``{cell values..., column: value}``: claim verdicts as text, numbers as (mean, se, n)."""
    values = [run_values(r) if r.ok else {} for r in results]
    available = set().union(*values) if values else set()
    if metrics:
        check_metrics(metrics, available)
        columns = list(metrics)
    else:
        columns = [f"{CLAIM_PREFIX}{c.key}" for c in study_cls.claims]
        columns += [m for m in getattr(study_cls, "headline", ()) if m in available]
    rows = []
    for cell in cells:
        members = [i for i, r in enumerate(results) if r.ok and _in_cell(r, cell)]
        row: dict[str, Any] = dict(cell)
        for col in columns:
            if col.startswith(CLAIM_PREFIX) and "/" not in col:
                row[col] = _verdict_cell(study_cls, col.removeprefix(CLAIM_PREFIX), [results[i] for i in members])
            else:
                row[col] = mean_se([values[i][col] for i in members if col in values[i]])
        rows.append(row)
    return columns, rows


def _verdict_cell(study_cls: type, key: str, members: list[RunResult]) -> str:
    verdicts = [v for r in members for v in r.verdicts if v.key == key]
    if not verdicts:
        return "-"
    keys = list(dict.fromkeys(v.key for r in members for v in r.verdicts))
    per_key = [[v for r in members for v in r.verdicts if v.key == k] for k in keys]
    combined = dict(zip(keys, combine_claims(per_key), strict=True))[key]
    held = sum(v.verdict == "reproduced" for v in verdicts)
    return f"{combined.verdict} ({held}/{len(verdicts)})"


def _in_cell(result: RunResult, cell: Mapping[str, Any]) -> bool:
    return all(_plain(result.config.get(k)) == _plain(v) for k, v in cell.items())


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def fmt_mean_se(cell: Any) -> str:
    """A table cell: verdict text as is; (mean, se, n) as 'mean ± se (n=…)' with meaningful digits."""
    from genlab.harness.io import fmt_number

    if isinstance(cell, str):
        return cell
    mean, se, n = cell
    if n == 0 or math.isnan(mean):
        return "-"
    if n < 2 or math.isnan(se):
        return f"{fmt_number(mean)} (n={n})"
    return f"{fmt_number(mean)} ± {fmt_number(se, 2)} (n={n})"


# -- the record a sweep leaves in the store (read by the report) --------------------------------------------------

SWEEPS_DIR = "_sweeps"  # under the store root, beside the study folders (never taken for a run)


def save_sweep(root: Path, study: str, preset: str, seeds: int, cells: list[dict[str, Any]],
               results: list[RunResult], columns: list[str], rows: list[dict[str, Any]]) -> Path:
    """Write ``<root>/_sweeps/<study>--<preset>--<time>.json``: the grid, its table and the runs of each cell, so
    the report shows the sweep as one table (and does not file its cells as superseded runs)."""
    from datetime import UTC, datetime

    from genlab.harness.io import atomic_write_json, to_jsonable

    stamp = datetime.now(UTC)
    path = Path(root) / SWEEPS_DIR / f"{study}--{preset}--{stamp.strftime('%Y%m%dT%H%M%S%f')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = [[str(r.run_dir) for r in results if r.ok and _in_cell(r, cell)] for cell in cells]
    atomic_write_json(path, to_jsonable({
        "study": study, "preset": preset, "seeds": seeds, "finished": stamp.isoformat(timespec="seconds"),
        "keys": list(cells[0]) if cells else [], "columns": columns, "rows": rows, "runs": runs,
    }))  # fmt: skip
    return path


def load_sweeps(root: Path) -> list[dict[str, Any]]:
    """The sweeps recorded under ``root``, oldest first; unreadable records are left out."""
    import json

    out = []
    for path in sorted((Path(root) / SWEEPS_DIR).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("rows"), list) and isinstance(record.get("runs"), list):
            out.append(record)
    return sorted(out, key=lambda r: str(r.get("finished", "")))
