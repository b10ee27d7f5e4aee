"""Text primitives the checkers need: sentence and word tokenisation, stop words, POS of the first token.

Two data paths, chosen once per process:

* **real** — the genuine NLTK resources are found on the standard NLTK search path (``NLTK_DATA``,
  ``~/nltk_data``, ``<prefix>/nltk_data``, ``/usr/share/nltk_data``, ...): the English Punkt parameters
  (``tokenizers/punkt_tab/english``), the English stop-word list (``corpora/stopwords/english``) and the
  averaged-perceptron tagger (``taggers/averaged_perceptron_tagger_eng``). Verdicts then equal the reference's.
* **offline** — nothing is installed: Punkt runs with a small abbreviation list written for this package
  (no collocations, no orthographic statistics), the stop-word list ships as package data, and the POS of
  the first word comes from a small rule set (see :func:`first_token_is_verb`). ``docs/ifbench.md`` gives
  the measured disagreement per constraint.

The tokenisers themselves are always NLTK's own code (``nltk.tokenize.punkt`` and
``nltk.tokenize.destructive``). ``import nltk`` costs ~2.5 s (it pulls in scipy), so we load only those two
modules, without running ``nltk/__init__``; if that is not possible we fall back to a normal import. The
tagger's inference (a dot product over 14 features for one token) is re-implemented here so that
``nltk.tag`` (which imports scipy) is never needed. Nothing is ever downloaded.
"""

from __future__ import annotations

import abc
import bisect
import functools
import importlib.util
import itertools
import json
import operator
import os
import re
import string
import sys
import types
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from genlab.ifbench.cache import build_in_background, cache_dir
from genlab.ifbench.core import MissingDataError

__all__ = [
    "NLTKDataMissing",
    "backend_info",
    "count_words",
    "data_mode",
    "first_pos_tag",
    "first_token_is_verb",
    "install_data",
    "missing_resources",
    "nltk_search_path",
    "note_substrings",
    "provenance",
    "regex_split_sentences",
    "require_real_data",
    "reset",
    "sent_tokenize",
    "stopwords",
    "word_runs",
    "word_tokenize",
]

_PKG_DATA = Path(__file__).resolve().parent / "data"
RESOURCES = {  # NLTK package name -> the path the checkers read, relative to an nltk_data folder
    "punkt_tab": "tokenizers/punkt_tab/english",
    "stopwords": "corpora/stopwords/english",
    "averaged_perceptron_tagger_eng": "taggers/averaged_perceptron_tagger_eng",
}
OFFLINE_WARNING = (
    "warning: NLTK data not found (punkt_tab, stopwords, averaged_perceptron_tagger_eng); using genlab's offline "
    "rules, which can disagree with the reference on sentence splits and words:start_verb. Run `genlab ifbench "
    "setup` (or pass --require-nltk-data to make this an error)."
)


class NLTKDataMissing(MissingDataError):
    """The real NLTK data is required (:func:`require_real_data`) but not installed."""

# ---------------------------------------------------------------------------------------------------------
# NLTK data discovery


def nltk_search_path() -> list[Path]:
    """The directories NLTK itself searches for data, in NLTK's order (``NLTK_DATA`` first)."""
    paths: list[Path] = []
    env = os.environ.get("NLTK_DATA", "")
    paths += [Path(p) for p in env.split(os.pathsep) if p]
    nltk_mod = sys.modules.get("nltk")
    data_mod = getattr(nltk_mod, "data", None)
    for p in getattr(data_mod, "path", []) or []:
        if isinstance(p, str):
            paths.append(Path(p))
    home = Path.home()
    paths += [
        home / "nltk_data",
        Path(sys.prefix) / "nltk_data",
        Path(sys.prefix) / "share" / "nltk_data",
        Path(sys.prefix) / "lib" / "nltk_data",
        Path("/usr/share/nltk_data"),
        Path("/usr/local/share/nltk_data"),
        Path("/usr/lib/nltk_data"),
        Path("/usr/local/lib/nltk_data"),
    ]
    seen: set[Path] = set()
    out = []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def _find_resource(rel: str) -> Path | None:
    for root in nltk_search_path():
        cand = root / rel
        if cand.exists():
            return cand
    return None


# ---------------------------------------------------------------------------------------------------------
# Light loading of NLTK's tokenizer modules


@functools.cache
def _nltk_modules() -> tuple[Any, Any]:
    """Return (nltk.tokenize.punkt, nltk.tokenize.destructive) without paying for ``nltk/__init__``."""
    full = sys.modules.get("nltk")
    if full is not None and hasattr(full, "word_tokenize"):
        from nltk.tokenize import destructive, punkt

        return punkt, destructive
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nltk is not installed; `pip install nltk`")
    root = spec.submodule_search_locations[0]
    before = set(sys.modules)
    stubs = {
        "nltk": root,
        "nltk.tokenize": os.path.join(root, "tokenize"),
    }
    try:
        for name, path in stubs.items():
            mod = types.ModuleType(name)
            mod.__path__ = [path]
            sys.modules[name] = mod
        import nltk.tokenize.destructive as destructive
        import nltk.tokenize.punkt as punkt
    except Exception:  # pragma: no cover - depends on NLTK internals
        for name in set(sys.modules) - before:
            sys.modules.pop(name, None)
        import nltk  # noqa: F401  (slow path)
        from nltk.tokenize import destructive, punkt

        return punkt, destructive
    # Forget the partial package so that a later `import nltk` elsewhere runs NLTK's real __init__.
    for name in set(sys.modules) - before:
        if name == "nltk" or name.startswith("nltk."):
            sys.modules.pop(name, None)
    return punkt, destructive


