"""IFBench (allenai/IFBench at db69a6f): the `words:*` constraints (13 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import functools
import json
import os
import re
import string
from collections import Counter

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import PUNCT, STRIP_CHARS, strip_punctuation
from genlab.ifbench.constraints.wordlists import NOUNS
from genlab.ifbench.core import Param, constraint


@constraint(
    "words:alphabet",
    "consecutive words start with consecutive letters (z wraps to a)",
    describe=lambda kw: (
        "Start each word with the letter after the previous word's first letter, wrapping from Z back to A."
    ),
)
def _alphabet(t, kw, fixed):
    words = strip_punctuation(t).strip(STRIP_CHARS).split()
    if not words:
        return False, "no words"
    abc = string.ascii_lowercase
    cur = words[0][0].lower()
    if cur not in abc:
        return False, f"first word {words[0]!r} does not start with a letter a–z"
    for i, w in enumerate(words[1:], 1):
        w = w.strip(STRIP_CHARS).lower()
        if not w:
            continue
        cur = abc[(abc.index(cur) + 1) % 26]
        if w[0] != cur:
            return False, f"word {i + 1} {w!r} should start with '{cur}'"
    return True, f"{len(words)} words follow the alphabet"


@constraint(
    "words:vowel",
    "one paragraph using at most three distinct vowels",
    describe=lambda kw: "Write a single paragraph whose words use no more than three different vowels.",
)
def _vowel(t, kw, fixed):
    lines = t.strip().split("\n")
    if len(lines) != 1:
        return False, f"{len(lines)} lines (needs a single paragraph)"
    v = sorted({c for c in lines[0].lower() if c in "aeiou"})
    return len(v) <= 3, f"vowels used: {''.join(v) or 'none'} (at most 3 allowed)"


_CLUSTER = re.compile("[bcdfghjklmnpqrstvwxyz]{2}")  # two adjacent consonants


def _has_cluster(w: str) -> bool:
    return _CLUSTER.search(w) is not None


@constraint(
    "words:consonants",
    "every word contains two adjacent consonants",
    describe=lambda kw: "Every word you write must contain a consonant cluster (two consonants in a row).",
)
def _consonants(t, kw, fixed):
    for w in t.lower().strip().split():
        if not _has_cluster(w):
            return False, f"{w!r} has no consonant cluster"
    return True, "every word has a consonant cluster"


@constraint(
    "words:palindrome",
    "at least 10 palindromic words of length >= 5",
    describe=lambda kw: "Use at least ten palindromic words (each at least five letters long, like 'level').",
    fixed="distinct palindromes are counted (the reference counts repeats)",
)
def _palindrome(t, kw, fixed):
    words = strip_punctuation(t).lower().split()
    pals = [w for w in words if len(w) >= 5 and w == w[::-1]]
    n = len(set(pals)) if fixed else len(pals)
    return n >= 10, f"{n} {'distinct ' if fixed else ''}palindromes of length ≥ 5 (needs 10)"


_PRIMES = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97}


@constraint(
    "words:prime_lengths",
    "only words whose length is prime",
    describe=lambda kw: "Use only words whose number of letters is a prime number (2, 3, 5, 7, ...).",
)
def _prime(t, kw, fixed):
    for w in strip_punctuation(t).split():
        if len(w) not in _PRIMES:
            return False, f"{w!r} has {len(w)} characters (not prime)"
    return True, "all word lengths prime"


@constraint(
    "words:start_verb",
    "the response starts with a verb (NLTK POS tagger)",
    describe=lambda kw: "Begin your response with a verb.",
)
def _start_verb(t, kw, fixed):
    toks = nlp.first_words(t, 3)  # the tag of the first token depends on the first three only
    if not toks:
        return False, "no tokens"
    ok, src = nlp.first_token_is_verb(toks)
    return ok, f"first token {toks[0]!r}: {src}"


@constraint(
    "words:repeats",
    "no word more than N times",
    [Param("small_n", "int", lo=1, hi=20)],
    describe=lambda kw: f"Do not use any word more than {kw['small_n']} times.",
    sample=lambda r, c: {"small_n": r.randint(1, 5)},
)
def _repeats(t, kw, fixed):
    c = Counter(strip_punctuation(t.lower()).split())
    k = max(c.values(), default=0)
    if c and k > kw["small_n"]:
        # the first word of c.most_common(): the most frequent, the earliest seen among ties (a stable sort)
        w = next(w for w, n in c.items() if n == k)
        return False, f"{w!r} used {k} times (max {kw['small_n']})"
    return True, f"no word used more than {kw['small_n']} times"


@functools.cache
def _syllable_dict() -> dict[str, int]:
    """syllapy's word list (importing syllapy parses a 140k-row CSV, ~0.1 s); cached per installed version as
    JSON (a data format: loading it cannot run code, unlike a pickle). A cache file that is not a JSON object of
    word -> int is ignored and rebuilt."""
    from genlab.ifbench.cache import cache_dir
    from genlab.ifbench.nlp import dist_version

    path = cache_dir() / f"syllapy-{dist_version('syllapy')}.json"
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(d, dict) and all(type(v) is int for v in d.values()):
            return d
    except (OSError, ValueError):
        pass
    import syllapy

    d = {str(k): int(v) for k, v in syllapy.WORD_DICT.items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(d, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
    return d


_HAS_DIGIT = re.compile(r"\d")


@functools.lru_cache(maxsize=65536)
def _syllables(word: str) -> int:
    """``syllapy.count(word)``. Words in syllapy's list are answered from the cached list (the checker passes
    lowercase words without ASCII punctuation, which syllapy's own normalisation leaves unchanged); any other
    word goes to syllapy itself."""
    if word == word.strip().lower().strip(PUNCT) and not _HAS_DIGIT.search(word):
        n = _syllable_dict().get(word)
        if n is not None:
            return n
    import syllapy

    return syllapy.count(word)


@constraint(
    "words:odd_even_syllables",
    "words alternate odd / even syllable counts",
    describe=lambda kw: "Alternate between words with an odd and an even number of syllables.",
)
def _syllable_parity(t, kw, fixed):
    words = strip_punctuation(t).lower().split()  # (split() never yields an empty or space-padded word)
    prev = None
    for i, w in enumerate(words):
        par = _syllables(w) % 2
        if par == prev:
            return False, f"{words[i - 1]!r} and {w!r} have the same syllable parity"
        prev = par
    return True, "syllable parity alternates"


@constraint(
    "words:last_first",
    "each sentence starts with the previous sentence's last word",
    describe=lambda kw: "Begin each sentence with the last word of the sentence before it.",
)
def _last_first(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    for i in range(len(s) - 1):
        last = s[i].rstrip(STRIP_CHARS).split()
        first = s[i + 1].lstrip(STRIP_CHARS).split()
        if not last or not first:
            return False, f"sentence {i + 1} or {i + 2} has no words"
        if last[-1].lower() != first[0].lower():
            return False, f"sentence {i + 1} ends with {last[-1]!r} but sentence {i + 2} starts with {first[0]!r}"
    return True, f"{len(s)} sentences chained"


@constraint(
    "words:paragraph_last_first",
    "each line-paragraph ends with the word it starts with",
    describe=lambda kw: (
        "Each paragraph must end with the same word it starts with; separate paragraphs with a newline."
    ),
)
def _para_last_first(t, kw, fixed):
    for i, p in enumerate(t.split("\n"), 1):
        p = p.strip().lower()
        if not p:
            continue
        w = p.strip(STRIP_CHARS).split()
        if not w:
            continue
        if w[0] != w[-1]:
            return False, f"paragraph {i} starts with {w[0]!r} but ends with {w[-1]!r}"
    return True, "every paragraph ends with its first word"


@constraint(
    "words:no_consecutive",
    "adjacent words start with different letters",
    describe=lambda kw: "No two words in a row may start with the same letter.",
    fixed="adjacency is checked within each line, not across line breaks",
)
def _no_consecutive(t, kw, fixed):
    chunks = t.split("\n") if fixed else [t]
    for ch in chunks:
        w = [x for x in strip_punctuation(ch.lower()).split() if x]
        for a, b in zip(w, w[1:]):
            if a[0] == b[0]:
                return False, f"{a!r} and {b!r} start with the same letter"
    return True, "no adjacent words share a first letter"


def _alnum_tokens(s: str) -> list[str]:
    return [w for w in nlp.word_tokenize(s) if any(ch.isalnum() for ch in w)]


@constraint(
    "words:keywords_specific_position",
    "keyword as the m-th word of the n-th sentence",
    [Param("keyword", "str"), Param("n", "int", lo=1, hi=100), Param("m", "int", lo=1, hi=100)],
    describe=lambda kw: (
        f"Put the word '{kw['keyword']}' in sentence {kw['n']}, as word number {kw['m']} of that sentence."
    ),
    sample=lambda r, c: {"keyword": r.choice(NOUNS), "n": r.randint(1, 10), "m": r.randint(1, 15)},
)
def _kw_position(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    n, m = kw["n"], kw["m"]
    if n < 1 or len(s) < n:
        return False, f"{len(s)} sentences (needs at least {n})"
    w = _alnum_tokens(s[n - 1])
    if m < 1 or len(w) < m:
        return False, f"sentence {n} has {len(w)} words (needs at least {m})"
    ok = w[m - 1].lower() == kw["keyword"].strip().lower()
    return ok, f"word {m} of sentence {n} is {w[m - 1]!r}"


@constraint(
    "words:words_position",
    "keyword as the second word and the second-to-last word",
    [Param("keyword", "str")],
    describe=lambda kw: f"Make '{kw['keyword']}' both the second word and the second-to-last word of your answer.",
    sample=lambda r, c: {"keyword": r.choice(NOUNS)},
    fixed="positions count words only (punctuation tokens are skipped at both ends)",
)
def _words_position(t, kw, fixed):
    k = kw["keyword"].strip().lower()
    if fixed:
        w = _alnum_tokens(t)
        if len(w) < 2:
            return False, "fewer than 2 words"
        ok = w[1].lower() == k and w[-2].lower() == k
        return ok, f"second word {w[1]!r}, second-to-last {w[-2]!r}"
    w = nlp.word_tokenize(t)
    if len(w) < 2:
        return False, "fewer than 2 tokens"
    if w[-1] in PUNCT:
        if len(w) < 3:
            return False, "fewer than 3 tokens"
        ok = w[1].lower() == w[-3].lower() == k
        return ok, f"second token {w[1]!r}, second-to-last word {w[-3]!r}"
    ok = w[1].lower() == w[-2].lower() == k
    return ok, f"second token {w[1]!r}, second-to-last token {w[-2]!r}"
