"""IFTrain (open-instruct's IFEvalG training-only ids): the `count:*` constraints (4 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re
from collections import Counter

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import find_pattern, whole_word
from genlab.ifbench.constraints.wordlists import NOUNS
from genlab.ifbench.core import Param, constraint


@constraint(
    "count:lowercase_counting",
    "lowercase words appear at most N times",
    [Param("N", "int", lo=1, hi=1000)],
    describe=lambda kw: f"No lowercase word may appear more than {kw['N']} times.",
    sample=lambda r, c: {"N": r.randint(2, 5)},
    fixed="each lowercase word may occur at most N times (the reference caps the total number of lowercase words)",
)
def _lowercase_counting(t, kw, fixed):
    words = re.findall(r"\b[a-z]+\b", t)
    if fixed:
        over = [(w, k) for w, k in Counter(words).most_common(1) if k > kw["N"]]
        if over:
            return False, f"{over[0][0]!r} occurs {over[0][1]} times (max {kw['N']})"
        return True, f"no lowercase word more than {kw['N']} times"
    return len(words) <= kw["N"], f"{len(words)} lowercase words in total (max {kw['N']})"


@constraint(
    "count:counting_composition",
    "3 paragraphs of n_sent sentences of n_words words each",
    [Param("n_sent", "int", lo=1, hi=10), Param("n_words", "int", lo=1, hi=30)],
    describe=lambda kw: (
        f"Write 3 paragraphs separated by the markdown divider * * *, each with exactly "
        f"{kw['n_sent']} sentences of exactly {kw['n_words']} words."
    ),
    sample=lambda r, c: {"n_sent": r.randint(2, 3), "n_words": r.randint(3, 10)},
    fixed="paragraphs may be split by '* * *' (the divider the instruction asks for) as well as '***', and "
    "punctuation tokens are not counted as words",
)
def _counting_composition(t, kw, fixed):
    splitter = r"\s?\*\s?\*\s?\*\s?" if fixed else r"\s?\*\*\*\s?"
    paras = re.split(splitter, t)
    n = len(paras)
    for i, p in enumerate(paras):
        if not p.strip():
            if i in (0, len(paras) - 1):
                n -= 1
            else:
                return False, f"empty paragraph {i + 1}"
        sents = nlp.regex_split_sentences(p)
        if len(sents) != kw["n_sent"]:
            return False, f"paragraph {i + 1} has {len(sents)} sentences (needs {kw['n_sent']})"
        for j, s in enumerate(sents, 1):
            toks = nlp.word_tokenize(s)
            if fixed:
                toks = [x for x in toks if any(ch.isalnum() for ch in x)]
            if len(toks) != kw["n_words"]:
                return False, f"paragraph {i + 1} sentence {j} has {len(toks)} words (needs {kw['n_words']})"
    return n == 3, f"{n} paragraphs (needs 3)"


@constraint(
    "count:count_unique",
    "no token repeated",
    describe=lambda kw: "Use only unique words: no word may be repeated.",
    fixed="only word tokens are compared, case-insensitively (the reference also fails on repeated punctuation)",
)
def _count_unique(t, kw, fixed):
    toks = nlp.word_tokenize(t)
    if fixed:
        toks = [x.lower() for x in toks if any(ch.isalnum() for ch in x)]
    dup = [w for w, k in Counter(toks).items() if k > 1]
    return not dup, "all tokens unique" if not dup else f"repeated: {dup[:5]}"


@constraint(
    "count:count_increment_word",
    "keyword1 once and keyword2 twice",
    [Param("keyword1", "str"), Param("keyword2", "str")],
    describe=lambda kw: f"Use the word '{kw['keyword1']}' once and the word '{kw['keyword2']}' twice.",
    sample=lambda r, c: dict(zip(("keyword1", "keyword2"), r.sample(NOUNS, 2))),
    fixed="whole-word counts instead of regex substring counts",
)
def _count_increment(t, kw, fixed):
    k1, k2 = kw["keyword1"].strip(), kw["keyword2"].strip()
    if fixed:
        n1, n2 = (len(re.findall(whole_word(k), t, re.IGNORECASE)) for k in (k1, k2))
    else:
        n1, n2 = len(find_pattern(k1, t)), len(find_pattern(k2, t))
    return n1 == 1 and n2 == 2, f"'{k1}' {n1}× (needs 1), '{k2}' {n2}× (needs 2)"
