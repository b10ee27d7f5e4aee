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


def _ascii_lower(text: str) -> str | None:
    return text.lower() if text.isascii() else None


def _literal_hits(literal: str, low: str | None) -> int | None:
    """How many re.IGNORECASE matches of ``literal`` (matched as a literal string) re.findall finds in the text
    whose lowercase is ``low``: ``low.count(literal.lower())`` when the text and the literal are ASCII (the non-ASCII
    characters that match ASCII ones ignoring case, such as the Kelvin sign for 'k', cannot occur then; findall's
    matches of a literal are its non-overlapping occurrences, as str.count's); None otherwise."""
    return low.count(literal.lower()) if low is not None and literal.isascii() else None


_PLAIN = re.compile(r"[A-Za-z0-9 '-]*")  # regex patterns made of these characters only match themselves


def _plain_hits(pattern: str, low: str | None) -> int | None:
    """``_literal_hits`` for a reference regex ``pattern`` that is a plain literal; None otherwise."""
    return _literal_hits(pattern, low) if _PLAIN.fullmatch(pattern) else None


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
    low = _ascii_lower(t)

    def present(k: str) -> bool:
        if fixed:  # (a whole-word match needs an occurrence)
            return _literal_hits(k, low) != 0 and _has_word(k, t)
        hits = _plain_hits(k, low)
        return hits > 0 if hits is not None else search_pattern(k, t)

    missing = [k for k in kw["keywords"] if not present(k)]
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
    low = _ascii_lower(t)
    if fixed:
        n = 0 if _literal_hits(k, low) == 0 else _word_count(k, t)  # (a whole-word match needs an occurrence)
    else:
        n = _plain_hits(k, low)
        if n is None:
            n = len(find_pattern(k, t))
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
    low = _ascii_lower(t)
    for w in sorted(set(kw["forbidden_words"])):
        if (_literal_hits(w, low) if fixed else _plain_hits(w, low)) == 0:
            continue  # the word never occurs, so neither does \bword\b
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
