"""IFTrain (open-instruct's IFEvalG training-only ids): the `punctuation:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench.core import constraint


@constraint(
    "punctuation:punctuation_dot",
    "no '.' at all",
    describe=lambda kw: "Do not use any dots (periods) anywhere in your response.",
)
def _no_dot(t, kw, fixed):
    n = t.count(".")
    return n == 0, "no dots" if n == 0 else f"{n} dot(s)"


@constraint(
    "punctuation:punctuation_exclamation",
    "no '!' at all",
    describe=lambda kw: "Do not use any exclamation marks.",
)
def _no_excl(t, kw, fixed):
    n = t.count("!")
    return n == 0, "no exclamation marks" if n == 0 else f"{n} exclamation mark(s)"
