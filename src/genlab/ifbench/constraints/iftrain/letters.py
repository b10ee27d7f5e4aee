"""IFTrain (open-instruct's IFEvalG training-only ids): the `letters:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench.constraints.helpers import REL, letter_frequency, rel_ok, sample_letter_kwargs
from genlab.ifbench.core import Param, constraint


@constraint(
    "letters:letter_counting",
    "total number of letters less than / at least N",
    [Param("N", "int", lo=1, hi=5000), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Answer with {kw['relation']} {kw['N']} letters.",
    sample=lambda r, c: {"N": r.randint(20, 400), "relation": r.choice(REL)},
)
def _letter_counting(t, kw, fixed):
    n = len(re.findall(r"[a-zA-Z]", t))
    return rel_ok(n, kw["relation"], kw["N"]), f"{n} letters (needs {kw['relation']} {kw['N']})"


_letter_counting2 = constraint(
    "letters:letter_counting2",
    "a letter appears less than / at least N times",
    [Param("letter", "str"), Param("let_frequency", "int", lo=1, hi=50), Param("let_relation", "str", choices=REL)],
    describe=lambda kw: f"Use the letter '{kw['letter']}' {kw['let_relation']} {kw['let_frequency']} times.",
    sample=lambda r, c: sample_letter_kwargs(r),
)(letter_frequency)
