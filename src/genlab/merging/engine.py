"""The merge engine: plan every output tensor (names, shapes, dtypes, resolved parameters) from the inputs'
headers, validate everything before any data is read, then merge tensor by tensor in mergekit's order.

One implementation serves in-memory state dicts (:func:`merge_state_dicts`) and checkpoints on disk
(:func:`genlab.merging.io.merge_to_folder`): both iterate :func:`run_plan`, so streaming equals the in-memory
result bit for bit.

Order matters for random methods: mergekit executes tensors sorted by the name each is read under, and within a
tensor draws one mask per expert in the order the models are listed, all from one torch generator seeded by
``--random-seed``. :func:`run_plan` does the same with a ``torch.Generator`` seeded by ``seed``.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from genlab.merging.checkpoint import Source, TensorInfo, open_source
from genlab.merging.config import MergeConfig, ModelEntry, parse_config, resolve_param
from genlab.merging.curriculum import ConflictMeter, curriculum_order, progressive_merge_tensor, schedule_alphas
from genlab.merging.errors import CheckpointError, MergeConfigError
from genlab.merging.methods import get_method, merge_tensor
from genlab.merging.sparsify import TRIMS

_LAYER = re.compile(r"\.(\d+)\.")


@dataclass(frozen=True)
class TensorJob:
    """How one output tensor is made."""

    name: str
    models: tuple[int, ...]  # the inputs (indices into config.inputs), in mergekit's model order
    reads: tuple[str, ...]  # the name each of them stores it under
    base: int | None  # position of the base in `models` (methods that treat the base apart)
    merge_dtype: torch.dtype  # inputs are cast to this before merging
    out: TensorInfo  # name, dtype and shape written
    copy: bool  # a non-floating buffer: copied, all inputs must agree
    shared: dict[str, Any]
    per_model: tuple[dict[str, Any], ...]  # resolved per-model parameters, job order ({} for a base kept apart)
    vocab: bool = False  # rows laid out on the output vocabulary before the merge (tokenizer_source)
    vocab_base: int | None = None  # the base model (an input index) for filling missing token rows

    @property
    def label(self) -> str:
        """mergekit's scheduling key: the largest of the names the inputs are read under."""
        return max(self.reads)


@dataclass
class MergePlan:
    config: MergeConfig
    jobs: list[TensorJob]
    order: list[int]  # cmm: expert indices (into config.experts) in merge order; else list order
    capability: list[float] | None = None
    n_layers: int | None = None  # the slices form: layers of the output model
    vocab: Any = None  # genlab.merging.vocab.Vocabulary when the tokenizers are merged

    @property
    def nbytes(self) -> int:
        return sum(j.out.nbytes for j in self.jobs)


# -- planning ---------------------------------------------------------------------------------------------------


def plan_merge(config: MergeConfig, sources: Sequence[Source], vocab: Any = None) -> MergePlan:
    """Check names, shapes and parameters of every tensor; no tensor data is read (except for a cmm
    conflict ranking, which needs a pass over the weights). ``vocab``: a genlab.merging.vocab.Vocabulary when
    the tokenizers are merged (the vocabulary tensors are then laid out on it)."""
    if len(sources) != len(config.inputs):
        raise ValueError("one source per input model is needed")
    n_layers = None
    if config.slices is not None:
        specs, n_layers = slice_specs(config, sources)
    else:
        names = _output_names(config, sources)
        layers = _layer_positions(names)
        everyone = tuple(range(len(config.inputs)))
        base_i = next((i for i, m in enumerate(config.inputs) if m.is_base), None)
        specs = [(name, everyone, tuple(s.resolve(name) for s in sources), _models_base(config),
                  layers.get(name, 0.0), _model_scopes(config), base_i) for name in names]  # fmt: skip
    jobs = [_job(config, sources, *spec, vocab=vocab) for spec in specs]
    # mergekit's execution order: by label; a tensor read under another's name (a tied lm_head) runs after it
    jobs.sort(key=lambda j: (j.label, j.name != j.label, j.name))
    plan = MergePlan(config, jobs, list(range(len(config.experts))), n_layers=n_layers, vocab=vocab)
    if config.method.name == "cmm":
        _order_experts(plan, sources)
    return plan


def _models_base(config: MergeConfig) -> int | None:
    if not config.method.uses_base:
        return None
    return next((i for i, m in enumerate(config.inputs) if m.is_base), None)


