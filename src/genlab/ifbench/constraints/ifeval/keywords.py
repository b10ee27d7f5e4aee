"""IFEval (Google's instruction_following_eval): the `keywords:*` constraints (4 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench.constraints.helpers import (
    REL,
    find_pattern,
    letter_frequency,
    rel_ok,
    rel_text,
    sample_letter_kwargs,
    sample_relation,
    search_pattern,
    whole_word,
)
from genlab.ifbench.constraints.wordlists import NOUNS
from genlab.ifbench.core import Param, constraint


def _word_count(keyword: str, text: str) -> int:
    return len(re.findall(whole_word(keyword), text, re.IGNORECASE))


def _has_word(keyword: str, text: str) -> bool:
    """``_word_count(keyword, text) > 0``, stopping at the first match."""
    return re.search(whole_word(keyword), text, re.IGNORECASE) is not None


@constraint(
    "keywords:existence",
    "include every given keyword",
    [Param("keywords", "list", doc="keywords that must all appear")],
    describe=lambda kw: (
        "Make sure your answer mentions each of these words: "
        + ", ".join(repr(k) for k in sorted(kw["keywords"]))
        + "."
    ),
    sample=lambda r, c: {"keywords": r.sample(NOUNS, 2)},
    fixed="whole-word, literal match instead of a case-insensitive regex substring search",
)
def _existence(t, kw, fixed):
    missing = [k for k in kw["keywords"] if not (_has_word(k, t) if fixed else search_pattern(k, t))]
    n = len(kw["keywords"])
    if missing:
        return False, f"found {n - len(missing)} of {n} keywords; missing " + ", ".join(map(repr, missing))
    return True, f"all {n} keywords present"


@constraint(
    "keywords:frequency",
    "a keyword appears less than / at least N times",
    [Param("keyword", "str"), Param("frequency", "int", lo=1, hi=10), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Use the word '{kw['keyword']}' {kw['relation']} {kw['frequency']} times.",
    sample=lambda r, c: {"keyword": r.choice(NOUNS), "frequency": r.randint(1, 4), "relation": sample_relation(r)},
    fixed="counts whole-word occurrences instead of regex substring matches",
)
def _frequency(t, kw, fixed):
    k = kw["keyword"].strip()
    n = _word_count(k, t) if fixed else len(find_pattern(k, t))
    return rel_ok(n, kw["relation"], kw["frequency"]), rel_text(n, kw["relation"], kw["frequency"], f"'{k}' occurs")


@constraint(
    "keywords:forbidden_words",
    "none of the given words appears (whole word)",
    [Param("forbidden_words", "list")],
    describe=lambda kw: "Do not use any of these words: " + ", ".join(sorted(set(kw["forbidden_words"]))) + ".",
    sample=lambda r, c: {"forbidden_words": r.sample(NOUNS, 2)},
    fixed="forbidden words are matched literally (no regex interpretation)",
)
def _forbidden(t, kw, fixed):
    found = []
    for w in sorted(set(kw["forbidden_words"])):
        pat = r"\b" + (re.escape(w) if fixed else w) + r"\b"
        if search_pattern(pat, t):
            found.append(w)
    if found:
        return False, "uses forbidden word(s) " + ", ".join(map(repr, found))
    return True, "no forbidden word used"


_letter_frequency = constraint(
    "keywords:letter_frequency",
    "a letter appears less than / at least N times",
    [Param("letter", "str"), Param("let_frequency", "int", lo=1, hi=50), Param("let_relation", "str", choices=REL)],
    describe=lambda kw: (
        f"The letter '{kw['letter']}' should appear {kw['let_relation']} {kw['let_frequency']} times in your response."
    ),
    sample=lambda r, c: sample_letter_kwargs(r),
)(letter_frequency)
