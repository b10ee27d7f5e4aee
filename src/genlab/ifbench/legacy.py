"""open-instruct's older ``func_name`` ground truth: one constraint per label, ``{"func_name": NAME, **kwargs}``.

These 25 rules are not the IFEval checkers: open-instruct's ``if_functions.py`` wrote its own simpler versions (exact
keyword counts, an "around" quantifier, plain substring tests). This module implements the same rules, written for
genlab from their documented behaviour, so that :class:`genlab.ifbench.verifier.IFBenchVerifier` scores old RLVR
data as open-instruct's ``IFEvalVerifierOld`` does. Each rule is ``f(text, **kwargs) -> bool``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["FUNCTIONS", "check_func_name"]


def _tolerance(n: int) -> int:
    return max(round(n * 0.1), 1)


def _quantified(actual: int, n: int, quantifier: str, around: int) -> bool:
    if quantifier == "at least":
        return actual >= n
    if quantifier == "at most":
        return actual <= n
    if quantifier == "around":
        return abs(actual - n) <= around
    return False


def verify_keywords(text: str, keyword_list: list[str]) -> bool:
    low = text.lower()
    return all(k.lower() in low for k in keyword_list)


def verify_keyword_frequency(text: str, word: str, N: int) -> bool:
    return sum(1 for w in re.findall(r"\b\w+\b", text.lower()) if w == word.lower()) == N


def validate_forbidden_words(text: str, forbidden_words: list[str]) -> bool:
    low = text.lower()
    return not any(w.lower() in low for w in forbidden_words)


def verify_letter_frequency(text: str, letter: str, N: int) -> bool:
    if len(letter) != 1:
        raise ValueError("letter must be a single character")
    return text.count(letter) == N


def validate_response_language(text: str, language: str) -> bool:
    from genlab.ifbench import langid

    try:
        return langid.detect(text) == language
    except langid.DetectionError:
        return False  # langdetect raises here; open-instruct's verifier call would fail


def verify_paragraph_count(text: str, N: int) -> bool:
    cleaned = "\n".join(line.strip() for line in text.splitlines()).strip()
    parts = cleaned.split("* * *")
    return all(p.strip() for p in parts) and len(parts) == N


def validate_word_constraint(text: str, N: int, quantifier: str) -> bool:
    return _quantified(len(text.strip().split()), N, quantifier, _tolerance(N))


def verify_sentence_constraint(text: str, N: int, quantifier: str) -> bool:
    sentences = re.split(r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?|!)\s", text)
    return _quantified(len(sentences), N, quantifier, 1)


def validate_paragraphs(text: str, N: int, first_word: str, i: int) -> bool:
    paragraphs = text.split("\n\n")
    return len(paragraphs) == N and paragraphs[i - 1].strip().startswith(first_word)


def verify_postscript(text: str, postscript_marker: str) -> bool:
    k = text.find(postscript_marker)
    return k >= 0 and len(text[k:].strip()) > len(postscript_marker)


def validate_placeholders(text: str, N: int) -> bool:
    return len(re.findall(r"\[(.*?)\]", text)) >= N


def verify_bullet_points(text: str, N: int) -> bool:
    return sum(1 for line in text.split("\n") if line.strip().startswith(("*", "-"))) == N


def validate_title(text: str) -> bool:
    return bool(re.findall(r"<<(.*?)>>", text))


def validate_choice(text: str, options: list[str]) -> bool:
    return any(str(o) in text for o in options)


def validate_highlighted_sections(text: str, N: int) -> bool:
    return len(re.findall(r"\*(.*?)\*", text)) >= N


def validate_sections(text: str, N: int, section_splitter: str) -> bool:
    sections = text.split(section_splitter)
    if sections and sections[0] == "":
        sections = sections[1:]
    return len(sections) == N


def validate_json_format(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def validate_repeat_prompt(text: str, original_prompt: str) -> bool:
    return text.startswith(original_prompt)


def validate_two_responses(text: str) -> bool:
    if text.count("******") != 1:
        return False
    a, b = text.split("******")
    return a.strip() != b.strip()


def validate_uppercase(text: str) -> bool:
    return text == text.upper()


def validate_lowercase(text: str) -> bool:
    return text == text.lower()


def validate_frequency_capital_words(text: str, N: int, quantifier: str) -> bool:
    return _quantified(len(re.findall(r"\b[A-Z]+\b", text)), N, quantifier, _tolerance(N))


def validate_end(text: str, end_phrase: str) -> bool:
    return text.endswith(end_phrase)


def validate_quotation(text: str) -> bool:
    return text.startswith('"') and text.endswith('"')


def validate_no_commas(text: str) -> bool:
    return "," not in text


FUNCTIONS: dict[str, Callable[..., bool]] = {
    f.__name__: f
    for f in (
        verify_keywords, verify_keyword_frequency, validate_forbidden_words, verify_letter_frequency,
        validate_response_language, verify_paragraph_count, validate_word_constraint, verify_sentence_constraint,
        validate_paragraphs, verify_postscript, validate_placeholders, verify_bullet_points, validate_title,
        validate_choice, validate_highlighted_sections, validate_sections, validate_json_format,
        validate_repeat_prompt, validate_two_responses, validate_uppercase, validate_lowercase,
        validate_frequency_capital_words, validate_end, validate_quotation, validate_no_commas,
    )
}  # fmt: skip


def check_func_name(answer: str, label: dict[str, Any]) -> bool:
    """The verdict of the ``func_name`` rule in ``label`` on ``answer`` (null kwargs dropped). Unknown names and
    kwargs that do not fit the rule raise ValueError."""
    label = dict(label)
    name = label.pop("func_name", None)
    fn = FUNCTIONS.get(name) if isinstance(name, str) else None
    if fn is None:
        raise ValueError(f"unknown func_name {name!r}")
    kwargs = {k: v for k, v in label.items() if v is not None}
    try:
        return bool(fn(answer, **kwargs))
    except TypeError as e:
        raise ValueError(f"{name}: {e}") from None
