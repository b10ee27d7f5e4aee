"""IFBench (allenai/IFBench at db69a6f): the `count:*` constraints (9 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import PUNCT, STRIP_CHARS, strip_punctuation
from genlab.ifbench.constraints.wordlists import NOUNS, PERSON_NAMES, ordinal
from genlab.ifbench.core import Param, constraint


@constraint(
    "count:word_count_range",
    "word count within [min_words, max_words]",
    [Param("min_words", "int", lo=0, hi=2000), Param("max_words", "int", lo=1, hi=2500)],
    describe=lambda kw: f"Your answer must be between {kw['min_words']} and {kw['max_words']} words long.",
    sample=lambda r, c: (lambda lo: {"min_words": lo, "max_words": lo + r.randint(max(1, lo // 20), max(2, lo // 10))})(
        r.randint(50, 400)
    ),
)
def _word_range(t, kw, fixed):
    n = nlp.count_words(t)
    ok = kw["min_words"] <= n <= kw["max_words"]
    return ok, f"{n} words (needs {kw['min_words']}–{kw['max_words']})"


@constraint(
    "count:unique_word_count",
    "at least N distinct words",
    [Param("N", "int", lo=1, hi=1000)],
    describe=lambda kw: f"Use at least {kw['N']} different words.",
    sample=lambda r, c: {"N": r.randint(30, 200)},
)
def _unique_words(t, kw, fixed):
    n = len({w.strip(STRIP_CHARS) for w in t.lower().split()})
    return n >= kw["N"], f"{n} distinct words (needs at least {kw['N']})"


_FANBOYS = ("and", "but", "for", "nor", "or", "so", "yet")


@constraint(
    "count:conjunctions",
    "at least N different coordinating conjunctions",
    [Param("small_n", "int", lo=1, hi=7)],
    describe=lambda kw: (
        f"Use at least {kw['small_n']} different coordinating conjunctions (for, and, nor, but, or, yet, so)."
    ),
    sample=lambda r, c: {"small_n": r.randint(2, 6)},
    fixed="distinct conjunctions are counted after stripping punctuation and case ('and' and 'and,' are one)",
)
def _conjunctions(t, kw, fixed):
    hits = [w for w in t.split() if w.strip(STRIP_CHARS).lower() in _FANBOYS]
    distinct = {w.strip(STRIP_CHARS).lower() for w in hits} if fixed else set(hits)
    n = len(distinct)
    return n >= kw["small_n"], f"{n} distinct conjunction forms {sorted(distinct)[:8]} (needs {kw['small_n']})"


@constraint(
    "count:person_names",
    "at least N different names from a fixed list of 50",
    [Param("N", "int", lo=1, hi=50)],
    describe=lambda kw: (
        f"Mention at least {kw['N']} different people, using names from this list: " + ", ".join(PERSON_NAMES) + "."
    ),
    sample=lambda r, c: {"N": r.randint(2, 20)},
)
def _person_names(t, kw, fixed):
    # the reference searches \bname\b for each name; every name is one \w+ run, so that is "name is one of
    # the text's \w+ runs" (checked in the tests)
    found = _NAME_SET.intersection(nlp.word_runs(t))
    return len(found) >= kw["N"], f"{len(found)} listed names mentioned (needs {kw['N']})"


_NAME_SET = frozenset(PERSON_NAMES)


_ASCII_DIGIT_RUNS = str.maketrans(
    {c: (None if c in PUNCT else " ") for c in map(chr, range(128)) if not c.isdigit()}
)


@constraint(
    "count:numbers",
    "exactly N numbers",
    [Param("N", "int", lo=0, hi=100)],
    describe=lambda kw: f"Include exactly {kw['N']} numbers.",
    sample=lambda r, c: {"N": r.randint(1, 12)},
)
def _numbers(t, kw, fixed):
    if t.isascii():  # \d is [0-9] there: one translate deletes punctuation and blanks the rest, split finds the runs
        n = len(t.translate(_ASCII_DIGIT_RUNS).split())
    else:
        n = len(re.findall(r"\d+", strip_punctuation(t)))
    return n == kw["N"], f"{n} numbers after removing punctuation (needs exactly {kw['N']})"


@constraint(
    "count:punctuation",
    "uses . , ! ? ; : and an interrobang (?! or !? or ‽)",
    describe=lambda kw: (
        "Use every standard punctuation mark at least once: period, comma, exclamation mark, "
        "question mark, semicolon, colon, and an interrobang (?!)."
    ),
)
def _punct_cover(t, kw, fixed):
    if not ("!?" in t or "?!" in t or "‽" in t):
        return False, "no interrobang (?!, !? or ‽)"
    rest = t.replace("?!", "", 1)
    if len(rest) == len(t):
        rest = t.replace("!?", "", 1)
    missing = [c for c in ".,!?;:" if c not in rest]
    return not missing, ("all marks used" if not missing else "missing " + " ".join(missing))


_JP = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@constraint(
    "count:words_japanese",
    "every N-th word is Japanese",
    [Param("N", "int", lo=1, hi=50)],
    describe=lambda kw: f"Every {ordinal(kw['N'])} word of your answer must be written in Japanese.",
    sample=lambda r, c: {"N": r.randint(2, 20)},
)
def _japanese(t, kw, fixed):
    n = kw["N"]
    if n <= 0:
        return False, "N must be positive"
    for i, w in enumerate(t.split()):
        w = w.strip(STRIP_CHARS)
        if (i + 1) % n == 0 and w and not w.isdigit() and not _JP.search(w):
            return False, f"word {i + 1} {w!r} is not Japanese"
    return True, f"every {ordinal(n)} word is Japanese"


_PRONOUNS = frozenset(
    "i me we us you he him she her it they them my mine our ours your yours his hers its their theirs myself "
    "ourselves yourself yourselves himself herself itself themselves this that these those who whom whose which "
    "what whoever whomever whatever whichever anybody anyone anything everybody everyone everything nobody "
    "nothing somebody someone something each either neither both all some any none".split()
)


@constraint(
    "count:pronouns",
    "at least N pronouns",
    [Param("N", "int", lo=1, hi=200)],
    describe=lambda kw: f"Use at least {kw['N']} pronouns.",
    sample=lambda r, c: {"N": r.randint(4, 30)},
)
def _pronouns(t, kw, fixed):
    n = sum(1 for w in nlp.word_tokenize(t.replace("/", " ").lower()) if w in _PRONOUNS)
    return n >= kw["N"], f"{n} pronouns (needs at least {kw['N']})"


@constraint(
    "count:keywords_multiple",
    "five keywords appearing 1, 2, 3, 5 and 7 times",
    [Param(f"keyword{i}", "str") for i in range(1, 6)],
    describe=lambda kw: (
        f"Use '{kw['keyword1']}' once, '{kw['keyword2']}' twice, '{kw['keyword3']}' three times, "
        f"'{kw['keyword4']}' five times and '{kw['keyword5']}' seven times."
    ),
    sample=lambda r, c: {f"keyword{i}": w for i, w in enumerate(r.sample(NOUNS, 5), 1)},
    fixed="whole-word, case-insensitive counts (the reference counts substrings: 'cat' in 'category')",
)
def _keywords_multiple(t, kw, fixed):
    low = t.lower()
    for i, need in zip(range(1, 6), (1, 2, 3, 5, 7)):
        k = kw[f"keyword{i}"].strip()
        n = len(re.findall(r"\b" + re.escape(k.lower()) + r"\b", low)) if fixed else low.count(k.lower())
        if n != need:
            return False, f"'{k}' appears {n} times (needs {need})"
    return True, "all five keyword counts match"