def _model_scopes(config: MergeConfig) -> tuple[list[Mapping[str, Any]], ...]:
    """Per input, its parameter settings from the highest precedence down (the models form)."""
    return tuple([m.parameters, config.parameters] for m in config.inputs)


def _output_names(config: MergeConfig, sources: Sequence[Source]) -> list[str]:
    names: dict[str, None] = {}
    for s in sources:
        names.update(dict.fromkeys(s.infos))
    for name in names:
        for model, source in zip(config.inputs, sources):
            if source.resolve(name) is None:
                raise CheckpointError(f"tensor {name!r} is missing from model {model.ref!r}")
    return list(names)


def _layer_positions(names: Sequence[str]) -> dict[str, float]:
    """t = layer / (layers − 1) for tensors inside numbered layers (1 when there is one layer), as mergekit
    interpolates gradients; the number of layers is counted per name prefix (per module)."""
    found = {n: m for n in names if (m := _LAYER.search(n))}
    count: dict[str, int] = {}
    for n, m in found.items():
        count[n[: m.start()]] = max(count.get(n[: m.start()], 0), int(m.group(1)) + 1)
    out = {}
    for n, m in found.items():
        layers = count[n[: m.start()]]
        out[n] = int(m.group(1)) / (layers - 1) if layers > 1 else 1.0
    return out


# -- the slices form (layer stacking, "frankenmerges") ---------------------------------------------------------


@dataclass(frozen=True)
class LayerLayout:
    """A checkpoint's numbered layers: ``prefix.N.suffix`` names, and the tensors outside them."""

    prefix: str
    layers: dict[int, list[str]]  # layer number -> the suffixes of its tensors
    outside: list[str]

    @property
    def n_layers(self) -> int:
        return max(self.layers) + 1 if self.layers else 0


def layer_layout(source: Source) -> LayerLayout:
    """Find the one numbered-layer stack (``model.layers.N.…`` for Llama); the slices form needs exactly one."""
    prefixes: dict[str, dict[int, list[str]]] = {}
    outside = []
    for name in source.infos:
        m = _LAYER.search(name)
        if m is None:
            outside.append(name)
            continue
        prefixes.setdefault(name[: m.start()], {}).setdefault(int(m.group(1)), []).append(name[m.end() :])
    if len(prefixes) != 1:
        found = ", ".join(sorted(prefixes)) or "none"
        raise CheckpointError(
            f"model {source.label!r}: the slices form needs one stack of numbered layers, found {found}"
        )
    ((prefix, layers),) = prefixes.items()
    return LayerLayout(prefix, layers, outside)


def _is_pre(name: str) -> bool:
    """Tensors before the layer stack (embeddings), as opposed to after it (final norm, output head)."""
    return "embed" in name or name.split(".")[-2:-1] in (["wte"], ["wpe"])


def slice_specs(config: MergeConfig, sources: Sequence[Source]):
    """mergekit's plan for ``slices``: the embeddings from the first slice's sources, output layer k (numbered
    consecutively across slices) from layer ``start + i`` of every source of its slice with t = i / (n − 1), the
    tensors after the layers (norm, head) from the last slice's sources; t = 0 outside layers."""
    slices = config.slices
    layouts = {i: layer_layout(sources[i]) for sl in slices for i in (s.model for s in sl.sources)}
    for sl in slices:
        for src in sl.sources:
            lay = layouts[src.model]
            if src.layer_range[1] > lay.n_layers:
                raise CheckpointError(f"model {config.inputs[src.model].ref!r} has {lay.n_layers} layers; "
                                      f"layer_range {list(src.layer_range)} reaches past them")  # fmt: skip
    specs = []

    def add(name: str, sl, reads: Sequence[str], t: float) -> None:
        models = tuple(s.model for s in sl.sources)
        base = models.index(sl.base) if sl.base is not None else None
        scopes = tuple([s.parameters, sl.parameters, config.parameters] for s in sl.sources)
        specs.append((name, models, tuple(reads), base, t, scopes, sl.vocab_base))

    def ends(sl, pre: bool) -> None:
        names = dict.fromkeys(n for s in sl.sources for n in layouts[s.model].outside if _is_pre(n) == pre)
        for name in names:
            reads = []
            for s in sl.sources:
                read = sources[s.model].resolve(name)
                if read is None:
                    raise CheckpointError(f"tensor {name!r} is missing from model {config.inputs[s.model].ref!r}")
                reads.append(read)
            add(name, sl, reads, 0.0)

    ends(slices[0], pre=True)
    out_layer = 0
    prefix = layouts[slices[0].sources[0].model].prefix
    for sl in slices:
        n = sl.n_layers
        for i in range(n):
            t = i / (n - 1) if n > 1 else 1.0
            first = sl.sources[0]
            suffixes = layouts[first.model].layers.get(first.layer_range[0] + i, [])
            for suffix in suffixes:
                reads = []
                for s in sl.sources:
                    lay = layouts[s.model]
                    read = f"{lay.prefix}.{s.layer_range[0] + i}.{suffix}"
                    if read not in sources[s.model].infos:
                        raise CheckpointError(f"tensor {read!r} is missing from model {config.inputs[s.model].ref!r}")
                    reads.append(read)
                add(f"{prefix}.{out_layer}.{suffix}", sl, reads, t)
            out_layer += 1
    ends(slices[-1], pre=False)
    return specs, out_layer


