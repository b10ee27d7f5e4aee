"""The HTML report: one self-contained page (figures embedded) rendered from a Jinja2 template.

It opens on an overview, one row per paper (empirical verdicts as a bar, the first figure as a thumbnail, wall
time), then one section per study: the forest plot of its claims (effect and 95 % CI against the margin), its
claims with their tests, figures, config and environment; then each recorded sweep as one table (a row per grid
cell). Older groups of the same study and preset are listed as superseded runs. Every string that comes from
the store is escaped (the template autoescapes).
"""

from __future__ import annotations

import base64
import io
import json
import os
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from genlab.harness.claims import (
    EMPIRICAL,
    ERROR,
    IDENTITY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    VERDICTS,
    Verdict,
    combine_claims,
)
from genlab.harness.io import atomic_write_bytes
from genlab.harness.store import StoredRun, scan

_COLOURS = {REPRODUCED: "#1a7f37", NOT_REPRODUCED: "#8250df", INCONCLUSIVE: "#9a6700", ERROR: "#ff0000"}


def group_key(run: StoredRun) -> tuple[str, str, str]:
    """Runs that differ only by seed belong to one group."""
    return run.study, run.preset, json.dumps(run.config, sort_keys=True)


def _groups(runs: list[StoredRun], presets: tuple[str, ...] | None) -> dict[tuple[str, str, str], list[StoredRun]]:
    groups: dict[tuple[str, str, str], list[StoredRun]] = defaultdict(list)
    for run in runs:
        if presets is None or run.preset in presets:
            groups[group_key(run)].append(run)
    return groups


def _newest(members: list[StoredRun]) -> str:
    return max(str(r.env.get("finished", "")) for r in members)


def split_groups(
    runs: list[StoredRun], presets: tuple[str, ...] | None = None
) -> tuple[list[list[StoredRun]], list[list[StoredRun]]]:
    """(latest, superseded): per (study, preset), the most recently finished group of same-config runs (all its
    seeds), and the older groups it supersedes (a changed config or code); only the given presets if set."""
    by_study: dict[tuple[str, str], list[list[StoredRun]]] = defaultdict(list)
    for key, members in _groups(runs, presets).items():
        by_study[key[:2]].append(sorted(members, key=lambda r: r.seed))
    latest, superseded = [], []
    for key in sorted(by_study):
        ordered = sorted(by_study[key], key=_newest, reverse=True)
        latest.append(ordered[0])
        superseded.extend(ordered[1:])
    return latest, superseded


def latest_groups(runs: list[StoredRun], presets: tuple[str, ...] | None = None) -> list[list[StoredRun]]:
    """For each (study, preset), the most recently finished group of same-config runs (all its seeds)."""
    return split_groups(runs, presets)[0]


def group_verdicts(members: list[StoredRun]) -> list[tuple[Verdict, list[tuple[int, Verdict]]]]:
    """One combined verdict per claim key over a group's seeds (matched by key, never by position; empirical
    tests pooled, Holm over the study), with the per-seed verdicts."""
    per_key: dict[str, list[tuple[int, Verdict]]] = {}
    for m in members:
        for v in m.verdicts:
            per_key.setdefault(v.key, []).append((m.seed, v))
    combined = combine_claims([[v for _, v in seeded] for seeded in per_key.values()])
    return list(zip(combined, per_key.values(), strict=True))


def tally(groups: list[list[StoredRun]]) -> dict[str, dict[str, int]]:
    """Counts of combined verdicts by claim kind: ``{"empirical": {verdict: n}, "identity": {...}}``."""
    counts = {kind: dict.fromkeys(VERDICTS, 0) for kind in (EMPIRICAL, IDENTITY)}
    for members in groups:
        for combined, _ in group_verdicts(members):
            counts[combined.kind][combined.verdict] += 1
    return counts


def claims_rows(groups: list[list[StoredRun]]) -> list[dict[str, Any]]:
    """One row per combined claim of each group: study, preset, key, kind, claim, verdict, test, numbers, note."""
    rows = []
    for members in groups:
        first = members[0]
        for combined, seeded in group_verdicts(members):
            numbers = (
                "; ".join(f"seed {seed}: {v.numbers_text()}" for seed, v in seeded)
                if len(seeded) > 1
                else combined.numbers_text()
            )
            rows.append(
                {
                    "study": first.study,
                    "preset": first.preset,
                    "key": combined.key,
                    "kind": combined.kind,
                    "claim": combined.claim,
                    "verdict": combined.verdict,
                    "test": combined.test.to_dict() if combined.test else None,
                    "test_text": combined.test.summary() if combined.test else "",
                    "numbers": numbers,
                    "note": combined.note,
                    "seeds": [seed for seed, _ in seeded],
                }
            )
    return rows


