"""IFBench (allenai/IFBench at db69a6f): the `sentence:*` constraints (3 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import STRIP_CHARS, strip_punctuation
from genlab.ifbench.constraints.wordlists import NOUNS, ordinal
from genlab.ifbench.core import Param, constraint


def _alliteration_score(sentence: str) -> int:
    words = [w.lstrip(STRIP_CHARS) for w in sentence.lower().split()]
    words = [w for w in words if w]
    score, prev = 0, False
    for a, b in zip(words, words[1:]):
        if a[0] == b[0]:
            score += 1 if prev else 2
            prev = True
        else:
            prev = False
    return score


@constraint(
    "sentence:alliteration_increment",
    "each sentence has a longer alliterative run than the last",
    describe=lambda kw: "Each sentence must contain more alliterating consecutive words than the sentence before.",
)
def _alliteration(t, kw, fixed):
    prev = -1
    for i, s in enumerate(nlp.sent_tokenize(t), 1):
        a = _alliteration_score(s)
        if a <= prev:
            return False, f"sentence {i} has alliteration score {a}, not more than {prev}"
        prev = a
    return True, "alliteration grows in every sentence"


@constraint(
    "sentence:keyword",
    "a keyword in the N-th sentence",
    [Param("word", "str"), Param("N", "int", lo=1, hi=100)],
    describe=lambda kw: f'The word "{kw["word"]}" must appear in your {ordinal(kw["N"])} sentence.',
    sample=lambda r, c: {"word": r.choice(NOUNS), "N": r.randint(1, 20)},
)
def _sentence_keyword(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    n = kw["N"]
    if len(s) < n or n < 1:
        return False, f"only {len(s)} sentences (needs at least {n})"
    ok = re.search(r"\b" + re.escape(kw["word"]) + r"\b", s[n - 1], re.IGNORECASE) is not None
    return ok, f"sentence {n} {'contains' if ok else 'lacks'} {kw['word']!r}"


def _n_words(sentence: str) -> int:
    return len(strip_punctuation(sentence).split())  # (split() ignores leading and trailing whitespace)


@constraint(
    "sentence:increment",
    "each sentence has exactly N more words than the previous",
    [Param("small_n", "int", lo=1, hi=10)],
    describe=lambda kw: f"Each sentence must contain exactly {kw['small_n']} more words than the one before.",
    sample=lambda r, c: {"small_n": r.randint(1, 5)},
)
def _increment(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    if not s:
        return False, "no sentences"
    k = kw["small_n"]
    counts: list[int] = []
    for i, x in enumerate(s):
        counts.append(_n_words(x))
        if i and counts[i] != counts[i - 1] + k:
            counts += map(_n_words, s[i + 1 : 8])  # the reason shows the first 8 counts
            return False, f"word counts per sentence {counts[:8]}; sentence {i + 1} breaks +{k}"
    return True, f"word counts {counts[:8]} grow by {k}"