def _job(
    config: MergeConfig,
    sources: Sequence[Source],
    name: str,
    models: tuple[int, ...],
    reads: tuple[str, ...],
    base: int | None,
    t: float,
    scopes: Sequence[Sequence[Mapping[str, Any]]],
    vocab_base: int | None = None,
    vocab: Any = None,
) -> TensorJob:
    infos = [sources[i].infos[r] for i, r in zip(models, reads)]
    on_vocab = vocab is not None and _is_vocab(name) and all(len(i.shape) >= 1 for i in infos)
    shapes = {i.shape[1:] if on_vocab else i.shape for i in infos}
    if len(shapes) > 1:
        detail = ", ".join(f"{config.inputs[m].ref}: {tuple(i.shape)}" for m, i in zip(models, infos))
        raise CheckpointError(f"tensor {name!r} has different shapes ({detail})")
    dtypes = [config.dtype or i.dtype for i in infos]
    floating = all(d.is_floating_point for d in dtypes)
    merge_dtype = _promoted(dtypes) if floating else dtypes[0]
    if not floating and len(set(dtypes)) > 1:
        raise CheckpointError(
            f"non-floating tensor {name!r} has different dtypes across models: {sorted(map(str, set(dtypes)))}"
        )
    shape = (vocab.size, *infos[0].shape[1:]) if on_vocab else infos[0].shape
    out = TensorInfo(name, config.out_dtype or merge_dtype, tuple(shape))
    shared, per_model = {}, ()
    if floating:
        shared, per_model = _resolve_parameters(config, name, t, models, reads, base, scopes)
    elif on_vocab:
        raise CheckpointError(f"vocabulary tensor {name!r} is not floating point; cannot lay it out anew")
    return TensorJob(name, models, reads, base, merge_dtype, out, not floating, shared, per_model, on_vocab,
                     vocab_base if on_vocab else None)  # fmt: skip


def _is_vocab(name: str) -> bool:
    from genlab.merging.vocab import is_vocab_tensor

    return is_vocab_tensor(name)


def _promoted(dtypes: Sequence[torch.dtype]) -> torch.dtype:
    out = dtypes[0]
    for d in dtypes[1:]:
        out = torch.promote_types(out, d)
    return out


def _resolve_parameters(
    config: MergeConfig,
    name: str,
    t: float,
    models: Sequence[int],
    reads: Sequence[str],
    base: int | None,
    scopes: Sequence[Sequence[Mapping[str, Any]]],
) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """Shared parameters from the slice / top level (by the output name); per-model ones from the model (source),
    then the slice, then the top level, by the name the model is read under (mergekit's precedence). A base kept
    apart takes none."""
    method = config.method
    shared_scopes = scopes[0][1:] if scopes else [config.parameters]
    shared = {p.name: resolve_param(p, shared_scopes, name, t) for p in method.shared_params}
    per_model = []
    for k, (m, read) in enumerate(zip(models, reads)):
        if k == base:
            per_model.append({})
            continue
        where = f"model {config.inputs[m].ref!r}, tensor {read!r}"
        values = {p.name: resolve_param(p, scopes[k], read, t, where) for p in method.model_params}
        _check_della(method.name, values, where)
        per_model.append(values)
    if method.name == "linear" and shared["normalize"] and sum(p["weight"] for p in per_model) == 0:
        weights = ", ".join(f"{p['weight']:g}" for p in per_model)
        raise MergeConfigError(
            f"tensor {name!r}: linear with normalize divides by the sum of the weights ({weights}), which is 0; "
            "give weights that do not cancel, or normalize: false"
        )
    return shared, tuple(per_model)


