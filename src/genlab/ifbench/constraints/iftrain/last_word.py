"""IFTrain (open-instruct's IFEvalG training-only ids): the `last_word:*` constraints (2 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench import nlp
from genlab.ifbench.constraints.wordlists import NOUNS
from genlab.ifbench.core import Param, constraint


@constraint(
    "last_word:last_word_sent",
    "every sentence ends with a given word (before punctuation)",
    [Param("last_word", "str")],
    describe=lambda kw: f"End every sentence with the word '{kw['last_word']}' (before the punctuation).",
    sample=lambda r, c: {"last_word": r.choice(NOUNS)},
)
def _last_word_sent(t, kw, fixed):
    want = kw["last_word"].strip().lower()
    for i, s in enumerate(nlp.regex_split_sentences(t), 1):
        if not s.strip():
            return False, f"sentence {i} is empty"
        lw = re.sub(r"[^\w\s]", "", s.split()[-1].strip())
        if lw.lower() != want:
            return False, f"sentence {i} ends with {lw!r}"
    return True, f"every sentence ends with {want!r}"


@constraint(
    "last_word:last_word_answer",
    "the response ends with a given word",
    [Param("last_word", "str")],
    describe=lambda kw: f"The last word of your response must be '{kw['last_word']}'.",
    sample=lambda r, c: {"last_word": r.choice(NOUNS)},
)
def _last_word_answer(t, kw, fixed):
    w = t.split()
    if not w:
        return False, "no words"
    lw = re.sub(r"[^\w\s]", "", w[-1].strip())
    ok = lw.lower() == kw["last_word"].strip().lower()
    return ok, f"last word is {lw!r}"