# Our own small abbreviation list for the offline Punkt path (lower case, without the final period). Single letters
# are not in it: Punkt handles "J. Smith" as an initial by itself, and listing letters as abbreviations makes
# "B. C?" one sentence where the trained model splits it (measured; see _offline_ortho_context).
_OFFLINE_ABBREVS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "cf", "al", "inc",
    "ltd", "corp", "dept", "univ", "fig", "figs", "eq", "vol", "vols", "pp", "approx", "capt", "sgt", "lt",
    "gov", "sen", "u.s", "u.k", "u.n", "a.m", "p.m", "jan", "feb", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "ave", "blvd", "calif", "ph.d", "b.a", "m.a", "d.c", "n.y", "a.d", "b.c",
}


class _State:
    """Loaded resources (one per process)."""

    def __init__(self) -> None:
        self.mode: str | None = None  # "real" | "offline"
        self.mode_auto = True  # decided from the search path (not forced by reset(mode=...), as tests do)
        self.punkt_dir: Path | None = None
        self.sent_tok: Any = None
        self.word_tok: Any = None
        self.stop: frozenset[str] | None = None
        self.stop_source = ""
        self.tagger: dict | None = None
        self.tagger_source = ""
        self.warned = False
        self.provenance: dict[str, Any] | None = None


_S = _State()
def _required_by_env() -> bool:
    return os.environ.get("GENLAB_REQUIRE_NLTK_DATA", "") not in ("", "0")


_REQUIRE = {"real": _required_by_env()}


def require_real_data(on: bool = True) -> None:
    """Make the offline fallback an error (:class:`NLTKDataMissing`) instead of a warning, for pipelines that must
    reproduce the reference exactly. Also set by ``GENLAB_REQUIRE_NLTK_DATA=1`` and ``--require-nltk-data``."""
    _REQUIRE["real"] = on


def missing_resources() -> list[str]:
    """The NLTK packages (of :data:`RESOURCES`) not found on NLTK's search path."""
    return [name for name, rel in RESOURCES.items() if _find_resource(rel) is None]


def _offline_used(what: str) -> None:
    """Called when an offline rule is about to decide a verdict: one warning line per process, or an error."""
    if _REQUIRE["real"]:
        raise NLTKDataMissing(f"{what} needs the NLTK data ({', '.join(missing_resources()) or 'punkt_tab'}); "
                              "install it with `genlab ifbench setup`")
    if not _S.warned and _S.mode_auto:
        _S.warned = True
        print(OFFLINE_WARNING, file=sys.stderr)


def reset(mode: str | None = None) -> None:
    """Drop loaded resources and a ``require_real_data`` set in this process (back to the environment's
    ``GENLAB_REQUIRE_NLTK_DATA``); ``mode`` forces "real" or "offline" (None: auto). Used by tests and benchmarks."""
    global _S
    _REQUIRE["real"] = _required_by_env()
    _S = _State()
    _S.mode = mode
    _S.mode_auto = mode is None
    clear_caches()


def clear_caches() -> None:
    """Forget every per-text result (tokenisations, Punkt decisions); loaded data stays. For benchmarks."""
    _cached_sent.cache_clear()
    _SPANS.clear()
    _PARENT.clear()
    _cached_words.cache_clear()
    _sentence_words.cache_clear()
    _cached_regex_split.cache_clear()
    _first_tag.cache_clear()
    if _S.sent_tok is not None and hasattr(_S.sent_tok.text_contains_sentbreak, "cache_clear"):
        _S.sent_tok.text_contains_sentbreak.cache_clear()


def data_mode() -> str:
    """"real" when the NLTK Punkt data is found on the search path, else "offline"."""
    if _S.mode is None:
        _S.punkt_dir = _find_resource("tokenizers/punkt_tab/english")
        _S.mode = "real" if _S.punkt_dir is not None else "offline"
    return _S.mode


def _load_params(punkt: Any) -> Any:
    params = punkt.PunktParameters()
    if data_mode() == "real":
        d = _S.punkt_dir or _find_resource("tokenizers/punkt_tab/english")
        if d is None:
            raise LookupError("NLTK punkt_tab/english not found on the NLTK search path")

        def lines(name: str) -> list[str]:
            with open(d / name, encoding="utf-8") as f:
                return [ln.rstrip("\n") for ln in f]

        params.abbrev_types = set(lines("abbrev_types.txt"))
        params.sent_starters = set(lines("sent_starters.txt"))
        params.collocations = {tuple(ln.split("\t")) for ln in lines("collocations.tab")}
        octx: defaultdict[str, int] = defaultdict(int)
        for ln in lines("ortho_context.tab"):
            a, b = ln.split("\t")
            octx[a] = int(b)
        params.ortho_context = octx
    else:
        _offline_used("sentence splitting")
        params.abbrev_types = set(_OFFLINE_ABBREVS)
        params.ortho_context = _offline_ortho_context(punkt)
    return params


def _offline_ortho_context(punkt: Any) -> defaultdict[str, int]:
    """A stand-in for Punkt's orthographic statistics (how often a word was seen lowercase inside a sentence):
    the English stop words and the single letters, marked as seen lowercase mid-sentence. Without any statistics
    Punkt reads every "X. Word" after an initial or an abbreviation as no sentence break; with this, a capitalised
    common word there ("A. The ...", "B. Why ...") starts a sentence, as the trained model decides. Lowercase
    continuations are unaffected (their rule needs no statistics). Our own rule; its measured effect is in
    docs/ifbench.md."""
    flag = getattr(punkt, "_ORTHO_MID_LC", 1 << 5)
    octx: defaultdict[str, int] = defaultdict(int)
    words = (_PKG_DATA / "stopwords_english.txt").read_text(encoding="utf-8").split()
    letters = "abcdefghijklmnopqrstuvwxyz"
    for w in [*words, *letters, *(c + "." for c in letters)]:  # an abbreviation keeps its period in its type
        octx[w] |= flag
    return octx


