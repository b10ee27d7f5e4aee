"""IFBench (allenai/IFBench at db69a6f): the `format:*` constraints (14 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import functools
import json
import os
import re
import string
from collections.abc import Iterable

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import PUNCT, STRIP_CHARS, strip_punctuation
from genlab.ifbench.core import Param, constraint

_BRACKET = re.compile(r"[()\[\]{}]")
_QUOTE = re.compile("[\"']")


@constraint(
    "format:parentheses",
    "brackets nested at least 5 levels deep",
    describe=lambda kw: "Nest brackets — (round, [square, {curly}]) — at least five levels deep somewhere.",
)
def _parentheses(t, kw, fixed):
    return _bracket_nesting(_BRACKET.findall(t))  # (every other character leaves the state as it is)


def _bracket_nesting(chars: Iterable[str]) -> tuple[bool, str]:
    """The reference's walk over the characters: a closed group nested 5 deep?"""
    stack: list[str] = []
    depth = 0
    pairs = {")": "(", "]": "[", "}": "{"}
    for ch in chars:
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


@constraint(
    "format:quotes",
    "quotes nested 3 deep, alternating double and single",
    describe=lambda kw: (
        "Put a quotation inside a quotation inside a quotation (three levels), alternating double and single quotes."
    ),
)
def _quotes(t, kw, fixed):
    # (the stack holds only quotes, so every other character leaves the state as it is)
    return _quote_nesting(_QUOTE.findall(t))


def _quote_nesting(chars: Iterable[str]) -> tuple[bool, str]:
    """The reference's walk over the characters: quotes nested 3 levels, alternating?"""
    stack: list[str] = []
    reached = cur = 0
    for ch in chars:
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


_OPTIONS_BANK = ("yes/no/maybe", "I know or I don't know", "a), b), c), d)")


def _parse_options(options: str) -> tuple[list[str], bool]:
    strict = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    sep = "/" if "/" in options else ("or" if "or" in options else ",")
    return [o.strip() for o in options.split(sep)], strict


@constraint(
    "format:options",
    "the answer is exactly one of given options",
    [Param("options", "str")],
    describe=lambda kw: f"Reply with one of these options only: {kw['options']}. No explanation.",
    sample=lambda r, c: {"options": r.choice(_OPTIONS_BANK)},
)
def _options(t, kw, fixed):
    opts, strict = _parse_options(kw["options"])
    if strict:
        ok = t in opts
        return ok, "exactly one option" if ok else f"response is not exactly one of {opts}"
    v = t.strip(STRIP_CHARS).lower()
    ok = any(o.strip(STRIP_CHARS).lower() == v for o in opts)
    return ok, "one of the options" if ok else f"response is not one of {opts}"


@constraint(
    "format:newline",
    "one word per line",
    describe=lambda kw: "Put every word on its own line.",
)
def _newline(t, kw, fixed):
    v = strip_punctuation(t)
    lines = [ln for ln in v.strip().split("\n") if ln != ""]
    nw = len(v.strip().split())
    return len(lines) == nw, f"{len(lines)} non-empty lines for {nw} words"


@functools.cache
def _emoji_chars() -> frozenset[str]:
    """Single code points that ``emoji.is_emoji`` accepts (the checker only asks about single characters).
    Importing ``emoji`` builds large tables (~0.1 s), so the set is cached per installed emoji version."""
    from genlab.ifbench.cache import cache_dir
    from genlab.ifbench.nlp import dist_version

    path = cache_dir() / f"emoji-{dist_version('emoji')}-single.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(cached, list) and all(isinstance(c, str) for c in cached):
            return frozenset(cached)
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


@constraint(
    "format:emoji",
    "every sentence ends with an emoji",
    describe=lambda kw: "End every sentence with an emoji.",
)
def _emoji(t, kw, fixed):
    sents = nlp.sent_tokenize(t)
    for i, s in enumerate(sents):
        st = strip_punctuation(s).strip()
        if not st:
            return False, f"sentence {i + 1} is only punctuation"
        last = st[-1]
        second = st[-2] if len(st) > 1 else st[-1]
        if not _is_emoji(last) and not _is_emoji(second):
            if i < len(sents) - 1:
                nxt = strip_punctuation(sents[i + 1]).strip()
                if not nxt or not _is_emoji(nxt[0]):
                    return False, f"sentence {i + 1} does not end with an emoji: {s[-30:]!r}"
            else:
                return False, f"last sentence does not end with an emoji: {s[-30:]!r}"
    return True, f"all {len(sents)} sentences end with an emoji"


def _indent(s: str) -> int:
    return len(s) - len(s.lstrip(" "))


@constraint(
    "format:line_indent",
    "every line indented more than the previous (staircase)",
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


@constraint(
    "format:quote_unquote",
    "every quotation is followed by unquoted explanation",
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


@constraint(
    "format:list",
    "a list using a given separator instead of bullets",
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


@constraint(
    "format:thesis",
    "an italic HTML thesis (<i>/<em>) followed by text",
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


@constraint(
    "format:sub-bullets",
    "* bullets, each with at least one - sub-bullet",
    describe=lambda kw: "Use bullet points marked with *, and give every bullet at least one sub-bullet marked with -.",
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


@constraint(
    "format:no_bullets_bullets",
    "at least two sentences, then at least two * bullets",
    describe=lambda kw: (
        "Write at least two sentences ending in a period, followed by at least two bullet points marked with *."
    ),
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


@constraint(
    "format:title_case",
    "every word capitalised (title case)",
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


@constraint(
    "format:output_template",
    "uses the My Answer / My Conclusion / Future Outlook template",
    describe=lambda kw: (
        "Use exactly this template: My Answer: [answer] My Conclusion: [conclusion] Future Outlook: [outlook]"
    ),
)
def _template(t, kw, fixed):
    miss = [x for x in ("My Answer:", "My Conclusion:", "Future Outlook:") if x not in t]
    return not miss, "template labels present" if not miss else "missing " + ", ".join(miss)


@constraint(
    "format:no_whitespace",
    "no whitespace at all",
    describe=lambda kw: "Do not use any whitespace (no spaces, tabs or line breaks).",
)
def _no_ws(t, kw, fixed):
    n = sum(1 for c in t if c.isspace())
    return n == 0, "no whitespace" if n == 0 else f"{n} whitespace characters"
