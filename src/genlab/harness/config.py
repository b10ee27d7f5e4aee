"""Typed dataclass configs: presets, ``key=value`` overrides and validation.

A study's ``Config`` is a dataclass whose defaults are the ``quick`` preset. A preset is a dict of overrides.
Values (``--set key=value`` text, preset and API values) are validated and converted by pydantic against the
field's type (int, float, bool, str, Literal, tuple/list of those, optional); an unknown key (with a "did you
mean") or a bad value raises :class:`ConfigError` naming the key.

Values are validated declaratively, field by field, before a run starts:

- every float must be finite and every int non-negative, unless the field says otherwise;
- ``Annotated[int, Range(1, 10**6)]`` bounds a field (elementwise for tuples); ``Literal[...]`` lists choices;
- ``Config.validate()`` checks what spans fields (raise ValueError; it becomes one clear line, exit code 2).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, get_args, get_origin

from genlab.harness.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Range:
    """Inclusive bounds for a numeric field (``None`` = unbounded on that side); ``Range()`` also lifts the
    default non-negativity of ints. ``finite=False`` admits inf/nan."""

    lo: float | None = None
    hi: float | None = None
    finite: bool = True

    def check(self, value: float, key: str) -> None:
        if self.finite and not math.isfinite(value):
            raise ConfigError(f"{key}: {value!r} is not a finite number")
        if self.lo is not None and value < self.lo:
            raise ConfigError(f"{key}: {value!r} is below its minimum {self.lo:g}")
        if self.hi is not None and value > self.hi:
            raise ConfigError(f"{key}: {value!r} is above its maximum {self.hi:g}")


DEFAULT_INT = Range(0, None)
DEFAULT_FLOAT = Range(None, None)


def field_types(config_cls: type) -> dict[str, Any]:
    """Each field's type, without its ``Annotated`` constraints."""
    hints = typing.get_type_hints(config_cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(config_cls)}


def field_ranges(config_cls: type) -> dict[str, Range]:
    """Each numeric field's :class:`Range`: declared with ``Annotated``, or the default for its type."""
    hints = typing.get_type_hints(config_cls, include_extras=True)
    out: dict[str, Range] = {}
    for f in dataclasses.fields(config_cls):
        declared = [a for a in getattr(hints[f.name], "__metadata__", ()) if isinstance(a, Range)]
        scalar = scalar_type(typing.get_type_hints(config_cls)[f.name])
        if declared:
            out[f.name] = declared[0]
        elif scalar is int:
            out[f.name] = DEFAULT_INT
        elif scalar is float:
            out[f.name] = DEFAULT_FLOAT
    return out


def scalar_type(tp: Any) -> Any:
    """int / float for ``int``, ``float``, ``tuple[int, ...]``, ``int | None`` and the like; else None."""
    origin = get_origin(tp)
    if origin in (tuple, list, typing.Union, types.UnionType):
        kinds = {scalar_type(a) for a in get_args(tp) if a not in (type(None), Ellipsis)}
        return kinds.pop() if len(kinds) == 1 else None
    return tp if tp in (int, float) else None


def check_ranges(cfg: Any) -> None:
    """Apply every field's Range to a built config (elementwise for sequences; None passes)."""
    for key, rng in field_ranges(type(cfg)).items():
        value = getattr(cfg, key)
        for v in value if isinstance(value, list | tuple) else (value,):
            if isinstance(v, int | float) and not isinstance(v, bool):
                rng.check(v, key)


def parse_value(text: str, tp: Any, key: str = "value") -> Any:
    """Parse ``--set`` text as a value of type ``tp`` (``v1,v2`` for sequences, ``none`` for optional fields);
    raises ConfigError with the key and what was wrong."""
    args = get_args(tp) if get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    if type(None) in args and text.strip().lower() in {"none", "null"}:
        return None
    if any(get_origin(a) in (tuple, list) for a in args):
        parts = [p for p in (s.strip() for s in text.strip("()[] ").split(",")) if p]
        if not parts and text.strip() not in ("()", "[]"):
            raise ConfigError(f"{key}: {text!r} holds no values; give v1,v2,... (or () for an empty list)")
        return _validate(parts, tp, key, text)
    return _validate(text, tp, key, text)


