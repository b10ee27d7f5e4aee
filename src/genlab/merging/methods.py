"""Merge methods, tensor by tensor: weight averaging (``linear``) and the generalized task-arithmetic family
(``task_arithmetic``, ``ties``, ``dare_linear``, ``dare_ties``, ``breadcrumbs``, ``breadcrumbs_ties``, ``della``,
``della_linear``), with mergekit 0.1.5's names, parameters, defaults and arithmetic.

Generalized task arithmetic, for one tensor with base θ₀ and experts θ₁…θₙ (weights wᵢ):

1. task vectors δᵢ = θᵢ − θ₀, each optionally sparsified (TIES trim / DARE drop-and-rescale / ...);
2. δᵢ ← wᵢ·δᵢ;
3. optional sign election (TIES): the elected sign is that of Σᵢ wᵢδᵢ ("sum", zero counts as +) or of
   Σᵢ sign(wᵢδᵢ) ("count"); entries whose sign disagrees are masked out;
4. δ = Σᵢ mᵢwᵢδᵢ, divided by Σᵢ mᵢwᵢ when ``normalize`` (a zero divisor becomes 1), times ``lambda``;
5. θ = θ₀ + δ, in the inputs' dtype.

Each step is the same torch operation, in the same order and dtype, as mergekit's
``GeneralizedTaskArithmeticMerge.merge_group`` and ``linear_merge``: the results agree bit for bit (tested).
Methods that sparsify or elect signs consume the experts one at a time, so only one expert tensor is alive
besides the stacked task vectors. ``task_arithmetic`` and ``linear`` instead take every input tensor at once and
run block by block (:func:`task_arithmetic`, :func:`linear_merge`): each block of 2¹⁵ elements goes through
mergekit's ops in cache, with the same roundings, and only the output is a new full-size tensor.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from genlab.merging import geometric
from genlab.merging.combine import combine_task_vectors, sign_mask
from genlab.merging.errors import MergeConfigError
from genlab.merging.sparsify import sparsify
from genlab.merging.threads import CHUNK, each_expert, in_halves

REQUIRED: Any = object()  # the default of a parameter that has none


@dataclass(frozen=True)
class Param:
    """One parameter of a method: ``shared`` (one value per tensor) or per input model (per expert when the
    method treats the base apart); a ``REQUIRED`` default means there is none. ``optional``: None is a value."""

    name: str
    kind: type
    default: Any = REQUIRED
    shared: bool = True
    choices: tuple[str, ...] = ()
    optional: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Method:
    """A merge method: mergekit's name, its parameters, and how it merges one tensor."""

    name: str
    needs_base: bool
    params: tuple[Param, ...]
    consensus: str | None = None  # "sum" | "count" | None
    sparsification: str | None = None  # see genlab.merging.sparsify.SPARSIFIERS
    random: bool = False
    description: str = ""
    reference: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    takes_base: bool | None = None  # the base is treated apart (default: needs_base); else it is one more input
    min_inputs: int = 1
    max_inputs: int | None = None
    min_experts: int = 0  # inputs besides the base
    max_experts: int | None = None
    pretty: str = ""

    @property
    def title(self) -> str:
        """mergekit's display name (model cards)."""
        return self.pretty or _TITLES.get(self.name, self.name)

    @property
    def uses_base(self) -> bool:
        return self.needs_base if self.takes_base is None else self.takes_base

    def check_inputs(self, n_inputs: int, has_base: bool, where: str) -> None:
        """mergekit's input contract: how many inputs (and experts besides the base) one tensor may have."""
        n_experts = n_inputs - int(has_base and self.uses_base)
        counts = (("inputs", n_inputs, self.min_inputs, self.max_inputs),
                  ("models besides the base", n_experts, self.min_experts, self.max_experts))  # fmt: skip
        for what, n, lo, hi in counts:
            if n < lo or (hi is not None and n > hi):
                span = f"exactly {lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
                raise MergeConfigError(f"{where}: {self.name} takes {span} {what}, got {n}")

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def shared_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.shared)

    @property
    def model_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not p.shared)