def _plain(rx: Any, flags: int = 0) -> re.Pattern:
    """Recompile one of NLTK's patterns with the stdlib engine.

    NLTK >= 3.10 routes every pattern through ``nltk.redos`` (the third-party ``regex`` engine plus a
    wall-clock timeout per match), which makes tokenisation ~5x slower; NLTK 3.9 (the version the IFBench
    reference locks) used ``re``. The patterns are NLTK's own, unchanged."""
    return re.compile(getattr(rx, "pattern", rx), flags)


@functools.cache
def _fast_classes() -> tuple[Any, Any]:
    punkt, _ = _nltk_modules()

    class LangVars(punkt.PunktLanguageVars):
        re_boundary_realignment = _plain(punkt.PunktLanguageVars.re_boundary_realignment, re.MULTILINE)

        def __init__(self) -> None:
            base = punkt.PunktLanguageVars()
            self._re_period_context = _plain(base.period_context_re(), re.UNICODE | re.VERBOSE)
            self._re_word_tokenizer = _plain(base._word_tokenizer_re(), re.UNICODE | re.VERBOSE)

    non_punct = re.compile(r"[^\W\d]", re.UNICODE)

    class Token(punkt.PunktToken):
        __slots__ = ()
        _RE_ELLIPSIS = _plain(punkt.PunktToken._RE_ELLIPSIS)
        _RE_NUMERIC = _plain(punkt.PunktToken._RE_NUMERIC)
        _RE_INITIAL = _plain(punkt.PunktToken._RE_INITIAL, re.UNICODE)
        _RE_ALPHA = _plain(punkt.PunktToken._RE_ALPHA, re.UNICODE)

        @property
        def is_non_punct(self):  # type: ignore[override]
            return non_punct.search(self.type)

    return LangVars, Token


def _sent_tokenizer() -> Any:
    if _S.sent_tok is None:
        punkt, _ = _nltk_modules()
        try:
            lang_vars, token_cls = _fast_classes()
            _S.sent_tok = punkt.PunktSentenceTokenizer(
                _load_params(punkt), lang_vars=lang_vars(), token_cls=token_cls
            )
        except Exception:  # pragma: no cover - NLTK internals changed: use it as is
            _S.sent_tok = punkt.PunktSentenceTokenizer(_load_params(punkt))
        # Punkt decides every candidate break from its short context ("word. Next") alone, with fixed parameters:
        # memoise that decision (the loose variants of a response repeat nearly all of its contexts)
        _S.sent_tok.text_contains_sentbreak = functools.lru_cache(maxsize=65536)(_sentbreak_decider(_S.sent_tok))
    return _S.sent_tok


def _sentbreak_decider(tok: Any) -> Any:
    """``tok.text_contains_sentbreak``, with the commonest contexts decided without NLTK's token objects.

    The context is a plain ASCII word, a candidate, whitespace and a next token ("river. The", "why? The"). Punkt's
    word tokenizer then cuts it into the word, the candidate (a "?" or "!" is a token of its own) or the word with
    its period ("river.", as no multi-character punctuation or word-ending mark can occur inside it), and the next
    token(s). A "?" or "!" token is a break; "river." is one unless "river" is a known abbreviation, and Punkt's
    second pass can only undo it through a collocation starting with "river" (initials, numbers and ellipses are
    excluded by the letters and the length). A break before another token means True. Any other context goes to
    NLTK. (Tests compare both on every context of the official prompts and on built ones.)"""
    nltk_decision = type(tok).text_contains_sentbreak.__get__(tok)
    params = tok._params
    abbrevs = params.abbrev_types
    colloc_first = frozenset(a for a, _ in params.collocations)

    def decide(context: str) -> bool:
        head = context.split(None, 1)
        if len(head) == 2:
            word, end = head[0][:-1], head[0][-1]
            if word.isascii() and word.isalpha():
                if end in "?!":
                    return True
                if end == "." and len(word) > 1 and (typ := word.lower()) not in abbrevs and typ not in colloc_first:
                    return True
        return nltk_decision(context)

    return decide


def _word_tokenizer() -> Callable[[str], list[str]]:
    """``NLTKWordTokenizer().tokenize`` (NLTK's improved Treebank tokenizer): its own rules, in the order its
    ``tokenize`` applies them, recompiled with ``re``, and each substitution made only where its pattern occurs
    (``re.sub`` with a template costs a Python-level call even when nothing matches; most rules match nothing in
    a given sentence)."""
    if _S.word_tok is None:
        _, destructive = _nltk_modules()
        tok = destructive.NLTKWordTokenizer()
        try:
            before = [*tok.STARTING_QUOTES, *tok.PUNCTUATION, tok.PARENS_BRACKETS, tok.DOUBLE_DASHES]
            after = [*tok.ENDING_QUOTES, *((rx, r" \1 \2 ") for rx in (*tok.CONTRACTIONS2, *tok.CONTRACTIONS3))]
            before = [(_plain(rx), sub) for rx, sub in before]
            after = [(_plain(rx), sub) for rx, sub in after]
        except Exception:  # pragma: no cover - NLTK internals changed: its own method
            _S.word_tok = tok.tokenize
            return _S.word_tok

        def tokenize(text: str) -> list[str]:
            for rx, sub in before:
                if rx.search(text):
                    text = rx.sub(sub, text)
            text = " " + text + " "
            for rx, sub in after:
                if rx.search(text):
                    text = rx.sub(sub, text)
            return text.split()

        _S.word_tok = tokenize
    return _S.word_tok


