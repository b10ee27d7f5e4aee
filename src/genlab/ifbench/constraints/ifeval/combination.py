"""IFEval (Google's instruction_following_eval): the `combination:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench.core import Param, constraint


@constraint(
    "combination:two_responses",
    "two different answers separated by ******",
    describe=lambda kw: "Give two different answers, separated by six asterisks: ******",
)
def _two_responses(t, kw, fixed):
    parts = t.split("******")
    valid = []
    for i, p in enumerate(parts):
        if not p.strip():
            if i not in (0, len(parts) - 1):
                return False, "an empty answer between ****** separators"
        else:
            valid.append(p)
    if len(valid) != 2:
        return False, f"{len(valid)} non-empty parts (needs exactly 2)"
    if valid[0].strip() == valid[1].strip():
        return False, "the two answers are identical"
    return True, "two different answers"


@constraint(
    "combination:repeat_prompt",
    "first repeat the request verbatim, then answer",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: (
        "First repeat the request word for word without change, then give your answer "
        "(say nothing before the repetition; do not repeat this sentence)."
    ),
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or "Write a haiku about the sea."},
)
def _repeat_prompt(t, kw, fixed):
    ok = t.strip().lower().startswith(kw["prompt_to_repeat"].strip().lower())
    return ok, "starts with the request" if ok else "does not start with the request verbatim"
