"""The checkers' fast paths give exactly what the plain computations they replace give (verdict and reason).

Each test compares a checker (or helper) with the straightforward code it used to run, on random and on chosen
awkward texts: non-ASCII characters that match ASCII ones ignoring case (Kelvin sign, long s, dotted I), regex
metacharacters in keywords, empty and multi-character kwargs, overlapping occurrences.
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter

import pytest

from genlab.ifbench import nlp, registry
from genlab.ifbench.constraints import helpers
from genlab.ifbench.constraints.ifbench import format as ifbench_format
from genlab.ifbench.constraints.ifeval import length_constraints

ALPHABET = string.printable + "İıſKßéü日本😀‽“”—\u0307"
AWKWARD = [
    "",
    " ",
    "cat Cat CAT category",
    "Kat kat \u212aat",  # Kelvin sign
    "ſun sun SUN",  # long s
    "İstanbul istanbul",
    "aaaa aa a",
    "c.t cat c t (x [x a|b",
    "p.s. note\nP. S. later\np.p.s end\nP.P.S",
    "* one\n- two\n  *three\n**bold** *it*\n***\n",
    "x *** y *** z",
    "Hi. ***",
]


def _texts(n: int = 300, seed: int = 3) -> list[str]:
    r = random.Random(seed)
    words = ["cat", "Cat", "kat", "sun", "ſun", "a", "aa", "P.S.", "p.s.", "***", "*", "-", "(", ")", "[", "]", "{",
             "}", '"', "'", "1,000", "42", "level", "İ", "\u212a", "\n", "\n\n", ".", "?", "!"]
    out = list(AWKWARD)
    for _ in range(n):
        if r.random() < 0.5:
            out.append("".join(r.choice(ALPHABET) for _ in range(r.randint(0, 80))))
        else:
            out.append(" ".join(r.choice(words) for _ in range(r.randint(0, 30))))
    return out


def test_word_runs_and_count_words_are_findall():
    for c in map(chr, range(128)):
        for t in (f"a{c}b", f"{c}a", f"a{c}", c):
            assert nlp.word_runs(t) == re.findall(r"\w+", t), repr(t)
            assert nlp.count_words(t) == len(re.findall(r"\w+", t)), repr(t)
    for t in _texts():
        assert nlp.word_runs(t) == re.findall(r"\w+", t)
        assert nlp.count_words(t) == len(re.findall(r"\w+", t))


def test_strip_punctuation_is_translate():
    for t in _texts():
        assert helpers.strip_punctuation(t) == t.translate(helpers.NOPUNCT_TABLE)


@pytest.mark.parametrize("pat", ["cat", "c.t", "a|b", "(", "[x", "", "x*", r"\bcat\b", "ſ", "k"])
def test_search_pattern_is_find_pattern(pat):
    for t in _texts(100):
        assert helpers.search_pattern(pat, t) == bool(helpers.find_pattern(pat, t))


def test_letter_frequency_is_counter():
    for letter in ["a", "A", " k ", "", "ab", "İ", "ſ", "\u0307"]:
        for t in _texts(100):
            kw = {"letter": letter, "let_frequency": 2, "let_relation": "at least"}
            n = Counter(t.lower())[letter.strip().lower()]
            ok, reason = helpers.letter_frequency(t, kw, False)
            assert (ok, reason.split(" occurs ")[1].split()[0]) == (n >= 2, str(n))


# ---- the keyword checkers against their plain regex definitions


def _old_existence(t, kw, fixed):
    missing = [
        k for k in kw["keywords"]
        if not (re.findall(helpers.whole_word(k), t, re.I) if fixed else helpers.find_pattern(k, t))
    ]
    n = len(kw["keywords"])
    if missing:
        return False, f"found {n - len(missing)} of {n} keywords; missing " + ", ".join(map(repr, missing))
    return True, f"all {n} keywords present"


def _old_frequency_count(t, k, fixed):
    return len(re.findall(helpers.whole_word(k), t, re.I)) if fixed else len(helpers.find_pattern(k, t))


def _old_forbidden_found(t, words, fixed):
    return [w for w in sorted(set(words)) if helpers.find_pattern(r"\b" + (re.escape(w) if fixed else w) + r"\b", t)]


KEYWORDS = ["cat", "Cat", "CAT", "kat", "sun", "istanbul", "aa", "a", "c.t", "a|b", "(", "[x", "p.s.", "cat dog",
            "it's", "x-ray", "\u212aat", "ſun", "İstanbul", "日本"]


@pytest.mark.parametrize("fixed", [False, True])
def test_keyword_checkers_equal_plain_regex(fixed):
    ex = registry.get("keywords:existence")
    fr = registry.get("keywords:frequency")
    fo = registry.get("keywords:forbidden_words")
    for t in _texts(150):
        for i, k in enumerate(KEYWORDS):
            pair = [k, KEYWORDS[(i * 7 + 3) % len(KEYWORDS)]]
            v = ex.check_normalized(t, ex.normalize({"keywords": pair}), fixed)
            assert (v.ok, v.reason) == _old_existence(t, {"keywords": pair}, fixed)
            v = fr.check_normalized(t, fr.normalize({"keyword": k, "frequency": 2, "relation": "at least"}), fixed)
            n = _old_frequency_count(t, k.strip(), fixed)
            assert v.reason == f"'{k.strip()}' occurs {n} (needs at least 2)"
            v = fo.check_normalized(t, fo.normalize({"forbidden_words": pair}), fixed)
            assert v.ok == (not _old_forbidden_found(t, pair, fixed))


# ---- other checkers against the code they replaced


def _old_postscript(t, marker, fixed):
    m = marker.strip()
    low = t.lower()
    if m == "P.P.S":
        pat = r"\s*p\.\s?p\.\s?s.*$"
    elif m == "P.S.":
        pat = r"\s*p\.\s?s\..*$"
    else:
        pat = r"\s*" + (re.escape(m.lower()) if fixed else m.lower()) + r".*$"
    return bool(helpers.find_pattern(pat, low, re.MULTILINE))


def test_format_and_postscript_prefilters():
    ps = registry.get("detectable_content:postscript")
    bl = registry.get("detectable_format:number_bullet_lists")
    hl = registry.get("detectable_format:number_highlighted_sections")
    for t in _texts():
        for m in ["P.S.", "P.P.S", "Note:", "p.s"]:
            assert ps.check_normalized(t, {"postscript_marker": m}, False).ok == _old_postscript(t, m, False)
        n = len(re.findall(r"^\s*\*[^\*].*$", t, flags=re.M)) + len(re.findall(r"^\s*-.*$", t, flags=re.M))
        assert bl.check_normalized(t, {"num_bullets": 1}, False).reason.startswith(f"{n} bullet lines")
        n = sum(1 for h in re.findall(r"\*[^\n\*]*\*", t) if h.strip("*").strip())
        n += sum(1 for h in re.findall(r"\*\*[^\n\*]*\*\*", t) if h.removeprefix("**").removesuffix("**").strip())
        assert hl.check_normalized(t, {"num_highlights": 1}, False).reason.startswith(f"{n} highlighted")
        if "***" not in t:  # the paragraph split is skipped then: it would give the text itself
            assert length_constraints._PARA_SPLIT.split(t) == [t]


def _old_repeats(t, small_n):
    c = Counter(helpers.strip_punctuation(t.lower()).split())
    over = [(w, k) for w, k in c.most_common() if k > small_n]
    if over:
        w, k = over[0]
        return False, f"{w!r} used {k} times (max {small_n})"
    return True, f"no word used more than {small_n} times"


def test_ifbench_checkers_equal_old_loops():
    par = registry.get("format:parentheses")
    quo = registry.get("format:quotes")
    rep = registry.get("words:repeats")
    num = registry.get("count:numbers")
    r = random.Random(5)
    brackety = ["".join(r.choice("([{}])\"'ab") for _ in range(r.randint(0, 40))) for _ in range(300)]
    for t in _texts() + brackety + ["((((([x]))))) (", "\"'\"'x'\"'\""]:
        # the reference walks every character; the checkers walk only the brackets / quotes
        v = par.check_normalized(t, {}, False)
        assert (v.ok, v.reason) == ifbench_format._bracket_nesting(t)
        v = quo.check_normalized(t, {}, False)
        assert (v.ok, v.reason) == ifbench_format._quote_nesting(t)
        for n in (1, 2):
            v = rep.check_normalized(t, {"small_n": n}, False)
            assert (v.ok, v.reason) == _old_repeats(t, n)
        n = len(re.findall(r"\d+", helpers.strip_punctuation(t)))
        assert num.check_normalized(t, {"N": 1}, False).reason.startswith(f"{n} numbers")


def test_increment_reason_shows_first_eight_counts():
    inc = registry.get("sentence:increment")
    sents = [" ".join(["Apple"] + ["apple"] * i) + "." for i in range(10)]
    assert inc.check_normalized(" ".join(sents), {"small_n": 1}, False).reason == (
        "word counts [1, 2, 3, 4, 5, 6, 7, 8] grow by 1"
    )
    sents[1] = "Apple."
    assert inc.check_normalized(" ".join(sents), {"small_n": 1}, False).reason == (
        "word counts per sentence [1, 1, 3, 4, 5, 6, 7, 8]; sentence 2 breaks +1"
    )
    sents[1], sents[9] = "Apple apple.", "Apple."
    assert inc.check_normalized(" ".join(sents), {"small_n": 1}, False).reason == (
        "word counts per sentence [1, 2, 3, 4, 5, 6, 7, 8]; sentence 10 breaks +1"
    )


def test_overlap_trigrams_are_the_slices():
    from genlab.ifbench.constraints.ifbench import ratio

    for t in _texts(100):
        assert len(ratio._char_trigrams(t)) == len({t[i : i + 3] for i in range(len(t) - 2)})
        assert {"".join(g) for g in ratio._char_trigrams(t)} == {t[i : i + 3] for i in range(len(t) - 2)}