def render(
    root: Path,
    title: str = "genlab report",
    presets: tuple[str, ...] | None = ("quick",),
    out_dir: Path | None = None,
) -> str:
    """The report page for the runs under ``root``; ``out_dir`` (where the page will be written) makes the docs
    links relative to it."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    from genlab.harness.sweep import load_sweeps

    runs, damaged = scan(root)
    sweeps = [s for s in load_sweeps(root) if presets is None or s.get("preset") in presets]
    swept = {str(Path(d)) for s in sweeps for cell in s["runs"] if isinstance(cell, list) for d in cell}
    groups, superseded = split_groups([r for r in runs if str(r.path) not in swept], presets)
    counts = tally(groups)
    env = Environment(loader=PackageLoader("genlab.harness", "templates"), autoescape=select_autoescape(["html"]))
    template = env.get_template("report.html")
    shown = "all presets" if presets is None else "preset " + ", ".join(presets)
    return template.render(
        title=title,
        root=str(root),
        n_runs=len(runs),
        shown=shown,
        other_presets=sorted({r.preset for r in runs} - set(presets or ())),
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        empirical=counts[EMPIRICAL],
        identity=counts[IDENTITY],
        colours=_COLOURS,
        damaged=damaged,
        studies=[_study(members, Path(out_dir) if out_dir else Path(root)) for members in groups],
        superseded=[_superseded(m) for m in superseded],
        sweeps=[_sweep(s) for s in sweeps],
        css=_CSS,
        script=_SORT_JS,
    )


def _study(members: list[StoredRun], out_dir: Path) -> dict[str, Any]:
    from genlab.harness.forest import forest_png
    from genlab.harness.study import all_studies

    first = members[0]
    cls = all_studies().get(first.study)
    combined = group_verdicts(members)
    verdicts = [v for v, _ in combined]
    counts = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        if v.kind == EMPIRICAL:
            counts[v.verdict] += 1
    identities = [v for v in verdicts if v.kind == IDENTITY]
    captions = first.env.get("captions") if isinstance(first.env.get("captions"), dict) else {}
    figures = [{"uri": _data_uri(f.read_bytes()), "name": f.name, "caption": captions.get(f.name, f.name)}
               for f in first.figures if f.is_file()]  # fmt: skip
    forest = forest_png(verdicts)
    return {
        "name": first.study,
        "preset": first.preset,
        "anchor": f"{first.study}--{first.preset}",
        "paper": None if cls is None else {"title": cls.paper.title, "arxiv": cls.paper.arxiv, "url": cls.paper.url},
        "summary": cls.summary if cls else "",
        "docs": _docs_link(first.study, out_dir),
        "counts": counts,
        "n_empirical": sum(counts.values()),
        "identities": f"{sum(v.verdict == REPRODUCED for v in identities)}/{len(identities)}",
        "wall": sum(_wall(m) for m in members),
        "walls": ", ".join(f"seed {m.seed}: {_wall(m):.1f} s" for m in members),
        "seeds": [m.seed for m in members],
        "run_dir": str(first.path),
        "thumb": _thumbnail(first.figures[0]) if first.figures and first.figures[0].is_file() else None,
        "forest": _data_uri(forest) if forest else None,
        "claims": [_claim(v, seeded) for v, seeded in combined],
        "figures": figures,
        "config": json.dumps(first.config, indent=2),
        "versions": json.dumps(first.env.get("versions", {}), indent=2),
        "platform": str(first.env.get("platform", "")),
    }


def _claim(v: Verdict, seeded: list[tuple[int, Verdict]]) -> dict[str, Any]:
    numbers = (
        "; ".join(f"seed {seed}: {x.numbers_text()}" for seed, x in seeded) if len(seeded) > 1 else v.numbers_text()
    )
    t = v.test
    test = None
    if t is not None:
        from genlab.harness.io import fmt_number

        test = {
            "effect": fmt_number(t.effect),
            "ci": f"[{fmt_number(t.ci[0])}, {fmt_number(t.ci[1])}]",
            "target": t.target,
            "method": t.method,
            "n": t.n,
            "failed": t.failed,
            "p": fmt_number(t.p, 2),
            "p_holm": None if t.p_holm is None else fmt_number(t.p_holm, 2),
        }
    return {"key": v.key, "claim": v.claim, "kind": v.kind, "verdict": v.verdict, "note": v.note, "test": test,
            "numbers": numbers}  # fmt: skip


def _superseded(members: list[StoredRun]) -> dict[str, Any]:
    return {
        "study": members[0].study,
        "preset": members[0].preset,
        "finished": _newest(members),
        "seeds": ",".join(str(r.seed) for r in members),
        "runs": f"{members[0].path.parent}/{{{','.join(r.run_hash for r in members)}}}",
    }


def _sweep(record: dict[str, Any]) -> dict[str, Any]:
    """A recorded sweep as a table: one row per grid cell, its values then each column (verdict over the cell's
    seeds, or mean ± s.e.)."""
    from genlab.harness.sweep import fmt_mean_se

    keys, columns = [str(k) for k in record.get("keys", [])], [str(c) for c in record.get("columns", [])]
    rows = [[str(row.get(k, "")) for k in keys] + [fmt_mean_se(_cell(row.get(c))) for c in columns]
            for row in record["rows"] if isinstance(row, dict)]  # fmt: skip
    return {"study": str(record.get("study", "")), "preset": str(record.get("preset", "")),
            "seeds": record.get("seeds"), "finished": str(record.get("finished", "")),
            "header": keys + [c.removeprefix("claim:") for c in columns], "rows": rows}  # fmt: skip


def _cell(value: Any) -> Any:
    if isinstance(value, list) and len(value) == 3:
        return tuple(float("nan") if v is None else v for v in value)
    return "-" if value is None else str(value)


def _wall(run: StoredRun) -> float:
    wall = run.env.get("wall_time")
    return float(wall) if isinstance(wall, int | float) and not isinstance(wall, bool) else 0.0


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _thumbnail(path: Path, width: int = 160) -> str | None:
    """A small PNG of a figure for the overview (the full figure is embedded once, in its study's section)."""
    try:
        from PIL import Image

        with Image.open(path) as img:
            img.thumbnail((width, width))
            buf = io.BytesIO()
            img.save(buf, format="PNG", optimize=True)
        return _data_uri(buf.getvalue())
    except (OSError, ValueError):
        return None


def _docs_link(study: str, out_dir: Path) -> dict[str, str]:
    """The study's docs page, relative to where the report is written when genlab runs from a source checkout
    (the page moves with the checkout), else its path in the repository as text."""
    import genlab

    page = Path(genlab.__file__).resolve().parents[2] / "docs" / "studies" / f"{study}.md"
    text = f"docs/studies/{study}.md"
    if page.exists():
        return {"href": Path(os.path.relpath(page, Path(out_dir).resolve())).as_posix(), "text": text}
    return {"href": "", "text": text}


def write_report(
    root: Path, out: Path | None = None, title: str = "genlab report", presets: tuple[str, ...] | None = ("quick",)
) -> Path:
    """Render the report for the runs under ``root`` and write it (default ``<root>/report.html``)."""
    root = Path(root)
    out = Path(out) if out else root / "report.html"
    atomic_write_bytes(out, render(root, title, presets, out_dir=out.parent).encode())
    return out


_SORT_JS = """
document.querySelectorAll('table.sortable th').forEach((th, col) => {
  th.title = 'click to sort'; th.style.cursor = 'pointer';
  th.addEventListener('click', () => {
    const body = th.closest('table').tBodies[0];
    const dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    const key = r => r.cells[col].innerText.trim();
    [...body.rows].sort((a, b) => dir * key(a).localeCompare(key(b), undefined, {numeric: true}))
      .forEach(r => body.appendChild(r));
  });
});
document.body.dataset.sortable = 'ready';
"""

_CSS = """
body{font-family:system-ui,-apple-system,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;width:100%;font-size:14px}th,td{border:1px solid #d0d7de;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f6f8fa}img{max-width:100%;border:1px solid #eee}
figure{margin:1em 0}.warn{color:#cf222e}code,pre{background:#f6f8fa;padding:2px 4px}details{margin:.3em 0}
.bar{display:flex;width:160px;height:14px;border:1px solid #d0d7de}.bar span{display:block;height:100%}
td.thumb img{width:120px}.test{white-space:nowrap;font-size:13px}small{color:#57606a}
"""
