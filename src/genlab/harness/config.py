"""Typed dataclass configs: presets, ``key=value`` overrides and validation.

A study's ``Config`` is a dataclass whose defaults are the ``quick`` preset. A preset is a dict of overrides.
``--set key=value`` strings are parsed by the field's type (int, float, bool, str, Literal, tuple/list of
those); an unknown key or a bad value raises :class:`ConfigError` naming the valid keys.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args, get_origin

from genlab.harness.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def field_types(config_cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(config_cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(config_cls)}


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
    validate = getattr(cfg, "validate", None)
    if callable(validate):
        try:
            validate()
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return cfg


def config_to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def run_hash(study: str, cfg: Any, seed: int) -> str:
    """A run's identity: the hash of study name + config + seed (10 hex digits)."""
    payload = json.dumps({"study": study, "config": config_to_dict(cfg), "seed": seed}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]
