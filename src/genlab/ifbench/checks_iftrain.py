"""The 29 IFTrain constraints (the training-only ids of open-instruct's IFEvalG), checked as IFEvalG does.

IFEvalG splits sentences with IFEval's rule-based splitter (:func:`nlp.regex_split_sentences`) and tokenises
words with NLTK's ``word_tokenize``. Each checker is ``f(text, kwargs, fixed) -> (ok, reason)``.
"""

from __future__ import annotations

import re
from collections import Counter

from genlab.ifbench import nlp
from genlab.ifbench._words import NOUNS, SENTENCES
from genlab.ifbench.checks_ifeval import REL, _letter_frequency, _letter_sample, _rel_ok, _search
from genlab.ifbench.registry import Param, register

_PHRASES = (
    "The early bird catches the worm",
    "All that glitters is not gold",
    "Every cloud has a silver lining",
    "Time flies when you are having fun",
    "Actions speak louder than words",
)


def _ww(keyword: str) -> str:
    return r"(?<!\w)" + re.escape(keyword) + r"(?!\w)"


@register(
    "copy:repeat_phrase", "iftrain", "repeat a phrase N times, changing one middle word each time",
    [Param("phrase", "str"), Param("small_n", "int", lo=1, hi=10)],
    describe=lambda kw: f"Repeat the phrase \"{kw['phrase']}\" exactly {kw['small_n']} times, each time replacing "
    "just one word in the middle of the phrase.",
    sample=lambda r, c: {"phrase": r.choice(_PHRASES), "small_n": r.randint(2, 4)},
)
def _repeat_phrase(t, kw, fixed):
    words = kw["phrase"].split()
    if not words:
        return False, "empty phrase"
    first, last = words[0], words[-1]
    found = _search(rf"{first} .*? {last}", t, 0)
    if len(found) != kw["small_n"]:
        return False, f"found {len(found)} phrase copies (needs {kw['small_n']})"
    diffs = 0
    for ph in found:
        p = ph.split()
        diffs = 0
        for i in range(len(p)):
            if i >= len(words):
                return False, "a copy is longer than the phrase"
            if p[i] != words[i]:
                diffs += 1
                if diffs > 1:
                    return False, f"copy {ph[:40]!r} changes more than one word"
    ok = diffs == 1
    return ok, "copies each change one word" if ok else "the last copy does not change exactly one word"


@register(
    "copy:copy", "iftrain", "copy the instruction text verbatim instead of following it",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: "Copy this instruction verbatim without following it (do not include this sentence).",
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES)},
)
def _copy(t, kw, fixed):
    ok = t.strip().lower() == kw["prompt_to_repeat"].strip().lower()
    return ok, "verbatim copy" if ok else "not an exact copy of the request"


@register(
    "new:copy_span_idx", "iftrain", "copy the characters between two indices of the request",
    [Param("prompt_to_repeat", "str"), Param("n_start", "int", lo=0, hi=10_000),
     Param("n_end", "int", lo=0, hi=10_000)],
    describe=lambda kw: f"Copy the text between character index {kw['n_start']} and {kw['n_end']} (inclusive) of "
    "the request, and nothing else.",
    sample=lambda r, c: (lambda p: (lambda s: {"prompt_to_repeat": p, "n_start": s,
                                               "n_end": r.randint(s + 1, max(s + 1, len(p) - 1))})(
        r.randint(0, max(0, len(p) - 2))))(c.get("prompt") or r.choice(SENTENCES)),
    fixed="the end index is inclusive, as the instruction says (the reference slices end-exclusive)",
)
def _copy_span(t, kw, fixed):
    p, a, b = kw["prompt_to_repeat"], kw["n_start"], kw["n_end"]
    span = p[a : b + 1] if fixed else p[a:b]
    ok = t.strip().lower() == span.strip().lower()
    return ok, f"expected span {span[:50]!r}" + ("" if ok else "; response differs")


@register(
    "format:sentence_hyphens", "iftrain", "sentences joined by hyphens without spaces",
    describe=lambda kw: "Join all sentences with hyphens and no spaces between them.",
)
def _sentence_hyphens(t, kw, fixed):
    gold = nlp.regex_split_sentences(re.sub("-", " ", t))
    parts = t.split("-")
    for i, (s, g) in enumerate(zip(parts, gold), 1):
        if s.strip() != s:
            return False, f"piece {i} has surrounding spaces"
        if s != g:
            return False, f"piece {i} {s[:30]!r} is not a whole sentence"
    return True, "sentences joined by hyphens"


