"""Typed dataclass configs: presets, ``key=value`` overrides and validation.

A study's ``Config`` is a dataclass whose defaults are the ``quick`` preset. A preset is a dict of overrides.
``--set key=value`` strings are parsed by the field's type (int, float, bool, str, Literal, tuple/list of
those); an unknown key or a bad value raises :class:`ConfigError` naming the valid keys.

Values are validated declaratively, field by field, before a run starts:

- every float must be finite and every int non-negative, unless the field says otherwise;
- ``Annotated[int, Range(1, 10**6)]`` bounds a field (elementwise for tuples); ``Literal[...]`` lists choices;
- ``Config.validate()`` checks what spans fields (raise ValueError; it becomes one clear line, exit code 2).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args, get_origin

from genlab.harness.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


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
    """Parse ``text`` as a value of type ``tp``; raises ConfigError with the key and the expected type."""
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if text.strip().lower() in {"none", "null"} and len(args) < len(get_args(tp)):
            return None
        errors = []
        for a in args:
            try:
                return parse_value(text, a, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(f"{key}: cannot parse {text!r} as {_type_name(tp)}")
    if origin is Literal:
        choices = get_args(tp)
        for c in choices:
            if str(c) == text:
                return c
        raise ConfigError(f"{key}: {text!r} is not one of {', '.join(map(str, choices))}")
    if origin in (tuple, list):
        args = get_args(tp)
        item = args[0] if args else str
        parts = [p for p in (s.strip() for s in text.strip("()[] ").split(",")) if p]
        if not parts and text.strip() not in ("()", "[]"):
            raise ConfigError(f"{key}: {text!r} holds no values; give v1,v2,... (or () for an empty list)")
        values = [parse_value(p, item, key) for p in parts]
        return tuple(values) if origin is tuple else values
    if tp is bool:
        low = text.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ConfigError(f"{key}: {text!r} is not a boolean (use true/false)")
    if tp in (int, float, str):
        try:
            if tp is int:
                as_float = float(text)
                if not as_float.is_integer():
                    raise ValueError
                return int(as_float)
            return tp(text)
        except ValueError:
            raise ConfigError(f"{key}: {text!r} is not a valid {tp.__name__}") from None
    raise ConfigError(f"{key}: fields of type {_type_name(tp)} cannot be set from the command line")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _check_value(value: Any, tp: Any, key: str) -> Any:
    """Validate (and gently coerce) a Python value given in a preset or API call."""
    if isinstance(value, str) and tp is not str and get_origin(tp) is not Literal:
        return parse_value(value, tp, key)
    origin = get_origin(tp)
    if origin is Literal:
        if value not in get_args(tp):
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(map(str, get_args(tp)))}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{key}: expected a sequence, got {value!r}")
        item = (get_args(tp) or (Any,))[0]
        items = [_check_value(v, item, key) if item is not Any else v for v in value]
        return tuple(items) if origin is tuple else items
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return None
        for a in get_args(tp):
            if a is type(None):
                continue
            try:
                return _check_value(value, a, key)
            except ConfigError:
                continue
        raise ConfigError(f"{key}: {value!r} is not a valid {_type_name(tp)}")
    if tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if tp in (int, float, str, bool) and not (isinstance(value, tp) and not (tp is int and isinstance(value, bool))):
        raise ConfigError(f"{key}: {value!r} is not a valid {tp.__name__}")
    return value


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
                raise ConfigError(
                    f"unknown config key {key!r} for {config_cls.__qualname__}; valid keys: {', '.join(sorted(types_))}"
                )
            values[key] = _check_value(value, types_[key], key)
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
