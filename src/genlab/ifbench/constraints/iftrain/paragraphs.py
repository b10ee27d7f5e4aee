"""IFTrain (open-instruct's IFEvalG training-only ids): the `paragraphs:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench.core import constraint


def _two_paragraphs(parts: list[str]) -> tuple[bool, str]:
    n = len(parts)
    for i, p in enumerate(parts):
        if not p.strip():
            if i in (0, len(parts) - 1):
                n -= 1
            else:
                return False, f"empty paragraph at position {i + 1}"
    return n == 2, f"{n} paragraphs (needs 2)"


@constraint(
    "paragraphs:paragraphs",
    "exactly 2 paragraphs separated by ***",
    describe=lambda kw: "Write exactly 2 paragraphs separated by the markdown divider ***.",
)
def _paragraphs(t, kw, fixed):
    return _two_paragraphs(re.split(r"\s?\*\*\*\s?", t))


@constraint(
    "paragraphs:paragraphs2",
    "exactly 2 paragraphs separated by a blank line",
    describe=lambda kw: "Write exactly 2 paragraphs separated by one blank line (and no other blank lines).",
)
def _paragraphs2(t, kw, fixed):
    return _two_paragraphs(re.split(r"\n\n", t))
