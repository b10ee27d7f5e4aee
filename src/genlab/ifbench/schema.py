"""A constraint's kwargs as a pydantic model, built from its :class:`~genlab.ifbench.core.Param` schema the first
time its kwargs are validated (so ``genlab ifbench eval`` builds only the models of the ids it meets).

The model is a ``TypedDict`` whose keys are the official IFEval / IFBench kwargs names, unchanged (they are an
interface), with ``extra="forbid"``: an unknown key is an error with a "did you mean" suggestion. What the official
files need, as the reference loaders accept it:

* null values are dropped (official files pad every row's kwargs with nulls for other ids' keys);
* ``int``: pydantic's lax integers (``2.0`` -> 2, ``"3"`` -> 3), but never a boolean;
* ``str``: a string, or one of ``choices``; a list of strings stands for its first (IFEvalG writes some words so);
* ``list`` (of strings): a single string is a one-element list.

``Param.lo`` / ``Param.hi`` bound the sampler only; they are not enforced here, so that verdicts on official files
stay the reference's. The first problem becomes one :class:`InvalidKwargs` line naming the instruction id and the
key (raised on as :class:`~genlab.ifbench.core.KwargsError`). Params are :class:`~genlab.ifbench.core.Param`s;
this module does not import the core, which imports it when kwargs are first validated.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BeforeValidator, ConfigDict, Strict, StrictStr, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs typing_extensions' TypedDict before Python 3.12


class InvalidKwargs(ValueError):
    """Kwargs that do not fit the model, as one line (:mod:`genlab.ifbench.core` raises it as its ``KwargsError``)."""


def _drop_nulls(kwargs: Any) -> Any:
    if kwargs is None:
        return {}
    return {k: v for k, v in kwargs.items() if v is not None} if isinstance(kwargs, Mapping) else kwargs


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not an integer")
    return value


def _first_string(value: Any) -> Any:
    if isinstance(value, list | tuple) and value and isinstance(value[0], str):
        return value[0]
    return value


def _string_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else list(value) if isinstance(value, tuple) else value


def _field(kind: str, required: bool, choices: tuple[str, ...] | None) -> Any:
    if kind == "int":
        tp: Any = Annotated[int, BeforeValidator(_not_bool)]
    elif kind == "str":
        tp = Annotated[Literal[choices] if choices else StrictStr, BeforeValidator(_first_string)]
    elif kind == "list":
        tp = Annotated[list[StrictStr], Strict(), BeforeValidator(_string_list)]
    else:
        raise ValueError(f"unknown kwarg kind {kind!r} (int, str or list)")
    return tp if required else NotRequired[tp]


def kwargs_model(params: tuple[Any, ...]) -> TypeAdapter:
    """The validator of kwargs with these params: a ``TypedDict`` of them (null values dropped first). Constraints
    whose params have the same names, kinds and choices share one (IFBench's 58 ids need 14)."""
    return _model(tuple((p.name, p.kind, p.required, p.choices) for p in params))


@functools.cache
def _model(signature: tuple[tuple[str, str, bool, tuple[str, ...] | None], ...]) -> TypeAdapter:
    fields = {name: _field(kind, required, choices) for name, kind, required, choices in signature}
    model = TypedDict("Kwargs", fields)  # type: ignore[misc]
    model.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
    return TypeAdapter(Annotated[model, BeforeValidator(_drop_nulls)])


def validate(cid: str, params: tuple[Any, ...], model: TypeAdapter, kwargs: Any) -> dict[str, Any]:
    """``kwargs`` validated by ``model``; the first problem raised as one :class:`InvalidKwargs` line."""
    try:
        return model.validate_python(kwargs)
    except ValidationError as exc:
        raise InvalidKwargs(_one_line(cid, params, kwargs, exc)) from None


def _did_you_mean(key: str, names: list[str]) -> str:
    lower = {name.lower(): name for name in names}
    near = difflib.get_close_matches(key.lower(), lower, n=1)
    return f"did you mean {lower[near[0]]!r}? " if near else ""


def _one_line(cid: str, params: tuple[Any, ...], kwargs: Any, exc: ValidationError) -> str:
    """The error a person acts on first: an unknown key (often a misspelt one, whose right name is then also
    missing), then a wrong value, then a missing key."""
    order = {"extra_forbidden": 0, "missing": 2}
    err = min(exc.errors(), key=lambda e: order.get(e["type"], 1))
    kind, loc, got = err["type"], err["loc"], err.get("input")
    names = [p.name for p in params]
    if not loc:  # the whole value
        return f"{cid}: kwargs must be an object, got {type(kwargs).__name__}"
    key = str(loc[0])
    if kind == "extra_forbidden":
        return f"{cid}: unexpected kwarg {key!r} ({_did_you_mean(key, names)}accepted: {', '.join(names) or 'none'})"
    if kind == "missing":
        return f"{cid}: missing required kwarg {key!r}"
    param = params[names.index(key)]
    if param.kind == "int":
        return f"{cid}: {key}: expected an integer, got {got!r}"
    if kind == "literal_error":
        return f"{cid}: {key} must be one of {list(param.choices or ())}, got {got!r}"
    if param.kind == "list":
        return f"{cid}: {key} must be a list of strings, got {got!r}"
    return f"{cid}: {key} must be a string, got {type(got).__name__}"
