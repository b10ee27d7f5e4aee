"""The 25 IFEval constraints (Zhou et al. 2023), checked as Google's ``instruction_following_eval`` does.

IFBench's ``classic_instructions`` and open-instruct's IFEvalG use the same 25 checkers unchanged.
Each checker is ``f(text, kwargs, fixed) -> (ok, reason)``.
"""

from __future__ import annotations

import collections
import json
import re

from genlab.ifbench import langid, nlp
from genlab.ifbench._words import LANGUAGES, NOUNS
from genlab.ifbench.registry import Param, register

REL = ("less than", "at least")


def _rel_ok(n: int, rel: str, k: int) -> bool:
    return n < k if rel == "less than" else n >= k


def _rel_text(n: int, rel: str, k: int, what: str) -> str:
    return f"{what} {n} (needs {rel} {k})"


def _search(pattern: str, text: str, flags: int = re.IGNORECASE) -> list[str]:
    """re.findall with the reference's unescaped pattern; fall back to a literal match if it is invalid."""
    try:
        return re.findall(pattern, text, flags)
    except re.error:
        return re.findall(re.escape(pattern), text, flags)


def _word_count(keyword: str, text: str) -> int:
    return len(re.findall(r"(?<!\w)" + re.escape(keyword) + r"(?!\w)", text, re.IGNORECASE))


def _rel_sample(r):
    return r.choice(REL)


# ---------------------------------------------------------------------------------------------- keywords


@register(
    "keywords:existence", "ifeval", "include every given keyword",
    [Param("keywords", "list", doc="keywords that must all appear")],
    describe=lambda kw: "Make sure your answer mentions each of these words: "
    + ", ".join(repr(k) for k in sorted(kw["keywords"])) + ".",
    sample=lambda r, c: {"keywords": r.sample(NOUNS, 2)},
    fixed="whole-word, literal match instead of a case-insensitive regex substring search",
)
def _existence(t, kw, fixed):
    missing = [k for k in kw["keywords"] if not (_word_count(k, t) if fixed else _search(k, t))]
    n = len(kw["keywords"])
    if missing:
        return False, f"found {n - len(missing)} of {n} keywords; missing " + ", ".join(map(repr, missing))
    return True, f"all {n} keywords present"


