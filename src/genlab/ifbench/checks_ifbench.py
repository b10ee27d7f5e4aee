"""The 58 IFBench out-of-domain constraints (Pyatkin et al. 2025), as allenai/IFBench checks them at
``db69a6f`` (sentences via NLTK Punkt, words via NLTK's Treebank tokenizer where the reference uses them).

Each checker is ``f(text, kwargs, fixed) -> (ok, reason)``; ``fixed`` selects the corrected rule where the
reference is known to be wrong (listed per id in ``fixed=`` and in ``docs/ifbench.md``).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import string
import unicodedata
from collections import Counter

from genlab.ifbench import nlp
from genlab.ifbench._words import NOUNS, PERSON_NAMES, SENTENCES, ordinal
from genlab.ifbench.registry import Param, register

PUNCT = string.punctuation
_STRIP = PUNCT + " "
_NOPUNCT = str.maketrans("", "", PUNCT)


def _nopunct(s: str) -> str:
    return s.translate(_NOPUNCT)


def _plural(n: int, w: str) -> str:
    return f"{n} {w}" + ("" if n == 1 else "s")


# ------------------------------------------------------------------------------------------------ count


@register(
    "count:word_count_range", "ifbench", "word count within [min_words, max_words]",
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


@register(
    "count:unique_word_count", "ifbench", "at least N distinct words",
    [Param("N", "int", lo=1, hi=1000)],
    describe=lambda kw: f"Use at least {kw['N']} different words.",
    sample=lambda r, c: {"N": r.randint(30, 200)},
)
def _unique_words(t, kw, fixed):
    n = len({w.strip(_STRIP) for w in t.lower().split()})
    return n >= kw["N"], f"{n} distinct words (needs at least {kw['N']})"


@register(
    "ratio:stop_words", "ifbench", "stop words at most P% of words",
    [Param("percentage", "int", lo=1, hi=100)],
    describe=lambda kw: f"Keep stop words (the, and, of, ...) to at most {kw['percentage']}% of all your words.",
    sample=lambda r, c: {"percentage": r.randint(10, 60)},
)
def _stop_words(t, kw, fixed):
    toks = nlp._WORD_RE.findall(t)
    if not toks:
        return False, "no words"
    sw = nlp.stopwords()
    k = sum(1 for w in toks if w.lower() in sw)
    # (k / n) * 100 in this order, as the reference computes it: 100 * k / n rounds differently, e.g. 14 of 100
    # words gives 14.000000000000002 here, which the reference judges as above a 14% limit
    pct = (k / len(toks)) * 100
    return pct <= kw["percentage"], f"stop words are {pct:.1f}% of {len(toks)} words (limit {kw['percentage']}%)"


def _ends(sents: list[str], ch: str) -> int:
    return sum(1 for s in sents if s.endswith(ch))


@register(
    "ratio:sentence_type", "ifbench", "declarative : interrogative sentences = 2 : 1",
    describe=lambda kw: "Use twice as many statements as questions (a 2:1 ratio of declarative to interrogative "
    "sentences).",
    fixed="at least one question is required (the reference passes 0:0)",
)
def _sent_type(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    d, q = _ends(s, "."), _ends(s, "?")
    if fixed and q == 0:
        return False, f"{d} declarative, 0 interrogative sentences (needs at least one question)"
    return d == 2 * q, f"{d} declarative vs {q} interrogative sentences (needs 2:1)"


@register(
    "ratio:sentence_balance", "ifbench", "equal numbers of . ? ! sentences",
    describe=lambda kw: "Use the same number of statements, questions and exclamations.",
    fixed="at least one sentence of each type is required (the reference passes 0:0:0)",
)
def _sent_balance(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    d, q, e = _ends(s, "."), _ends(s, "?"), _ends(s, "!")
    if fixed and d == 0:
        return False, "no sentences of each type"
    return d == q == e, f"{d} declarative, {q} interrogative, {e} exclamatory sentences (needs equal counts)"


_FANBOYS = ("and", "but", "for", "nor", "or", "so", "yet")


@register(
    "count:conjunctions", "ifbench", "at least N different coordinating conjunctions",
    [Param("small_n", "int", lo=1, hi=7)],
    describe=lambda kw: f"Use at least {kw['small_n']} different coordinating conjunctions (for, and, nor, but, "
    "or, yet, so).",
    sample=lambda r, c: {"small_n": r.randint(2, 6)},
    fixed="distinct conjunctions are counted after stripping punctuation and case ('and' and 'and,' are one)",
)
def _conjunctions(t, kw, fixed):
    hits = [w for w in t.split() if w.strip(_STRIP).lower() in _FANBOYS]
    distinct = {w.strip(_STRIP).lower() for w in hits} if fixed else set(hits)
    n = len(distinct)
    return n >= kw["small_n"], f"{n} distinct conjunction forms {sorted(distinct)[:8]} (needs {kw['small_n']})"


@register(
    "count:person_names", "ifbench", "at least N different names from a fixed list of 50",
    [Param("N", "int", lo=1, hi=50)],
    describe=lambda kw: f"Mention at least {kw['N']} different people, using names from this list: "
    + ", ".join(PERSON_NAMES) + ".",
    sample=lambda r, c: {"N": r.randint(2, 20)},
)
def _person_names(t, kw, fixed):
    # the reference searches \bname\b for each name; every name is one \w+ run, so that is "name is one of
    # the text's \w+ runs" (checked in the tests)
    found = _NAME_SET.intersection(re.findall(r"\w+", t))
    return len(found) >= kw["N"], f"{len(found)} listed names mentioned (needs {kw['N']})"


_NAME_SET = frozenset(PERSON_NAMES)


def _char_trigrams(s: str) -> set[str]:
    return {s[i : i + 3] for i in range(len(s) - 2)}


def _word_trigrams(s: str) -> set[tuple[str, ...]]:
    w = re.findall(r"\w+", s.lower())
    return {tuple(w[i : i + 3]) for i in range(len(w) - 2)}


@register(
    "ratio:overlap", "ifbench", "trigram overlap with a reference text within ±2 points of P%",
    [Param("reference_text", "str"), Param("percentage", "int", lo=0, hi=100)],
    describe=lambda kw: f"About {kw['percentage']}% (±2%) of your trigrams must also occur in this text: "
    f"\"{kw['reference_text']}\"",
    sample=lambda r, c: {"reference_text": r.choice(SENTENCES), "percentage": r.randint(5, 95)},
    fixed="word trigrams (lowercase \\w+ tokens) instead of character trigrams",
)
def _overlap(t, kw, fixed):
    a = _word_trigrams(t) if fixed else _char_trigrams(t)
    ref = _word_trigrams(kw["reference_text"]) if fixed else _char_trigrams(kw["reference_text"])
    if not a:
        return False, "no trigrams"
    ov = (len(a & ref) / len(a)) * 100  # the reference's float expression, so that verdicts at p±2 agree
    p = kw["percentage"]
    unit = "word" if fixed else "character"
    return p - 2 <= ov <= p + 2, f"{unit}-trigram overlap {ov:.1f}% (needs {p}±2%)"


@register(
    "count:numbers", "ifbench", "exactly N numbers",
    [Param("N", "int", lo=0, hi=100)],
    describe=lambda kw: f"Include exactly {kw['N']} numbers.",
    sample=lambda r, c: {"N": r.randint(1, 12)},
)
def _numbers(t, kw, fixed):
    n = len(re.findall(r"\d+", _nopunct(t)))
    return n == kw["N"], f"{n} numbers after removing punctuation (needs exactly {kw['N']})"


@register(
    "words:alphabet", "ifbench", "consecutive words start with consecutive letters (z wraps to a)",
    describe=lambda kw: "Start each word with the letter after the previous word's first letter, wrapping from "
    "Z back to A.",
)
def _alphabet(t, kw, fixed):
    words = _nopunct(t).strip(_STRIP).split()
    if not words:
        return False, "no words"
    abc = string.ascii_lowercase
    cur = words[0][0].lower()
    if cur not in abc:
        return False, f"first word {words[0]!r} does not start with a letter a–z"
    for i, w in enumerate(words[1:], 1):
        w = w.strip(_STRIP).lower()
        if not w:
            continue
        cur = abc[(abc.index(cur) + 1) % 26]
        if w[0] != cur:
            return False, f"word {i + 1} {w!r} should start with '{cur}'"
    return True, f"{len(words)} words follow the alphabet"


@register(
    "words:vowel", "ifbench", "one paragraph using at most three distinct vowels",
    describe=lambda kw: "Write a single paragraph whose words use no more than three different vowels.",
)
def _vowel(t, kw, fixed):
    lines = t.strip().split("\n")
    if len(lines) != 1:
        return False, f"{len(lines)} lines (needs a single paragraph)"
    v = sorted({c for c in lines[0].lower() if c in "aeiou"})
    return len(v) <= 3, f"vowels used: {''.join(v) or 'none'} (at most 3 allowed)"


_CONS = set("bcdfghjklmnpqrstvwxyz")


def _has_cluster(w: str) -> bool:
    return any(w[i] in _CONS and w[i + 1] in _CONS for i in range(len(w) - 1))


@register(
    "words:consonants", "ifbench", "every word contains two adjacent consonants",
    describe=lambda kw: "Every word you write must contain a consonant cluster (two consonants in a row).",
)
def _consonants(t, kw, fixed):
    for w in t.lower().strip().split():
        if not _has_cluster(w):
            return False, f"{w!r} has no consonant cluster"
    return True, "every word has a consonant cluster"


def _alliteration_score(sentence: str) -> int:
    words = [w.lstrip(_STRIP) for w in sentence.lower().split()]
    words = [w for w in words if w]
    score, prev = 0, False
    for a, b in zip(words, words[1:]):
        if a[0] == b[0]:
            score += 1 if prev else 2
            prev = True
        else:
            prev = False
    return score


@register(
    "sentence:alliteration_increment", "ifbench", "each sentence has a longer alliterative run than the last",
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


@register(
    "words:palindrome", "ifbench", "at least 10 palindromic words of length >= 5",
    describe=lambda kw: "Use at least ten palindromic words (each at least five letters long, like 'level').",
    fixed="distinct palindromes are counted (the reference counts repeats)",
)
def _palindrome(t, kw, fixed):
    words = _nopunct(t).lower().split()
    pals = [w for w in words if w == w[::-1] and len(w) >= 5]
    n = len(set(pals)) if fixed else len(pals)
    return n >= 10, f"{n} {'distinct ' if fixed else ''}palindromes of length ≥ 5 (needs 10)"


@register(
    "count:punctuation", "ifbench", "uses . , ! ? ; : and an interrobang (?! or !? or ‽)",
    describe=lambda kw: "Use every standard punctuation mark at least once: period, comma, exclamation mark, "
    "question mark, semicolon, colon, and an interrobang (?!).",
)
def _punct_cover(t, kw, fixed):
    if not ("!?" in t or "?!" in t or "‽" in t):
        return False, "no interrobang (?!, !? or ‽)"
    rest = t.replace("?!", "", 1)
    if len(rest) == len(t):
        rest = t.replace("!?", "", 1)
    missing = [c for c in ".,!?;:" if c not in rest]
    return not missing, ("all marks used" if not missing else "missing " + " ".join(missing))


@register(
    "format:parentheses", "ifbench", "brackets nested at least 5 levels deep",
    describe=lambda kw: "Nest brackets — (round, [square, {curly}]) — at least five levels deep somewhere.",
)
def _parentheses(t, kw, fixed):
    stack: list[str] = []
    depth = 0
    pairs = {")": "(", "]": "[", "}": "{"}
    for ch in t:
        if ch in "([{":
            stack.append(ch)
            depth = max(depth, len(stack))
        elif ch in ")]}":
            if stack and stack[-1] == pairs[ch]:
                stack.pop()
                if depth >= 5 and len(stack) < depth:
                    return True, f"a closed group nested {depth} deep"
            else:
                stack, depth = [], 0
    return False, f"no closed bracket group nested 5 deep (max open depth {depth})"


@register(
    "format:quotes", "ifbench", "quotes nested 3 deep, alternating double and single",
    describe=lambda kw: "Put a quotation inside a quotation inside a quotation (three levels), alternating "
    "double and single quotes.",
)
def _quotes(t, kw, fixed):
    stack: list[str] = []
    reached = cur = 0
    for ch in t:
        if stack and ch == stack[-1]:
            stack.pop()
            cur -= 1
            if reached - cur >= 3:
                return True, "quotes nested 3 levels"
        elif ch in ('"', "'"):
            stack.append(ch)
            cur += 1
            reached = max(reached, cur)
    return False, f"quotes not nested 3 levels (max depth {reached})"


_PRIMES = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97}


@register(
    "words:prime_lengths", "ifbench", "only words whose length is prime",
    describe=lambda kw: "Use only words whose number of letters is a prime number (2, 3, 5, 7, ...).",
)
def _prime(t, kw, fixed):
    for w in _nopunct(t).split():
        if len(w) not in _PRIMES:
            return False, f"{w!r} has {len(w)} characters (not prime)"
    return True, "all word lengths prime"


_OPTIONS_BANK = ("yes/no/maybe", "I know or I don't know", "a), b), c), d)")


def _parse_options(options: str) -> tuple[list[str], bool]:
    strict = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    sep = "/" if "/" in options else ("or" if "or" in options else ",")
    return [o.strip() for o in options.split(sep)], strict


@register(
    "format:options", "ifbench", "the answer is exactly one of given options",
    [Param("options", "str")],
    describe=lambda kw: f"Reply with one of these options only: {kw['options']}. No explanation.",
    sample=lambda r, c: {"options": r.choice(_OPTIONS_BANK)},
)
def _options(t, kw, fixed):
    opts, strict = _parse_options(kw["options"])
    if strict:
        ok = t in opts
        return ok, "exactly one option" if ok else f"response is not exactly one of {opts}"
    v = t.strip(_STRIP).lower()
    ok = any(o.strip(_STRIP).lower() == v for o in opts)
    return ok, "one of the options" if ok else f"response is not one of {opts}"


@register(
    "format:newline", "ifbench", "one word per line",
    describe=lambda kw: "Put every word on its own line.",
)
def _newline(t, kw, fixed):
    v = _nopunct(t)
    lines = [ln for ln in v.strip().split("\n") if ln != ""]
    nw = len(v.strip().split())
    return len(lines) == nw, f"{len(lines)} non-empty lines for {nw} words"


@functools.cache
def _emoji_chars() -> frozenset[str]:
    """Single code points that ``emoji.is_emoji`` accepts (the checker only asks about single characters).
    Importing ``emoji`` builds large tables (~0.1 s), so the set is cached per installed emoji version."""
    from importlib.metadata import version

    from genlab.ifbench.langid import cache_dir

    path = cache_dir() / f"emoji-{version('emoji')}-single.json"
    try:
        return frozenset(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    import emoji

    chars = frozenset(k for k in emoji.EMOJI_DATA if len(k) == 1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(sorted(chars)), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
    return chars


def _is_emoji(ch: str) -> bool:
    """``emoji.is_emoji(ch)`` for a single character."""
    return ch in _emoji_chars()


@register(
    "format:emoji", "ifbench", "every sentence ends with an emoji",
    describe=lambda kw: "End every sentence with an emoji.",
)
def _emoji(t, kw, fixed):
    sents = nlp.sent_tokenize(t)
    for i, s in enumerate(sents):
        st = _nopunct(s).strip()
        if not st:
            return False, f"sentence {i + 1} is only punctuation"
        last = st[-1]
        second = st[-2] if len(st) > 1 else st[-1]
        if not _is_emoji(last) and not _is_emoji(second):
            if i < len(sents) - 1:
                nxt = _nopunct(sents[i + 1]).strip()
                if not nxt or not _is_emoji(nxt[0]):
                    return False, f"sentence {i + 1} does not end with an emoji: {s[-30:]!r}"
            else:
                return False, f"last sentence does not end with an emoji: {s[-30:]!r}"
    return True, f"all {len(sents)} sentences end with an emoji"


@register(
    "ratio:sentence_words", "ifbench", "three sentences of equal character length, all words different",
    describe=lambda kw: "Answer in exactly three sentences that have the same number of characters and share no "
    "words.",
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
        words = [w.strip(_STRIP).lower() for x in s for w in x.split()]
        words = [w for w in words if w]
        dup = [w for w, c in Counter(words).items() if c > 1]
        if dup:
            return False, f"repeated word(s) {dup[:5]}"
    return True, f"three sentences of {lens[0]} characters"


_JP = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@register(
    "count:words_japanese", "ifbench", "every N-th word is Japanese",
    [Param("N", "int", lo=1, hi=50)],
    describe=lambda kw: f"Every {ordinal(kw['N'])} word of your answer must be written in Japanese.",
    sample=lambda r, c: {"N": r.randint(2, 20)},
)
def _japanese(t, kw, fixed):
    n = kw["N"]
    if n <= 0:
        return False, "N must be positive"
    for i, w in enumerate(t.split()):
        w = w.strip(_STRIP)
        if (i + 1) % n == 0 and w and not w.isdigit() and not _JP.search(w):
            return False, f"word {i + 1} {w!r} is not Japanese"
    return True, f"every {ordinal(n)} word is Japanese"


@register(
    "words:start_verb", "ifbench", "the response starts with a verb (NLTK POS tagger)",
    describe=lambda kw: "Begin your response with a verb.",
)
def _start_verb(t, kw, fixed):
    toks = nlp.first_words(t, 3)  # the tag of the first token depends on the first three only
    if not toks:
        return False, "no tokens"
    ok, src = nlp.first_token_is_verb(toks)
    return ok, f"first token {toks[0]!r}: {src}"


@register(
    "words:repeats", "ifbench", "no word more than N times",
    [Param("small_n", "int", lo=1, hi=20)],
    describe=lambda kw: f"Do not use any word more than {kw['small_n']} times.",
    sample=lambda r, c: {"small_n": r.randint(1, 5)},
)
def _repeats(t, kw, fixed):
    c = Counter(_nopunct(t.lower()).split())
    over = [(w, k) for w, k in c.most_common() if k > kw["small_n"]]
    if over:
        w, k = over[0]
        return False, f"{w!r} used {k} times (max {kw['small_n']})"
    return True, f"no word used more than {kw['small_n']} times"


@register(
    "sentence:keyword", "ifbench", "a keyword in the N-th sentence",
    [Param("word", "str"), Param("N", "int", lo=1, hi=100)],
    describe=lambda kw: f"The word \"{kw['word']}\" must appear in your {ordinal(kw['N'])} sentence.",
    sample=lambda r, c: {"word": r.choice(NOUNS), "N": r.randint(1, 20)},
)
def _sentence_keyword(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    n = kw["N"]
    if len(s) < n or n < 1:
        return False, f"only {len(s)} sentences (needs at least {n})"
    ok = re.search(r"\b" + re.escape(kw["word"]) + r"\b", s[n - 1], re.IGNORECASE) is not None
    return ok, f"sentence {n} {'contains' if ok else 'lacks'} {kw['word']!r}"


_PRONOUNS = frozenset(
    "i me we us you he him she her it they them my mine our ours your yours his hers its their theirs myself "
    "ourselves yourself yourselves himself herself itself themselves this that these those who whom whose which "
    "what whoever whomever whatever whichever anybody anyone anything everybody everyone everything nobody "
    "nothing somebody someone something each either neither both all some any none".split()
)


@register(
    "count:pronouns", "ifbench", "at least N pronouns",
    [Param("N", "int", lo=1, hi=200)],
    describe=lambda kw: f"Use at least {kw['N']} pronouns.",
    sample=lambda r, c: {"N": r.randint(4, 30)},
)
def _pronouns(t, kw, fixed):
    n = sum(1 for w in nlp.word_tokenize(t.replace("/", " ").lower()) if w in _PRONOUNS)
    return n >= kw["N"], f"{n} pronouns (needs at least {kw['N']})"


@functools.cache
def _syllable_dict() -> dict[str, int]:
    """syllapy's word list (importing syllapy parses a 140k-row CSV, ~0.1 s); cached per installed version."""
    import pickle
    from importlib.metadata import version

    from genlab.ifbench.langid import cache_dir

    path = cache_dir() / f"syllapy-{version('syllapy')}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError):
        pass
    import syllapy

    d = dict(syllapy.WORD_DICT)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            pickle.dump(d, f, protocol=pickle.HIGHEST_PROTOCOL)
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