@functools.cache
def _adapter(tp: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(_numbers_not_bools(tp))


def _numbers_not_bools(tp: Any) -> Any:
    """``tp`` with every int / float made to refuse booleans (pydantic's lax mode reads True as 1) and every int
    to read whole numbers in scientific notation (``steps=1e4``)."""
    from pydantic import BeforeValidator

    if tp in (int, float):
        return typing.Annotated[tp, BeforeValidator(_int_text if tp is int else _not_bool)]
    origin, args = get_origin(tp), get_args(tp)
    if origin in (tuple, list) and args:
        inner = tuple(a if a is Ellipsis else _numbers_not_bools(a) for a in args)
        return tuple[inner] if origin is tuple else list[inner[0]]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_numbers_not_bools(a) for a in args)]  # noqa: UP007 - built from a tuple
    return tp


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


def _int_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            as_float = float(value)
        except ValueError:
            return value
        return int(as_float) if as_float.is_integer() else value
    return _not_bool(value)


def _validate(value: Any, tp: Any, key: str, shown: Any = None) -> Any:
    """``value`` as a ``tp``, by pydantic's (lax) validation: "3" -> 3, 2.0 -> 2, "yes" -> True, [1, 2] -> (1, 2)."""
    from pydantic import ValidationError

    try:
        return _adapter(tp).validate_python(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        bad = err.get("input", value if shown is None else shown)
        if err["type"] == "literal_error":
            raise ConfigError(f"{key}: {bad!r} is not one of {', '.join(map(str, get_args(_literal(tp))))}") from None
        number = getattr(scalar_type(tp), "__name__", "number")
        what = next((w for prefix, w in _WHAT.items() if err["type"].startswith(prefix)), f"valid for {_type_name(tp)}")
        msg = err["msg"][:1].lower() + err["msg"][1:]
        raise ConfigError(f"{key}: {bad!r} is not {what.format(number=number)} ({msg})") from None


_WHAT = {"int": "a valid int", "float": "a valid float", "bool": "a boolean (use true/false)", "string": "a valid str",
         "value_error": "a valid {number}", "too_long": "a list of the right length",
         "too_short": "a list of the right length"}


def _literal(tp: Any) -> Any:
    """The Literal type inside ``tp`` (a tuple of Literals, an optional Literal)."""
    while get_origin(tp) is not typing.Literal:
        args = [a for a in get_args(tp) if a not in (type(None), Ellipsis)]
        if not args:
            return tp
        tp = args[0]
    return tp


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def parse_sets(sets: Iterable[str]) -> dict[str, str]:
    """Turn ``["a=1", "b=x,y"]`` into ``{"a": "1", "b": "x,y"}``."""
    out: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def build_config(config_cls: type, *overrides: Mapping[str, Any]) -> Any:
    """Instantiate ``config_cls`` from its defaults plus each override mapping in turn (later wins)."""
    types_ = field_types(config_cls)
    values: dict[str, Any] = {}
    for override in overrides:
        for key, value in override.items():
            if key not in types_:
                near = difflib.get_close_matches(key, types_, n=1)
                hint = f"did you mean {near[0]!r}? " if near else ""
                raise ConfigError(f"unknown config key {key!r} for {config_cls.__qualname__}; {hint}"
                                  f"valid keys: {', '.join(sorted(types_))}")
            tp = types_[key]
            values[key] = parse_value(value, tp, key) if isinstance(value, str) and tp is not str else \
                _validate(value, tp, key)
    cfg = config_cls(**values)
    check_ranges(cfg)
    validate = getattr(cfg, "validate", None)
    if callable(validate):
        try:
            validate()
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc)) from None
    return cfg


def config_to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def run_hash(study: str, cfg: Any, seed: int) -> str:
    """A run's identity: the hash of study name + config + seed (10 hex digits)."""
    payload = json.dumps({"study": study, "config": config_to_dict(cfg), "seed": seed}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]
