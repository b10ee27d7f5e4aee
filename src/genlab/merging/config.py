"""The merge configuration: the subset of mergekit's YAML schema that ``genlab merge`` runs unchanged.

```yaml
merge_method: ties                 # linear | task_arithmetic | ties | dare_ties | dare_linear | breadcrumbs |
base_model: path/to/base           #   breadcrumbs_ties | della | della_linear | cmm (genlab's curriculum merge)
models:
  - model: path/to/expert_a
    parameters: {weight: 0.5, density: 0.5}
  - model: path/to/expert_b
    parameters:
      weight: [0.2, 0.8]           # a gradient over layers
      density: [{filter: mlp, value: 0.3}, {value: 0.7}]   # by substring of the tensor name
parameters: {normalize: true, lambda: 1.0, int8_mask: false}
dtype: bfloat16                    # cast inputs before merging; out_dtype casts the result
tokenizer_source: union            # base | union | model:REF (or a tokenizer: block); chat_template: chatml
```

mergekit's ``modules: {default: {models | slices, parameters}}`` (a single-module model) is read as the same
merge in the ``models`` / ``slices`` form (:func:`_from_modules`).

Keys, parameters and values outside this subset are errors that name the key; nothing is silently ignored
(mergekit ignores unknown keys and parameters). Parameter settings resolve as in mergekit: a model's own
``parameters`` first, then the top-level ones, then the method's default; ``{filter, value}`` entries match a
substring of the tensor name (``*`` or no filter matches all); a list of numbers is interpolated linearly at
``layer / (layers − 1)`` (tensors outside the numbered layers take the first value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from genlab.merging.errors import MergeConfigError
from genlab.merging.methods import Method, Param, get_method
from genlab.merging.schema import check_shape

TOP_KEYS = (
    "merge_method", "base_model", "models", "slices", "parameters", "dtype", "out_dtype", "tokenizer_source",
    "tokenizer", "chat_template",
)  # fmt: skip
MODULE_KEYS = ("models", "slices", "parameters")
MODEL_KEYS = ("model", "parameters")
SLICE_KEYS = ("sources", "base_model", "parameters", "residual_weight")
SOURCE_KEYS = ("model", "layer_range", "parameters")
TOKENIZER_KEYS = ("source", "tokens", "pad_to_multiple_of")
DTYPES = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
}
_TRUE = {"true", "t", "yes", "y", "on", "1"}
_FALSE = {"false", "f", "no", "n", "off", "0"}


@dataclass(frozen=True)
class ModelEntry:
    """One input model: its reference as written, the path it resolves to, its own parameter settings."""

    ref: str
    path: Path
    parameters: dict[str, Any] = field(default_factory=dict)
    is_base: bool = False


@dataclass(frozen=True)
class SliceSource:
    """Layers ``layer_range`` = [start, end) of input model ``model`` (an index into ``MergeConfig.inputs``)."""

    model: int
    layer_range: tuple[int, int]
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OutputSlice:
    """Consecutive output layers, each merged from the same relative layer of every source."""

    sources: tuple[SliceSource, ...]
    base: int | None  # index into MergeConfig.inputs: the slice's base_model, else the top-level one
    parameters: dict[str, Any] = field(default_factory=dict)
    vocab_base: int | None = None  # the slice's base model whether or not the method uses one (embedding fill)

    @property
    def n_layers(self) -> int:
        return self.sources[0].layer_range[1] - self.sources[0].layer_range[0]


@dataclass(frozen=True)
class TokenEmbedding:
    """A ``tokenizer.tokens`` entry: where the embedding row of a token comes from (mergekit's
    TokenEmbeddingConfig). ``kind``: ``model`` (that model's row for the same token), ``model_token`` (that
    model's row for another ``token`` or ``token_id``), ``zero``, or ``none`` (no source given); ``force``: use
    it even for models that have the token."""

    kind: str
    model: int | None = None  # index into MergeConfig.inputs
    token: str | None = None
    token_id: int | None = None
    force: bool = False


@dataclass(frozen=True)
class MergeConfig:
    method: Method
    inputs: tuple[ModelEntry, ...]  # mergekit's model order: `models` as listed, then the base if not listed
    base: ModelEntry | None
    parameters: dict[str, Any]
    dtype: torch.dtype | None = None
    out_dtype: torch.dtype | None = None
    tokenizer_source: str | None = None  # "base" | "union" | a model reference
    text: str = ""
    slices: tuple[OutputSlice, ...] | None = None  # the `slices` form; None for `models`
    chat_template: str | None = None
    tokens: dict[str, TokenEmbedding] = field(default_factory=dict)  # tokenizer.tokens
    pad_to_multiple_of: int | None = None

    @property
    def experts(self) -> tuple[ModelEntry, ...]:
        return tuple(m for m in self.inputs if not m.is_base)


def load_config(path: str | Path) -> MergeConfig:
    """Read and validate a YAML merge configuration."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise MergeConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise MergeConfigError(f"{path}: not a text (YAML) file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        raise MergeConfigError(f"{path}: not valid YAML{at}") from None
    except RecursionError:
        raise MergeConfigError(f"{path}: the YAML is nested too deeply") from None
    return parse_config(data, base_dir=path.parent, text=text)


def parse_config(data: Any, base_dir: str | Path | None = None, text: str = "") -> MergeConfig:
    """Validate a configuration mapping (as ``yaml.safe_load`` gives it)."""
    if not isinstance(data, Mapping):
        raise MergeConfigError("the merge configuration must be a YAML mapping with merge_method and models")
    if "modules" in data:
        data = _from_modules(data)
    check_shape(data)  # keys and kinds of values at every level (pydantic); parameters are checked below
    for key in data:
        if key not in TOP_KEYS:
            raise MergeConfigError(f"unknown key {key!r}{_did_you_mean(key, TOP_KEYS)}; genlab merge reads "
                                   f"{', '.join(TOP_KEYS)}")  # fmt: skip
    if "merge_method" not in data:
        raise MergeConfigError("the configuration needs merge_method")
    method = get_method(_text(data["merge_method"], "merge_method"))
    if bool(data.get("models")) == bool(data.get("slices")):
        raise MergeConfigError("the configuration needs exactly one of a non-empty 'models', 'slices' or 'modules'")
    base_ref = _text(data["base_model"], "base_model") if data.get("base_model") is not None else None
    top = _parameters(data.get("parameters"), method, "parameters", top_level=True)
    base_dir = Path(base_dir or ".")
    slices = None
    if data.get("models"):
        if not isinstance(data["models"], list):
            raise MergeConfigError("'models' must be a list of {model: PATH, parameters: {...}}")
        inputs = _inputs(data["models"], base_ref, method, base_dir)
    else:
        inputs, slices = _slices(data["slices"], base_ref, method, base_dir)
    base = next((m for m in inputs if m.is_base), None)
    if base is not None and base.parameters and method.needs_base:
        import warnings

        warnings.warn(
            f"the parameters given to the base model {base.ref!r} have no effect in {method.name} (as in mergekit)",
            stacklevel=2,
        )
    if slices is None:
        if method.needs_base and base is None:
            raise MergeConfigError(f"{method.name} needs base_model")
        if method.needs_base and not any(not m.is_base for m in inputs):
            raise MergeConfigError(f"{method.name} needs at least one model besides the base")
        method.check_inputs(len(inputs), base is not None, "models")
    tokenizer_source, tokens, pad = _tokenizer(data, inputs, base, base_dir)
    chat = data.get("chat_template")
    if chat is not None:
        chat = _text(chat, "chat_template")
    return MergeConfig(
        method=method,
        inputs=inputs,
        base=base,
        parameters=top,
        dtype=_dtype(data.get("dtype"), "dtype"),
        out_dtype=_dtype(data.get("out_dtype"), "out_dtype"),
        tokenizer_source=tokenizer_source,
        text=text,
        slices=slices,
        chat_template=chat,
        tokens=tokens,
        pad_to_multiple_of=pad,
    )


def _from_modules(data: Mapping) -> dict:
    """mergekit's ``modules:`` form for a single-module model (``modules: {default: {models | slices,
    parameters}}``; ``default`` is the name mergekit gives the one module of every single-module architecture)
    as the same merge in the ``models`` / ``slices`` form: the module's parameters take precedence over the
    top-level ones, falling through to them where a module setting's filters match nothing (mergekit's order)."""
    modules = data["modules"]
    if any(data.get(k) for k in ("models", "slices")):
        raise MergeConfigError("give exactly one of 'models', 'slices' or 'modules'")
    if not isinstance(modules, Mapping) or not modules:
        raise MergeConfigError("'modules' must be a mapping of module name -> {models | slices, parameters}")
    if list(modules) != ["default"]:
        raise MergeConfigError(f"modules: genlab merges single-module models, whose one module mergekit names "
                               f"'default' (got {', '.join(map(repr, modules))}); a model with several modules "
                               "(vision + language) needs mergekit's architecture tables")  # fmt: skip
    module = modules["default"]
    if not isinstance(module, Mapping):
        raise MergeConfigError("modules.default must be a mapping with models or slices, and parameters")
    _check_keys(module, MODULE_KEYS, "modules.default")
    if bool(module.get("models")) == bool(module.get("slices")):
        raise MergeConfigError("modules.default needs exactly one of a non-empty 'models' or 'slices' list")
    out = {k: v for k, v in data.items() if k != "modules"}
    form = "models" if module.get("models") else "slices"
    out[form] = module[form]
    inner = module.get("parameters")
    if inner is not None:
        top = data.get("parameters") or {}
        if not isinstance(inner, Mapping) or not isinstance(top, Mapping):
            raise MergeConfigError("parameters must be a mapping of parameter names to values")
        out["parameters"] = {**top, **{k: _before(v, top[k]) if k in top else v for k, v in inner.items()}}
    return out


def _before(first: Any, then: Any) -> Any:
    """One setting that gives ``first``'s value, or ``then``'s where ``first``'s filters match nothing."""

    def conditions(setting: Any) -> list | None:
        if isinstance(setting, Mapping):
            return [setting]
        if isinstance(setting, list) and setting and all(isinstance(c, Mapping) for c in setting):
            return list(setting)
        return None

    head = conditions(first)
    if head is None:  # a value or a gradient always gives a value
        return first
    return head + (conditions(then) or [{"value": then}])


def _did_you_mean(key: Any, known: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(str(key), list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_keys(item: Mapping, known: Sequence[str], where: str) -> None:
    for key in item:
        if key not in known:
            raise MergeConfigError(f"{where}: unknown key {key!r}{_did_you_mean(key, known)}; "
                                   f"it takes {', '.join(known)}")  # fmt: skip


def _inputs(models: list, base_ref: str | None, method: Method, base_dir: Path) -> tuple[ModelEntry, ...]:
    entries = []
    for i, item in enumerate(models):
        if isinstance(item, str):
            item = {"model": item}
        if not isinstance(item, Mapping) or "model" not in item:
            raise MergeConfigError(f"models[{i}] must be a mapping with a 'model' key")
        _check_keys(item, MODEL_KEYS, f"models[{i}]")
        ref = _text(item["model"], f"models[{i}].model")
        params = _parameters(item.get("parameters"), method, f"models[{i}].parameters", top_level=False)
        entries.append(ModelEntry(ref, _resolve_path(ref, base_dir), params, is_base=ref == base_ref))
    refs = [e.ref for e in entries]
    dup = next((r for r in refs if refs.count(r) > 1), None)
    if dup is not None:
        raise MergeConfigError(f"model {dup!r} is listed twice")
    if base_ref is not None and base_ref not in refs:
        entries.append(ModelEntry(base_ref, _resolve_path(base_ref, base_dir), {}, is_base=True))
    return tuple(entries)


def _slices(raw: Any, base_ref: str | None, method: Method, base_dir: Path):
    """The ``slices`` form: every model referenced once in ``inputs`` (first appearance order, then the base)."""
    if not isinstance(raw, list):
        raise MergeConfigError("'slices' must be a list of {sources: [{model, layer_range}, ...]}")
    refs: dict[str, int] = {}

    def index(ref: str) -> int:
        return refs.setdefault(ref, len(refs))

    out = []
    for i, sl in enumerate(raw):
        where = f"slices[{i}]"
        if not isinstance(sl, Mapping) or not isinstance(sl.get("sources"), list) or not sl["sources"]:
            raise MergeConfigError(f"{where} must be a mapping with a non-empty 'sources' list")
        _check_keys(sl, SLICE_KEYS, where)
        sources = []
        for j, src in enumerate(sl["sources"]):
            at = f"{where}.sources[{j}]"
            if not isinstance(src, Mapping) or "model" not in src or "layer_range" not in src:
                raise MergeConfigError(f"{at} must be a mapping with 'model' and 'layer_range'")
            _check_keys(src, SOURCE_KEYS, at)
            lr = src["layer_range"]
            if (not isinstance(lr, list) or len(lr) != 2 or not all(type(x) is int for x in lr)
                    or not 0 <= lr[0] <= lr[1]):  # fmt: skip
                raise MergeConfigError(f"{at}.layer_range must be [START, END) with 0 <= START <= END, got {lr!r}")
            params = _parameters(src.get("parameters"), method, f"{at}.parameters", top_level=False)
            sources.append(SliceSource(index(_text(src["model"], f"{at}.model")), (lr[0], lr[1]), params))
        if len({s.layer_range[1] - s.layer_range[0] for s in sources}) > 1:
            raise MergeConfigError(f"{where}: every source of a slice must span the same number of layers")
        slice_base = _text(sl["base_model"], f"{where}.base_model") if sl.get("base_model") is not None else base_ref
        params = _parameters(sl.get("parameters"), method, f"{where}.parameters", top_level=True)
        base = refs.get(slice_base) if slice_base is not None else None
        if method.uses_base and slice_base is not None and base is None:
            raise MergeConfigError(f"{where}: the base model {slice_base!r} is not among the slice's sources")
        method.check_inputs(len(sources), base is not None, where)
        if method.needs_base and base is None:
            raise MergeConfigError(f"{where}: {method.name} needs a base_model among the slice's sources")
        if len({s.model for s in sources}) != len(sources):
            raise MergeConfigError(f"{where}: a model is listed twice among the sources")
        out.append(OutputSlice(tuple(sources), base if method.uses_base else None, params, base))
    if base_ref is not None:
        index(base_ref)
    inputs = tuple(ModelEntry(r, _resolve_path(r, base_dir), {}, is_base=r == base_ref) for r in refs)
    return inputs, tuple(out)


def _tokenizer(data: Mapping, inputs: Sequence[ModelEntry], base: ModelEntry | None, base_dir: Path):
    """``tokenizer_source`` or a ``tokenizer:`` block (not both): base | union | a model reference."""
    source, tokens, pad = data.get("tokenizer_source"), {}, None
    block = data.get("tokenizer")
    if block is not None:
        if source is not None:
            raise MergeConfigError("give tokenizer_source or a tokenizer block, not both")
        if not isinstance(block, Mapping):
            raise MergeConfigError("tokenizer must be a mapping with source, tokens, pad_to_multiple_of")
        _check_keys(block, TOKENIZER_KEYS, "tokenizer")
        source = block.get("source", "union")
        tokens = block.get("tokens") or {}
        if not isinstance(tokens, Mapping):
            raise MergeConfigError("tokenizer.tokens must be a mapping of token -> {source: ..., force: ...}")
        tokens = {_text(t, "tokenizer.tokens key") if not isinstance(t, str) else t: _token_embedding(v, t, inputs)
                  for t, v in tokens.items()}  # fmt: skip
        pad = block.get("pad_to_multiple_of")
        if pad is not None and (type(pad) is not int or pad <= 0):
            raise MergeConfigError(f"tokenizer.pad_to_multiple_of must be a positive whole number, got {pad!r}")
    if source is None:
        return None, dict(tokens), pad
    source = _text(source, "tokenizer_source")
    if source == "base" and base is None:
        raise MergeConfigError("tokenizer_source: base needs base_model")
    if source not in ("base", "union"):
        source = inputs[_model_index(source, inputs, "tokenizer_source")].ref
    return source, dict(tokens), pad


def _model_index(ref: str, inputs: Sequence[ModelEntry], where: str) -> int:
    """The input a model reference names (``model:`` prefix optional)."""
    ref = ref.removeprefix("model:").strip()
    for i, m in enumerate(inputs):
        if m.ref == ref:
            return i
    raise MergeConfigError(f"{where}: {ref!r} is not one of the input models" +
                           (", 'base' or 'union'" if where == "tokenizer_source" else ""))  # fmt: skip


def _token_embedding(raw: Any, token: str, inputs: Sequence[ModelEntry]) -> TokenEmbedding:
    where = f"tokenizer.tokens[{token!r}]"
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise MergeConfigError(f"{where} must be a mapping {{source: ..., force: ...}}")
    _check_keys(raw, ("source", "force"), where)
    force = raw.get("force", False)
    if not isinstance(force, bool):
        raise MergeConfigError(f"{where}.force must be true or false, got {force!r}")
    src = raw.get("source")
    if src is None:
        return TokenEmbedding("none", force=force)
    if isinstance(src, str):
        return TokenEmbedding("model", _model_index(src, inputs, f"{where}.source"), force=force)
    if not isinstance(src, Mapping) or src.get("kind") not in ("zero", "model_token"):
        raise MergeConfigError(f"{where}.source must be a model, {{kind: zero}} or "
                               "{kind: model_token, model: REF, token: TEXT | token_id: N}")  # fmt: skip
    if src["kind"] == "zero":
        _check_keys(src, ("kind",), f"{where}.source")
        return TokenEmbedding("zero", force=force)
    _check_keys(src, ("kind", "model", "token", "token_id"), f"{where}.source")
    if "model" not in src or (src.get("token") is None) == (src.get("token_id") is None):
        raise MergeConfigError(f"{where}.source: model_token needs model and exactly one of token, token_id")
    tid = src.get("token_id")
    if tid is not None and type(tid) is not int:
        raise MergeConfigError(f"{where}.source.token_id must be a whole number, got {tid!r}")
    tok = src.get("token")
    if tok is not None and not isinstance(tok, str):
        raise MergeConfigError(f"{where}.source.token must be text, got {tok!r}")
    model = _model_index(_text(src["model"], f"{where}.source.model"), inputs, f"{where}.source.model")
    return TokenEmbedding("model_token", model, tok, tid, force)


def _resolve_path(ref: str, base_dir: Path) -> Path:
    """A model path as written (relative to the working directory, as mergekit reads it), or else relative to
    the configuration file's folder."""
    if ("+" in ref or "@" in ref) and not Path(ref).exists():
        raise MergeConfigError(f"model {ref!r}: LoRA ('+') and revision ('@') references are not supported")
    p = Path(ref).expanduser()
    if p.exists() or p.is_absolute():
        return p
    alt = base_dir / p
    return alt if alt.exists() else p


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MergeConfigError(f"{where} must be a non-empty string, got {value!r}")
    return value.strip()


def _dtype(value: Any, where: str) -> torch.dtype | None:
    if value is None:
        return None
    name = _text(value, where).removeprefix("torch.")
    if name not in DTYPES:
        raise MergeConfigError(f"{where}: unknown dtype {value!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[name]


# -- parameters ---------------------------------------------------------------------------------------------


def _parameters(raw: Any, method: Method, where: str, top_level: bool) -> dict[str, Any]:
    """Check a ``parameters`` mapping's names and the shape and type of each setting."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise MergeConfigError(f"{where} must be a mapping of parameter names to values")
    out = {}
    for name, setting in raw.items():
        param = method.param(str(name))
        if param is None:
            known = ", ".join(p.name for p in method.params)
            raise MergeConfigError(f"{where}: {method.name} has no parameter {name!r} (it takes {known})")
        if param.shared and not top_level:
            raise MergeConfigError(f"{where}: {name!r} applies to the whole merge; put it under top-level parameters")
        _check_setting(setting, param, f"{where}.{name}")
        out[str(name)] = setting
    return out


def _check_setting(setting: Any, param: Param, where: str) -> None:
    if isinstance(setting, Mapping):
        extra = set(setting) - {"filter", "value"}
        if extra or "value" not in setting:
            raise MergeConfigError(f"{where}: a conditional setting is {{filter: TEXT, value: VALUE}}")
        if setting.get("filter") is not None and not isinstance(setting["filter"], str):
            raise MergeConfigError(f"{where}: filter must be text (a substring of tensor names)")
        _check_setting(setting["value"], param, where)
    elif isinstance(setting, list):
        if all(isinstance(s, Mapping) for s in setting):
            for s in setting:
                _check_setting(s, param, where)
        elif all(_is_scalar(s) for s in setting):
            for s in setting:
                validate_value(s, param, where)
        else:
            raise MergeConfigError(f"{where}: a list must hold only values (a gradient) or only {{filter, value}}")
    else:
        validate_value(setting, param, where)


def _is_scalar(v: Any) -> bool:
    return isinstance(v, bool | int | float | str)


def validate_value(value: Any, param: Param, where: str = "") -> Any:
    """Coerce one scalar as mergekit's pydantic validation would (numbers in strings, yes/no booleans) and
    reject what it cannot be; non-finite numbers are rejected too."""
    label = where or param.name
    if param.kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise MergeConfigError(f"{label}: expected true or false, got {value!r}")
    if param.optional and value is None:
        return None
    if param.kind is int:
        number = validate_value(value, Param(param.name, float), where)
        if number != int(number):
            raise MergeConfigError(f"{label}: expected a whole number, got {value!r}")
        return int(number)
    if param.kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise MergeConfigError(f"{label}: expected a number, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise MergeConfigError(f"{label}: expected a number, got {value!r}") from None
        if not math.isfinite(number):
            raise MergeConfigError(f"{label}: must be finite, got {value!r}")
        _check_range(param.name, number, label)
        return number
    if param.kind is str:
        if not isinstance(value, str):
            raise MergeConfigError(f"{label}: expected text, got {value!r}")
        if param.choices and value not in param.choices:
            raise MergeConfigError(f"{label}: choose one of {', '.join(param.choices)}, got {value!r}")
        return value
    raise MergeConfigError(f"{label}: unsupported parameter type")


_RANGES = {"density": (0.0, 1.0), "gamma": (0.0, 1.0), "epsilon": (0.0, 1.0), "alpha": (0.0, 1.0)}


def _check_range(name: str, value: float, label: str) -> None:
    if name in _RANGES:
        lo, hi = _RANGES[name]
        if not lo <= value <= hi:
            raise MergeConfigError(f"{label}: {name} must lie in [{lo:g}, {hi:g}], got {value:g}")


def evaluate_setting(setting: Any, param: Param, tensor_name: str, t: float) -> Any:
    """One setting's value for a tensor (None when no conditional entry matches), as mergekit evaluates it."""
    if isinstance(setting, Mapping):
        setting = [setting]
    if _is_scalar(setting):
        return validate_value(setting, param)
    if not setting:
        return None
    if all(_is_scalar(s) for s in setting):
        values = [validate_value(s, param) for s in setting]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            return values[int(t * (len(values) - 1))]
        scaled = t * (len(values) - 1)
        i0 = int(scaled)
        i1 = min(len(values) - 1, i0 + 1)
        frac = scaled - i0
        return validate_value((1 - frac) * values[i0] + frac * values[i1], param)
    for cond in setting:
        f = cond.get("filter")
        if f is None or f == "*" or (tensor_name and f in tensor_name):
            return evaluate_setting(cond["value"], param, tensor_name, t)
    return None


def resolve_param(
    param: Param, scopes: Sequence[Mapping[str, Any]], tensor_name: str, t: float, where: str = ""
) -> Any:
    """The first scope whose setting gives a value wins; else the default; a required parameter with no value
    is an error naming the tensor (and model)."""
    for scope in scopes:
        if param.name in scope:
            value = evaluate_setting(scope[param.name], param, tensor_name, t)
            if value is not None:
                return value
    if param.required:
        raise MergeConfigError(f"no value for the required parameter {param.name!r} of {where or tensor_name}")
    return param.default