_TITLES = {
    "linear": "Linear", "task_arithmetic": "Task Arithmetic", "ties": "TIES", "dare_ties": "DARE TIES",
    "dare_linear": "Linear DARE", "breadcrumbs": "Model Breadcrumbs", "breadcrumbs_ties": "Model Breadcrumbs with TIES",
    "della": "DELLA", "della_linear": "Linear DELLA", "cmm": "Curriculum Model Merging",
}  # fmt: skip


def _gta(
    name: str,
    consensus: str | None,
    sparsification: str | None,
    normalize: bool,
    rescale: bool,
    description: str,
    reference: str,
) -> Method:
    params = [
        Param("int8_mask", bool, False),
        Param("normalize", bool, normalize),
        Param("rescale", bool, rescale),
        Param("lambda", float, 1.0),
        Param("weight", float, shared=False),
        Param("density", float, 1.0, shared=False),
    ]
    if sparsification == "magnitude_outliers":
        params.append(Param("gamma", float, 0.01, shared=False))
    if sparsification == "della_magprune":
        params.append(Param("epsilon", float, 0.15, shared=False))
    return Method(
        name,
        needs_base=True,
        params=tuple(params),
        consensus=consensus,
        sparsification=sparsification,
        random=sparsification in ("random", "della_magprune"),
        description=description,
        reference=reference,
        min_experts=1,
    )


LINEAR = Method(
    "linear",
    needs_base=False,
    params=(Param("weight", float, shared=False), Param("normalize", bool, True)),
    description="weighted average of the models (weights normalised to sum 1 by default)",
    reference="https://arxiv.org/abs/2203.05482",
)

METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        LINEAR,
        _gta("task_arithmetic", None, None, False, False, "base + λ·Σ wᵢδᵢ", "https://arxiv.org/abs/2212.04089"),
        _gta(
            "ties",
            "sum",
            "magnitude",
            True,
            False,
            "trim to top-|δ| density, elect sign by mass, disjoint mean",
            "https://arxiv.org/abs/2306.01708",
        ),
        _gta(
            "dare_ties",
            "sum",
            "random",
            False,
            True,
            "random drop (keep prob. density) with L1 rescale, then TIES sign election",
            "https://arxiv.org/abs/2311.03099",
        ),
        _gta(
            "dare_linear",
            None,
            "random",
            False,
            True,
            "random drop (keep prob. density) with L1 rescale, then task arithmetic",
            "https://arxiv.org/abs/2311.03099",
        ),
        _gta(
            "breadcrumbs",
            None,
            "magnitude_outliers",
            False,
            False,
            "drop the largest (gamma) and smallest magnitudes, then task arithmetic",
            "https://arxiv.org/abs/2312.06795",
        ),
        _gta(
            "breadcrumbs_ties",
            "sum",
            "magnitude_outliers",
            False,
            False,
            "breadcrumbs sparsification with TIES sign election",
            "https://arxiv.org/abs/2312.06795",
        ),
        _gta(
            "della",
            "sum",
            "della_magprune",
            True,
            True,
            "magnitude-rank keep probabilities, L1 rescale, TIES sign election",
            "https://arxiv.org/abs/2406.11617",
        ),
        _gta(
            "della_linear",
            None,
            "della_magprune",
            False,
            True,
            "magnitude-rank keep probabilities, L1 rescale, task arithmetic",
            "https://arxiv.org/abs/2406.11617",
        ),
    )
}

