"""The shape of a merge YAML as pydantic models (mergekit's own choice for its schema): which keys exist at each
level and what kind of value each holds. Unknown keys are errors with a "did you mean" suggestion; the first
problem becomes one :class:`MergeConfigError` line naming where it is (``slices[1].sources[0].layer_range``).

Parameter settings are checked by :mod:`genlab.merging.config` against the chosen method (names, types, ranges,
gradients, ``{filter, value}`` entries), since what is valid there depends on ``merge_method``.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from genlab.merging.errors import MergeConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelYaml(_Strict):
    model: StrictStr
    parameters: dict[str, Any] | None = None


class SourceYaml(_Strict):
    model: StrictStr
    layer_range: tuple[StrictInt, StrictInt]
    parameters: dict[str, Any] | None = None


class SliceYaml(_Strict):
    sources: list[SourceYaml]
    base_model: StrictStr | None = None
    parameters: dict[str, Any] | None = None
    residual_weight: float | None = None


class TokenizerYaml(_Strict):
    source: StrictStr = "union"
    tokens: dict[str, Any] | None = None
    pad_to_multiple_of: StrictInt | None = None


class MergeYaml(_Strict):
    merge_method: StrictStr
    base_model: StrictStr | None = None
    models: list[ModelYaml | StrictStr] | None = None
    slices: list[SliceYaml] | None = None
    parameters: dict[str, Any] | None = None
    dtype: StrictStr | None = None
    out_dtype: StrictStr | None = None
    tokenizer_source: StrictStr | None = None
    tokenizer: TokenizerYaml | None = None
    chat_template: StrictStr | None = None


def check_shape(data: Any) -> MergeYaml:
    """Validate the YAML's structure; the first problem is raised as one line."""
    try:
        return MergeYaml.model_validate(data)
    except ValidationError as exc:
        raise MergeConfigError(_one_line(exc)) from None
    except RecursionError:
        raise MergeConfigError("the configuration is nested too deeply") from None


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in ("ModelYaml", "str", "list[...]") and not str(part).startswith(("function-", "tagged-")):
            out += f".{part}" if out else str(part)
    return out or "the configuration"


def _one_line(exc: ValidationError) -> str:
    errors = exc.errors()
    # a `models` entry may be a mapping or a path: report the mapping's problem, not "not a string"
    errors = [e for e in errors if not (e["loc"][:1] == ("models",) and "str" in e["loc"])] or errors
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = err["loc"]
    if err["type"] == "extra_forbidden":
        key, parent = loc[-1], loc[:-1]
        known = _known_keys(parent)
        hint = difflib.get_close_matches(str(key), known, n=1)
        where = _where(parent)
        at = "" if where == "the configuration" else f"{where}: "
        suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
        return f"{at}unknown key {key!r}{suggestion}; it takes {', '.join(known)}"
    if err["type"] == "missing":
        return f"{_where(loc[:-1])} needs {loc[-1]!r}"
    return f"{_where(loc)}: {err['msg'].lower()} (got {err.get('input')!r})"


def _known_keys(loc: tuple) -> list[str]:
    model: type[BaseModel] = MergeYaml
    for part in loc:
        if isinstance(part, int) or part in ("ModelYaml", "str"):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            break
        nested = {"models": ModelYaml, "slices": SliceYaml, "sources": SourceYaml, "tokenizer": TokenizerYaml}
        model = nested.get(str(part), model)
    return list(model.model_fields)
