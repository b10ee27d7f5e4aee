"""The constraint registry: every IFEval, IFBench and IFTrain instruction id behind one API.

A :class:`Constraint` bundles, for one official instruction id,

* a typed kwargs schema (:class:`Param`: type, range, choices, whether it is required),
* :meth:`Constraint.describe` — the instruction text, in our own words, for given kwargs,
* :meth:`Constraint.sample` — random kwargs drawn from a ``random.Random`` (for training-data synthesis),
* :meth:`Constraint.check` — a :class:`Verdict` (``ok`` plus a short human reason) for a response,
  under ``semantics="reference"`` (what the official checker returns; default) or ``"fixed"``
  (the corrected rule where the reference is known to be wrong; see ``docs/ifbench.md``).

Lookup: :func:`get` (raises :class:`UnknownInstructionError` for an unknown id — never a silent pass),
:func:`ids`, :func:`check`, :func:`conflicts`. Checkers are pure functions of (text, kwargs, semantics).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FAMILIES",
    "SEMANTICS",
    "Constraint",
    "KwargsError",
    "Param",
    "UnknownInstructionError",
    "Verdict",
    "check",
    "conflicts",
    "get",
    "ids",
    "normalize_kwargs",
    "register",
]

SEMANTICS = ("reference", "fixed")
FAMILIES = ("ifeval", "ifbench", "iftrain")


class UnknownInstructionError(KeyError):
    """An instruction id that is not in the registry."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown instruction id"


class KwargsError(ValueError):
    """Kwargs that do not fit a constraint's schema (unknown key, wrong type, missing required value)."""


@dataclass(frozen=True)
class Verdict:
    """The result of one check: ``ok`` and a short reason a person can act on."""

    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Param:
    """One keyword argument of a constraint.

    ``kind`` is one of "int", "str", "list" (list of str). ``lo``/``hi`` bound ints (inclusive) for the
    sampler and the validator; ``choices`` restricts strings. ``required`` params must be given to check.
    """

    name: str
    kind: str
    required: bool = True
    lo: int | None = None
    hi: int | None = None
    choices: tuple[str, ...] | None = None
    doc: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "type": self.kind, "required": self.required}
        if self.lo is not None:
            d["min"] = self.lo
        if self.hi is not None:
            d["max"] = self.hi
        if self.choices:
            d["choices"] = list(self.choices)
        if self.doc:
            d["doc"] = self.doc
        return d


