"""IFEval (Google's instruction_following_eval): the `startend:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench.core import Param, constraint


@constraint(
    "startend:end_checker",
    "ends with an exact phrase",
    [Param("end_phrase", "str")],
    describe=lambda kw: f"End your response with the exact phrase '{kw['end_phrase']}', and nothing after it.",
    sample=lambda r, c: {
        "end_phrase": r.choice(
            [
                "Any other questions?",
                "Is there anything else I can help with?",
                "That is all.",
                "Let me know what you think.",
            ]
        )
    },
)
def _end(t, kw, fixed):
    v = t.strip().strip('"').lower()
    p = kw["end_phrase"].strip().lower()
    ok = v.endswith(p)
    return ok, "ends with the phrase" if ok else f"ends with {v[-len(p) - 5 :]!r}, not {p!r}"


@constraint(
    "startend:quotation",
    "wrapped in double quotes",
    describe=lambda kw: "Wrap your whole response in double quotation marks.",
)
def _quotation(t, kw, fixed):
    v = t.strip()
    ok = len(v) > 1 and v[0] == '"' and v[-1] == '"'
    return ok, "wrapped in double quotes" if ok else "does not start and end with a double quote"
