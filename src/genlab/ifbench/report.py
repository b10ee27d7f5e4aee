"""A self-contained HTML report of an evaluation: overall scores, per-constraint table, worst constraints and
example failures with the checker's reason."""

from __future__ import annotations

import html
from typing import Any

from genlab.ifbench.evaluator import EvalResult

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f3f3f3}.bar{background:#4a90d9;height:10px;display:inline-block}
.fail{color:#b00}.small{font-size:85%;color:#555}pre{white-space:pre-wrap;background:#f8f8f8;padding:6px}
"""


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _provenance(s: dict[str, Any]) -> str:
    tp = s.get("text_processing") or {}
    mode = tp.get("mode", "?")
    note = ("NLTK's data: sentence splits, stop words and POS tags as the reference computes them"
            if mode == "real" else
            "<b>offline rules</b> (NLTK data missing: " + html.escape(", ".join(tp.get("missing_nltk_data") or []))
            + "): sentence splits and words:start_verb can differ from the reference")
    versions = ", ".join(f"{k} {html.escape(str(tp.get(k)))}" for k in ("genlab", "nltk", "langdetect"))
    return f"<p class=small>Text processing: {html.escape(mode)} — {note}. Versions: {versions}.</p>"


def _ci(d: dict, level: str) -> str:
    ci = d.get("ci95", {}).get(level)
    return f" <span class=small>[{_pct(ci[0])}, {_pct(ci[1])}]</span>" if ci else ""


def render_html(res: EvalResult, summary: dict[str, Any] | None = None, *, max_failures: int = 40) -> str:
    """Render the report as one HTML string."""
    s = summary or res.summary()
    e = html.escape
    parts = [f"<html><head><meta charset='utf-8'><title>IFBench evaluation</title><style>{_CSS}</style></head><body>"]
    parts.append("<h1>Instruction-following evaluation</h1>")
    parts.append(
        f"<p>{s['n_prompts']} prompts, {s['n_instructions']} instructions, semantics <b>{e(s['semantics'])}</b>; "
        f"{len(s['missing_responses'])} missing responses; {s['skipped_unknown_ids']} unknown ids skipped.</p>"
    )
    parts.append(_provenance(s))
    parts.append("<table><tr><th></th><th>prompt-level</th><th>instruction-level</th></tr>")
    for mode in ("strict", "loose"):
        d = s[mode]
        parts.append(
            f"<tr><th>{mode}</th><td>{_pct(d['prompt_level'])}{_ci(d, 'prompt_level')}</td>"
            f"<td>{_pct(d['instruction_level'])}{_ci(d, 'instruction_level')}</td></tr>"
        )
    ci_note = "95% bootstrap intervals over prompts." if s["strict"].get("ci95") else "No bootstrap intervals."
    parts.append(f"</table><p class=small>{ci_note}</p>")

    parts.append("<h2>Per category (loose)</h2><table>")
    parts.append("<tr><th>category</th><th>n</th><th>strict</th><th>loose</th></tr>")
    for cat, v in s["per_category_loose"].items():
        st = s["per_category_strict"][cat]["accuracy"]
        parts.append(f"<tr><td>{e(cat)}</td><td>{v['n']}</td><td>{_pct(st)}</td><td>{_pct(v['accuracy'])}</td></tr>")
    parts.append("</table>")

    per = s["per_id_loose"]
    worst = sorted(per.items(), key=lambda kv: (kv[1]["accuracy"], -kv[1]["n"]))[:10]
    parts.append("<h2>Worst constraints (loose)</h2><table><tr><th>id</th><th>n</th><th>loose</th></tr>")
    for k, v in worst:
        parts.append(f"<tr><td>{e(k)}</td><td>{v['n']}</td><td>{_pct(v['accuracy'])}</td></tr>")
    parts.append("</table>")

    parts.append("<h2>Per constraint</h2><table><tr><th>id</th><th>n</th><th>strict</th><th>loose</th><th></th></tr>")
    for k, v in per.items():
        st = s["per_id_strict"][k]["accuracy"]
        w = int(100 * v["accuracy"])
        parts.append(
            f"<tr><td>{e(k)}</td><td>{v['n']}</td><td>{_pct(st)}</td><td>{_pct(v['accuracy'])}</td>"
            f"<td><span class=bar style='width:{w}px'></span></td></tr>"
        )
    parts.append("</table>")

    parts.append("<h2>Example failures (strict)</h2>")
    shown = 0
    for p in res.prompts:
        bad = [i for i in p.instructions if not i.strict and not i.skipped]
        if not bad:
            continue
        parts.append(f"<h3>prompt {e(str(p.key))}</h3><p class=small>{e(p.prompt[:300])}</p>")
        parts.append("<ul>" + "".join(
            f"<li class=fail><b>{e(i.id)}</b>: {e(i.reason)}"
            + (f" <span class=small>(loose passes via {e(i.loose_variant)})</span>" if i.loose else "") + "</li>"
            for i in bad
        ) + "</ul>")
        parts.append(f"<pre>{e(p.response[:600])}{'…' if len(p.response) > 600 else ''}</pre>")
        shown += 1
        if shown >= max_failures:
            break
    if not shown:
        parts.append("<p>None.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
