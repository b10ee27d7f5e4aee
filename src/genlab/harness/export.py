"""The run store as tables: one row per run (config and scalar metrics as columns) and one row per claim (its
verdict and test), for pandas, a spreadsheet or a dashboard. ``genlab export`` writes them as CSV or Parquet;
``genlab.load_runs()`` / ``genlab.load_claims()`` return them as DataFrames."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from genlab.harness.io import flat_scalars
from genlab.harness.store import StoredRun, scan

Format = Literal["csv", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "parquet")


def run_rows(runs: list[StoredRun]) -> list[dict[str, Any]]:
    """One row per finished run: identity, wall time, ``config.<key>`` and ``metric.<path>`` columns."""
    rows = []
    for r in runs:
        row: dict[str, Any] = {
            "study": r.study,
            "preset": r.preset,
            "seed": r.seed,
            "hash": r.run_hash,
            "finished": r.env.get("finished"),
            "wall_time": r.env.get("wall_time"),
            "run_dir": str(r.path),
        }
        row.update({f"config.{k}": _cell(v) for k, v in r.config.items()})
        row.update({f"metric.{k}": v for k, v in flat_scalars(r.metrics).items()})
        rows.append(row)
    return rows


def claim_rows(runs: list[StoredRun]) -> list[dict[str, Any]]:
    """One row per claim of each finished run: its verdict and, for an empirical claim, its test."""
    rows = []
    for r in runs:
        for v in r.verdicts:
            t = v.test
            rows.append({
                "study": r.study, "preset": r.preset, "seed": r.seed, "hash": r.run_hash, "key": v.key,
                "kind": v.kind, "claim": v.claim, "verdict": v.verdict, "note": v.note,
                "method": t.method if t else None, "n": t.n if t else None, "effect": t.effect if t else None,
                "ci_low": t.ci[0] if t else None, "ci_high": t.ci[1] if t else None,
                "margin": t.margin if t and not isinstance(t.margin, tuple) else None,
                "band_low": t.margin[0] if t and isinstance(t.margin, tuple) else None,
                "band_high": t.margin[1] if t and isinstance(t.margin, tuple) else None,
                "direction": t.direction if t else None,
                "p": t.p if t else None, "p_holm": t.p_holm if t else None, "failed": t.failed if t else None,
                "numbers": json.dumps(v.numbers),
            })  # fmt: skip
    return rows


def load_runs(root: str | Path = "runs", study: str | None = None, preset: str | None = None):
    """The finished runs under ``root`` as a pandas DataFrame (one row per run); damaged runs are left out."""
    import pandas as pd

    return pd.DataFrame(run_rows(_select(root, study, preset)))


def load_claims(root: str | Path = "runs", study: str | None = None, preset: str | None = None):
    """Every claim of the finished runs under ``root`` as a pandas DataFrame (one row per claim and run)."""
    import pandas as pd

    return pd.DataFrame(claim_rows(_select(root, study, preset)))


def export_tables(root: str | Path, out: str | Path, fmt: Format = "csv", study: str | None = None,
                  preset: str | None = None) -> list[Path]:  # fmt: skip
    """Write ``runs.<fmt>`` and ``claims.<fmt>`` into the folder ``out``; returns the paths written."""
    from genlab.harness.errors import ConfigError
    from genlab.harness.io import atomic_write_bytes

    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "parquet":
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise ConfigError("--format parquet needs pyarrow: pip install 'genlab[export]'")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    frames = {"runs": load_runs(root, study, preset), "claims": load_claims(root, study, preset)}
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in frames.items():
        path = out / f"{name}.{fmt}"
        data = frame.to_csv(index=False).encode() if fmt == "csv" else _typed(frame).to_parquet(index=False)
        atomic_write_bytes(path, data)
        written.append(path)
    return written


def _typed(frame):
    """Parquet columns hold one type: a column whose values mix types (a config key that is a number in one
    study and a list in another) is written as text."""
    for col in frame.columns:
        kinds = {type(v) for v in frame[col] if v is not None and v == v}
        if len(kinds) > 1 and not kinds <= {int, float}:
            frame[col] = [None if v is None else str(v) for v in frame[col]]
    return frame


def _select(root: str | Path, study: str | None, preset: str | None) -> list[StoredRun]:
    runs, _ = scan(Path(root))
    chosen = [r for r in runs if (study is None or r.study == study) and (preset is None or r.preset == preset)]
    return sorted(chosen, key=lambda r: (r.study, r.preset, str(r.env.get("finished", "")), r.seed, r.run_hash))


def _cell(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, list | tuple | dict) else v
