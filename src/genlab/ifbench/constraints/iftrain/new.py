"""IFTrain (open-instruct's IFEvalG training-only ids): the `new:*` constraints (1 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench.constraints.wordlists import SENTENCES
from genlab.ifbench.core import Param, constraint


@constraint(
    "new:copy_span_idx",
    "copy the characters between two indices of the request",
    [
        Param("prompt_to_repeat", "str"),
        Param("n_start", "int", lo=0, hi=10_000),
        Param("n_end", "int", lo=0, hi=10_000),
    ],
    describe=lambda kw: (
        f"Copy the text between character index {kw['n_start']} and {kw['n_end']} (inclusive) of "
        "the request, and nothing else."
    ),
    sample=lambda r, c: (
        lambda p: (lambda s: {"prompt_to_repeat": p, "n_start": s, "n_end": r.randint(s + 1, max(s + 1, len(p) - 1))})(
            r.randint(0, max(0, len(p) - 2))
        )
    )(c.get("prompt") or r.choice(SENTENCES)),
    fixed="the end index is inclusive, as the instruction says (the reference slices end-exclusive)",
)
def _copy_span(t, kw, fixed):
    p, a, b = kw["prompt_to_repeat"], kw["n_start"], kw["n_end"]
    span = p[a : b + 1] if fixed else p[a:b]
    ok = t.strip().lower() == span.strip().lower()
    return ok, f"expected span {span[:50]!r}" + ("" if ok else "; response differs")