def _check_della(method: str, values: Mapping[str, Any], where: str) -> None:
    if "epsilon" in values and 0 < values["density"] < 1:
        d, e = values["density"], values["epsilon"]
        if d + e >= 1 or d - e <= 0:
            raise MergeConfigError(f"{where}: {method} needs density ± epsilon inside (0, 1), got {d:g} ± {e:g}")


def _order_experts(plan: MergePlan, sources: Sequence[Source]) -> None:
    """The cmm curriculum: capability from per-model scores or from task-vector conflict, then sorted."""
    cfg = plan.config
    shared = {p.name: resolve_param(p, [cfg.parameters], "", 0.0) for p in cfg.method.shared_params}
    order_by = shared["order"]
    if order_by == "given":
        return
    experts = [i for i, m in enumerate(cfg.inputs) if not m.is_base]
    if order_by == "score":
        scores = [
            resolve_param(cfg.method.param("score"), [cfg.inputs[i].parameters, cfg.parameters], "", 0.0)
            for i in experts
        ]
        if any(math.isnan(s) for s in scores):
            raise MergeConfigError("cmm with order: score needs parameters: {score: NUMBER} for every model")
        capability = scores
    else:
        capability = [1.0 - c for c in conflict_scores(plan, sources)]
    plan.capability = capability
    plan.order = curriculum_order(capability, shared["direction"])


def conflict_scores(plan: MergePlan, sources: Sequence[Source]) -> list[float]:
    """Each expert's task-vector conflict fraction over all floating tensors (one extra pass over the weights)."""
    cfg = plan.config
    base_i = next(i for i, m in enumerate(cfg.inputs) if m.is_base)
    experts = [i for i, m in enumerate(cfg.inputs) if not m.is_base]
    meter = ConflictMeter(len(experts))
    for job in plan.jobs:
        if job.copy:
            continue
        base = _load(sources[base_i], job.reads[base_i], job.merge_dtype)
        meter.update(
            base, lambda k, job=job: _load(sources[experts[k]], job.reads[experts[k]], job.merge_dtype), len(experts)
        )
    return meter.scores()


# -- execution --------------------------------------------------------------------------------------------------


def _load(source: Source, name: str, dtype: torch.dtype) -> torch.Tensor:
    x = source.load(name)
    return x if x.dtype == dtype else x.to(dtype)


def run_plan(
    plan: MergePlan, sources: Sequence[Source], seed: int | None = 0, trim: str = "mergekit"
) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield ``(name, merged tensor)`` in plan order, loading each input tensor only when it is needed.
    ``trim``: TIES's ranking, ``mergekit`` (bit-identical) or ``threshold`` (see genlab.merging.sparsify)."""
    if trim not in TRIMS:
        raise MergeConfigError(f"trim {trim!r}: choose one of {', '.join(TRIMS)}")
    generator = None
    if plan.config.method.random or plan.config.method.name == "cmm":
        generator = torch.Generator()
        generator.manual_seed(0 if seed is None else int(seed))
    try:
        for job in plan.jobs:
            result = _copy(plan.config, sources, job) if job.copy else _merge(plan, sources, job, generator, trim)
            if result.dtype != job.out.dtype:
                result = result.to(job.out.dtype)
            yield job.name, result
    finally:
        fused = sys.modules.get("genlab.merging.fused")  # imported only if a merge used the compiled loops
        if fused is not None:
            fused.release_scratch()


def _copy(config: MergeConfig, sources: Sequence[Source], job: TensorJob) -> torch.Tensor:
    first = _load(sources[job.models[0]], job.reads[0], job.merge_dtype)
    for m, read in zip(job.models[1:], job.reads[1:]):
        other = _load(sources[m], read, job.merge_dtype)
        if other.dtype != first.dtype or not torch.equal(other, first):
            raise CheckpointError(f"non-floating tensor {job.name!r} differs between "
                                  f"{config.inputs[job.models[0]].ref!r} and {config.inputs[m].ref!r}")  # fmt: skip
    return first.clone()


