"""IFTrain (open-instruct's IFEvalG training-only ids): the `keywords:*` constraints (7 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import REL, find_pattern, rel_ok, whole_word
from genlab.ifbench.constraints.wordlists import NOUNS, SENTENCES
from genlab.ifbench.core import Param, constraint


@constraint(
    "keywords:no_adjacent_consecutive",
    "no adjacent words start with consecutive letters",
    describe=lambda kw: "No two neighbouring words may start with consecutive letters of the alphabet (like a, b).",
)
def _no_adjacent(t, kw, fixed):
    w = t.split()
    for a, b in zip(w, w[1:]):
        fa, fb = a[0].lower(), b[0].lower()
        if len(fa) != 1 or len(fb) != 1:
            return False, f"{a!r} or {b!r} starts with a letter whose lowercase is two characters"
        if ord(fb) - ord(fa) == 1:
            return False, f"{a!r} then {b!r}"
    return True, "no consecutive initials"


@constraint(
    "keywords:word_once",
    "a keyword appears exactly once",
    [Param("keyword", "str")],
    describe=lambda kw: f"Include the word '{kw['keyword']}' in your response (exactly once).",
    sample=lambda r, c: {"keyword": r.choice(NOUNS)},
    fixed="whole-word count instead of a case-insensitive regex substring count",
)
def _word_once(t, kw, fixed):
    k = kw["keyword"].strip()
    n = len(re.findall(whole_word(k), t, re.IGNORECASE)) if fixed else len(find_pattern(k, t))
    return n == 1, f"'{k}' occurs {n} times (needs exactly 1)"


@constraint(
    "keywords:word_count_different_numbers",
    "a keyword appears less than / at least N times",
    [Param("keyword", "str"), Param("frequency", "int", lo=1, hi=10), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"The word '{kw['keyword']}' should appear {kw['relation']} {kw['frequency']} times.",
    sample=lambda r, c: {"keyword": r.choice(NOUNS), "frequency": r.randint(1, 5), "relation": r.choice(REL)},
    fixed="whole-word count instead of a regex substring count",
)
def _word_count_diff(t, kw, fixed):
    k = kw["keyword"].strip()
    n = len(re.findall(whole_word(k), t, re.IGNORECASE)) if fixed else len(find_pattern(k, t))
    return rel_ok(
        n, kw["relation"], kw["frequency"]
    ), f"'{k}' occurs {n} times (needs {kw['relation']} {kw['frequency']})"


@constraint(
    "keywords:exclude_word_harder",
    "a keyword taken from the instruction must not be used",
    [Param("keyword", "str"), Param("instruction", "str", required=False)],
    describe=lambda kw: f"Do not use the word '{kw['keyword']}' anywhere in your response.",
    sample=lambda r, c: {"keyword": r.choice((c.get("prompt") or r.choice(SENTENCES)).split()).strip(".,!?")},
    fixed="whole-word, case-insensitive search (the reference only finds the keyword with a space on each side)",
)
def _exclude_harder(t, kw, fixed):
    k = kw["keyword"].strip()
    hit = re.search(whole_word(k), t, re.IGNORECASE) is not None if fixed else (" " + k + " ") in t
    return not hit, f"uses {k!r}" if hit else f"{k!r} not used"


@constraint(
    "keywords:palindrome",
    "include a palindrome",
    describe=lambda kw: "Include a palindrome (a word that reads the same backwards, like 'racecar').",
    fixed="the palindrome must be a word of at least 3 letters, compared case-insensitively without punctuation "
    "(the reference accepts 'a', 'I' or '-')",
)
def _palindrome_basic(t, kw, fixed):
    if fixed:
        words = [re.sub(r"[^\w]", "", w).lower() for w in t.split()]
        pals = [w for w in words if len(w) >= 3 and w.isalpha() and w == w[::-1]]
    else:
        pals = [w for w in t.split() if w == w[::-1]]
    return bool(pals), f"palindrome {pals[0]!r}" if pals else "no palindrome"


@constraint(
    "keywords:keyword_specific_position",
    "keyword as the m-th token of the n-th sentence",
    [Param("keyword", "str"), Param("n", "int", lo=1, hi=100), Param("m", "int", lo=1, hi=100)],
    describe=lambda kw: f"Put the word '{kw['keyword']}' in sentence {kw['n']} as its word number {kw['m']}.",
    sample=lambda r, c: {"keyword": r.choice(NOUNS), "n": r.randint(1, 10), "m": r.randint(1, 15)},
    fixed="case-insensitive, punctuation tokens not counted (as the IFBench test id words:keywords_specific_position)",
)
def _kw_specific(t, kw, fixed):
    s = nlp.regex_split_sentences(t)
    n, m = kw["n"], kw["m"]
    if n < 1 or len(s) < n:
        return False, f"{len(s)} sentences (needs at least {n})"
    w = nlp.word_tokenize(s[n - 1])
    if fixed:
        w = [x for x in w if any(ch.isalnum() for ch in x)]
    if m < 1 or len(w) < m:
        return False, f"sentence {n} has {len(w)} tokens (needs at least {m})"
    k = kw["keyword"].strip()
    ok = w[m - 1].lower() == k.lower() if fixed else w[m - 1] == k
    return ok, f"token {m} of sentence {n} is {w[m - 1]!r}"


@constraint(
    "keywords:start_end",
    "start and end with the same word",
    describe=lambda kw: "Start and end your response with the same word, with nothing after it, not even punctuation.",
)
def _start_end(t, kw, fixed):
    w = nlp.word_tokenize(t)
    if len(w) < 2:
        return False, "fewer than 2 tokens"
    ok = w[0].lower() == w[-1].lower()
    return ok, f"starts with {w[0]!r}, ends with {w[-1]!r}"
