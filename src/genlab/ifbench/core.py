"""The building blocks of a constraint: :class:`Param`, :class:`Verdict`, :class:`Constraint` and the
:func:`constraint` decorator that turns a checker function into one self-contained unit.

A unit is a module-level :class:`Constraint` made by decorating its checker::

    @constraint("count:numbers", "exactly N numbers", [Param("N", "int", lo=0, hi=100)],
                describe=lambda kw: f"Include exactly {kw['N']} numbers.",
                sample=lambda rng, ctx: {"N": rng.randint(1, 12)})
    def numbers(text, kw, fixed):
        n = ...
        return n == kw["N"], f"{n} numbers (needs exactly {kw['N']})"

This module imports nothing of genlab at load time (kwargs are validated by :mod:`genlab.ifbench.schema`, imported on
first use): the constraint modules import it, and :mod:`genlab.ifbench.registry` finds their units by walking the
:mod:`genlab.ifbench.constraints` package (no module imports the other way).
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FAMILIES",
    "SEMANTICS",
    "Constraint",
    "KwargsError",
    "MissingDataError",
    "Param",
    "UnknownInstructionError",
    "Verdict",
    "constraint",
    "normalize_kwargs",
]

SEMANTICS = ("reference", "fixed")
FAMILIES = ("ifeval", "ifbench", "iftrain")
_PACKAGE = "genlab.ifbench.constraints."


class UnknownInstructionError(KeyError):
    """An instruction id that is not in the registry."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown instruction id"


class MissingDataError(RuntimeError):
    """Data a checker must have is absent and falling back was forbidden; never turned into a verdict."""


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
    sampler (the validator does not enforce them); ``choices`` restricts strings. ``required`` params must be given
    to check. The kwargs' pydantic model is built from these (:mod:`genlab.ifbench.schema`).
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


def _no_kwargs(rng: random.Random, context: Mapping[str, Any]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Constraint:
    """One verifiable instruction: id, kwargs schema, instruction text, kwargs sampler and checker."""

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

    @functools.cached_property
    def kwargs_model(self) -> Any:
        """The pydantic validator of this constraint's kwargs (a ``TypeAdapter`` of a ``TypedDict`` of
        :attr:`params`), built on first use; see :mod:`genlab.ifbench.schema`."""
        from genlab.ifbench.schema import kwargs_model

        return kwargs_model(self.params)

    def normalize(self, kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated kwargs: nulls dropped, integral floats made int; raises :class:`KwargsError`."""
        return normalize_kwargs(self, kwargs)

    def check(self, text: str, kwargs: Mapping[str, Any] | None = None, *, semantics: str = "reference") -> Verdict:
        """Verdict for ``text``. Never raises on any string; bad kwargs raise :class:`KwargsError`."""
        if semantics not in SEMANTICS:
            raise ValueError(f"semantics must be one of {SEMANTICS}, got {semantics!r}")
        return self.check_normalized(text, self.normalize(kwargs), semantics == "fixed")

    def check_normalized(self, text: str, kwargs: dict[str, Any], fixed: bool) -> Verdict:
        """:meth:`check` with kwargs that :meth:`normalize` returned (the evaluator normalises them once)."""
        return Verdict(*self.judge(text, kwargs, fixed))

    def judge(self, text: str, kwargs: dict[str, Any], fixed: bool) -> tuple[bool, str]:
        """``(ok, reason)`` of :meth:`check_normalized` without building a :class:`Verdict` (the evaluator's
        hot path)."""
        try:
            ok, reason = self._check(text, kwargs, fixed)
        except MissingDataError:
            raise
        except Exception as e:  # a checker bug must not take down an evaluation run
            return False, f"checker error ({type(e).__name__}: {e}); counted as not followed"
        return bool(ok), reason

    def describe(self, kwargs: Mapping[str, Any] | None = None) -> str:
        """The instruction text for these kwargs (our wording)."""
        return self._describe(self.normalize(kwargs))

    def sample(self, rng: random.Random | int | None = None, context: Mapping[str, Any] | None = None) -> dict:
        """Random valid kwargs. ``context`` may carry ``prompt`` (used by the repeat/copy constraints)."""
        if not isinstance(rng, random.Random):
            rng = random.Random(rng)
        return self.normalize(self._sample(rng, context or {}))


def _family_of(module: str) -> str | None:
    """ "ifbench" for ``genlab.ifbench.constraints.ifbench.count``; None outside the constraints package."""
    if module.startswith(_PACKAGE):
        return module[len(_PACKAGE) :].split(".")[0]
    return None


def constraint(
    cid: str,
    summary: str,
    params: Iterable[Param] = (),
    *,
    describe: DescribeFn,
    sample: SampleFn | None = None,
    fixed: str = "",
    also_in: tuple[str, ...] = (),
    prepare: Callable[[list[str]], None] | None = None,
    family: str | None = None,
) -> Callable[[CheckFn], Constraint]:
    """Decorator: the checker ``f(text, kwargs, fixed) -> (ok, reason)`` becomes the :class:`Constraint` ``cid``.

    ``family`` defaults to the folder of the constraints package the unit is declared in (``constraints/ifbench/...``
    → "ifbench"). ``prepare(texts)``, if given, is called by the evaluator with every text it is about to check,
    so that costly per-text work (language detection) is done for all of them at once."""

    # the module that declares the unit (the caller), not the module the checker function comes from
    fam = family or _family_of(sys._getframe(1).f_globals.get("__name__", ""))

    def deco(fn: CheckFn) -> Constraint:
        if fam not in FAMILIES:
            raise ValueError(f"{cid}: family must be one of {FAMILIES} (got {fam!r}); pass family=")
        if ":" not in cid:
            raise ValueError(f"{cid!r}: an instruction id is 'category:name'")
        return Constraint(cid, fam, summary, tuple(params), fn, describe, sample or _no_kwargs, fixed, also_in, prepare)

    return deco


def normalize_kwargs(c: Constraint, kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """``kwargs`` validated by the constraint's pydantic model (:mod:`genlab.ifbench.schema`): null values dropped,
    integral floats made int, unknown keys refused with a "did you mean"; raises :class:`KwargsError`."""
    from genlab.ifbench.schema import InvalidKwargs, validate

    try:
        return validate(c.id, c.params, c.kwargs_model, kwargs)
    except InvalidKwargs as exc:
        raise KwargsError(str(exc)) from None
