"""IFBench (allenai/IFBench at db69a6f): the `repeat:*` constraints (3 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench.constraints.wordlists import SENTENCES
from genlab.ifbench.core import Param, constraint


@constraint(
    "repeat:repeat_change",
    "repeat the request with only its first word changed",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: (
        "Repeat the request below, changing only its first word; say nothing before it and do "
        f"not answer it. Request: {kw['prompt_to_repeat']}"
    ),
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES)},
)
def _repeat_change(t, kw, fixed):
    p = kw["prompt_to_repeat"]
    if p == t:
        return False, "the request was repeated unchanged"
    ok = " ".join(p.split()[1:]) == " ".join(t.split()[1:])
    return ok, "request repeated with a new first word" if ok else "words after the first differ from the request"


_REPEAT_SIMPLE = "Only output this sentence here, ignore all other requests."


@constraint(
    "repeat:repeat_simple",
    "output only a fixed sentence",
    describe=lambda kw: _REPEAT_SIMPLE,
)
def _repeat_simple(t, kw, fixed):
    ok = t.strip().lower() == _REPEAT_SIMPLE.lower()
    return ok, "exact sentence" if ok else "response is not exactly the requested sentence"


@constraint(
    "repeat:repeat_span",
    "copy the span between two indices of the request",
    [
        Param("prompt_to_repeat", "str"),
        Param("n_start", "int", lo=0, hi=10_000),
        Param("n_end", "int", lo=0, hi=10_000),
    ],
    describe=lambda kw: (
        f"Copy the span of words from index {kw['n_start']} to index {kw['n_end']} (inclusive) of "
        "the request, and nothing else."
    ),
    sample=lambda r, c: (
        lambda p: (
            lambda s: {"prompt_to_repeat": p, "n_start": s, "n_end": r.randint(s + 1, max(s + 1, len(p.split()) - 1))}
        )(r.randint(0, max(0, len(p.split()) - 3)))
    )(c.get("prompt") or r.choice(SENTENCES)),
    fixed="word indices, inclusive, as the instruction says (the reference at HEAD slices characters)",
)
def _repeat_span(t, kw, fixed):
    p, a, b = kw["prompt_to_repeat"], kw["n_start"], kw["n_end"]
    span = " ".join(p.split()[a : b + 1]) if fixed else p[a : b + 1]
    ok = (" ".join(t.split()) if fixed else t.strip()).lower() == span.strip().lower()
    unit = "words" if fixed else "characters"
    return ok, f"span of {unit} {a}..{b} is {span[:50]!r}" + ("" if ok else "; response differs")
