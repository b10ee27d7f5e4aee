"""IFEval (Google's instruction_following_eval): the `detectable_format:*` constraints (6 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import json
import re

from genlab.ifbench.core import Param, constraint

_STAR_BULLET = re.compile(r"^\s*\*[^\*].*$", re.MULTILINE)
_DASH_BULLET = re.compile(r"^\s*-.*$", re.MULTILINE)


@constraint(
    "detectable_format:number_bullet_lists",
    "exactly N markdown bullet points (* or -)",
    [Param("num_bullets", "int", lo=1, hi=20)],
    describe=lambda kw: f"Use exactly {kw['num_bullets']} markdown bullet points, e.g.\n* first point\n* second point",
    sample=lambda r, c: {"num_bullets": r.randint(1, 6)},
)
def _bullets(t, kw, fixed):
    # (each pattern needs its literal "*" or "-": skipped when the text has none)
    n = len(_STAR_BULLET.findall(t)) if "*" in t else 0
    n += len(_DASH_BULLET.findall(t)) if "-" in t else 0
    return n == kw["num_bullets"], f"{n} bullet lines (needs exactly {kw['num_bullets']})"


CONSTRAINED = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@constraint(
    "detectable_format:constrained_response",
    "contains one of 'My answer is yes./no./maybe.'",
    describe=lambda kw: "Answer with exactly one of: " + ", ".join(f"'{x}'" for x in CONSTRAINED),
)
def _constrained(t, kw, fixed):
    s = t.strip()
    for opt in CONSTRAINED:
        if opt in s:
            return True, f"contains {opt!r}"
    return False, "none of the fixed answers ('My answer is yes./no./maybe.') appears"


@constraint(
    "detectable_format:number_highlighted_sections",
    "at least N *highlighted* sections",
    [Param("num_highlights", "int", lo=1, hi=20)],
    describe=lambda kw: f"Highlight at least {kw['num_highlights']} sections with markdown, like *this part*.",
    sample=lambda r, c: {"num_highlights": r.randint(1, 5)},
)
def _highlights(t, kw, fixed):
    n = 0
    if "*" in t:  # (both patterns need a literal "*": skipped when the text has none)
        n += sum(1 for h in re.findall(r"\*[^\n\*]*\*", t) if h.strip("*").strip())
        n += sum(1 for h in re.findall(r"\*\*[^\n\*]*\*\*", t) if h.removeprefix("**").removesuffix("**").strip())
    return n >= kw["num_highlights"], f"{n} highlighted sections (needs at least {kw['num_highlights']})"


@constraint(
    "detectable_format:multiple_sections",
    "at least N sections marked 'SPLITTER k'",
    [Param("section_spliter", "str"), Param("num_sections", "int", lo=1, hi=10)],
    describe=lambda kw: (
        f"Split your answer into {kw['num_sections']} sections, each starting with "
        f"'{kw['section_spliter']} X' (X = 1, 2, ...)."
    ),
    sample=lambda r, c: {
        "section_spliter": r.choice(["Section", "SECTION", "PART", "Chapter"]),
        "num_sections": r.randint(2, 5),
    },
    fixed="the splitter word is matched literally (no regex interpretation)",
)
def _sections(t, kw, fixed):
    sp = kw["section_spliter"].strip()
    pat = r"\s?" + (re.escape(sp) if fixed else sp) + r"\s?\d+\s?"
    try:
        n = len(re.split(pat, t)) - 1
    except re.error:
        n = len(re.split(r"\s?" + re.escape(sp) + r"\s?\d+\s?", t)) - 1
    return n >= kw["num_sections"], f"{n} sections marked '{sp} N' (needs at least {kw['num_sections']})"


@constraint(
    "detectable_format:json_format",
    "the whole output parses as JSON (code fences allowed)",
    describe=lambda kw: "Wrap your entire output in JSON; markdown code fences are allowed.",
)
def _json(t, kw, fixed):
    v = (
        t.strip()
        .removeprefix("```json")
        .removeprefix("```Json")
        .removeprefix("```JSON")
        .removeprefix("```")
        .removesuffix("```")
        .strip()
    )
    try:
        json.loads(v)
    except ValueError as e:
        return False, f"not valid JSON ({str(e)[:60]})"
    return True, "valid JSON"


@constraint(
    "detectable_format:title",
    "a title in double angular brackets <<like this>>",
    describe=lambda kw: "Give your answer a title wrapped in double angular brackets, such as <<a day at sea>>.",
)
def _title(t, kw, fixed):
    for m in re.findall(r"<<[^\n]+>>", t):
        if m.lstrip("<").rstrip(">").strip():
            return True, f"title {m[:40]!r}"
    return False, "no non-empty <<title>>"