@register(
    "keywords:no_adjacent_consecutive", "iftrain", "no adjacent words start with consecutive letters",
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


@register(
    "format:square_brackets", "iftrain", "every word wrapped in [square brackets]",
    describe=lambda kw: "Wrap every word of your response in square brackets, like [this] [one].",
)
def _square(t, kw, fixed):
    for w in t.split():
        if not (w.startswith("[") and w.endswith("]")):
            return False, f"{w!r} is not wrapped in brackets"
    return True, "every word bracketed"


@register(
    "keywords:word_once", "iftrain", "a keyword appears exactly once",
    [Param("keyword", "str")],
    describe=lambda kw: f"Include the word '{kw['keyword']}' in your response (exactly once).",
    sample=lambda r, c: {"keyword": r.choice(NOUNS)},
    fixed="whole-word count instead of a case-insensitive regex substring count",
)
def _word_once(t, kw, fixed):
    k = kw["keyword"].strip()
    n = len(re.findall(_ww(k), t, re.IGNORECASE)) if fixed else len(_search(k, t))
    return n == 1, f"'{k}' occurs {n} times (needs exactly 1)"


@register(
    "keywords:word_count_different_numbers", "iftrain", "a keyword appears less than / at least N times",
    [Param("keyword", "str"), Param("frequency", "int", lo=1, hi=10), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"The word '{kw['keyword']}' should appear {kw['relation']} {kw['frequency']} times.",
    sample=lambda r, c: {"keyword": r.choice(NOUNS), "frequency": r.randint(1, 5), "relation": r.choice(REL)},
    fixed="whole-word count instead of a regex substring count",
)
def _word_count_diff(t, kw, fixed):
    k = kw["keyword"].strip()
    n = len(re.findall(_ww(k), t, re.IGNORECASE)) if fixed else len(_search(k, t))
    return _rel_ok(n, kw["relation"], kw["frequency"]), f"'{k}' occurs {n} times (needs {kw['relation']} " \
        f"{kw['frequency']})"


@register(
    "keywords:exclude_word_harder", "iftrain", "a keyword taken from the instruction must not be used",
    [Param("keyword", "str"), Param("instruction", "str", required=False)],
    describe=lambda kw: f"Do not use the word '{kw['keyword']}' anywhere in your response.",
    sample=lambda r, c: {"keyword": r.choice((c.get("prompt") or r.choice(SENTENCES)).split()).strip(".,!?")},
    fixed="whole-word, case-insensitive search (the reference only finds the keyword with a space on each side)",
)
def _exclude_harder(t, kw, fixed):
    k = kw["keyword"].strip()
    hit = re.search(_ww(k), t, re.IGNORECASE) is not None if fixed else (" " + k + " ") in t
    return not hit, f"uses {k!r}" if hit else f"{k!r} not used"


def _two_paragraphs(parts: list[str]) -> tuple[bool, str]:
    n = len(parts)
    for i, p in enumerate(parts):
        if not p.strip():
            if i in (0, len(parts) - 1):
                n -= 1
            else:
                return False, f"empty paragraph at position {i + 1}"
    return n == 2, f"{n} paragraphs (needs 2)"


@register(
    "paragraphs:paragraphs", "iftrain", "exactly 2 paragraphs separated by ***",
    describe=lambda kw: "Write exactly 2 paragraphs separated by the markdown divider ***.",
)
def _paragraphs(t, kw, fixed):
    return _two_paragraphs(re.split(r"\s?\*\*\*\s?", t))


@register(
    "paragraphs:paragraphs2", "iftrain", "exactly 2 paragraphs separated by a blank line",
    describe=lambda kw: "Write exactly 2 paragraphs separated by one blank line (and no other blank lines).",
)
def _paragraphs2(t, kw, fixed):
    return _two_paragraphs(re.split(r"\n\n", t))


@register(
    "first_word:first_word_sent", "iftrain", "every sentence starts with a given word",
    [Param("first_word", "str")],
    describe=lambda kw: f"Start every sentence with the word '{kw['first_word']}'.",
    sample=lambda r, c: {"first_word": r.choice(["I", "We", "The", "This", "Today"])},
)
def _first_word_sent(t, kw, fixed):
    want = kw["first_word"].strip().lower()
    for i, s in enumerate(nlp.regex_split_sentences(t), 1):
        if not s.strip():
            return False, f"sentence {i} is empty"
        if s.split()[0].strip().lower() != want:
            return False, f"sentence {i} starts with {s.split()[0]!r}"
    return True, f"every sentence starts with {want!r}"


@register(
    "first_word:first_word_answer", "iftrain", "the response starts with a given word",
    [Param("first_word", "str")],
    describe=lambda kw: f"The first word of your response must be '{kw['first_word']}'.",
    sample=lambda r, c: {"first_word": r.choice(NOUNS)},
)
def _first_word_answer(t, kw, fixed):
    w = t.split()
    if not w:
        return False, "no words"
    ok = w[0].strip().lower() == kw["first_word"].strip().lower()
    return ok, f"first word is {w[0]!r}"


@register(
    "last_word:last_word_sent", "iftrain", "every sentence ends with a given word (before punctuation)",
    [Param("last_word", "str")],
    describe=lambda kw: f"End every sentence with the word '{kw['last_word']}' (before the punctuation).",
    sample=lambda r, c: {"last_word": r.choice(NOUNS)},
)
def _last_word_sent(t, kw, fixed):
    want = kw["last_word"].strip().lower()
    for i, s in enumerate(nlp.regex_split_sentences(t), 1):
        if not s.strip():
            return False, f"sentence {i} is empty"
        lw = re.sub(r"[^\w\s]", "", s.split()[-1].strip())
        if lw.lower() != want:
            return False, f"sentence {i} ends with {lw!r}"
    return True, f"every sentence ends with {want!r}"


@register(
    "last_word:last_word_answer", "iftrain", "the response ends with a given word",
    [Param("last_word", "str")],
    describe=lambda kw: f"The last word of your response must be '{kw['last_word']}'.",
    sample=lambda r, c: {"last_word": r.choice(NOUNS)},
)
def _last_word_answer(t, kw, fixed):
    w = t.split()
    if not w:
        return False, "no words"
    lw = re.sub(r"[^\w\s]", "", w[-1].strip())
    ok = lw.lower() == kw["last_word"].strip().lower()
    return ok, f"last word is {lw!r}"


@register(
    "format:bigram_wrapping", "iftrain", "every word pair wrapped in << >>",
    describe=lambda kw: "Wrap every pair of consecutive words in double angular brackets, like <<I am>> <<at home>>.",
)
def _bigram(t, kw, fixed):
    w = t.split()
    for i in range(0, len(w) - 1, 2):
        if not (w[i].startswith("<<") and w[i + 1].endswith(">>")):
            return False, f"words {i + 1}-{i + 2} ({w[i]!r} {w[i + 1]!r}) are not wrapped"
    return True, "all bigrams wrapped"


@register(
    "copy:copying_simple", "iftrain", "repeat the request unchanged, without answering",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: "Repeat the request without any change and do not answer it (do not repeat this sentence).",
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES)},
)
def _copying_simple(t, kw, fixed):
    ok = t.strip().lower() == kw["prompt_to_repeat"].strip().lower()
    return ok, "exact repetition" if ok else "not an exact repetition of the request"


