"""IFEval (Google's instruction_following_eval): the `detectable_content:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench.constraints.helpers import search_pattern
from genlab.ifbench.core import Param, constraint


@constraint(
    "detectable_content:number_placeholders",
    "at least N [placeholders]",
    [Param("num_placeholders", "int", lo=1, hi=20)],
    describe=lambda kw: f"Include at least {kw['num_placeholders']} placeholders in square brackets, like [name].",
    sample=lambda r, c: {"num_placeholders": r.randint(1, 4)},
)
def _placeholders(t, kw, fixed):
    n = len(re.findall(r"\[.*?\]", t))
    return n >= kw["num_placeholders"], f"{n} placeholders (needs at least {kw['num_placeholders']})"


@constraint(
    "detectable_content:postscript",
    "a postscript starting with a marker (P.S. / P.P.S)",
    [Param("postscript_marker", "str")],
    describe=lambda kw: f"End with a postscript that starts with {kw['postscript_marker']}",
    sample=lambda r, c: {"postscript_marker": r.choice(["P.S.", "P.P.S"])},
)
def _postscript(t, kw, fixed):
    m = kw["postscript_marker"].strip()
    low = t.lower()
    # the reference searches r"\s*" + marker + r".*$" (re.MULTILINE); whether that matches anywhere does not depend
    # on the optional leading \s* or on the trailing .*$ (which always matches up to the end of the line), so
    # for the two fixed markers we search for the marker alone
    if m == "P.P.S":
        found = _PPS.search(low) is not None
    elif m == "P.S.":
        found = _PS.search(low) is not None
    else:
        found = search_pattern(r"\s*" + (re.escape(m.lower()) if fixed else m.lower()) + r".*$", low, re.MULTILINE)
    return found, ("postscript found" if found else f"no line starting with {m!r}")


_PPS = re.compile(r"p\.\s?p\.\s?s")
_PS = re.compile(r"p\.\s?s\.")