@functools.lru_cache(maxsize=8192)
def _cached_sent(text: str) -> tuple[str, ...]:
    tok = _sent_tokenizer()
    try:
        base, lo, spans = _spans_from_parent(tok, text) or (text, 0, _punkt_spans(tok, text))
        sentences = _realigned(tok, base, spans, lo + len(text))
    except AttributeError:  # pragma: no cover - NLTK internals changed: its own method
        return tuple(tok.tokenize(text))
    if len(_SPANS) > 50_000:
        _SPANS.clear()
    _SPANS[text] = [(a - lo, b - lo) for a, b in spans] if lo else spans
    return tuple(sentences)


_SPANS: dict[str, list[tuple[int, int]]] = {}  # text -> its Punkt spans before realignment (see _cached_sent)
_PARENT: dict[str, str] = {}  # text -> a text it occurs in (note_substrings)


def note_substrings(slices: Mapping[str, str]) -> None:
    """Say of each ``text: parent`` that ``text`` occurs in ``parent``, as the loose variants that drop a first or
    last line do: once ``parent`` is split into sentences, splitting ``text`` reuses that split where it provably
    gives the same sentences (the same result, less work)."""
    if len(_PARENT) > 50_000:
        _PARENT.clear()
    _PARENT.update(slices)


def _punkt_sentences(tok: Any, text: str) -> list[str]:
    """``tok.tokenize(text)`` for NLTK's ``PunktSentenceTokenizer`` (tests compare the two on every official prompt
    and on random text): :func:`_punkt_spans`, then :func:`_realigned`."""
    return _realigned(tok, text, _punkt_spans(tok, text), len(text))


def _punkt_spans(tok: Any, text: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """Punkt's sentence spans of ``text[lo:hi]`` (in ``text``'s coordinates), before realignment: find each
    candidate break (a sentence-ending character and what follows it) and ask Punkt whether its context
    ("word. Next") is a break. NLTK does this with nested generators that copy the text before every candidate;
    this is the hot path of sentence splitting, so it is written out once here. The pattern has no look-behind, so
    matching within ``lo:hi`` is matching on the slice."""
    hi = len(text) if hi is None else hi
    is_break = tok.text_contains_sentbreak
    spans: list[tuple[int, int]] = []
    last_break = lo
    prev: Any = None  # the previous candidate, and the start and end of the word before it
    prev_start = prev_end = lo
    # Punkt's whitespace here is string.whitespace; without \t \r \v \f only " " and "\n" need looking for
    odd_space = "\t" in text or "\r" in text or "\x0b" in text or "\x0c" in text
    rfind = text.rfind
    # (the decision for a candidate is written out twice below rather than called: this loop is the hot path)
    for m in tok._lang_vars.period_context_re().finditer(text, lo, hi):
        # the word before the candidate starts after the last whitespace since the previous word ended; Punkt
        # reads "no whitespace" and "whitespace right at that end" alike, and then keeps the previous word's start
        m_start = m.start()
        if odd_space:
            i = m_start - 1
            while i >= prev_end and text[i] not in string.whitespace:
                i -= 1
        else:
            i = rfind(" ", prev_end, m_start)
            if (j := rfind("\n", prev_end, m_start)) > i:
                i = j
        start = i + 1 if i > prev_end else prev_start
        # the context is word + candidate (one character) + what follows it: one slice of the text
        if prev is not None and prev_end <= start and is_break(text[prev_start : prev.end("after_tok")]):
            spans.append((last_break, prev_end + 1))
            nxt = prev.start("next_tok")
            last_break = nxt if nxt >= 0 else prev_end + 1
        prev, prev_start, prev_end = m, start, m_start
    if prev is not None and is_break(text[prev_start : prev.end("after_tok")]):
        spans.append((last_break, prev_end + 1))
        nxt = prev.start("next_tok")
        last_break = nxt if nxt >= 0 else prev_end + 1
    spans.append((last_break, lo + len(text[lo:hi].rstrip())))
    return spans


def _spans_from_parent(tok: Any, text: str) -> tuple[str, int, list[tuple[int, int]]] | None:
    """``(parent, lo, spans)``: the spans of ``text`` in its parent's coordinates, reusing the parent's split, if
    ``text`` was noted as occurring in a parent (:func:`note_substrings`; ``lo``: its first occurrence there), the
    parent is split already and the cut is clean; else None.

    Why the spans agree. Let the text start at ``lo`` after Punkt whitespace (or at 0) with a character that is not
    whitespace, and end at ``hi`` before whitespace (or at the end). Its candidates are then the parent's between
    ``lo`` and ``hi`` whose look-ahead ends by ``hi`` (a look-ahead that crosses ``hi`` needs a token after the
    whitespace there), every one's word starts where it does in the parent, and so every decision is the parent's
    except the last candidate's (it has no successor): the parent's spans hold from ``lo`` up to a sentence start
    ``r`` that follows Punkt whitespace, and from there the loop is run again on ``r:hi`` (a clean cut of the
    same kind). The sentence that ``lo`` falls into begins at ``lo``."""
    parent = _PARENT.get(text)
    pspans = None if parent is None else _SPANS.get(parent)
    if pspans is None or not text:
        return None
    lo = parent.find(text)
    if lo < 0:
        return None
    hi, ws = lo + len(text), string.whitespace
    if not (hi == len(parent) or parent[hi].isspace()):
        return None
    if lo and (lo < 2 or parent[lo - 1] not in ws or text[0] in ws):
        return None
    first = bisect.bisect_left(pspans, lo, key=operator.itemgetter(0))  # the first parent sentence from lo on
    for j in range(len(pspans) - 1, first - 1, -1):  # the last one starting inside, after Punkt whitespace
        r = pspans[j][0]
        if r <= lo:
            return None
        if r < hi and r >= 2 and parent[r - 1] in ws:
            head = [(lo, pspans[first - 1][1])] if pspans[first][0] > lo else []
            return parent, lo, head + pspans[first:j] + _punkt_spans(tok, parent, r, hi)
    return None


def _realigned(tok: Any, text: str, spans: list[tuple[int, int]], n: int) -> list[str]:
    """The sentences of the spans (of a text that ends at ``n``), with closing quotes and brackets after a break
    moved into the sentence before it, as Punkt's ``_realign_boundaries``."""
    realign_rx = tok._lang_vars.re_boundary_realignment
    closer = _closers(realign_rx)
    out = []
    shift = 0
    last = len(spans) - 1
    for j, (a, b) in enumerate(spans):
        a += shift
        shift = 0
        if j < last:
            c, d = spans[j + 1]
            # the realignment pattern starts with a closing quote or bracket: test that character first
            if c < d and closer[text[c]] and (m := realign_rx.match(text, c, d)):  # as on text[c:d]: $ at d
                out.append(text[a : c + len(m.group(0).rstrip())])
                shift = m.end() - c
                continue
        if a < b and a < n:
            out.append(text[a:b])
    return out


class _Closers(dict):  # type: ignore[type-arg]
    """character -> whether Punkt's boundary-realignment pattern (one or more closing quotes or brackets, then
    whitespace or the end) can start with it: the pattern matches that character followed by a space."""

    def __init__(self, realign_rx: re.Pattern) -> None:
        super().__init__()
        self.rx = realign_rx

    def __missing__(self, ch: str) -> bool:
        self[ch] = ok = self.rx.match(ch + " ") is not None
        return ok


@functools.cache
def _closers(realign_rx: re.Pattern) -> _Closers:
    return _Closers(realign_rx)


@functools.lru_cache(maxsize=65536)
def _sentence_words(sentence: str) -> tuple[str, ...]:
    return tuple(_word_tokenizer()(sentence))


@functools.lru_cache(maxsize=8192)
def _cached_words(text: str) -> tuple[str, ...]:
    return tuple(itertools.chain.from_iterable(map(_sentence_words, _cached_sent(text))))


def sent_tokenize(text: str) -> list[str]:
    """``nltk.sent_tokenize(text)`` (English Punkt); memoised per text."""
    return list(_cached_sent(text))


def first_words(text: str, n: int) -> list[str]:
    """``word_tokenize(text)[:n]``, tokenising only as many sentences as needed."""
    out: list[str] = []
    for sent in _cached_sent(text):
        out += _sentence_words(sent)
        if len(out) >= n:
            break
    return out[:n]


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Punkt sentences, then NLTK's improved Treebank tokenizer; memoised."""
    return list(_cached_words(text))


_WORD_RE = re.compile(r"\w+")
# every ASCII character that is not a word character ([A-Za-z0-9_]) becomes a space
_ASCII_NONWORD_TO_SPACE = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "_")})


