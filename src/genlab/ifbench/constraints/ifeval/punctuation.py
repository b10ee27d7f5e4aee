"""IFEval (Google's instruction_following_eval): the `punctuation:*` constraints (1 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench.core import constraint


@constraint(
    "punctuation:no_comma",
    "no ASCII comma",
    describe=lambda kw: "Do not use any commas in your response.",
)
def _no_comma(t, kw, fixed):
    n = t.count(",")
    return n == 0, "no commas" if n == 0 else f"{n} comma(s)"
