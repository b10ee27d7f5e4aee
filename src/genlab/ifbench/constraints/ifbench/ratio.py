"""IFBench (allenai/IFBench at db69a6f): the `ratio:*` constraints (5 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import functools
from collections import Counter

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import STRIP_CHARS
from genlab.ifbench.constraints.wordlists import SENTENCES
from genlab.ifbench.core import Param, constraint


@constraint(
    "ratio:stop_words",
    "stop words at most P% of words",
    [Param("percentage", "int", lo=1, hi=100)],
    describe=lambda kw: f"Keep stop words (the, and, of, ...) to at most {kw['percentage']}% of all your words.",
    sample=lambda r, c: {"percentage": r.randint(10, 60)},
)
def _stop_words(t, kw, fixed):
    # the tokens, lowercased: on ASCII text lowering first gives the same runs (lower() keeps length and \w-ness)
    toks = nlp.word_runs(t.lower()) if t.isascii() else [w.lower() for w in nlp.word_runs(t)]
    if not toks:
        return False, "no words"
    k = sum(map(nlp.stopwords().__contains__, toks))
    # (k / n) * 100 in this order, as the reference computes it: 100 * k / n rounds differently, e.g. 14 of 100
    # words gives 14.000000000000002 here, which the reference judges as above a 14% limit
    pct = (k / len(toks)) * 100
    return pct <= kw["percentage"], f"stop words are {pct:.1f}% of {len(toks)} words (limit {kw['percentage']}%)"


def _ends(sents: list[str], ch: str) -> int:
    return sum(1 for s in sents if s.endswith(ch))


@constraint(
    "ratio:sentence_type",
    "declarative : interrogative sentences = 2 : 1",
    describe=lambda kw: (
        "Use twice as many statements as questions (a 2:1 ratio of declarative to interrogative sentences)."
    ),
    fixed="at least one question is required (the reference passes 0:0)",
)
def _sent_type(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    d, q = _ends(s, "."), _ends(s, "?")
    if fixed and q == 0:
        return False, f"{d} declarative, 0 interrogative sentences (needs at least one question)"
    return d == 2 * q, f"{d} declarative vs {q} interrogative sentences (needs 2:1)"


@constraint(
    "ratio:sentence_balance",
    "equal numbers of . ? ! sentences",
    describe=lambda kw: "Use the same number of statements, questions and exclamations.",
    fixed="at least one sentence of each type is required (the reference passes 0:0:0)",
)
def _sent_balance(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    d, q, e = _ends(s, "."), _ends(s, "?"), _ends(s, "!")
    if fixed and d == 0:
        return False, "no sentences of each type"
    return d == q == e, f"{d} declarative, {q} interrogative, {e} exclamatory sentences (needs equal counts)"


def _char_trigrams(s: str) -> set[tuple[str, str, str]]:
    # each trigram as a tuple of its three characters (one-to-one with the substring s[i : i + 3], so set sizes
    # and overlaps are the same); zip builds them about twice as fast as slicing
    return set(zip(s, s[1:], s[2:]))


def _word_trigrams(s: str) -> set[tuple[str, ...]]:
    w = nlp.word_runs(s.lower())
    return set(zip(w, w[1:], w[2:]))


@functools.lru_cache(maxsize=1024)
def _reference_trigrams(ref: str, words: bool) -> frozenset[tuple[str, ...]]:
    return frozenset(_word_trigrams(ref) if words else _char_trigrams(ref))


@constraint(
    "ratio:overlap",
    "trigram overlap with a reference text within ±2 points of P%",
    [Param("reference_text", "str"), Param("percentage", "int", lo=0, hi=100)],
    describe=lambda kw: (
        f'About {kw["percentage"]}% (±2%) of your trigrams must also occur in this text: "{kw["reference_text"]}"'
    ),
    sample=lambda r, c: {"reference_text": r.choice(SENTENCES), "percentage": r.randint(5, 95)},
    fixed="word trigrams (lowercase \\w+ tokens) instead of character trigrams",
)
def _overlap(t, kw, fixed):
    a = _word_trigrams(t) if fixed else _char_trigrams(t)
    ref = _reference_trigrams(kw["reference_text"], fixed)
    if not a:
        return False, "no trigrams"
    ov = (len(a & ref) / len(a)) * 100  # the reference's float expression, so that verdicts at p±2 agree
    p = kw["percentage"]
    unit = "word" if fixed else "character"
    return p - 2 <= ov <= p + 2, f"{unit}-trigram overlap {ov:.1f}% (needs {p}±2%)"


@constraint(
    "ratio:sentence_words",
    "three sentences of equal character length, all words different",
    describe=lambda kw: "Answer in exactly three sentences that have the same number of characters and share no words.",
    fixed="also requires that no word repeats across the three sentences (the reference does not check it)",
)
def _sentence_words(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    if len(s) != 3:
        return False, f"{len(s)} sentences (needs 3)"
    lens = [len(x.strip()) for x in s]
    if len(set(lens)) != 1:
        return False, f"sentence lengths {lens} differ"
    if fixed:
        words = [w.strip(STRIP_CHARS).lower() for x in s for w in x.split()]
        words = [w for w in words if w]
        dup = [w for w, c in Counter(words).items() if c > 1]
        if dup:
            return False, f"repeated word(s) {dup[:5]}"
    return True, f"three sentences of {lens[0]} characters"
