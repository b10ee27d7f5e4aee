"""Writing an evaluation's result files: the reference's ``eval_results_{strict,loose}.jsonl``, ``summary.json``,
``details.jsonl`` and ``report.html``. JSON is written strictly (never NaN or Infinity: a strict parser rejects
them; an undefined accuracy is ``null``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from genlab.ifbench.evaluator import EvalResult, PromptResult

__all__ = ["dumps", "write_outputs"]


def _finite(x: Any) -> Any:
    """``x`` with every non-finite float replaced by None (recursively)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def dumps(obj: Any, **kw: Any) -> str:
    """``json.dumps`` that never writes NaN / Infinity (they become null)."""
    try:
        return json.dumps(obj, allow_nan=False, default=str, **kw)
    except ValueError:  # a non-finite float somewhere: replace it (rare, so not paid on every row)
        return json.dumps(_finite(obj), allow_nan=False, default=str, **kw)


def _reference_row(p: PromptResult, mode: str) -> dict[str, Any]:
    follow = [getattr(i, mode) for i in p.instructions]
    # Attribute order as the reference writes it (alphabetical, from dir()).
    return {
        "follow_all_instructions": all(follow),
        "follow_instruction_list": follow,
        "instruction_id_list": p.instruction_id_list,
        "prompt": p.prompt,
        "response": p.response,
    }


def write_outputs(res: EvalResult, out_dir: str | Path, *, prefix: str = "", html: bool = True,
                  bootstrap: int = 0, summary: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write ``{prefix}eval_results_strict.jsonl`` / ``..._loose.jsonl`` (reference schema),
    ``{prefix}summary.json``, ``{prefix}details.jsonl`` (per-instruction verdicts and reasons) and
    ``{prefix}report.html``. ``summary`` (from ``res.summary()``) is computed if not given. Returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for mode in ("strict", "loose"):
        path = out / f"{prefix}eval_results_{mode}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(_reference_row(p, mode)) + "\n" for p in res.prompts)
        paths[mode] = path
    summ = summary if summary is not None else res.summary(bootstrap=bootstrap)
    paths["summary"] = out / f"{prefix}summary.json"
    paths["summary"].write_text(dumps(summ, indent=2), encoding="utf-8")
    paths["details"] = out / f"{prefix}details.jsonl"
    with open(paths["details"], "w", encoding="utf-8") as f:
        for p in res.prompts:
            row = {"key": p.key, "missing": p.missing, "instructions": [i.__dict__ for i in p.instructions]}
            f.write(dumps(row) + "\n")
    if html:
        from genlab.ifbench.report import render_html

        paths["html"] = out / f"{prefix}report.html"
        paths["html"].write_text(render_html(res, summ), encoding="utf-8")
    return paths