def word_runs(text: str) -> list[str]:
    """``re.findall(r"\\w+", text)``. For ASCII text, ``\\w`` is exactly [A-Za-z0-9_]: mapping every other character
    to a space and splitting on whitespace gives the same runs, about five times faster than the regex."""
    if text.isascii():
        return text.translate(_ASCII_NONWORD_TO_SPACE).split()
    return _WORD_RE.findall(text)


# every ASCII word character becomes "a", every other ASCII character a space
_ASCII_WORD_MASK = str.maketrans({c: "a" if c.isalnum() or c == "_" else " " for c in map(chr, range(128))})


def count_words(text: str) -> int:
    """Number of ``\\w+`` tokens (``nltk.RegexpTokenizer(r"\\w+")``), as IFEval/IFBench count words. On ASCII text
    a run starts at each word character that begins the text or follows a non-word one: after masking, " a"."""
    if text.isascii():
        mask = text.translate(_ASCII_WORD_MASK)
        return mask.count(" a") + mask.startswith("a")
    return len(_WORD_RE.findall(text))


def stopwords() -> frozenset[str]:
    """The English stop-word list: NLTK's file when installed, else the copy shipped as package data."""
    if _S.stop is None:
        p = _find_resource("corpora/stopwords/english") if data_mode() == "real" else None
        if p is None:
            _offline_used("the stop-word list")
            p = _PKG_DATA / "stopwords_english.txt"
            _S.stop_source = "package"
        else:
            _S.stop_source = str(p)
        with open(p, encoding="utf-8") as f:
            _S.stop = frozenset(ln.strip() for ln in f.read().splitlines() if ln.strip())
    return _S.stop


# ---------------------------------------------------------------------------------------------------------
# IFEval's regex sentence splitter (used by the IFTrain checkers of open-instruct IFEvalG)

