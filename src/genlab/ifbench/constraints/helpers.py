"""Helpers shared by several constraint modules (public: a new constraint may use them).

Relations ("less than" / "at least"), the reference's regex keyword search, punctuation stripping,
language detection with langdetect's semantics, and samplers for kwargs used by more than one id.
"""

from __future__ import annotations

import re
import string

from genlab.ifbench import langid

REL = ("less than", "at least")


def rel_ok(n: int, rel: str, k: int) -> bool:
    return n < k if rel == "less than" else n >= k


def rel_text(n: int, rel: str, k: int, what: str) -> str:
    return f"{what} {n} (needs {rel} {k})"


def find_pattern(pattern: str, text: str, flags: int = re.IGNORECASE) -> list[str]:
    """re.findall with the reference's unescaped pattern; fall back to a literal match if it is invalid."""
    try:
        return re.findall(pattern, text, flags)
    except re.error:
        return re.findall(re.escape(pattern), text, flags)


def search_pattern(pattern: str, text: str, flags: int = re.IGNORECASE) -> bool:
    """``bool(find_pattern(pattern, text, flags))``, stopping at the first match (a findall list is non-empty
    exactly when search finds a match, an empty match included)."""
    try:
        return re.search(pattern, text, flags) is not None
    except re.error:
        return re.search(re.escape(pattern), text, flags) is not None


def sample_relation(r):
    return r.choice(REL)


def sample_letter_kwargs(r):
    return {
        "letter": r.choice("abcdefghijklmnoprstuwy"),
        "let_frequency": r.randint(1, 12),
        "let_relation": sample_relation(r),
    }


def detect_language(t: str) -> str | None:
    try:
        return langid.detect(t)
    except langid.DetectionError:
        return None


PUNCT = string.punctuation


STRIP_CHARS = PUNCT + " "


NOPUNCT_TABLE = str.maketrans("", "", PUNCT)


_PUNCT_RE = re.compile("[" + re.escape(PUNCT) + "]")


def strip_punctuation(s: str) -> str:
    """``s`` without the characters of ``string.punctuation``. str.translate is fast only on ASCII text (for any
    other character it looks the code point up and catches a KeyError), so other text goes through a regex."""
    return s.translate(NOPUNCT_TABLE) if s.isascii() else _PUNCT_RE.sub("", s)


def whole_word(keyword: str) -> str:
    return r"(?<!\w)" + re.escape(keyword) + r"(?!\w)"


def letter_frequency(t, kw, fixed):
    """How often ``kw["letter"]`` occurs, case-insensitively, against ``let_relation`` ``let_frequency``."""
    letter = kw["letter"].strip().lower()
    # Counter(t.lower())[letter]: the count of one character; a "letter" that is not one character counts 0
    n = t.lower().count(letter) if len(letter) == 1 else 0
    return rel_ok(n, kw["let_relation"], kw["let_frequency"]), rel_text(
        n, kw["let_relation"], kw["let_frequency"], f"letter '{letter}' occurs"
    )