# genlab's curriculum merge (see genlab.merging.curriculum): not a mergekit method.
SCHEDULES = ("harmonic", "linear", "constant")
ORDERS = ("given", "score", "conflict")
DIRECTIONS = ("ascending", "descending")
STEP_METHODS = tuple(name for name, m in METHODS.items() if m.needs_base)
CMM = Method(
    "cmm",
    needs_base=True,
    params=(
        Param("schedule", str, "harmonic", choices=SCHEDULES),
        Param("alpha", float, 0.5),
        Param("lambda", float, 1.0),
        Param("step", str, "task_arithmetic", choices=STEP_METHODS),
        Param("order", str, "given", choices=ORDERS),
        Param("direction", str, "ascending", choices=DIRECTIONS),
        Param("density", float, 1.0, shared=False),
        Param("score", float, float("nan"), shared=False),
    ),
    description="curriculum merge: experts ranked (given order, validation score or weight conflict), then "
    "merged one at a time with a step method and an alpha schedule",
    reference="He et al., Curriculum Model Merging, NeurIPS 2025 (reconstruction)",
)
METHODS[CMM.name] = CMM

# mergekit's other methods (see genlab.merging.geometric and sce_merge below)
SLERP = Method(
    "slerp",
    needs_base=True,
    params=(Param("t", float),),
    min_inputs=2,
    max_inputs=2,
    pretty="SLERP",
    description="spherical interpolation from the base (t = 0) to the other model (t = 1)",
    reference="https://en.wikipedia.org/wiki/Slerp",
)
NUSLERP = Method(
    "nuslerp",
    needs_base=False,
    takes_base=True,
    min_experts=2,
    max_experts=2,
    pretty="NuSLERP",
    params=(
        Param("weight", float, shared=False),
        Param("nuslerp_row_wise", bool, False),
        Param("nuslerp_flatten", bool, True),
    ),
    description="spherical interpolation of two models (their task vectors when there is a base), t from the weights",
)
MODEL_STOCK = Method(
    "model_stock",
    needs_base=True,
    params=(Param("filter_wise", bool, False),),
    min_inputs=3,
    pretty="Model Stock",
    description="interpolate the experts' mean towards the base by their task vectors' mean cosine",
    reference="https://arxiv.org/abs/2403.19522",
)
KARCHER = Method(
    "karcher",
    needs_base=False,
    params=(Param("max_iter", int, 10), Param("tol", float, 1e-5)),
    pretty="Karcher Mean",
    description="Riemannian (Karcher) mean of the models' directions, times their mean norm",
    reference="https://arxiv.org/abs/2603.04972",
)
SCE = Method(
    "sce",
    needs_base=True,
    params=(Param("int8_mask", bool, False), Param("select_topk", float, 1.0)),
    pretty="SCE",
    description="select the top-variance entries, weight task vectors by mean square, TIES sign election",
    reference="https://arxiv.org/abs/2408.07990",
)
PASSTHROUGH = Method(
    "passthrough",
    needs_base=False,
    params=(Param("scale", float, None, shared=False, optional=True),),
    max_inputs=1,
    pretty="Passthrough",
    description="copy the one input (optionally scaled): layer stacking",
)
for _m in (SLERP, NUSLERP, MODEL_STOCK, KARCHER, SCE, PASSTHROUGH):
    METHODS[_m.name] = _m

# mergekit methods we do not implement (a config naming one gets a clear error, not a silent fallback).
MERGEKIT_ONLY = ("multislerp", "arcee_fusion", "nearswap", "ram", "ramplus_tl")


def get_method(name: str) -> Method:
    if name in METHODS:
        return METHODS[name]
    known = ", ".join(METHODS)
    if name in MERGEKIT_ONLY:
        raise MergeConfigError(
            f"merge_method {name!r} is a mergekit method genlab does not implement; use one of {known}"
        )
    raise MergeConfigError(f"unknown merge_method {name!r}; genlab implements {known}")


# -- kernels -------------------------------------------------------------------------------------------------