_ALPHA = "([A-Za-z])"
_PREFIXES = "(Mr|St|Mrs|Ms|Dr)[.]"
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|"
    r"This\s|Wherever)"
)
_ACRONYMS = "([A-Z][.][A-Z][.](?:[A-Z][.])?)"
_WEBSITES = "[.](com|net|org|io|gov|edu|me)"
_DIGITS = "([0-9])"
_RX = [
    (re.compile(_PREFIXES), "\\1<prd>"),
    (re.compile(_WEBSITES), "<prd>\\1"),
    (re.compile(_DIGITS + "[.]" + _DIGITS), "\\1<prd>\\2"),
]
_RX_MULTI = re.compile(r"\.{2,}")
_RX2 = [
    (re.compile(r"\s" + _ALPHA + "[.] "), " \\1<prd> "),
    (re.compile(_ACRONYMS + " " + _STARTERS), "\\1<stop> \\2"),
    (re.compile(_ALPHA + "[.]" + _ALPHA + "[.]" + _ALPHA + "[.]"), "\\1<prd>\\2<prd>\\3<prd>"),
    (re.compile(_ALPHA + "[.]" + _ALPHA + "[.]"), "\\1<prd>\\2<prd>"),
    (re.compile(" " + _SUFFIXES + "[.] " + _STARTERS), " \\1<stop> \\2"),
    (re.compile(" " + _SUFFIXES + "[.]"), " \\1<prd>"),
    (re.compile(" " + _ALPHA + "[.]"), " \\1<prd>"),
]


@functools.lru_cache(maxsize=8192)
def _cached_regex_split(text: str) -> tuple[str, ...]:
    t = " " + text + "  "
    t = t.replace("\n", " ")
    for rx, rep in _RX:
        t = rx.sub(rep, t)
    t = _RX_MULTI.sub(lambda m: "<prd>" * len(m.group(0)) + "<stop>", t)
    if "Ph.D" in t:
        t = t.replace("Ph.D.", "Ph<prd>D<prd>")
    for rx, rep in _RX2:
        t = rx.sub(rep, t)
    if "”" in t:
        t = t.replace(".”", "”.")
    if '"' in t:
        t = t.replace('."', '".')
    if "!" in t:
        t = t.replace('!"', '"!')
    if "?" in t:
        t = t.replace('?"', '"?')
    t = t.replace(".", ".<stop>").replace("?", "?<stop>").replace("!", "!<stop>").replace("<prd>", ".")
    sents = [s.strip() for s in t.split("<stop>")]
    if sents and not sents[-1]:
        sents = sents[:-1]
    return tuple(sents)


def regex_split_sentences(text: str) -> list[str]:
    """IFEval's rule-based sentence splitter (``instructions_util.split_into_sentences`` in IFEval/IFEvalG)."""
    return list(_cached_regex_split(text))


# ---------------------------------------------------------------------------------------------------------
# First-token POS (words:start_verb)

_START = ("-START-", "-START2-")
_END = ("-END-", "-END2-")


def _tagger_db(path: Path) -> Path:
    import hashlib

    st = path.stat()
    sig = hashlib.sha1(f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return cache_dir() / f"tagger-{sig}.sqlite"


def _build_tagger_db(db: Path, path: str | Path) -> None:
    """Copy the tagger's weights JSON into an SQLite table (feature -> JSON of {label: weight}), atomically."""
    import sqlite3

    with open(path, encoding="utf-8") as f:
        weights = json.load(f)
    db.parent.mkdir(parents=True, exist_ok=True)
    tmp = db.with_suffix(f".tmp{os.getpid()}")
    con = sqlite3.connect(tmp)
    con.execute("CREATE TABLE w (f TEXT PRIMARY KEY, v TEXT)")
    con.executemany("INSERT INTO w VALUES (?, ?)", ((k, json.dumps(v)) for k, v in weights.items()))
    con.commit()
    con.close()
    os.replace(tmp, db)


def _tagger_weights(path: Path) -> Any:
    """The tagger's feature -> {label: weight} table. The JSON file is 5.6 MB (~0.2 s to parse) and a check
    needs at most 14 features, so it is copied once into an SQLite file in the genlab cache (by a background
    process, :mod:`genlab.ifbench.cache`) and read lazily; until then, and when the cache cannot be written, the
    JSON file is indexed without parsing it (:class:`_IndexedJsonWeights`, ~0.07 s), or parsed if its layout is
    not the one expected."""
    try:
        db = _tagger_db(path)
        if db.exists():
            return _LazyWeights(db)
        build_in_background(_build_tagger_db, db, str(path))
        if db.exists():  # built inline (GENLAB_CACHE_BUILD=inline)
            return _LazyWeights(db)
    except OSError:
        pass
    try:
        return _IndexedJsonWeights(path)
    except ValueError:
        with open(path, encoding="utf-8") as f:
            return json.load(f)


class _MemoWeights(abc.ABC):
    """dict-like read access (``in``, ``[]``) to the tagger weights, each feature looked up once."""

    def __init__(self) -> None:
        self.memo: dict[str, dict | None] = {}

    @abc.abstractmethod
    def _lookup(self, feat: str) -> dict | None:
        """The feature's {label: weight} entry, or None if the tagger has no such feature."""

    def _get(self, feat: str) -> dict | None:
        if feat not in self.memo:
            self.memo[feat] = self._lookup(feat)
        return self.memo[feat]

    def __contains__(self, feat: object) -> bool:
        return isinstance(feat, str) and self._get(feat) is not None

    def __getitem__(self, feat: str) -> dict:
        v = self._get(feat)
        if v is None:
            raise KeyError(feat)
        return v


class _LazyWeights(_MemoWeights):
    """The tagger weights in the SQLite cache."""

    def __init__(self, db: Path) -> None:
        super().__init__()
        self.db = db
        self.pid = -1
        self.con: Any = None

    def _lookup(self, feat: str) -> dict | None:
        if self.pid != os.getpid():  # never share a connection across fork (process pools)
            import sqlite3

            self.con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, check_same_thread=False)
            self.pid = os.getpid()
        row = self.con.execute("SELECT v FROM w WHERE f = ?", (feat,)).fetchone()
        return json.loads(row[0]) if row else None