@register(
    "copy:copying_multiple", "iftrain", "repeat the request N times separated by ******",
    [Param("prompt_to_repeat", "str"), Param("N", "int", lo=1, hi=10)],
    describe=lambda kw: f"Repeat the request {kw['N']} times without change, separated by six asterisks ******, "
    "and do not answer it.",
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES), "N": r.randint(2, 4)},
)
def _copying_multiple(t, kw, fixed):
    parts = t.split("******")
    if len(parts) != kw["N"]:
        return False, f"{len(parts)} parts (needs {kw['N']})"
    want = kw["prompt_to_repeat"].strip().lower()
    for i, p in enumerate(parts, 1):
        if p.strip().lower() != want:
            return False, f"part {i} is not the request"
    return True, f"{kw['N']} exact repetitions"


@register(
    "punctuation:punctuation_dot", "iftrain", "no '.' at all",
    describe=lambda kw: "Do not use any dots (periods) anywhere in your response.",
)
def _no_dot(t, kw, fixed):
    n = t.count(".")
    return n == 0, "no dots" if n == 0 else f"{n} dot(s)"


@register(
    "punctuation:punctuation_exclamation", "iftrain", "no '!' at all",
    describe=lambda kw: "Do not use any exclamation marks.",
)
def _no_excl(t, kw, fixed):
    n = t.count("!")
    return n == 0, "no exclamation marks" if n == 0 else f"{n} exclamation mark(s)"