def gta_merge(
    method: Method,
    base: torch.Tensor,
    experts: Iterable[torch.Tensor],
    n_experts: int,
    weight: Sequence[float],
    density: Sequence[float] | None = None,
    *,
    normalize: bool | None = None,
    rescale: bool | None = None,
    lam: float = 1.0,
    int8_mask: bool = False,
    consensus: str | None = None,
    gamma: Sequence[float] | None = None,
    epsilon: Sequence[float] | None = None,
    generator: torch.Generator | None = None,
    trim: str = "mergekit",
    chunked: bool = True,
) -> torch.Tensor:
    """One tensor of a generalized task-arithmetic merge. ``experts`` may be a generator that loads each
    expert tensor when asked; every tensor must already be in the merge dtype. ``consensus`` overrides the
    method's sign election (``"sum"``, ``"count"``, or ``"none"``); ``trim`` is TIES's ranking (see
    :func:`genlab.merging.sparsify.magnitude`). A deterministic sparsification of mid-sized tensors (2¹⁶ to 2²⁴
    elements) runs on two threads, one expert each; random ones draw in expert order. Without sparsification and
    sign election (``task_arithmetic``) the merge runs block by block (:func:`task_arithmetic`) unless
    ``chunked=False``, which stacks the task vectors as mergekit does (the same bits, slower)."""
    normalize = method.param("normalize").default if normalize is None else normalize
    rescale = method.param("rescale").default if rescale is None else rescale
    consensus = method.consensus if consensus is None else (None if consensus == "none" else consensus)
    density = [1.0] * n_experts if density is None else density
    if n_experts == 0:
        return base
    blockwise = bool(chunked and base.numel() and n_experts <= chunked_max(base))
    if blockwise and not method.sparsification and not consensus:
        tensors = list(experts)
        if len(tensors) != n_experts:
            raise ValueError(f"expected {n_experts} expert tensors, got {len(tensors)}")
        return task_arithmetic(base, tensors, weight, normalize=normalize, lam=lam)
    weights = torch.tensor(list(weight), dtype=base.dtype, device=base.device)
    if blockwise and _compiled_applies(method, base, rescale, trim):
        from genlab.merging import fused

        deltas, finite = fused.task_vectors(base, experts, n_experts, density if method.sparsification else None)
        if finite:
            out = torch.empty_like(base)
            fused.combine_into(out.reshape(-1), base.reshape(-1), deltas, weights, consensus, normalize, lam)
            return out
    else:
        deltas = _task_vectors(method, base, experts, n_experts, density, rescale, gamma, epsilon, generator, trim)
    mask_dtype = torch.int8 if int8_mask else base.dtype
    combine = functools.partial(combine_task_vectors, consensus=consensus, mask_dtype=mask_dtype,
                                normalize=normalize, lam=lam)  # fmt: skip
    if not blockwise:  # mergekit's whole-tensor ops
        return combine(base, deltas, weights)
    flat_base, flat_deltas = base.reshape(-1), deltas.reshape(n_experts, -1)
    out = torch.empty_like(flat_base)

    def span(lo: int, hi: int) -> None:
        for start in range(lo, hi, CHUNK):
            stop = min(start + CHUNK, hi)
            out[start:stop] = combine(flat_base[start:stop], flat_deltas[:, start:stop], weights)

    in_halves(span, out.numel())
    return out.reshape(base.shape)


def _compiled_applies(method: Method, base: torch.Tensor, rescale: bool, trim: str) -> bool:
    """Whether :mod:`genlab.merging.fused` gives this merge's bits: bfloat16 on CPU, no sparsification or the
    TIES trim without rescaling, and the compiled loops checked against torch in this process."""
    if base.dtype != torch.bfloat16 or base.device.type != "cpu" or trim != "mergekit":
        return False
    if method.sparsification not in (None, "magnitude") or (method.sparsification and rescale):
        return False
    from genlab.merging import fused  # numba: imported when a merge can use it

    return fused.agrees_with_torch()


