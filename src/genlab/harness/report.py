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
    groups, superseded = split_groups(runs, presets)
    rows = claims_rows(groups)
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        *_header(root, title, runs, groups, presets, damaged),
        "<h2 id='claims'>Claims</h2>",
        _claims_table(rows) if rows else "<p>No finished runs yet: try <code>genlab reproduce</code>.</p>",
        *(line for members in groups for line in _study_section(members)),
        *_superseded_section(superseded),
        f"<script>{_SORT_JS}</script></body></html>",
    ]
    return "\n".join(out)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _anchor(study: str, preset: str) -> str:
    return f"{study}--{preset}"


def _header(root, title, runs, groups, presets, damaged) -> list[str]:
    counts = tally(groups)
    shown = "all presets" if presets is None else "preset " + ", ".join(presets)
    others = sorted({r.preset for r in runs} - set(presets or ()))
    other = ""
    if others:
        other = f" Other presets in the store: {', '.join(others)} (<code>genlab report --preset NAME</code>)."
    return [
        f"<h1>{_e(title)}</h1>",
        f"<p>{len(runs)} finished run(s) under <code>{_e(root)}</code>; this page shows {_e(shown)}.{other} "
        f"Generated {datetime.now(UTC).isoformat(timespec='seconds')}.</p>",
        "<p class='tally'>Empirical claims: "
        + " · ".join(f"<b style='color:{_COLOURS[k]}'>{v} {k}</b>" for k, v in counts[EMPIRICAL].items())
        + "<br><small>Identity checks (our own formulas and constructions, not reproductions): "
        + " · ".join(f"{v} {k}" for k, v in counts[IDENTITY].items())
        + "</small></p>",
        *(f"<p class='warn'>Damaged run left out: <code>{_e(line)}</code></p>" for line in damaged),
    ]


def _claims_table(rows: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("study", "claim", "kind", "verdict", "numbers", "preset", "seeds"))
    body = []
    for r in rows:
        note = f"<br><small>{_e(r['note'])}</small>" if r["note"] else ""
        body.append(
            f"<tr><td><a href='#{_e(_anchor(r['study'], r['preset']))}'>{_e(r['study'])}</a></td>"
            f"<td><code>{_e(r['key'])}</code> {_e(r['claim'])}{note}</td><td>{_e(r['kind'])}</td>"
            f"<td style='color:{_COLOURS[r['verdict']]}'><b>{_e(r['verdict'])}</b></td>"
            f"<td><small>{_e(r['numbers'])}</small></td><td>{_e(r['preset'])}</td>"
            f"<td>{_e(','.join(map(str, r['seeds'])))}</td></tr>"
        )
    return f"<table class='sortable'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _study_section(members: list[StoredRun]) -> list[str]:
    from genlab.harness.study import all_studies

    first = members[0]
    cls = all_studies().get(first.study)
    anchor = _e(_anchor(first.study, first.preset))
    out = [f"<h2 id='{anchor}'>{_e(first.study)} <small>({_e(first.preset)})</small></h2>"]
    if cls is not None:
        paper = cls.paper
        link = f"<a href='{_e(paper.url)}'>{_e(paper.arxiv)}</a>" if paper.url else _e(paper.arxiv)
        docs = _docs_link(first.study)
        out.append(f"<p class='paper'><i>{_e(paper.title)}</i> ({link}). {_e(cls.summary)} {docs}</p>")
    walls = ", ".join(f"seed {m.seed}: {m.env.get('wall_time', 0):.1f} s" for m in members)
    out.append(f"<p>Wall time: {_e(walls)}. Run directory: <code>{_e(first.path)}</code></p>")
    captions = first.env.get("captions", {})
    for fig in first.figures:
        caption = captions.get(fig.name, fig.name)
        out.append(f"<figure>{_img(fig)}<figcaption>{_e(caption)} <small>({_e(fig.name)}, seed {first.seed})</small>"
                   "</figcaption></figure>")
    out.append("<details><summary>config</summary><pre>" + _e(json.dumps(first.config, indent=2)) + "</pre></details>")
    versions = first.env.get("versions", {})
    out.append(
        "<details><summary>environment</summary><pre>" + _e(json.dumps(versions, indent=2)) + "\n"
        f"platform: {_e(first.env.get('platform', ''))}</pre></details>"
    )
    return out


def _docs_link(study: str) -> str:
    """A link to the study's docs page when genlab runs from a source checkout, else its path in the repository."""
    import genlab

    page = Path(genlab.__file__).resolve().parents[2] / "docs" / "studies" / f"{study}.md"
    if page.exists():
        return f"Docs: <a href='{_e(page.as_uri())}'>docs/studies/{_e(study)}.md</a>."
    return f"Docs: <code>docs/studies/{_e(study)}.md</code> in the genlab repository."


def _superseded_section(superseded: list[list[StoredRun]]) -> list[str]:
    if not superseded:
        return []
    rows = "".join(
        f"<tr><td>{_e(m[0].study)}</td><td>{_e(m[0].preset)}</td><td>{_e(_newest(m))}</td>"
        f"<td>{_e(','.join(str(r.seed) for r in m))}</td><td><code>{_e(m[0].path.parent)}/"
        f"{{{_e(','.join(r.run_hash for r in m))}}}</code></td></tr>"
        for m in superseded
    )
    return [
        "<h2 id='superseded'>Superseded runs</h2>",
        "<p>Finished runs of an older config of the same study and preset; a newer group replaces them above.</p>",
        "<table class='sortable'><thead><tr><th>study</th><th>preset</th><th>finished</th><th>seeds</th>"
        f"<th>runs</th></tr></thead><tbody>{rows}</tbody></table>",
    ]


def write_report(
    root: Path, out: Path | None = None, title: str = "genlab report", presets: tuple[str, ...] | None = ("quick",)
) -> Path:
    """Render the report for the runs under ``root`` and write it (default ``<root>/report.html``)."""
    root = Path(root)
    out = Path(out) if out else root / "report.html"
    atomic_write_bytes(out, render(root, title, presets).encode())
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
"""
