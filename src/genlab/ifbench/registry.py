"""The constraint registry: every IFEval, IFBench and IFTrain instruction id behind one API.

A :class:`Constraint` bundles, for one official instruction id,

* a typed kwargs schema (:class:`Param`: type, range, choices, whether it is required),
* :meth:`Constraint.describe` — the instruction text, in our own words, for given kwargs,
* :meth:`Constraint.sample` — random kwargs drawn from a ``random.Random`` (for training-data synthesis),
* :meth:`Constraint.check` — a :class:`Verdict` (``ok`` plus a short human reason) for a response,
  under ``semantics="reference"`` (what the official checker returns; default) or ``"fixed"``
  (the corrected rule where the reference is known to be wrong; see ``docs/ifbench.md``).

The units live in :mod:`genlab.ifbench.constraints` (one module per family and id category) and are
found by walking that package (:func:`discover`); this module imports none of them by name.

Lookup: :func:`get` (raises :class:`UnknownInstructionError` for an unknown id — never a silent pass),
:func:`ids`, :func:`check`, :func:`conflicts`. Checkers are pure functions of (text, kwargs, semantics).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from genlab.ifbench.core import (
    FAMILIES,
    SEMANTICS,
    Constraint,
    KwargsError,
    Param,
    UnknownInstructionError,
    Verdict,
    normalize_kwargs,
)

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
    "discover",
    "get",
    "ids",
    "normalize_kwargs",
    "prepare",
]

_PACKAGE = "genlab.ifbench.constraints"
_REGISTRY: dict[str, Constraint] = {}


def _constraint_modules() -> list[str]:
    """Every module under the constraints package (found on disk, in a fixed order)."""
    import importlib.util
    import pkgutil

    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - broken install
        raise ImportError(f"{_PACKAGE} not found")
    names = []
    for info in pkgutil.iter_modules(spec.submodule_search_locations):
        names.append(f"{_PACKAGE}.{info.name}")
        if info.ispkg:
            sub = importlib.util.find_spec(f"{_PACKAGE}.{info.name}")
            names += sorted(
                f"{_PACKAGE}.{info.name}.{m.name}" for m in pkgutil.iter_modules(sub.submodule_search_locations)
            )
    return sorted(names)


def discover() -> dict[str, Constraint]:
    """Import every constraint module and collect its module-level :class:`Constraint` units by id. Two units
    with one id are an error; a unit imported into another module is the same object and counted once."""
    import importlib

    found: dict[str, Constraint] = {}
    for name in _constraint_modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if isinstance(obj, Constraint):
                other = found.setdefault(obj.id, obj)
                if other is not obj:
                    raise ValueError(f"duplicate instruction id {obj.id!r} (in {name})")
    return found


def _ensure_loaded() -> None:
    if not _REGISTRY:
        _REGISTRY.update(discover())


def get(cid: str) -> Constraint:
    """The constraint for an official id; :class:`UnknownInstructionError` if there is none."""
    _ensure_loaded()
    try:
        return _REGISTRY[cid]
    except (KeyError, TypeError):
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


def check(cid: str, text: str, kwargs: Mapping[str, Any] | None = None, *, semantics: str = "reference") -> Verdict:
    """Shortcut: ``get(cid).check(text, kwargs, semantics=semantics)``."""
    return get(cid).check(text, kwargs, semantics=semantics)


# ---------------------------------------------------------------------------------------------------------
# Conflicts: pairs of ids that should not be asked together (for prompt synthesis).

_ALL = "*"
# Ported in spirit from IFEvalG's INSTRUCTION_CONFLICTS (made symmetric), plus IFBench groups of our own.
_CONFLICT_GROUPS: list[tuple[str, ...]] = [
    (
        "language:response_language",
        "detectable_format:multiple_sections",
        "keywords:existence",
        "keywords:frequency",
        "keywords:forbidden_words",
        "startend:end_checker",
        "change_case:english_capital",
        "change_case:english_lowercase",
    ),
    (
        "length_constraints:number_paragraphs",
        "length_constraints:nth_paragraph_first_word",
        "length_constraints:number_sentences",
    ),
    ("detectable_format:multiple_sections", "detectable_format:number_highlighted_sections"),
    ("change_case:capital_word_frequency", "change_case:english_lowercase", "change_case:english_capital"),
    ("startend:quotation", "detectable_format:title"),
    ("paragraphs:paragraphs", "paragraphs:paragraphs2", "count:counting_composition"),
    ("first_word:first_word_sent", "first_word:first_word_answer"),
    (
        "count:counting_composition",
        "count:count_unique",
        "count:count_increment_word",
        "keywords:letter_frequency",
        "keywords:frequency",
    ),
    (
        "format:no_whitespace",
        "format:newline",
        "format:line_indent",
        "format:sub-bullets",
        "format:no_bullets_bullets",
        "words:paragraph_last_first",
    ),
    ("words:vowel", "format:newline", "format:sub-bullets", "format:no_bullets_bullets", "format:line_indent"),
    ("ratio:sentence_type", "ratio:sentence_balance", "ratio:sentence_words", "format:emoji"),
    ("count:word_count_range", "length_constraints:number_words"),
    ("format:options", "detectable_format:constrained_response"),
]
# Ids that fix the whole response (they conflict with everything else).
_EXCLUSIVE = {
    "detectable_format:constrained_response",
    "copy:copy",
    "new:copy_span_idx",
    "copy:copying_simple",
    "copy:copying_multiple",
    "repeat:repeat_change",
    "repeat:repeat_simple",
    "repeat:repeat_span",
    "format:options",
    "format:output_template",
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
        return other not in (
            "keywords:forbidden_words",
            "keywords:existence",
            "language:response_language",
            "detectable_format:title",
            "punctuation:no_comma",
        )
    if "combination:repeat_prompt" in (a, b):
        other = b if a == "combination:repeat_prompt" else a
        return other not in ("keywords:existence", "detectable_format:title", "punctuation:no_comma")
    return any(a in g and b in g for g in _CONFLICT_GROUPS)
