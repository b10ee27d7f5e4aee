"""IFTrain (open-instruct's IFEvalG training-only ids): the `format:*` constraints (3 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench import nlp
from genlab.ifbench.core import constraint


@constraint(
    "format:sentence_hyphens",
    "sentences joined by hyphens without spaces",
    describe=lambda kw: "Join all sentences with hyphens and no spaces between them.",
)
def _sentence_hyphens(t, kw, fixed):
    gold = nlp.regex_split_sentences(re.sub("-", " ", t))
    parts = t.split("-")
    for i, (s, g) in enumerate(zip(parts, gold), 1):
        if s.strip() != s:
            return False, f"piece {i} has surrounding spaces"
        if s != g:
            return False, f"piece {i} {s[:30]!r} is not a whole sentence"
    return True, "sentences joined by hyphens"


@constraint(
    "format:square_brackets",
    "every word wrapped in [square brackets]",
    describe=lambda kw: "Wrap every word of your response in square brackets, like [this] [one].",
)
def _square(t, kw, fixed):
    for w in t.split():
        if not (w.startswith("[") and w.endswith("]")):
            return False, f"{w!r} is not wrapped in brackets"
    return True, "every word bracketed"


@constraint(
    "format:bigram_wrapping",
    "every word pair wrapped in << >>",
    describe=lambda kw: "Wrap every pair of consecutive words in double angular brackets, like <<I am>> <<at home>>.",
)
def _bigram(t, kw, fixed):
    w = t.split()
    for i in range(0, len(w) - 1, 2):
        if not (w[i].startswith("<<") and w[i + 1].endswith(">>")):
            return False, f"words {i + 1}-{i + 2} ({w[i]!r} {w[i + 1]!r}) are not wrapped"
    return True, "all bigrams wrapped"
