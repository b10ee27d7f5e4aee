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

from genlab.harness.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict
from genlab.harness.io import atomic_write_bytes
from genlab.harness.store import StoredRun, finished_runs

_COLOURS = {REPRODUCED: "#1a7f37", NOT_REPRODUCED: "#cf222e", INCONCLUSIVE: "#9a6700"}


def group_key(run: StoredRun) -> tuple[str, str, str]:
    """Runs that differ only by seed belong to one group."""
    return run.study, run.preset, json.dumps(run.config, sort_keys=True)


def combine(verdicts: list[Verdict]) -> str:
    """One verdict over seeds: unanimous -> that verdict, otherwise inconclusive."""
    names = {v.verdict for v in verdicts}
    return names.pop() if len(names) == 1 else INCONCLUSIVE


def latest_groups(runs: list[StoredRun]) -> list[list[StoredRun]]:
    """For each (study, preset), the most recently finished group of same-config runs (all its seeds)."""
    groups: dict[tuple[str, str, str], list[StoredRun]] = defaultdict(list)
    for run in runs:
        groups[group_key(run)].append(run)
    latest: dict[tuple[str, str], list[StoredRun]] = {}
    for key, members in groups.items():
        newest = max(r.env.get("finished", "") for r in members)
        current = latest.get(key[:2])
        if current is None or newest >= max(r.env.get("finished", "") for r in current):
            latest[key[:2]] = sorted(members, key=lambda r: r.seed)
    return [latest[k] for k in sorted(latest)]


def claims_rows(groups: list[list[StoredRun]]) -> list[dict[str, Any]]:
    rows = []
    for members in groups:
        first = members[0]
        for i, verdict in enumerate(first.verdicts):
            per_seed = [m.verdicts[i] for m in members if i < len(m.verdicts)]
            rows.append(
                {
                    "study": first.study,
                    "preset": first.preset,
                    "claim": verdict.claim,
                    "verdict": combine(per_seed),
                    "numbers": "; ".join(f"seed {m.seed}: {v.numbers_text()}" for m, v in zip(members, per_seed))
                    if len(members) > 1
                    else verdict.numbers_text(),
                    "note": verdict.note,
                    "seeds": [m.seed for m in members],
                }
            )
    return rows


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.name)}" src="data:image/png;base64,{data}">'


def render(root: Path, title: str = "genlab report") -> str:
    runs = finished_runs(root)
    groups = latest_groups(runs)
    rows = claims_rows(groups)
    counts = {name: sum(r["verdict"] == name for r in rows) for name in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)}
    esc = html.escape
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p>{len(runs)} finished run(s) under <code>{esc(str(root))}</code>; generated "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}.</p>",
        "<p>" + " · ".join(f"<b style='color:{_COLOURS[k]}'>{v} {k}</b>" for k, v in counts.items()) + "</p>",
        "<h2>Claims</h2>",
    ]
    if not rows:
        out.append("<p>No finished runs yet: try <code>genlab reproduce</code>.</p>")
    else:
        out.append(
            "<table><tr><th>study</th><th>claim</th><th>verdict</th><th>numbers</th><th>preset</th><th>seeds</th></tr>"
        )
        for r in rows:
            note = f"<br><small>{esc(r['note'])}</small>" if r["note"] else ""
            out.append(
                f"<tr><td><a href='#{esc(r['study'])}'>{esc(r['study'])}</a></td><td>{esc(r['claim'])}{note}</td>"
                f"<td style='color:{_COLOURS[r['verdict']]}'><b>{esc(r['verdict'])}</b></td>"
                f"<td><small>{esc(r['numbers'])}</small></td><td>{esc(r['preset'])}</td>"
                f"<td>{esc(','.join(map(str, r['seeds'])))}</td></tr>"
            )
        out.append("</table>")
    for members in groups:
        first = members[0]
        out.append(f"<h2 id='{esc(first.study)}'>{esc(first.study)} <small>({esc(first.preset)})</small></h2>")
        walls = ", ".join(f"seed {m.seed}: {m.env.get('wall_time', 0):.1f} s" for m in members)
        out.append(f"<p>Wall time: {esc(walls)}. Run directory: <code>{esc(str(first.path))}</code></p>")
        for fig in first.figures:
            out.append(f"<figure>{_img(fig)}<figcaption>{esc(fig.name)}</figcaption></figure>")
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


def write_report(root: Path, out: Path | None = None, title: str = "genlab report") -> Path:
    """Render the report for the runs under ``root`` and write it (default ``<root>/report.html``)."""
    root = Path(root)
    out = Path(out) if out else root / "report.html"
    atomic_write_bytes(out, render(root, title).encode())
    return out


_CSS = """
body{font-family:system-ui,-apple-system,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;width:100%;font-size:14px}th,td{border:1px solid #d0d7de;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f6f8fa}img{max-width:100%;border:1px solid #eee}
figure{margin:1em 0}code,pre{background:#f6f8fa;padding:2px 4px}details{margin:.3em 0}
"""