def _merge(
    plan: MergePlan, sources: Sequence[Source], job: TensorJob, generator: torch.Generator | None, trim: str
) -> torch.Tensor:
    method = plan.config.method

    def load(k: int) -> torch.Tensor:
        return _load(sources[job.models[k]], job.reads[k], job.merge_dtype)

    if job.vocab:
        from genlab.merging.vocab import permute_rows

        rows = permute_rows(plan.vocab, job.models, job.vocab_base, [load(k) for k in range(len(job.models))],
                            job.name)  # fmt: skip
        load = rows.__getitem__  # the inputs' rows on the output vocabulary

    if method.name != "cmm":
        loaders = [lambda k=k: load(k) for k in range(len(job.models))]
        return merge_tensor(method, loaders, job.base, job.per_model, job.shared, generator, trim=trim)
    # cmm (models form: job positions are config.inputs indices): progressive merging in curriculum order
    cfg_experts = [i for i, m in enumerate(plan.config.inputs) if not m.is_base]
    order = [cfg_experts[k] for k in plan.order]
    return progressive_merge_tensor(
        load(job.base),
        (load(i) for i in order),
        schedule_alphas(len(order), job.shared["schedule"], job.shared["alpha"]),
        job.shared["step"],
        [job.per_model[i]["density"] for i in order],
        generator=generator,
        lam=job.shared["lambda"],
    )


# -- in-memory API ------------------------------------------------------------------------------------------------


def merge_state_dicts(
    models: Mapping[str, Any], config: Mapping[str, Any] | MergeConfig, seed: int | None = 0
) -> dict[str, torch.Tensor]:
    """Merge state dicts (or modules, or checkpoint paths) named in ``models`` by a mergekit-style configuration
    whose ``model`` / ``base_model`` entries are keys of ``models``::

        merge_state_dicts({"base": sd0, "a": sd1, "b": sd2},
                          {"merge_method": "ties", "base_model": "base",
                           "models": [{"model": "a", "parameters": {"weight": 1, "density": 0.5}},
                                      {"model": "b", "parameters": {"weight": 1, "density": 0.5}}]})
    """
    cfg = config if isinstance(config, MergeConfig) else parse_config(config)
    if cfg.tokenizer_source is not None:
        raise MergeConfigError("tokenizer_source / tokenizer merge tokenizers, which state dicts lack: "
                               "merge model folders with merge_to_folder (genlab merge)")  # fmt: skip
    sources = [_source_for(models, m) for m in cfg.inputs]
    try:
        plan = plan_merge(cfg, sources)
        return dict(run_plan(plan, sources, seed))
    finally:
        for s in sources:
            s.close()


def _source_for(models: Mapping[str, Any], entry: ModelEntry) -> Source:
    if entry.ref in models:
        return open_source(models[entry.ref], entry.ref)
    raise MergeConfigError(f"model {entry.ref!r} is not among the given models ({', '.join(map(str, models))})")


def merge(
    method: str,
    base: Any,
    experts: Sequence[Any],
    weights: Sequence[float] | float | None = None,
    densities: Sequence[float] | float | None = None,
    seed: int | None = 0,
    scores: Sequence[float] | None = None,
    **parameters: Any,
) -> dict[str, torch.Tensor]:
    """The short form: ``merge("ties", base_sd, [sd1, sd2], weights=1.0, densities=0.5, lambda_=1.0)``.

    ``base`` may be None for ``linear``; ``weights`` / ``densities`` / ``scores`` are per expert (a scalar
    broadcasts); other keyword arguments are the method-wide parameters (``lambda_`` for ``lambda``)."""
    m = get_method(method)
    names = [f"expert{i}" for i in range(len(experts))]
    models: dict[str, Any] = dict(zip(names, experts))
    entries = []
    for i, name in enumerate(names):
        params: dict[str, Any] = {}
        for key, values in (("weight", weights), ("density", densities), ("score", scores)):
            if values is not None and m.param(key) is not None:
                params[key] = values[i] if isinstance(values, Sequence) else values
        entries.append({"model": name, "parameters": params})
    config: dict[str, Any] = {"merge_method": method, "models": entries}
    if base is not None:
        models["base"] = base
        config["base_model"] = "base"
    if parameters:
        config["parameters"] = {k.rstrip("_"): v for k, v in parameters.items()}
    return merge_state_dicts(models, config, seed)