@register(
    "keywords:frequency", "ifeval", "a keyword appears less than / at least N times",
    [Param("keyword", "str"), Param("frequency", "int", lo=1, hi=10), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Use the word '{kw['keyword']}' {kw['relation']} {kw['frequency']} times.",
    sample=lambda r, c: {"keyword": r.choice(NOUNS), "frequency": r.randint(1, 4), "relation": _rel_sample(r)},
    fixed="counts whole-word occurrences instead of regex substring matches",
)
def _frequency(t, kw, fixed):
    k = kw["keyword"].strip()
    n = _word_count(k, t) if fixed else len(_search(k, t))
    return _rel_ok(n, kw["relation"], kw["frequency"]), _rel_text(
        n, kw["relation"], kw["frequency"], f"'{k}' occurs"
    )


@register(
    "keywords:forbidden_words", "ifeval", "none of the given words appears (whole word)",
    [Param("forbidden_words", "list")],
    describe=lambda kw: "Do not use any of these words: " + ", ".join(sorted(set(kw["forbidden_words"]))) + ".",
    sample=lambda r, c: {"forbidden_words": r.sample(NOUNS, 2)},
    fixed="forbidden words are matched literally (no regex interpretation)",
)
def _forbidden(t, kw, fixed):
    found = []
    for w in sorted(set(kw["forbidden_words"])):
        pat = r"\b" + (re.escape(w) if fixed else w) + r"\b"
        if _search(pat, t):
            found.append(w)
    if found:
        return False, "uses forbidden word(s) " + ", ".join(map(repr, found))
    return True, "no forbidden word used"


def _letter_sample(r):
    return {"letter": r.choice("abcdefghijklmnoprstuwy"), "let_frequency": r.randint(1, 12),
            "let_relation": _rel_sample(r)}


@register(
    "keywords:letter_frequency", "ifeval", "a letter appears less than / at least N times",
    [Param("letter", "str"), Param("let_frequency", "int", lo=1, hi=50), Param("let_relation", "str", choices=REL)],
    describe=lambda kw: f"The letter '{kw['letter']}' should appear {kw['let_relation']} {kw['let_frequency']} "
    "times in your response.",
    sample=lambda r, c: _letter_sample(r),
)
def _letter_frequency(t, kw, fixed):
    letter = kw["letter"].strip().lower()
    n = collections.Counter(t.lower())[letter]
    return _rel_ok(n, kw["let_relation"], kw["let_frequency"]), _rel_text(
        n, kw["let_relation"], kw["let_frequency"], f"letter '{letter}' occurs"
    )


# ---------------------------------------------------------------------------------------------- language


def _detect(t: str) -> str | None:
    try:
        return langid.detect(t)
    except langid.DetectionError:
        return None


@register(
    "language:response_language", "ifeval", "the whole response is in a given language (langdetect)",
    [Param("language", "str", choices=tuple(LANGUAGES), doc="ISO 639-1 code")],
    describe=lambda kw: f"Respond only in {LANGUAGES.get(kw['language'], kw['language'])}; no other language.",
    sample=lambda r, c: {"language": r.choice(list(LANGUAGES))},
    fixed="an undetectable language counts as not followed (reference: followed)",
    prepare=langid.expect,
)
def _language(t, kw, fixed):
    code = _detect(t)
    if code is None:
        return (not fixed), "language undetectable" + ("" if fixed else "; the reference counts this as followed")
    return code == kw["language"], f"detected '{code}', expected '{kw['language']}'"


# ---------------------------------------------------------------------------------------------- length


@register(
    "length_constraints:number_sentences", "ifeval", "sentence count (Punkt) less than / at least N",
    [Param("num_sentences", "int", lo=1, hi=40), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Your response should have {kw['relation']} {kw['num_sentences']} sentences.",
    sample=lambda r, c: {"num_sentences": r.randint(1, 20), "relation": _rel_sample(r)},
)
def _num_sentences(t, kw, fixed):
    n = len(nlp.sent_tokenize(t))
    return _rel_ok(n, kw["relation"], kw["num_sentences"]), _rel_text(
        n, kw["relation"], kw["num_sentences"], "sentences:"
    )


_PARA_SPLIT = re.compile(r"\s?\*\*\*\s?")


def _divider_paragraphs(t: str) -> tuple[int | None, str]:
    parts = _PARA_SPLIT.split(t)
    n = len(parts)
    for i, p in enumerate(parts):
        if not p.strip():
            if i in (0, len(parts) - 1):
                n -= 1
            else:
                return None, f"empty paragraph at position {i + 1} between *** dividers"
    return n, ""


@register(
    "length_constraints:number_paragraphs", "ifeval", "exactly N paragraphs separated by *** dividers",
    [Param("num_paragraphs", "int", lo=1, hi=10)],
    describe=lambda kw: f"Write exactly {kw['num_paragraphs']} paragraphs, separated by the markdown divider ***.",
    sample=lambda r, c: {"num_paragraphs": r.randint(2, 6)},
)
def _num_paragraphs(t, kw, fixed):
    n, why = _divider_paragraphs(t)
    if n is None:
        return False, why
    return n == kw["num_paragraphs"], f"{n} paragraphs (needs {kw['num_paragraphs']})"


@register(
    "length_constraints:number_words", "ifeval", "word count less than / at least N",
    [Param("num_words", "int", lo=1, hi=2000), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Answer with {kw['relation']} {kw['num_words']} words.",
    sample=lambda r, c: {"num_words": r.randint(50, 500), "relation": _rel_sample(r)},
)
def _num_words(t, kw, fixed):
    n = nlp.count_words(t)
    return _rel_ok(n, kw["relation"], kw["num_words"]), _rel_text(n, kw["relation"], kw["num_words"], "words:")


def _first_word_of(paragraph: str) -> str:
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    out = ""
    for ch in word:
        if ch in {".", ",", "?", "!", "'", '"'}:
            break
        out += ch.lower()
    return out


@register(
    "length_constraints:nth_paragraph_first_word", "ifeval",
    "N blank-line paragraphs; paragraph i starts with a given word",
    [Param("num_paragraphs", "int", lo=1, hi=10), Param("nth_paragraph", "int", lo=1, hi=10),
     Param("first_word", "str")],
    describe=lambda kw: f"Write {kw['num_paragraphs']} paragraphs separated by blank lines; paragraph "
    f"{kw['nth_paragraph']} must begin with the word '{kw['first_word']}'.",
    sample=lambda r, c: (lambda n: {"num_paragraphs": n, "nth_paragraph": r.randint(1, n),
                                    "first_word": r.choice(NOUNS)})(r.randint(2, 5)),
    fixed="the n-th paragraph is counted among non-empty paragraphs (reference indexes the raw split)",
)
def _nth_first_word(t, kw, fixed):
    paras = re.split(r"\n\n", t)
    n = sum(1 for p in paras if p.strip())
    k = kw["nth_paragraph"]
    if k > n:
        return False, f"only {n} non-empty paragraphs; paragraph {k} missing"
    pool = [p for p in paras if p.strip()] if fixed else paras
    para = pool[k - 1].strip()
    if not para:
        return False, f"paragraph {k} of the raw split is empty"
    fw = _first_word_of(para)
    want = kw["first_word"].lower()
    ok = n == kw["num_paragraphs"] and fw == want
    return ok, f"{n} paragraphs (needs {kw['num_paragraphs']}); paragraph {k} starts with '{fw}' (needs '{want}')"


# ---------------------------------------------------------------------------------------------- content


@register(
    "detectable_content:number_placeholders", "ifeval", "at least N [placeholders]",
    [Param("num_placeholders", "int", lo=1, hi=20)],
    describe=lambda kw: f"Include at least {kw['num_placeholders']} placeholders in square brackets, like [name].",
    sample=lambda r, c: {"num_placeholders": r.randint(1, 4)},
)
def _placeholders(t, kw, fixed):
    n = len(re.findall(r"\[.*?\]", t))
    return n >= kw["num_placeholders"], f"{n} placeholders (needs at least {kw['num_placeholders']})"


@register(
    "detectable_content:postscript", "ifeval", "a postscript starting with a marker (P.S. / P.P.S)",
    [Param("postscript_marker", "str")],
    describe=lambda kw: f"End with a postscript that starts with {kw['postscript_marker']}",
    sample=lambda r, c: {"postscript_marker": r.choice(["P.S.", "P.P.S"])},
)
def _postscript(t, kw, fixed):
    m = kw["postscript_marker"].strip()
    low = t.lower()
    if m == "P.P.S":
        pat = r"\s*p\.\s?p\.\s?s.*$"
    elif m == "P.S.":
        pat = r"\s*p\.\s?s\..*$"
    else:
        pat = r"\s*" + (re.escape(m.lower()) if fixed else m.lower()) + r".*$"
    found = _search(pat, low, re.MULTILINE)
    return bool(found), ("postscript found" if found else f"no line starting with {m!r}")


# ---------------------------------------------------------------------------------------------- format


@register(
    "detectable_format:number_bullet_lists", "ifeval", "exactly N markdown bullet points (* or -)",
    [Param("num_bullets", "int", lo=1, hi=20)],
    describe=lambda kw: f"Use exactly {kw['num_bullets']} markdown bullet points, e.g.\n* first point\n* second point",
    sample=lambda r, c: {"num_bullets": r.randint(1, 6)},
)
def _bullets(t, kw, fixed):
    n = len(re.findall(r"^\s*\*[^\*].*$", t, flags=re.MULTILINE)) + len(
        re.findall(r"^\s*-.*$", t, flags=re.MULTILINE)
    )
    return n == kw["num_bullets"], f"{n} bullet lines (needs exactly {kw['num_bullets']})"


CONSTRAINED = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@register(
    "detectable_format:constrained_response", "ifeval", "contains one of 'My answer is yes./no./maybe.'",
    describe=lambda kw: "Answer with exactly one of: " + ", ".join(f"'{x}'" for x in CONSTRAINED),
)
def _constrained(t, kw, fixed):
    s = t.strip()
    for opt in CONSTRAINED:
        if opt in s:
            return True, f"contains {opt!r}"
    return False, "none of the fixed answers ('My answer is yes./no./maybe.') appears"


@register(
    "detectable_format:number_highlighted_sections", "ifeval", "at least N *highlighted* sections",
    [Param("num_highlights", "int", lo=1, hi=20)],
    describe=lambda kw: f"Highlight at least {kw['num_highlights']} sections with markdown, like *this part*.",
    sample=lambda r, c: {"num_highlights": r.randint(1, 5)},
)
def _highlights(t, kw, fixed):
    n = sum(1 for h in re.findall(r"\*[^\n\*]*\*", t) if h.strip("*").strip())
    n += sum(1 for h in re.findall(r"\*\*[^\n\*]*\*\*", t) if h.removeprefix("**").removesuffix("**").strip())
    return n >= kw["num_highlights"], f"{n} highlighted sections (needs at least {kw['num_highlights']})"


@register(
    "detectable_format:multiple_sections", "ifeval", "at least N sections marked 'SPLITTER k'",
    [Param("section_spliter", "str"), Param("num_sections", "int", lo=1, hi=10)],
    describe=lambda kw: f"Split your answer into {kw['num_sections']} sections, each starting with "
    f"'{kw['section_spliter']} X' (X = 1, 2, ...).",
    sample=lambda r, c: {"section_spliter": r.choice(["Section", "SECTION", "PART", "Chapter"]),
                         "num_sections": r.randint(2, 5)},
    fixed="the splitter word is matched literally (no regex interpretation)",
)
def _sections(t, kw, fixed):
    sp = kw["section_spliter"].strip()
    pat = r"\s?" + (re.escape(sp) if fixed else sp) + r"\s?\d+\s?"
    try:
        n = len(re.split(pat, t)) - 1
    except re.error:
        n = len(re.split(r"\s?" + re.escape(sp) + r"\s?\d+\s?", t)) - 1
    return n >= kw["num_sections"], f"{n} sections marked '{sp} N' (needs at least {kw['num_sections']})"


@register(
    "detectable_format:json_format", "ifeval", "the whole output parses as JSON (code fences allowed)",
    describe=lambda kw: "Wrap your entire output in JSON; markdown code fences are allowed.",
)
def _json(t, kw, fixed):
    v = (
        t.strip().removeprefix("```json").removeprefix("```Json").removeprefix("```JSON")
        .removeprefix("```").removesuffix("```").strip()
    )
    try:
        json.loads(v)
    except ValueError as e:
        return False, f"not valid JSON ({str(e)[:60]})"
    return True, "valid JSON"


@register(
    "detectable_format:title", "ifeval", "a title in double angular brackets <<like this>>",
    describe=lambda kw: "Give your answer a title wrapped in double angular brackets, such as <<a day at sea>>.",
)
def _title(t, kw, fixed):
    for m in re.findall(r"<<[^\n]+>>", t):
        if m.lstrip("<").rstrip(">").strip():
            return True, f"title {m[:40]!r}"
    return False, "no non-empty <<title>>"


# ---------------------------------------------------------------------------------------------- combination


@register(
    "combination:two_responses", "ifeval", "two different answers separated by ******",
    describe=lambda kw: "Give two different answers, separated by six asterisks: ******",
)
def _two_responses(t, kw, fixed):
    parts = t.split("******")
    valid = []
    for i, p in enumerate(parts):
        if not p.strip():
            if i not in (0, len(parts) - 1):
                return False, "an empty answer between ****** separators"
        else:
            valid.append(p)
    if len(valid) != 2:
        return False, f"{len(valid)} non-empty parts (needs exactly 2)"
    if valid[0].strip() == valid[1].strip():
        return False, "the two answers are identical"
    return True, "two different answers"


@register(
    "combination:repeat_prompt", "ifeval", "first repeat the request verbatim, then answer",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: "First repeat the request word for word without change, then give your answer "
    "(say nothing before the repetition; do not repeat this sentence).",
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or "Write a haiku about the sea."},
)
def _repeat_prompt(t, kw, fixed):
    ok = t.strip().lower().startswith(kw["prompt_to_repeat"].strip().lower())
    return ok, "starts with the request" if ok else "does not start with the request verbatim"


@register(
    "startend:end_checker", "ifeval", "ends with an exact phrase",
    [Param("end_phrase", "str")],
    describe=lambda kw: f"End your response with the exact phrase '{kw['end_phrase']}', and nothing after it.",
    sample=lambda r, c: {"end_phrase": r.choice(["Any other questions?", "Is there anything else I can help with?",
                                                 "That is all.", "Let me know what you think."])},
)
def _end(t, kw, fixed):
    v = t.strip().strip('"').lower()
    p = kw["end_phrase"].strip().lower()
    ok = v.endswith(p)
    return ok, "ends with the phrase" if ok else f"ends with {v[-len(p) - 5:]!r}, not {p!r}"


@register(
    "startend:quotation", "ifeval", "wrapped in double quotes",
    describe=lambda kw: "Wrap your whole response in double quotation marks.",
)
def _quotation(t, kw, fixed):
    v = t.strip()
    ok = len(v) > 1 and v[0] == '"' and v[-1] == '"'
    return ok, "wrapped in double quotes" if ok else "does not start and end with a double quote"


# ---------------------------------------------------------------------------------------------- case


@register(
    "change_case:capital_word_frequency", "ifeval", "all-caps words less than / at least N",
    [Param("capital_frequency", "int", lo=1, hi=50), Param("capital_relation", "str", choices=REL)],
    describe=lambda kw: f"Use words written entirely in capital letters {kw['capital_relation']} "
    f"{kw['capital_frequency']} times.",
    sample=lambda r, c: {"capital_frequency": r.randint(1, 20), "capital_relation": _rel_sample(r)},
)
def _capital_words(t, kw, fixed):
    n = sum(1 for w in nlp.word_tokenize(t) if w.isupper())
    return _rel_ok(n, kw["capital_relation"], kw["capital_frequency"]), _rel_text(
        n, kw["capital_relation"], kw["capital_frequency"], "all-caps words:"
    )


def _case_lang(t: str, fixed: bool, upper: bool) -> tuple[bool, str]:
    cased = t.isupper() if upper else t.islower()
    if not cased:
        return False, "not all " + ("uppercase" if upper else "lowercase")
    code = _detect(t)
    if code is None:
        return (not fixed), "language undetectable" + ("" if fixed else "; the reference counts this as followed")
    return code == "en", f"all {'uppercase' if upper else 'lowercase'}; detected language '{code}'"


@register(
    "change_case:english_capital", "ifeval", "English, all capital letters",
    describe=lambda kw: "Write your entire response in English, using capital letters only.",
    fixed="an undetectable language counts as not followed",
    prepare=lambda texts: langid.expect(t for t in texts if t.isupper()),
)
def _english_capital(t, kw, fixed):
    return _case_lang(t, fixed, True)


@register(
    "change_case:english_lowercase", "ifeval", "English, all lowercase",
    describe=lambda kw: "Write your entire response in English, in lowercase letters only; no capitals.",
    fixed="an undetectable language counts as not followed",
    prepare=lambda texts: langid.expect(t for t in texts if t.islower()),
)
def _english_lower(t, kw, fixed):
    return _case_lang(t, fixed, False)


@register(
    "punctuation:no_comma", "ifeval", "no ASCII comma",
    describe=lambda kw: "Do not use any commas in your response.",
)
def _no_comma(t, kw, fixed):
    n = t.count(",")
    return n == 0, "no commas" if n == 0 else f"{n} comma(s)"