@register(
    "words:odd_even_syllables", "ifbench", "words alternate odd / even syllable counts",
    describe=lambda kw: "Alternate between words with an odd and an even number of syllables.",
)
def _syllable_parity(t, kw, fixed):
    words = [w for w in _nopunct(t).lower().split() if w.strip()]
    par = [_syllables(w) % 2 for w in words]
    for i in range(len(par) - 1):
        if par[i] == par[i + 1]:
            return False, f"{words[i]!r} and {words[i + 1]!r} have the same syllable parity"
    return True, "syllable parity alternates"


@register(
    "words:last_first", "ifbench", "each sentence starts with the previous sentence's last word",
    describe=lambda kw: "Begin each sentence with the last word of the sentence before it.",
)
def _last_first(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    for i in range(len(s) - 1):
        last = s[i].rstrip(_STRIP).split()
        first = s[i + 1].lstrip(_STRIP).split()
        if not last or not first:
            return False, f"sentence {i + 1} or {i + 2} has no words"
        if last[-1].lower() != first[0].lower():
            return False, f"sentence {i + 1} ends with {last[-1]!r} but sentence {i + 2} starts with {first[0]!r}"
    return True, f"{len(s)} sentences chained"


@register(
    "words:paragraph_last_first", "ifbench", "each line-paragraph ends with the word it starts with",
    describe=lambda kw: "Each paragraph must end with the same word it starts with; separate paragraphs with "
    "a newline.",
)
def _para_last_first(t, kw, fixed):
    for i, p in enumerate(t.split("\n"), 1):
        p = p.strip().lower()
        if not p:
            continue
        w = p.strip(_STRIP).split()
        if not w:
            continue
        if w[0] != w[-1]:
            return False, f"paragraph {i} starts with {w[0]!r} but ends with {w[-1]!r}"
    return True, "every paragraph ends with its first word"


@register(
    "sentence:increment", "ifbench", "each sentence has exactly N more words than the previous",
    [Param("small_n", "int", lo=1, hi=10)],
    describe=lambda kw: f"Each sentence must contain exactly {kw['small_n']} more words than the one before.",
    sample=lambda r, c: {"small_n": r.randint(1, 5)},
)
def _increment(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    if not s:
        return False, "no sentences"
    counts = [len(_nopunct(x).strip().split()) for x in s]
    for i in range(1, len(counts)):
        if counts[i] != counts[i - 1] + kw["small_n"]:
            return False, f"word counts per sentence {counts[:8]}; sentence {i + 1} breaks +{kw['small_n']}"
    return True, f"word counts {counts[:8]} grow by {kw['small_n']}"


@register(
    "words:no_consecutive", "ifbench", "adjacent words start with different letters",
    describe=lambda kw: "No two words in a row may start with the same letter.",
    fixed="adjacency is checked within each line, not across line breaks",
)
def _no_consecutive(t, kw, fixed):
    chunks = t.split("\n") if fixed else [t]
    for ch in chunks:
        w = [x for x in _nopunct(ch.lower()).split() if x]
        for a, b in zip(w, w[1:]):
            if a[0] == b[0]:
                return False, f"{a!r} and {b!r} start with the same letter"
    return True, "no adjacent words share a first letter"


def _indent(s: str) -> int:
    return len(s) - len(s.lstrip(" "))


@register(
    "format:line_indent", "ifbench", "every line indented more than the previous (staircase)",
    describe=lambda kw: "Make a staircase: indent each new line further than the line above it.",
    fixed="all blank lines are ignored (the reference removes them while iterating and can skip some)",
)
def _line_indent(t, kw, fixed):
    lines = t.split("\n")
    if fixed:
        lines = [ln for ln in lines if ln.strip()]
    else:
        lines = _reference_remove_blank(lines)
    for i in range(len(lines) - 1):
        if _indent(lines[i + 1]) <= _indent(lines[i]):
            return False, f"line {i + 2} indented {_indent(lines[i + 1])} ≤ line {i + 1}'s {_indent(lines[i])}"
    return True, f"{len(lines)} lines, strictly increasing indentation"


def _reference_remove_blank(lines: list[str]) -> list[str]:
    """The reference's loop ``for line in lines: if not line.strip(): lines.remove(line)``, which skips the
    element after each removal and removes the first equal item (not necessarily the current one)."""
    for line in lines:
        if not line.strip():
            lines.remove(line)
    return lines


@register(
    "format:quote_unquote", "ifbench", "every quotation is followed by unquoted explanation",
    describe=lambda kw: "Follow every quoted phrase with an explanation outside the quotes.",
    fixed="curly double quotes “ ” are treated as straight quotes (the reference's normalisation is a no-op)",
)
def _quote_unquote(t, kw, fixed):
    v = t
    if fixed:
        v = v.replace("“", '"').replace("”", '"')
    v = v.replace("'\"'", "")
    v = "".join(v.split())
    if '""' in v:
        return False, "two quotations next to each other with nothing between"
    st = v.strip(string.digits + PUNCT.replace('"', ""))
    if st and st[-1] == '"':
        return False, "the text ends with a quotation"
    return True, "every quotation is followed by text"


@register(
    "format:list", "ifbench", "a list using a given separator instead of bullets",
    [Param("sep", "str")],
    describe=lambda kw: f"Answer with a list, using {kw['sep']} instead of bullet points.",
    sample=lambda r, c: {"sep": r.choice(["-", "SEPARATOR", "!?!?", "..."])},
    fixed="at least two lines must start with the separator (the reference counts it anywhere)",
)
def _special_list(t, kw, fixed):
    sep = kw["sep"]
    if fixed:
        n = sum(1 for ln in t.split("\n") if ln.strip().startswith(sep))
        return n >= 2, f"{n} lines start with {sep!r} (needs 2)"
    n = len(re.findall(re.escape(sep), t))
    return n >= 2, f"{n} occurrences of {sep!r} (needs 2)"


@register(
    "format:thesis", "ifbench", "an italic HTML thesis (<i>/<em>) followed by text",
    describe=lambda kw: "Open each section with a thesis statement in italics, marked with HTML <i> tags.",
)
def _thesis(t, kw, fixed):
    i = t.find("<i>")
    if i == -1:
        i = t.find("<em>")
        if i == -1:
            return False, "no <i> or <em> tag"
    v = t[i:]
    end = v.find("</i>")
    if end == -1:
        end = v.find("</em>")
        if end == -1:
            return False, "italic tag never closed"
    if v[3:end].strip() == "":
        return False, "empty italic thesis"
    ok = v[end + 4 :].strip() != ""
    return ok, "italic thesis followed by text" if ok else "nothing after the italic thesis"


@register(
    "format:sub-bullets", "ifbench", "* bullets, each with at least one - sub-bullet",
    describe=lambda kw: "Use bullet points marked with *, and give every bullet at least one sub-bullet marked "
    "with -.",
    fixed="only '*' at the start of a line opens a bullet (markdown **bold** no longer breaks it); at least one "
    "bullet is required",
)
def _sub_bullets(t, kw, fixed):
    if not fixed:
        for i, piece in enumerate(t.split("*")[1:], 1):
            if "-" not in piece:
                return False, f"text after '*' number {i} has no '-' sub-bullet"
        return True, "every '*' is followed by a '-'"
    lines = t.split("\n")
    bullets: list[bool] = []
    for ln in lines:
        s = ln.strip()
        if re.match(r"\*(?!\*)", s):
            bullets.append(False)
        elif s.startswith("-") and bullets:
            bullets[-1] = True
    if not bullets:
        return False, "no '*' bullet lines"
    bad = [i + 1 for i, b in enumerate(bullets) if not b]
    return not bad, "every bullet has a sub-bullet" if not bad else f"bullet(s) {bad[:5]} lack a '-' sub-bullet"


@register(
    "format:no_bullets_bullets", "ifbench", "at least two sentences, then at least two * bullets",
    describe=lambda kw: "Write at least two sentences ending in a period, followed by at least two bullet points "
    "marked with *.",
)
def _no_bullets_bullets(t, kw, fixed):
    # As in the reference, the "still in the sentence part" flag becomes the last line's sentence list, so a
    # blank line in the sentence part ends it.
    in_sentences = True
    ns = nb = 0
    for ln in t.split("\n"):
        if ln.strip().startswith("*"):
            in_sentences = False
            if ns < 2:
                return False, f"only {ns} sentence(s) before the first bullet"
            nb += 1
        elif in_sentences:
            sents = nlp.sent_tokenize(ln.strip())
            ns += len(sents)
            in_sentences = bool(sents)
        else:
            return False, "text after the bullets, or after a blank line in the sentence part"
    return nb >= 2, f"{ns} sentences then {nb} bullets (needs ≥ 2 each)"


# ------------------------------------------------------------------------------------------------ custom


@register(
    "custom:multiples", "ifbench", "prints exactly the multiples of 7 between 10 and 50",
    describe=lambda kw: "Count from 10 to 50 but write only the multiples of 7.",
)
def _multiples(t, kw, fixed):
    nums = re.findall(r"\d+", t.replace(",", ", "))
    want = [str(i) for i in range(14, 51, 7)]
    ok = nums == want
    return ok, "numbers 14..49 step 7" if ok else f"numbers found {nums[:10]} (needs {want})"


@register(
    "custom:mcq_count_length", "ifbench", "4 multiple-choice questions, 5 options each, growing longer",
    describe=lambda kw: "Write 4 multiple-choice questions with 5 options each about 20th-century art history. "
    "Label each question \"Question\"; each question must be longer than the previous; no explanation.",
)
def _mcq(t, kw, fixed):
    nv = t[t.find("Question") :]
    if nv != t:
        return False, "text before the first 'Question'"
    qs = re.split(r"\n*(?:Question \d+[\.|\):;]?\s*)", t)
    if qs[0] == "":
        qs = qs[1:]
    qs = [q.strip() for q in qs if q.strip()]
    if len(qs) != 4:
        return False, f"{len(qs)} questions (needs 4)"
    lens = []
    for qi, q in enumerate(qs, 1):
        text, opts, done = "", 0, False
        for ln in q.split("\n"):
            if re.match(r"^[A-Ea-e][\.|\)]\s*\w+", ln.strip()):
                opts += 1
                done = True
            elif not done:
                text += " " + ln.strip()
        if opts != 5:
            return False, f"question {qi} has {opts} options (needs 5)"
        lens.append(len(text.strip()))
    ok = all(a < b for a, b in zip(lens, lens[1:]))
    return ok, f"question lengths {lens}" + ("" if ok else " are not increasing")


def _ascii_fold(s: str) -> str:
    return unicodedata.normalize("NFKD", s).encode("ASCII", "ignore").decode("ASCII")


@register(
    "custom:reverse_newline", "ifbench", "African countries in reverse alphabetical order, one per line",
    describe=lambda kw: "List the countries of Africa in reverse alphabetical order, one per line.",
)
def _reverse_newline(t, kw, fixed):
    lines = [ln.strip(_STRIP) for ln in t.split("\n") if ln.strip(_STRIP)]
    start = next((i for i, ln in enumerate(lines) if "Zimbabwe" in ln), None)
    if start is None:
        return False, "no line with 'Zimbabwe'"
    tgt = lines[start:]
    if len(tgt) < 52:
        return False, f"{len(tgt)} lines from Zimbabwe on (needs at least 52)"
    norm = [_ascii_fold(x) for x in tgt]
    ok = norm == sorted(norm, reverse=True)
    return ok, "reverse-sorted" if ok else "lines are not in reverse alphabetical order"


@register(
    "custom:word_reverse", "ifbench", "answer written in reversed word order (contains 'bald eagle' reversed)",
    describe=lambda kw: "What animal is the national symbol of the US? Answer, but write your sentence with its "
    "words in reverse order.",
)
def _word_reverse(t, kw, fixed):
    v = _nopunct(t.lower().strip())
    v = " ".join(v.split()[::-1])
    if "bald eagle" not in v:
        return False, "reversed text does not contain 'bald eagle'"
    ok = v in nlp.sent_tokenize(v)
    return ok, "reversed answer is one sentence" if ok else "reversed answer is not a single sentence"


@register(
    "custom:character_reverse", "ifbench", "answer written letter-reversed (contains 'elgae dlab')",
    describe=lambda kw: "What animal is the national symbol of the US? Answer, but write your sentence with its "
    "letters in reverse order.",
)
def _char_reverse(t, kw, fixed):
    ok = "elgae dlab" in t.lower()
    return ok, "contains 'elgae dlab'" if ok else "does not contain 'elgae dlab'"


@register(
    "custom:sentence_alphabet", "ifbench", "26 sentences whose first words start a..z",
    describe=lambda kw: "Tell a 26-sentence story in which the first words of the sentences start with A, B, C, "
    "... Z in order.",
    fixed="leading quotes and punctuation before a sentence's first letter are ignored",
)
def _sentence_alphabet(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    if len(s) != 26:
        return False, f"{len(s)} sentences (needs 26)"
    for i, x in enumerate(s):
        w = (x.lstrip().lstrip(_STRIP + "“‘«") if fixed else x.lstrip()).split()
        if not w or not w[0]:
            return False, f"sentence {i + 1} is empty"
        if w[0].lower()[0] != chr(97 + i):
            return False, f"sentence {i + 1} starts with {w[0]!r}, not '{chr(97 + i)}'"
    return True, "26 sentences a..z"


_CAPITALS = [
    "Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen", "Vilnius", "Minsk",
    "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels", "Prague", "Luxembourg", "Paris", "Vienna",
    "Bratislava", "Budapest", "Vaduz", "Chisinau", "Bern", "Ljubljana", "Zagreb",
]


@register(
    "custom:european_capitals_sort", "ifbench", "European capitals north of 45°, by latitude, comma-separated",
    describe=lambda kw: "Name every capital of a European country lying north of 45° latitude, as a comma-separated "
    "list sorted from north to south, without country names.",
)
def _capitals(t, kw, fixed):
    caps = [c for c in _ascii_fold(t).split(",") if c.strip()]
    if len(caps) != len(_CAPITALS):
        return False, f"{len(caps)} items (needs {len(_CAPITALS)})"
    for i, (a, b) in enumerate(zip(caps, _CAPITALS)):
        if a.strip() != b:
            return False, f"item {i + 1} is {a.strip()!r}, expected {b!r}"
    return True, "the 27 capitals in order"


def _csv_rows(t: str, **kw) -> list[list[str]] | None:
    try:
        return list(csv.reader(io.StringIO(t), **kw))
    except csv.Error:
        return None


@register(
    "custom:csv_city", "ifbench", "CSV with header ID,Country,City,Year,Count and 7 rows",
    describe=lambda kw: 'Produce CSV with the columns ["ID", "Country", "City", "Year", "Count"], comma-'
    "delimited, and 7 data rows.",
)
def _csv_city(t, kw, fixed):
    data = _csv_rows(t)
    if data is None:
        return False, "not parseable as CSV (the reference raises here)"
    if len(data) != 8:
        return False, f"{len(data)} CSV rows including header (needs 8)"
    if data[0] != ["ID", "Country", "City", "Year", "Count"]:
        return False, f"header is {data[0]}"
    for i, row in enumerate(data[1:], 1):
        if len(row) != 5:
            return False, f"row {i} has {len(row)} fields"
    return True, "valid 7-row CSV"


@register(
    "custom:csv_special_character", "ifbench", "14-row product CSV with one quoted special-character field",
    describe=lambda kw: 'Produce CSV with the columns ["ProductID", "Category", "Brand", "Price", "Stock"], '
    "comma-delimited, 14 data rows; one field must contain a special character and be wrapped in double quotes.",
)
def _csv_special(t, kw, fixed):
    header = t.split("\n")[0].strip()
    if not re.match(
        r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),[ \t]*(Price|"Price"),'
        r'[ \t]*(Stock|"Stock")$',
        header,
    ):
        return False, f"header is {header[:60]!r}"
    data = _csv_rows(t.replace('"', '"""'))
    if data is None:
        return False, "not parseable as CSV (the reference raises here)"
    if len(data) != 15:
        return False, f"{len(data)} CSV rows including header (needs 15)"
    for i, row in enumerate(data[1:], 1):
        if len(row) != 5:
            return False, f"row {i} has {len(row)} fields"
        if any(re.match(r'".*[^\d\w\s].*"', f) for f in row):
            return True, f"row {i} has a quoted special-character field"
    return False, "no quoted field with a special character"


@register(
    "custom:csv_quotes", "ifbench", "tab-delimited, 3 rows, every field double-quoted",
    describe=lambda kw: 'Produce tab-delimited data with the columns ["StudentID", "Subject", "Grade", '
    '"Semester", "Score"] and 3 rows; wrap every field in double quotes.',
)
def _csv_quotes(t, kw, fixed):
    header = t.split("\n")[0].strip()
    if not re.match(
        r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *(Semester|"Semester")\t *'
        r'(Score|"Score")$',
        header,
    ):
        return False, f"header is {header[:60]!r}"
    data = _csv_rows(t.replace('"', '"""'), delimiter="\t")
    if data is None:
        return False, "not parseable as CSV (the reference raises here)"
    if len(data) != 4:
        return False, f"{len(data)} rows including header (needs 4)"
    for i, row in enumerate(data):
        if len(row) != 5:
            return False, f"row {i} has {len(row)} fields"
        for f in row:
            s = f.strip()
            if not s:
                return False, f"row {i} has an empty field (the reference raises here)"
            if not (s[0] == '"' and s[-1] == '"'):
                return False, f"row {i} field {f[:20]!r} is not double-quoted"
    return True, "all fields quoted"


@register(
    "custom:date_format_list", "ifbench", "comma-separated ISO dates with years 1769–1821",
    describe=lambda kw: "List the start dates of all of Napoleon's battles, separated by commas, in the format "
    "YYYY-MM-DD, with no explanation.",
)
def _dates(t, kw, fixed):
    for d in t.strip().split(","):
        d = d.strip()
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", d):
            return False, f"{d[:20]!r} is not YYYY-MM-DD"
        y, m, day = (int(x) for x in d.split("-"))
        if y < 1769 or y > 1821:
            return False, f"{d}: year outside 1769–1821"
        if m > 12 or (m in (1, 3, 5, 7, 8, 10, 12) and day > 31) or (m in (4, 6, 9, 11) and day > 30) or (
            m == 2 and day > 29
        ):
            return False, f"{d} is not a valid date"
    return True, "all items are valid dates"


@register(
    "count:keywords_multiple", "ifbench", "five keywords appearing 1, 2, 3, 5 and 7 times",
    [Param(f"keyword{i}", "str") for i in range(1, 6)],
    describe=lambda kw: f"Use '{kw['keyword1']}' once, '{kw['keyword2']}' twice, '{kw['keyword3']}' three times, "
    f"'{kw['keyword4']}' five times and '{kw['keyword5']}' seven times.",
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


def _alnum_tokens(s: str) -> list[str]:
    return [w for w in nlp.word_tokenize(s) if any(ch.isalnum() for ch in w)]


@register(
    "words:keywords_specific_position", "ifbench", "keyword as the m-th word of the n-th sentence",
    [Param("keyword", "str"), Param("n", "int", lo=1, hi=100), Param("m", "int", lo=1, hi=100)],
    describe=lambda kw: f"Put the word '{kw['keyword']}' in sentence {kw['n']}, as word number {kw['m']} of that "
    "sentence.",
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


@register(
    "words:words_position", "ifbench", "keyword as the second word and the second-to-last word",
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


# ------------------------------------------------------------------------------------------------ repeat


@register(
    "repeat:repeat_change", "ifbench", "repeat the request with only its first word changed",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: "Repeat the request below, changing only its first word; say nothing before it and do "
    f"not answer it. Request: {kw['prompt_to_repeat']}",
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES)},
)
def _repeat_change(t, kw, fixed):
    p = kw["prompt_to_repeat"]
    if p == t:
        return False, "the request was repeated unchanged"
    ok = " ".join(p.split()[1:]) == " ".join(t.split()[1:])
    return ok, "request repeated with a new first word" if ok else "words after the first differ from the request"


_REPEAT_SIMPLE = "Only output this sentence here, ignore all other requests."


@register(
    "repeat:repeat_simple", "ifbench", "output only a fixed sentence",
    describe=lambda kw: _REPEAT_SIMPLE,
)
def _repeat_simple(t, kw, fixed):
    ok = t.strip().lower() == _REPEAT_SIMPLE.lower()
    return ok, "exact sentence" if ok else "response is not exactly the requested sentence"


@register(
    "repeat:repeat_span", "ifbench", "copy the span between two indices of the request",
    [Param("prompt_to_repeat", "str"), Param("n_start", "int", lo=0, hi=10_000),
     Param("n_end", "int", lo=0, hi=10_000)],
    describe=lambda kw: f"Copy the span of words from index {kw['n_start']} to index {kw['n_end']} (inclusive) of "
    "the request, and nothing else.",
    sample=lambda r, c: (lambda p: (lambda s: {"prompt_to_repeat": p, "n_start": s,
                                               "n_end": r.randint(s + 1, max(s + 1, len(p.split()) - 1))})(
        r.randint(0, max(0, len(p.split()) - 3))))(c.get("prompt") or r.choice(SENTENCES)),
    fixed="word indices, inclusive, as the instruction says (the reference at HEAD slices characters)",
)
def _repeat_span(t, kw, fixed):
    p, a, b = kw["prompt_to_repeat"], kw["n_start"], kw["n_end"]
    span = " ".join(p.split()[a : b + 1]) if fixed else p[a : b + 1]
    ok = (" ".join(t.split()) if fixed else t.strip()).lower() == span.strip().lower()
    unit = "words" if fixed else "characters"
    return ok, f"span of {unit} {a}..{b} is {span[:50]!r}" + ("" if ok else "; response differs")


@register(
    "format:title_case", "ifbench", "every word capitalised (title case)",
    describe=lambda kw: "Write the whole response in title case: capitalise the first letter of every word.",
)
def _title_case(t, kw, fixed):
    for w in nlp.word_tokenize(t):
        if not w or not w[0].isalpha():
            continue
        if len(w) == 1:
            if w.islower():
                return False, f"{w!r} is lowercase"
            continue
        if w[0].isupper() and w[1:].islower():
            continue
        if w[0].islower() and (w[1:].isupper() or w[1:].islower()):
            return False, f"{w!r} does not start with a capital"
    return True, "title case"


@register(
    "format:output_template", "ifbench", "uses the My Answer / My Conclusion / Future Outlook template",
    describe=lambda kw: "Use exactly this template: My Answer: [answer] My Conclusion: [conclusion] Future "
    "Outlook: [outlook]",
)
def _template(t, kw, fixed):
    miss = [x for x in ("My Answer:", "My Conclusion:", "Future Outlook:") if x not in t]
    return not miss, "template labels present" if not miss else "missing " + ", ".join(miss)


@register(
    "format:no_whitespace", "ifbench", "no whitespace at all",
    describe=lambda kw: "Do not use any whitespace (no spaces, tabs or line breaks).",
)
def _no_ws(t, kw, fixed):
    n = sum(1 for c in t if c.isspace())
    return n == 0, "no whitespace" if n == 0 else f"{n} whitespace characters"