CheckFn = Callable[[str, dict[str, Any], bool], tuple[bool, str]]
DescribeFn = Callable[[dict[str, Any]], str]
SampleFn = Callable[[random.Random, Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Constraint:
    """One verifiable instruction (see the module docstring)."""

    id: str
    family: str
    summary: str
    params: tuple[Param, ...]
    _check: CheckFn = field(repr=False)
    _describe: DescribeFn = field(repr=False)
    _sample: SampleFn = field(repr=False)
    fixed_note: str = ""  # how semantics="fixed" differs (empty: identical)
    also_in: tuple[str, ...] = ()  # other families whose official files use this id
    prepare: Callable[[list[str]], None] | None = field(default=None, repr=False)  # batch work before checks

    @property
    def category(self) -> str:
        """The id's prefix ("keywords", "count", ...), as the reference's per-prefix breakdown uses."""
        return self.id.split(":")[0]

    def schema(self) -> list[dict[str, Any]]:
        """The kwargs schema as JSON-able dicts."""
        return [p.to_dict() for p in self.params]

    def normalize(self, kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated kwargs: nulls dropped, integral floats made int; raises :class:`KwargsError`."""
        return normalize_kwargs(self, kwargs)

    def check(
        self, text: str, kwargs: Mapping[str, Any] | None = None, *, semantics: str = "reference"
    ) -> Verdict:
        """Verdict for ``text``. Never raises on any string; bad kwargs raise :class:`KwargsError`."""
        if semantics not in SEMANTICS:
            raise ValueError(f"semantics must be one of {SEMANTICS}, got {semantics!r}")
        return self.check_normalized(text, self.normalize(kwargs), semantics == "fixed")

    def check_normalized(self, text: str, kwargs: dict[str, Any], fixed: bool) -> Verdict:
        """:meth:`check` with kwargs that :meth:`normalize` returned (the evaluator normalises them once)."""
        try:
            ok, reason = self._check(text, kwargs, fixed)
        except Exception as e:  # a checker bug must not take down an evaluation run
            return Verdict(False, f"checker error ({type(e).__name__}: {e}); counted as not followed")
        return Verdict(bool(ok), reason)

    def describe(self, kwargs: Mapping[str, Any] | None = None) -> str:
        """The instruction text for these kwargs (our wording)."""
        return self._describe(self.normalize(kwargs))

    def sample(self, rng: random.Random | int | None = None, context: Mapping[str, Any] | None = None) -> dict:
        """Random valid kwargs. ``context`` may carry ``prompt`` (used by the repeat/copy constraints)."""
        if not isinstance(rng, random.Random):
            rng = random.Random(rng)
        return self.normalize(self._sample(rng, context or {}))


_REGISTRY: dict[str, Constraint] = {}


def register(
    cid: str,
    family: str,
    summary: str,
    params: Iterable[Param] = (),
    *,
    describe: DescribeFn,
    sample: SampleFn | None = None,
    fixed: str = "",
    also_in: tuple[str, ...] = (),
    prepare: Callable[[list[str]], None] | None = None,
) -> Callable[[CheckFn], CheckFn]:
    """Decorator registering a checker function ``f(text, kwargs, fixed) -> (ok, reason)`` under ``cid``.
    ``prepare(texts)``, if given, is called by the evaluator with every text it is about to check, so that
    costly per-text work (language detection) can be done for all of them at once."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}")

    def deco(fn: CheckFn) -> CheckFn:
        if cid in _REGISTRY:
            raise ValueError(f"duplicate instruction id {cid!r}")
        _REGISTRY[cid] = Constraint(
            cid, family, summary, tuple(params), fn, describe, sample or (lambda r, c: {}), fixed, also_in, prepare
        )
        return fn

    return deco


def _ensure_loaded() -> None:
    if not _REGISTRY:
        from genlab.ifbench import checks_ifbench, checks_ifeval, checks_iftrain  # noqa: F401


def get(cid: str) -> Constraint:
    """The constraint for an official id; :class:`UnknownInstructionError` if there is none."""
    _ensure_loaded()
    try:
        return _REGISTRY[cid]
    except KeyError:
        import difflib

        near = difflib.get_close_matches(str(cid), list(_REGISTRY), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise UnknownInstructionError(f"unknown instruction id {cid!r}{hint}") from None


def prepare(checks: Iterable[tuple[Constraint, str]]) -> None:
    """Show constraints that batch costly work (language detection) every text they are about to check;
    verdicts do not change, they only come faster."""
    texts: dict[Callable[[list[str]], None], list[str]] = {}
    for c, text in checks:
        if c.prepare is not None:
            texts.setdefault(c.prepare, []).append(text)
    for fn, batch in texts.items():
        fn(batch)


def ids(family: str | None = None) -> list[str]:
    """All registered ids (sorted), or those whose official benchmark is ``family``.

    ``ids("ifeval")`` = the 25 IFEval ids; ``ids("ifbench")`` = the 58 IFBench test ids;
    ``ids("iftrain")`` = the 29 IFTrain ids (IFEvalG's registry is ``ifeval`` + ``iftrain``)."""
    _ensure_loaded()
    if family is None:
        return sorted(_REGISTRY)
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}")
    return sorted(c.id for c in _REGISTRY.values() if c.family == family or family in c.also_in)


def all_constraints() -> list[Constraint]:
    """Every registered constraint, sorted by id."""
    _ensure_loaded()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def check(
    cid: str, text: str, kwargs: Mapping[str, Any] | None = None, *, semantics: str = "reference"
) -> Verdict:
    """Shortcut: ``get(cid).check(text, kwargs, semantics=semantics)``."""
    return get(cid).check(text, kwargs, semantics=semantics)


def _as_int(name: str, v: Any) -> int:
    if isinstance(v, bool):
        raise KwargsError(f"{name}: expected an integer, got {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    raise KwargsError(f"{name}: expected an integer, got {v!r}")


def normalize_kwargs(c: Constraint, kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Drop null values (official files pad kwargs with nulls), coerce integral floats, check the schema."""
    out: dict[str, Any] = {}
    spec = {p.name: p for p in c.params}
    for k, v in (kwargs or {}).items():
        if v is None:
            continue
        p = spec.get(k)
        if p is None:
            raise KwargsError(
                f"{c.id}: unexpected kwarg {k!r} (accepted: {', '.join(spec) or 'none'})"
            )
        if p.kind == "int":
            v = _as_int(k, v)
        elif p.kind == "str":
            if not isinstance(v, str):
                if isinstance(v, list | tuple) and v and isinstance(v[0], str):
                    v = v[0]  # IFEvalG accepts a one-element list for some word kwargs
                else:
                    raise KwargsError(f"{c.id}: {k} must be a string, got {type(v).__name__}")
            if p.choices and v not in p.choices:
                raise KwargsError(f"{c.id}: {k} must be one of {list(p.choices)}, got {v!r}")
        elif p.kind == "list":
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list | tuple) or not all(isinstance(x, str) for x in v):
                raise KwargsError(f"{c.id}: {k} must be a list of strings")
            v = list(v)
        out[k] = v
    for p in c.params:
        if p.required and p.name not in out:
            raise KwargsError(f"{c.id}: missing required kwarg {p.name!r}")
    return out


# ---------------------------------------------------------------------------------------------------------
# Conflicts: pairs of ids that should not be asked together (for prompt synthesis).

_ALL = "*"
# Ported in spirit from IFEvalG's INSTRUCTION_CONFLICTS (made symmetric), plus IFBench groups of our own.
_CONFLICT_GROUPS: list[tuple[str, ...]] = [
    ("language:response_language", "detectable_format:multiple_sections", "keywords:existence",
     "keywords:frequency", "keywords:forbidden_words", "startend:end_checker", "change_case:english_capital",
     "change_case:english_lowercase"),
    ("length_constraints:number_paragraphs", "length_constraints:nth_paragraph_first_word",
     "length_constraints:number_sentences"),
    ("detectable_format:multiple_sections", "detectable_format:number_highlighted_sections"),
    ("change_case:capital_word_frequency", "change_case:english_lowercase", "change_case:english_capital"),
    ("startend:quotation", "detectable_format:title"),
    ("paragraphs:paragraphs", "paragraphs:paragraphs2", "count:counting_composition"),
    ("first_word:first_word_sent", "first_word:first_word_answer"),
    ("count:counting_composition", "count:count_unique", "count:count_increment_word",
     "keywords:letter_frequency", "keywords:frequency"),
    ("format:no_whitespace", "format:newline", "format:line_indent", "format:sub-bullets",
     "format:no_bullets_bullets", "words:paragraph_last_first"),
    ("words:vowel", "format:newline", "format:sub-bullets", "format:no_bullets_bullets", "format:line_indent"),
    ("ratio:sentence_type", "ratio:sentence_balance", "ratio:sentence_words", "format:emoji"),
    ("count:word_count_range", "length_constraints:number_words"),
    ("format:options", "detectable_format:constrained_response"),
]
# Ids that fix the whole response (they conflict with everything else).
_EXCLUSIVE = {
    "detectable_format:constrained_response", "copy:copy", "new:copy_span_idx", "copy:copying_simple",
    "copy:copying_multiple", "repeat:repeat_change", "repeat:repeat_simple", "repeat:repeat_span",
    "format:options", "format:output_template",
}


def conflicts(a: str, b: str) -> bool:
    """True if instructions ``a`` and ``b`` should not be combined in one prompt (symmetric; an id
    conflicts with itself). Unknown ids raise :class:`UnknownInstructionError`."""
    get(a)
    get(b)
    if a == b:
        return True
    if a in _EXCLUSIVE or b in _EXCLUSIVE or a.startswith("custom:") or b.startswith("custom:"):
        return True
    if "detectable_format:json_format" in (a, b):
        other = b if a == "detectable_format:json_format" else a
        return other not in ("keywords:forbidden_words", "keywords:existence")
    if "combination:two_responses" in (a, b):
        other = b if a == "combination:two_responses" else a
        return other not in ("keywords:forbidden_words", "keywords:existence", "language:response_language",
                             "detectable_format:title", "punctuation:no_comma")
    if "combination:repeat_prompt" in (a, b):
        other = b if a == "combination:repeat_prompt" else a
        return other not in ("keywords:existence", "detectable_format:title", "punctuation:no_comma")
    return any(a in g and b in g for g in _CONFLICT_GROUPS)