@register(
    "count:lowercase_counting", "iftrain", "lowercase words appear at most N times",
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


@register(
    "letters:letter_counting", "iftrain", "total number of letters less than / at least N",
    [Param("N", "int", lo=1, hi=5000), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Answer with {kw['relation']} {kw['N']} letters.",
    sample=lambda r, c: {"N": r.randint(20, 400), "relation": r.choice(REL)},
)
def _letter_counting(t, kw, fixed):
    n = len(re.findall(r"[a-zA-Z]", t))
    return _rel_ok(n, kw["relation"], kw["N"]), f"{n} letters (needs {kw['relation']} {kw['N']})"


register(
    "letters:letter_counting2", "iftrain", "a letter appears less than / at least N times",
    [Param("letter", "str"), Param("let_frequency", "int", lo=1, hi=50), Param("let_relation", "str", choices=REL)],
    describe=lambda kw: f"Use the letter '{kw['letter']}' {kw['let_relation']} {kw['let_frequency']} times.",
    sample=lambda r, c: _letter_sample(r),
)(_letter_frequency)


@register(
    "count:counting_composition", "iftrain", "3 paragraphs of n_sent sentences of n_words words each",
    [Param("n_sent", "int", lo=1, hi=10), Param("n_words", "int", lo=1, hi=30)],
    describe=lambda kw: f"Write 3 paragraphs separated by the markdown divider * * *, each with exactly "
    f"{kw['n_sent']} sentences of exactly {kw['n_words']} words.",
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


@register(
    "count:count_unique", "iftrain", "no token repeated",
    describe=lambda kw: "Use only unique words: no word may be repeated.",
    fixed="only word tokens are compared, case-insensitively (the reference also fails on repeated punctuation)",
)
def _count_unique(t, kw, fixed):
    toks = nlp.word_tokenize(t)
    if fixed:
        toks = [x.lower() for x in toks if any(ch.isalnum() for ch in x)]
    dup = [w for w, k in Counter(toks).items() if k > 1]
    return not dup, "all tokens unique" if not dup else f"repeated: {dup[:5]}"


@register(
    "count:count_increment_word", "iftrain", "keyword1 once and keyword2 twice",
    [Param("keyword1", "str"), Param("keyword2", "str")],
    describe=lambda kw: f"Use the word '{kw['keyword1']}' once and the word '{kw['keyword2']}' twice.",
    sample=lambda r, c: dict(zip(("keyword1", "keyword2"), r.sample(NOUNS, 2))),
    fixed="whole-word counts instead of regex substring counts",
)
def _count_increment(t, kw, fixed):
    k1, k2 = kw["keyword1"].strip(), kw["keyword2"].strip()
    if fixed:
        n1, n2 = (len(re.findall(_ww(k), t, re.IGNORECASE)) for k in (k1, k2))
    else:
        n1, n2 = len(_search(k1, t)), len(_search(k2, t))
    return n1 == 1 and n2 == 2, f"'{k1}' {n1}× (needs 1), '{k2}' {n2}× (needs 2)"


@register(
    "keywords:palindrome", "iftrain", "include a palindrome",
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


@register(
    "keywords:keyword_specific_position", "iftrain", "keyword as the m-th token of the n-th sentence",
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


@register(
    "keywords:start_end", "iftrain", "start and end with the same word",
    describe=lambda kw: "Start and end your response with the same word, with nothing after it, not even "
    "punctuation.",
)
def _start_end(t, kw, fixed):
    w = nlp.word_tokenize(t)
    if len(w) < 2:
        return False, "fewer than 2 tokens"
    ok = w[0].lower() == w[-1].lower()
    return ok, f"starts with {w[0]!r}, ends with {w[-1]!r}"