class _IndexedJsonWeights(_MemoWeights):
    """The weights JSON file cut at the separator between its top-level entries, ``}, "`` (the values are flat
    {label: number} objects, and a ``"`` inside a key is escaped, so the separator occurs nowhere else); a
    feature's entry is parsed when first asked for. Raises ValueError if the file is not laid out that way."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        raw = path.read_text(encoding="utf-8")
        if not (raw.startswith('{"') and raw.endswith("}}")):
            raise ValueError(f"unexpected layout: {path}")
        pieces = [p.split('": {', 1) for p in raw[2:-2].split('}, "')]
        if any(len(p) != 2 for p in pieces):
            raise ValueError(f"unexpected layout: {path}")
        self.body = dict(pieces)

    def _lookup(self, feat: str) -> dict | None:
        for key in (json.dumps(feat)[1:-1], json.dumps(feat, ensure_ascii=False)[1:-1]):
            if key in self.body:
                return json.loads("{" + self.body[key] + "}")
        return None


def _load_tagger() -> dict | None:
    if data_mode() != "real":
        return None
    d = _find_resource("taggers/averaged_perceptron_tagger_eng")
    if d is None:
        return None
    stem = "averaged_perceptron_tagger_eng"
    weights = _tagger_weights(d / f"{stem}.weights.json")
    with open(d / f"{stem}.tagdict.json", encoding="utf-8") as f:
        tagdict = json.load(f)
    with open(d / f"{stem}.classes.json", encoding="utf-8") as f:
        classes = set(json.load(f))
    _S.tagger_source = str(d)
    return {"weights": weights, "tagdict": tagdict, "classes": classes}


def _normalize(word: str) -> str:
    if "-" in word and word[0] != "-":
        return "!HYPHEN"
    if word.isdigit() and len(word) == 4:
        return "!YEAR"
    if word and word[0].isdigit():
        return "!DIGITS"
    return word.lower()


def first_pos_tag(tokens: list[str]) -> str | None:
    """Tag of ``tokens[0]`` as ``nltk.pos_tag(tokens)[0][1]`` gives it (perceptron tagger), or None if the
    tagger data is not installed. Only the first position is computed (it depends on tokens[0:3])."""
    if not tokens:
        return None
    if _S.tagger is None:
        _S.tagger = _load_tagger() or {}
    if not _S.tagger:
        return None
    return _first_tag(tuple(tokens[:3]))


@functools.lru_cache(maxsize=8192)
def _first_tag(tokens: tuple[str, ...]) -> str:
    """:func:`first_pos_tag` with the tagger loaded, memoised per first three tokens (the loose variants of a
    response mostly share them)."""
    tg = _S.tagger
    word = tokens[0]
    tag = tg["tagdict"].get(word)
    if tag:
        return tag
    ctx = [*_START, *(_normalize(w) for w in tokens), *_END]
    i = 2
    prev, prev2 = _START
    feats: defaultdict[str, int] = defaultdict(int)
    for parts in (
        ("bias",),
        ("i suffix", word[-3:]),
        ("i pref1", word[0] if word else ""),
        ("i-1 tag", prev),
        ("i-2 tag", prev2),
        ("i tag+i-2 tag", prev, prev2),
        ("i word", ctx[i]),
        ("i-1 tag+i word", prev, ctx[i]),
        ("i-1 word", ctx[i - 1]),
        ("i-1 suffix", ctx[i - 1][-3:]),
        ("i-2 word", ctx[i - 2]),
        ("i+1 word", ctx[i + 1]),
        ("i+1 suffix", ctx[i + 1][-3:]),
        ("i+2 word", ctx[i + 2]),
    ):
        feats[" ".join(parts)] += 1
    scores: defaultdict[str, float] = defaultdict(float)
    w = tg["weights"]
    for feat, value in feats.items():
        if feat not in w or value == 0:
            continue
        for label, weight in w[feat].items():
            scores[label] += value * weight
    return max(tg["classes"], key=lambda label: (scores[label], label))


# Offline fallback: common English verbs in base / past / -ing / 3rd-person form (own list).
_OFFLINE_VERBS = frozenset(
    """be is are was were been being am have has had do does did make makes made go goes went get gets got
    take takes took give gives gave say says said see sees saw know knows knew think thinks thought come
    comes came use uses used find finds found tell tells told ask asks asked work works worked seem seems
    seemed feel feels felt try tries tried leave leaves left call calls called imagine consider write
    writes wrote start starts started begin begins began let lets keep keeps kept explore discover create
    creates created build builds built learn learns learned remember picture envision embrace welcome
    join enjoy read reads look looks looked listen follow follows followed bring brings brought turn
    turns turned run runs ran walk walks walked open opens opened stop stops stopped help helps helped
    show shows showed describe describes described explain explains explained understand understands
    understood discuss consider considers considered check think choose chose pick place put set
    understand craft design develop plan prepare gather mix combine add cook bake stir pour cut""".split()
)


def first_token_is_verb(tokens: list[str]) -> tuple[bool, str]:
    """Whether the first token is tagged as a verb (Penn tag containing "VB"); returns (verdict, tag source).

    With the tagger data installed this is exactly the reference's test. Offline it falls back to a word
    list plus suffix rules (-ing, -ed, -ize, -ify, -ate), which is only an approximation."""
    tag = first_pos_tag(tokens)
    if tag is not None:
        return "VB" in tag, f"tagged {tag}"
    if not tokens:
        return False, "no tokens"
    _offline_used("POS tagging (words:start_verb)")
    w = tokens[0].lower()
    ok = w in _OFFLINE_VERBS or (len(w) > 4 and w.endswith(("ing", "ed", "ize", "ise", "ify", "ate")))
    return ok, "offline verb rules"


@functools.cache
def dist_version(name: str) -> str | None:
    """The installed version of distribution ``name``, read from its ``*.dist-info`` folder next to the package
    (cheap: no ``importlib.metadata`` scan of every path entry), else via importlib.metadata; None if absent."""
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.origin:
        parent = Path(spec.origin).resolve().parent.parent
        for d in parent.glob(f"{name}-*.dist-info"):
            return d.name[len(name) + 1 : -len(".dist-info")]
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version(name)
    except (PackageNotFoundError, ValueError):
        return None


def provenance() -> dict[str, Any]:
    """How text was processed, for ``summary.json`` and the report: the data mode ("real": NLTK's data, verdicts
    as the reference's; "offline": genlab's fallback rules), which resources were missing, and the versions.
    Looked up once per data-mode decision (:func:`reset` looks again), not at every evaluation."""
    import genlab

    if _S.provenance is None:
        _S.provenance = {
            "mode": data_mode(),
            "missing_nltk_data": missing_resources(),
            "genlab": genlab.__version__,
            "nltk": dist_version("nltk"),
            "langdetect": dist_version("langdetect"),
        }
    return {**_S.provenance, "missing_nltk_data": list(_S.provenance["missing_nltk_data"])}


def install_data(source: str | Path, target: str | Path) -> dict[str, str]:
    """Install the NLTK resources from a local folder or archive (no network): an ``nltk_data`` folder (or its
    parent), NLTK's package zips (``punkt_tab.zip``, ``stopwords.zip``, ``averaged_perceptron_tagger_eng.zip``)
    anywhere under the folder, or a ``.zip`` / ``.tar.gz`` of either. Returns {package: where it was installed};
    raises FileNotFoundError naming what is missing."""
    import shutil
    import tempfile

    src, dst = Path(source), Path(target)
    if not src.exists():
        raise FileNotFoundError(f"{src}: not found")
    with tempfile.TemporaryDirectory() as tmp:
        root = _unpack(src, Path(tmp)) if src.is_file() else src
        done: dict[str, str] = {}
        for name, rel in RESOURCES.items():
            folder = rel.rsplit("/", 1)[0] if name != "averaged_perceptron_tagger_eng" else rel
            found = _locate(root, rel, name, Path(tmp) / "zips")
            if found is None:
                continue
            out = dst / folder
            if out.exists():
                shutil.rmtree(out)
            shutil.copytree(found, out)
            done[name] = str(out)
    missing = [n for n in RESOURCES if n not in done]
    if missing:
        raise FileNotFoundError(f"{src}: no {', '.join(missing)} found (expected e.g. {RESOURCES[missing[0]]})")
    reset()
    return done


def _unpack(archive: Path, into: Path) -> Path:
    import tarfile
    import zipfile

    out = into / "unpacked"
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for n in z.namelist():  # refuse absolute paths and .. (an archive must not write outside `out`)
                if n.startswith("/") or ".." in Path(n).parts:
                    raise ValueError(f"{archive}: unsafe path {n!r} in the archive")
            z.extractall(out)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
            t.extractall(out, filter="data")
    else:
        raise ValueError(f"{archive}: not a folder, .zip or .tar archive")
    return out


def _locate(root: Path, rel: str, name: str, scratch: Path) -> Path | None:
    """The folder of package ``name`` under ``root``: at ``rel``'s package folder below some ``nltk_data``-like
    folder, or inside a ``name.zip`` (as NLTK's downloader stores it)."""
    pkg_folder = rel if name == "averaged_perceptron_tagger_eng" else rel.rsplit("/", 1)[0]
    for cand in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        if (cand / rel).exists():
            return cand / pkg_folder
    for z in root.rglob(f"{name}.zip"):
        import zipfile

        with zipfile.ZipFile(z) as zf:
            target = scratch / name
            for n in zf.namelist():
                if n.startswith("/") or ".." in Path(n).parts:
                    raise ValueError(f"{z}: unsafe path {n!r} in the archive")
            zf.extractall(target)
        if (target / name).is_dir():
            return target / name
    return None


def backend_info() -> dict[str, Any]:
    """Where each resource came from (for reports and ``genlab ifbench setup``)."""
    stopwords()
    return {
        "mode": data_mode(),
        "missing": missing_resources(),
        "punkt": str(_S.punkt_dir) if _S.punkt_dir else "offline abbreviation list",
        "stopwords": _S.stop_source,
        "tagger": (_S.tagger_source or str(_find_resource("taggers/averaged_perceptron_tagger_eng") or ""))
        or "offline verb rules",
        "search_path": [str(p) for p in nltk_search_path()],
    }


def build_tagger_cache() -> Path | None:
    """Build the SQLite copy of the tagger's weights now, if the tagger is installed and the copy missing
    (``genlab ifbench setup``); its path, or None without the tagger."""
    from genlab.ifbench.cache import build

    weights = _find_resource("taggers/averaged_perceptron_tagger_eng")
    if weights is None:
        return None
    src = weights / "averaged_perceptron_tagger_eng.weights.json"
    target = _tagger_db(src)
    if not target.exists():
        build(_build_tagger_db, target, str(src))
    return target