def _task_vectors(
    method: Method, base: torch.Tensor, experts: Iterable[torch.Tensor], n_experts: int, density: Sequence[float],
    rescale: bool, gamma: Sequence[float] | None, epsilon: Sequence[float] | None,
    generator: torch.Generator | None, trim: str,
) -> torch.Tensor:
    """The stacked task vectors θᵢ − θ₀, each sparsified by the method, with torch's ops (mergekit's)."""
    deltas = base.new_empty((n_experts, *base.shape))

    def task_vector(i: int, expert: torch.Tensor, out: torch.Tensor = deltas) -> None:
        if not method.sparsification:
            torch.sub(expert, base, out=out[i])  # the same bits as expert - base, without a temporary
            return
        delta = expert - base
        del expert
        delta = sparsify(
            delta,
            method.sparsification,
            density[i],
            rescale,
            generator,
            gamma=gamma[i] if gamma else 0.01,
            epsilon=epsilon[i] if epsilon else 0.15,
            trim=trim,
        )
        out[i] = delta

    deterministic = method.sparsification in ("magnitude", "magnitude_outliers")  # random draws keep their order
    each_expert(task_vector, experts, n_experts, base.numel(), parallel=deterministic)
    return deltas


def chunked_max(base: torch.Tensor) -> int:
    """The most experts :func:`task_arithmetic` reproduces mergekit for: torch sums up to 16 (tested to 20)
    bfloat16 / float16 rows in order into one float32 accumulator, but float32 / float64 rows from the fifth on
    in another order (tested), which the block-wise sum does not follow."""
    return 16 if base.dtype in (torch.bfloat16, torch.float16) else 4


def task_arithmetic(
    base: torch.Tensor, experts: Sequence[torch.Tensor], weight: Sequence[float], *, normalize: bool = False,
    lam: float = 1.0,
) -> torch.Tensor:
    """θ₀ + λ·Σᵢ wᵢ(θᵢ − θ₀) (÷ Σᵢ wᵢ when ``normalize``), bit for bit what mergekit's ``merge_group`` computes
    without sparsification and sign election, but over blocks of :data:`CHUNK` elements: every intermediate
    stays in the cache and no stacked task vectors are allocated (the output is the only new full-size tensor).

    Each element goes through the same roundings as mergekit's whole-tensor ops: δᵢ = θᵢ − θ₀ and wᵢδᵢ are
    rounded to the merge dtype (wᵢ itself first rounded to it); their sum ``deltas.sum(dim=0)`` accumulates in
    float32 for bfloat16/float16 (torch's reduction type, adding the experts in order) and is rounded once
    (for two experts one addition in the merge dtype is that same rounding); then ``/=`` the summed weights
    (a zero sum becoming 1), ``*= λ`` and ``base +``, each rounded to the merge dtype. Tested against the
    stacked form for 1 to 5 experts and every floating dtype."""
    dtype = base.dtype
    weights = torch.tensor(list(weight), dtype=dtype)
    divisor = weights.reshape(-1, 1).sum(dim=0)
    divisor[divisor.abs() < 1e-8] = 1
    wide = dtype in (torch.bfloat16, torch.float16) and len(experts) > 2  # accumulate as torch's sum does
    flat_base = base.reshape(-1)
    flat = [e.reshape(-1) for e in experts]
    out = torch.empty_like(flat_base)

    def span(lo: int, hi: int) -> None:
        tmp = torch.empty(min(CHUNK, hi - lo), dtype=dtype)
        acc = torch.empty(tmp.numel(), dtype=torch.float32) if wide else None
        for start in range(lo, hi, CHUNK):
            stop = min(start + CHUNK, hi)
            b, o = flat_base[start:stop], out[start:stop]
            t = tmp[: stop - start]
            a = acc[: stop - start] if wide else None
            for i, e in enumerate(flat):
                d = o if i == 0 and not wide else t
                torch.sub(e[start:stop], b, out=d)
                d.mul_(weights[i])
                if wide and i == 0:
                    a.copy_(d)
                elif wide:
                    a.add_(d)
                elif i:
                    o.add_(d)
            if wide:  # torch's sum starts from +0: only a sum of signed zeros tells (−0 + 0 = +0)
                a.add_(0.0)
                o.copy_(a)
            else:
                o.add_(0.0)
            if normalize:
                o.div_(divisor)
            if lam != 1:
                o.mul_(lam)
            torch.add(b, o, out=o)

    in_halves(span, out.numel())
    return out.reshape(base.shape)


