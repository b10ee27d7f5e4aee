"""IFTrain (open-instruct's IFEvalG training-only ids): the `first_word:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench import nlp
from genlab.ifbench.constraints.wordlists import NOUNS
from genlab.ifbench.core import Param, constraint


@constraint(
    "first_word:first_word_sent",
    "every sentence starts with a given word",
    [Param("first_word", "str")],
    describe=lambda kw: f"Start every sentence with the word '{kw['first_word']}'.",
    sample=lambda r, c: {"first_word": r.choice(["I", "We", "The", "This", "Today"])},
)
def _first_word_sent(t, kw, fixed):
    want = kw["first_word"].strip().lower()
    for i, s in enumerate(nlp.regex_split_sentences(t), 1):
        if not s.strip():
            return False, f"sentence {i} is empty"
        if s.split()[0].strip().lower() != want:
            return False, f"sentence {i} starts with {s.split()[0]!r}"
    return True, f"every sentence starts with {want!r}"


@constraint(
    "first_word:first_word_answer",
    "the response starts with a given word",
    [Param("first_word", "str")],
    describe=lambda kw: f"The first word of your response must be '{kw['first_word']}'.",
    sample=lambda r, c: {"first_word": r.choice(NOUNS)},
)
def _first_word_answer(t, kw, fixed):
    w = t.split()
    if not w:
        return False, "no words"
    ok = w[0].strip().lower() == kw["first_word"].strip().lower()
    return ok, f"first word is {w[0]!r}"
