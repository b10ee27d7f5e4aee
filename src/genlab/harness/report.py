"""The HTML report: one self-contained page (figures embedded) with the claims table, figures, configs,
versions and wall times of the finished runs under a store root."""

from __future__ import annotations

import base64
import html
import json
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
    combine_verdicts,
)
from genlab.harness.io import atomic_write_bytes
from genlab.harness.store import StoredRun, scan

_COLOURS = {REPRODUCED: "#1a7f37", NOT_REPRODUCED: "#8250df", INCONCLUSIVE: "#9a6700", ERROR: "#ff0000"}


def group_key(run: StoredRun) -> tuple[str, str, str]:
    """Runs that differ only by seed belong to one group."""
    return run.study, run.preset, json.dumps(run.config, sort_keys=True)


def latest_groups(runs: list[StoredRun], presets: tuple[str, ...] | None = None) -> list[list[StoredRun]]:
    """For each (study, preset), the most recently finished group of same-config runs (all its seeds);
    only the given presets when ``presets`` is set."""
    groups: dict[tuple[str, str, str], list[StoredRun]] = defaultdict(list)
    for run in runs:
        if presets is None or run.preset in presets:
            groups[group_key(run)].append(run)
    latest: dict[tuple[str, str], list[StoredRun]] = {}
    for key, members in groups.items():
        newest = max(r.env.get("finished", "") for r in members)
        current = latest.get(key[:2])
        if current is None or newest >= max(r.env.get("finished", "") for r in current):
            latest[key[:2]] = sorted(members, key=lambda r: r.seed)
    return [latest[k] for k in sorted(latest)]


def group_verdicts(members: list[StoredRun]) -> list[tuple[Verdict, list[tuple[int, Verdict]]]]:
    """One combined verdict per claim key over a group's seeds (matched by key, never by position), with the
    per-seed verdicts; each claim is combined by its study's reducer (unanimous for unknown studies)."""
    from genlab.harness.study import all_studies

    study = all_studies().get(members[0].study)
    per_key: dict[str, list[tuple[int, Verdict]]] = {}
    for m in members:
        for v in m.verdicts:
            per_key.setdefault(v.key, []).append((m.seed, v))
    out = []
    for key, seeded in per_key.items():
        claim = study.claim(key) if study else None
        reducer = claim.reducer if claim else "unanimous"
        out.append((combine_verdicts([v for _, v in seeded], reducer), seeded))
    return out


def tally(groups: list[list[StoredRun]]) -> dict[str, dict[str, int]]:
    """Counts of combined verdicts by claim kind: ``{"empirical": {verdict: n}, "identity": {...}}``."""
    counts = {kind: dict.fromkeys(VERDICTS, 0) for kind in (EMPIRICAL, IDENTITY)}
    for members in groups:
        for combined, _ in group_verdicts(members):
            counts[combined.kind][combined.verdict] += 1
    return counts


def claims_rows(groups: list[list[StoredRun]]) -> list[dict[str, Any]]:
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
                    "numbers": numbers,
                    "note": combined.note,
                    "seeds": [seed for seed, _ in seeded],
                }
            )
    return rows


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.name)}" src="data:image/png;base64,{data}">'


def render(root: Path, title: str = "genlab report", presets: tuple[str, ...] | None = ("quick",)) -> str:
    runs, damaged = scan(root)
    groups = latest_groups(runs, presets)
    rows = claims_rows(groups)
    counts = tally(groups)
    esc = html.escape
    shown = "all presets" if presets is None else "preset " + ", ".join(presets)
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p>{len(runs)} finished run(s) under <code>{esc(str(root))}</code> ({esc(shown)} shown); generated "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}.</p>",
        "<p>Empirical claims: "
        + " · ".join(f"<b style='color:{_COLOURS[k]}'>{v} {k}</b>" for k, v in counts[EMPIRICAL].items())
        + "<br><small>Identity checks (our own formulas, not reproductions): "
        + " · ".join(f"{v} {k}" for k, v in counts[IDENTITY].items())
        + "</small></p>",
        *(f"<p class='warn'>Damaged run left out: <code>{esc(line)}</code></p>" for line in damaged),
        "<h2>Claims</h2>",
    ]
    if not rows:
        out.append("<p>No finished runs yet: try <code>genlab reproduce</code>.</p>")
    else:
        out.append(
            "<table><tr><th>study</th><th>claim</th><th>kind</th><th>verdict</th><th>numbers</th><th>preset</th>"
            "<th>seeds</th></tr>"
        )
        for r in rows:
            note = f"<br><small>{esc(r['note'])}</small>" if r["note"] else ""
            anchor = f"{r['study']}-{r['preset']}"
            out.append(
                f"<tr><td><a href='#{esc(anchor)}'>{esc(r['study'])}</a></td><td>{esc(r['claim'])}{note}</td>"
                f"<td>{esc(r['kind'])}</td><td style='color:{_COLOURS[r['verdict']]}'><b>{esc(r['verdict'])}</b></td>"
                f"<td><small>{esc(r['numbers'])}</small></td><td>{esc(r['preset'])}</td>"
                f"<td>{esc(','.join(map(str, r['seeds'])))}</td></tr>"
            )
        out.append("</table>")
    for members in groups:
        first = members[0]
        anchor = f"{first.study}-{first.preset}"
        out.append(f"<h2 id='{esc(anchor)}'>{esc(first.study)} <small>({esc(first.preset)})</small></h2>")
        walls = ", ".join(f"seed {m.seed}: {m.env.get('wall_time', 0):.1f} s" for m in members)
        out.append(f"<p>Wall time: {esc(walls)}. Run directory: <code>{esc(str(first.path))}</code></p>")
        captions = first.env.get("captions", {})
        for fig in first.figures:
            caption = captions.get(fig.name, fig.name)
            out.append(f"<figure>{_img(fig)}<figcaption>{esc(caption)}</figcaption></figure>")
        out.append(
            "<details><summary>config</summary><pre>" + esc(json.dumps(first.config, indent=2)) + "</pre></details>"
        )
        versions = first.env.get("versions", {})
        out.append(
            "<details><summary>environment</summary><pre>" + esc(json.dumps(versions, indent=2)) + "\n"
            f"platform: {esc(str(first.env.get('platform', '')))}</pre></details>"
        )
    out.append("</body></html>")
    return "\n".join(out)


def write_report(
    root: Path, out: Path | None = None, title: str = "genlab report", presets: tuple[str, ...] | None = ("quick",)
) -> Path:
    """Render the report for the runs under ``root`` and write it (default ``<root>/report.html``)."""
    root = Path(root)
    out = Path(out) if out else root / "report.html"
    atomic_write_bytes(out, render(root, title, presets).encode())
    return out


_CSS = """
body{font-family:system-ui,-apple-system,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;width:100%;font-size:14px}th,td{border:1px solid #d0d7de;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f6f8fa}img{max-width:100%;border:1px solid #eee}
figure{margin:1em 0}.warn{color:#cf222e}code,pre{background:#f6f8fa;padding:2px 4px}details{margin:.3em 0}
"""