def linear_merge(
    tensors: Iterable[torch.Tensor], weight: Sequence[float], normalize: bool = True, chunked: bool = True
) -> torch.Tensor:
    """Weighted average Σᵢ wᵢθᵢ / Σᵢ wᵢ (or the plain weighted sum), accumulated in float32 (float64 for float64
    inputs) and returned in the inputs' dtype, as mergekit's ``linear``. Runs block by block (:data:`CHUNK`
    elements, each block through the same ops: the same bits, tested) unless ``chunked=False``."""
    tensors = list(tensors)
    if len(tensors) != len(weight) or not tensors:
        raise ValueError(f"linear merge expected {len(weight)} tensors, got {len(tensors)}")
    first = tensors[0]
    if not first.is_floating_point():
        raise TypeError("linear merging needs floating-point tensors")
    acc_dtype = torch.float64 if first.dtype == torch.float64 else torch.float32
    coeffs = torch.tensor(list(weight), dtype=acc_dtype)
    total = coeffs.sum()
    flat = [t.reshape(-1) for t in tensors]
    out = torch.empty_like(flat[0])

    def span(lo: int, hi: int, block: int = CHUNK) -> None:
        acc = torch.empty(min(block, hi - lo), dtype=acc_dtype)
        for start in range(lo, hi, block):
            stop = min(start + block, hi)
            a = acc[: stop - start]
            a.zero_()
            for t, c in zip(flat, coeffs):
                a.addcmul_(t[start:stop], c)
            if normalize:
                a.div_(total)
            out[start:stop].copy_(a)

    if chunked:
        in_halves(span, out.numel())
    else:  # mergekit's whole-tensor ops: one block the size of the tensor
        span(0, out.numel(), max(out.numel(), 1))
    return out.reshape(first.shape)


def sce_merge(base: torch.Tensor, experts: Sequence[torch.Tensor], select_topk: float = 1.0,
              int8_mask: bool = False) -> torch.Tensor:  # fmt: skip
    """SCE (Wan et al. 2024): keep the ``select_topk`` fraction of entries whose task vectors vary most across the
    experts, weight each task vector by its mean square (normalised to sum 1), elect signs by mass (TIES) and take
    the weighted mean of the agreeing entries."""
    if not experts:
        return base
    mask_dtype = torch.int8 if int8_mask else base.dtype
    deltas = torch.stack([e - base for e in experts], dim=0)
    if select_topk < 1:
        deltas = deltas * top_variance_mask(deltas, select_topk, mask_dtype).unsqueeze(0)
    agree = sign_mask(deltas, "sum", mask_dtype)
    power = deltas.square().reshape(deltas.shape[0], -1).mean(dim=1)
    total = torch.sum(power).item()
    weights = torch.ones_like(power) / power.shape[0] if abs(total) < 1e-6 else power / total
    while weights.dim() < deltas.dim():
        weights = weights.unsqueeze(-1)
    kept = weights * agree
    return base + (deltas * kept).sum(dim=0) / torch.sum(kept, dim=0).clamp(min=1e-6)


def top_variance_mask(deltas: torch.Tensor, fraction: float, mask_dtype: torch.dtype) -> torch.Tensor:
    """1 at the ``int(fraction · #nonzero variances)`` entries of largest variance across experts, else 0."""
    if fraction <= 0:
        return torch.zeros_like(deltas[0], dtype=mask_dtype)
    if fraction >= 1:
        return torch.ones_like(deltas[0], dtype=mask_dtype)
    var = torch.var(deltas, dim=0, unbiased=False)
    k = int(torch.count_nonzero(var) * fraction)
    mask = torch.zeros_like(var, dtype=mask_dtype)
    if k:
        mask.view(-1)[torch.topk(var.abs().view(-1), k=k, largest=True).indices] = 1
    return mask


def merge_tensor(
    method: str | Method,
    tensors: Sequence[torch.Tensor] | Sequence[Callable[[], torch.Tensor]],
    base_index: int | None,
    model_params: Sequence[Mapping[str, Any]],
    shared: Mapping[str, Any] | None = None,
    generator: torch.Generator | None = None,
    consensus: str | None = None,
    trim: str = "mergekit",
) -> torch.Tensor:
    """Merge one tensor with any method but ``cmm``. ``tensors`` are the inputs (or zero-argument loaders) in
    model order, ``base_index`` which one is the base (None when there is none, or for a method that does not
    treat the base apart: linear, karcher, passthrough), ``model_params[i]`` the per-model parameters (``weight``,
    ``density``, ``scale``, ...) of input i (ignored for the base) and ``shared`` the method-wide ones (``normalize``,
    ``lambda``, ``t``, ...; defaults filled in). Inputs must share dtype and shape."""
    m = get_method(method) if isinstance(method, str) else method
    shared = {p.name: p.default for p in m.shared_params if not p.required} | dict(shared or {})
    missing = [p.name for p in m.shared_params if p.name not in shared]
    if missing:
        raise MergeConfigError(f"{m.name} needs the parameter {missing[0]!r}")
    load = [t if callable(t) else (lambda t=t: t) for t in tensors]
    if not m.uses_base:
        base_index = None
    if base_index is None and m.needs_base:
        raise MergeConfigError(f"{m.name} needs a base model")
    others = [i for i in range(len(load)) if i != base_index]
    per = [model_params[i] for i in others]

    def column(name: str, default: Any = REQUIRED) -> list[Any]:
        if default is REQUIRED and any(name not in p for p in per):
            raise MergeConfigError(f"{m.name} needs the parameter {name!r} for every model")
        return [p.get(name, default) for p in per]

    def base() -> torch.Tensor:
        return load[base_index]()

    def experts() -> list[torch.Tensor]:
        return [load[i]() for i in others]

    if m.name == "linear":
        return linear_merge((f() for f in load), [float(w) for w in column("weight")], bool(shared["normalize"]))
    if m.name == "passthrough":
        (scale,) = column("scale", None)
        x = load[0]()
        return x if scale is None else x * scale
    if m.name == "karcher":
        return geometric.karcher(experts(), int(shared["max_iter"]), float(shared["tol"]))
    if m.name == "nuslerp":
        b = None if base_index is None else base()
        return geometric.nuslerp_merge(experts(), column("weight"), b, bool(shared["nuslerp_row_wise"]),
                                       bool(shared["nuslerp_flatten"]))  # fmt: skip
    if m.name == "slerp":
        (expert,) = experts()
        return geometric.slerp(float(shared["t"]), base(), expert)
    if m.name == "model_stock":
        return geometric.model_stock(base(), experts(), bool(shared["filter_wise"]))
    if m.name == "sce":
        return sce_merge(base(), experts(), float(shared["select_topk"]), bool(shared["int8_mask"]))
    if m.name == "cmm":
        raise MergeConfigError("cmm merges whole checkpoints (genlab.merging.merge), not one tensor")
    return gta_merge(
        m,
        base(),
        (load[i]() for i in others),
        len(others),
        [float(w) for w in column("weight")],
        column("density", 1.0),
        normalize=shared.get("normalize"),
        rescale=shared.get("rescale"),
        lam=float(shared.get("lambda", 1.0)),
        int8_mask=bool(shared.get("int8_mask", False)),
        consensus=consensus,
        gamma=column("gamma", 0.01),
        epsilon=column("epsilon", 0.15),
        generator=generator,
        trim=trim,
    )
