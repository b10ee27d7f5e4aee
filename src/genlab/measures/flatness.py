"""Relative flatness (Petzka et al., NeurIPS 2021) of one linear layer of any torch model.

For a layer ``z = W φ (+ b)`` with ``W ∈ R^{k×d}`` (rows ``w_s``) acting on features ``φ(x) ∈ R^d``, and the
empirical loss ``L = mean_i ℓ(f(x_i), y_i)``, the neuron-wise relative flatness is

    κ^φ_Tr(W) = Σ_{s,s'} ⟨w_s, w_s'⟩ · Tr(H_{s,s'}),        H_{s,s'} = ∂²L / ∂w_s ∂w_s'.

Because ``z`` is linear in ``W`` and ``φ`` does not depend on ``W``, the per-sample Hessian factorises as
``(φ_i φ_iᵀ) ⊗ G_i`` with ``G_i = ∂²ℓ_i/∂z_i²`` (the Hessian of the loss w.r.t. the layer's outputs, whatever
follows the layer). Hence ``Tr(H_{s,s'}) = mean_i ‖φ_i‖² G_i[s, s']`` exactly, and

    κ = ⟨W Wᵀ, T⟩_F,   T = mean_i ‖φ_i‖² G_i   (the k×k matrix of neuron-wise Hessian traces).

When the layer's outputs are the logits of a softmax cross-entropy, ``G_i = diag(p_i) − p_i p_iᵀ`` and

    κ_i = ‖φ_i‖² (Σ_s p_is ‖w_s‖² − ‖Σ_s p_is w_s‖²),     Tr(H_i) = ‖φ_i‖² Σ_c p_ic (1 − p_ic).

Han et al. (arXiv 2509.17738, Lemma A.2) track the upper bound ``κ ≤ ‖W‖_F² · Tr(H)`` (T is PSD, so
``⟨A, T⟩ ≤ Tr(A) λ_max(T) ≤ Tr(A) Tr(T)``); both the exact κ and that bound are returned here.
Everything is vectorised over samples; the layer's input must be ``(n, d)`` (one feature vector per sample).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "RelativeFlatness",
    "capture_layer",
    "flatness_penalty",
    "relative_flatness",
    "relative_flatness_from_features",
    "softmax_ce_flatness_terms",
]


@dataclass(frozen=True)
class RelativeFlatness:
    """Relative flatness of one layer on a data set.

    ``kappa``: exact κ^φ_Tr = ⟨W Wᵀ, T⟩. ``kappa_bound``: ‖W‖_F² · Tr(H) ≥ kappa (what Han et al. plot).
    ``trace_hessian``: Tr(H) = Σ_s Tr(H_{s,s}) of the mean loss w.r.t. W. ``weight_norm_sq``: ‖W‖_F².
    ``neuron_traces``: the k×k matrix T[s, s'] = Tr(H_{s,s'}). ``n``: number of samples.
    """

    kappa: float
    kappa_bound: float
    trace_hessian: float
    weight_norm_sq: float
    neuron_traces: np.ndarray
    n: int

    def as_dict(self) -> dict[str, float]:
        return {
            "kappa": self.kappa,
            "kappa_bound": self.kappa_bound,
            "trace_hessian": self.trace_hessian,
            "weight_norm_sq": self.weight_norm_sq,
        }


def _check_features(features: torch.Tensor, weight: torch.Tensor) -> None:
    if features.ndim != 2:
        raise ValueError(
            f"features must be (n, d) with one vector per sample, got shape {tuple(features.shape)}; "
            "reshape sequence features to the positions the layer is evaluated on"
        )
    if weight.ndim != 2 or weight.shape[1] != features.shape[1]:
        raise ValueError(f"weight must be (k, d={features.shape[1]}), got shape {tuple(weight.shape)}")


def _normalize(features: torch.Tensor) -> torch.Tensor:
    return features / features.norm(dim=1, keepdim=True).clamp_min(1e-12)


def softmax_ce_flatness_terms(
    features: torch.Tensor, weight: torch.Tensor, logits: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-sample closed forms for softmax cross-entropy on ``logits`` (the layer's outputs).

    Returns ``(kappa_i, trace_i, T_sum)``: the exact per-sample κ_i, the per-sample Hessian trace
    Tr(H_i) = ‖φ_i‖² Σ_c p_c(1 − p_c), and ``T_sum = Σ_i ‖φ_i‖² (diag p_i − p_i p_iᵀ)`` (k×k, summed over samples).
    Differentiable; no (n, k, k) tensor is formed.
    """
    _check_features(features, weight)
    if logits.shape != (features.shape[0], weight.shape[0]):
        raise ValueError(f"logits must be (n, k) = {(features.shape[0], weight.shape[0])}, got {tuple(logits.shape)}")
    p = torch.softmax(logits, dim=1)
    sq = (features * features).sum(1)
    row_sq = (weight * weight).sum(1)  # ‖w_s‖²
    mean_row = p @ weight  # Σ_s p_s w_s, (n, d)
    kappa_i = sq * (p @ row_sq - (mean_row * mean_row).sum(1))
    trace_i = sq * (p * (1 - p)).sum(1)
    sp = sq[:, None] * p
    t_sum = torch.diag(sp.sum(0)) - sp.T @ p
    return kappa_i, trace_i, t_sum


def relative_flatness_from_features(
    features: torch.Tensor,
    weight: torch.Tensor,
    logits: torch.Tensor | None = None,
    output_hessian: torch.Tensor | None = None,
    normalize_features: bool = False,
) -> RelativeFlatness:
    """κ^φ_Tr from a layer's inputs ``features`` (n, d) and weight ``W`` (k, d).

    Give ``logits`` (n, k) for softmax cross-entropy on the layer's outputs (closed form), or the per-sample
    output Hessians ``output_hessian`` (n, k, k) for any other loss / downstream network.
    ``normalize_features`` replaces φ_i by φ_i/‖φ_i‖ (makes the measure invariant to feature scale).
    """
    features = torch.as_tensor(features).detach().double()
    weight = torch.as_tensor(weight).detach().double()
    _check_features(features, weight)
    if normalize_features:
        features = _normalize(features)
    n = features.shape[0]
    if n == 0:
        raise ValueError("no samples")
    if output_hessian is not None:
        g = torch.as_tensor(output_hessian).detach().double()
        if g.shape != (n, weight.shape[0], weight.shape[0]):
            raise ValueError(f"output_hessian must be (n, k, k), got {tuple(g.shape)}")
        t_sum = torch.einsum("n,nab->ab", (features * features).sum(1), g)
    elif logits is not None:
        _, _, t_sum = softmax_ce_flatness_terms(features, weight, torch.as_tensor(logits).detach().double())
    else:
        raise ValueError("give logits (softmax cross-entropy) or output_hessian (any other loss)")
    return _assemble(t_sum, weight, n)


def _assemble(t_sum: torch.Tensor, weight: torch.Tensor, n: int) -> RelativeFlatness:
    t = t_sum / n
    gram = weight @ weight.T
    w2 = float(torch.trace(gram))
    tr_h = float(torch.trace(t))
    return RelativeFlatness(
        kappa=float((gram * t).sum()),
        kappa_bound=w2 * tr_h,
        trace_hessian=tr_h,
        weight_norm_sq=w2,
        neuron_traces=t.cpu().numpy(),
        n=n,
    )


def flatness_penalty(
    features: torch.Tensor,
    weight: torch.Tensor,
    logits: torch.Tensor,
    temperature: float = 1.0,
    normalize_features: bool = True,
) -> torch.Tensor:
    """Differentiable batch relative flatness in Han et al.'s bound form: mean_i ‖W‖_F² ‖φ_i‖² Σ_c p_ic(1 − p_ic).

    ``p = softmax(logits / temperature)``. With ``normalize_features`` ‖φ_i‖ is set to 1 (the option the
    paper's ascent regulariser uses, so the penalty cannot grow by inflating features). Subtract λ times this
    from the loss to regularise *away* from flat solutions; add it to seek flatness.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    _check_features(features, weight)
    p = torch.softmax(logits / temperature, dim=1)
    spread = (p * (1 - p)).sum(1)
    if not normalize_features:
        spread = spread * (features * features).sum(1)
    return (weight * weight).sum() * spread.mean()


# -- measuring a model -------------------------------------------------------------------------------------


def _find_linear(model: nn.Module, layer: str) -> nn.Module:
    modules = dict(model.named_modules())
    if layer not in modules:
        linear = [name for name, m in modules.items() if isinstance(m, nn.Linear)]
        raise ValueError(f"model has no module {layer!r}; its linear layers are: {', '.join(linear) or '(none)'}")
    mod = modules[layer]
    w = getattr(mod, "weight", None)
    if not isinstance(w, torch.Tensor) or w.ndim != 2:
        raise ValueError(f"module {layer!r} ({type(mod).__name__}) has no 2-D weight; pick an nn.Linear layer")
    return mod


class capture_layer:
    """Context manager: records the input and output of ``model.<layer>`` on every forward.

    With ``leaf_output=True`` the layer's output is replaced by a detached leaf that requires grad, so that
    derivatives of the model's output w.r.t. the layer's output can be taken (``self.output``).
    """

    def __init__(self, model: nn.Module, layer: str, leaf_output: bool = False):
        self.module = _find_linear(model, layer)
        self.leaf_output = leaf_output
        self.input: torch.Tensor | None = None
        self.output: torch.Tensor | None = None

    def _hook(self, module: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor | None:
        self.input = args[0]
        if self.leaf_output:
            out = out.detach().requires_grad_(True)
            self.output = out
            return out
        self.output = out
        return None

    def __enter__(self) -> capture_layer:
        self._handle = self.module.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.remove()


def _batches(data: Iterable | tuple[torch.Tensor, torch.Tensor]) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    if isinstance(data, tuple | list) and len(data) == 2 and isinstance(data[0], torch.Tensor):
        return [(data[0], data[1])]
    return data  # a DataLoader or any iterable of (x, y)


def relative_flatness(
    model: nn.Module,
    layer: str,
    data: Iterable | tuple[torch.Tensor, torch.Tensor],
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    normalize_features: bool = False,
) -> RelativeFlatness:
    """Relative flatness κ^φ_Tr of ``model.<layer>`` (an ``nn.Linear``) over ``data``.

    ``data``: a DataLoader (or any iterable) of ``(x, y)`` batches, or one ``(x, y)`` pair of tensors.
    ``loss``: per-sample loss ``loss(model_output, y) -> (n,)``; None means softmax cross-entropy.

    If the layer's output *is* the model's output and the loss is cross-entropy, the closed form is used.
    Otherwise the per-sample Hessians of the loss w.r.t. the layer's outputs are taken with autograd
    (k extra backward passes per batch, vectorised over samples). Samples must not interact in the forward
    pass: call ``model.eval()`` first if it has batch norm or dropout.
    """
    weight = _find_linear(model, layer).weight.detach().double()
    k = weight.shape[0]
    t_sum = torch.zeros(k, k, dtype=torch.float64, device=weight.device)
    n = 0
    for x, y in _batches(data):
        ce_closed_form = loss is None
        with capture_layer(model, layer, leaf_output=not ce_closed_form) as cap:
            if ce_closed_form:
                with torch.no_grad():
                    out = model(x)
                if out is not cap.output:
                    # the layer is not the last one: fall back to autograd with the CE loss
                    ce_closed_form = False
                    cap.leaf_output = True
                    out = model(x)
            else:
                out = model(x)
        phi = cap.input.detach().double()
        _check_features(phi, weight)
        if normalize_features:
            phi = _normalize(phi)
        sq = (phi * phi).sum(1)
        if ce_closed_form:
            _, _, t_b = softmax_ce_flatness_terms(phi, weight, out.detach().double())
        else:
            t_b = _autograd_t_sum(out, cap.output, y, sq, loss)
        t_sum += t_b
        n += phi.shape[0]
    if n == 0:
        raise ValueError("data yielded no samples")
    return _assemble(t_sum, weight, n)


def _autograd_t_sum(
    out: torch.Tensor,
    z: torch.Tensor,
    y: torch.Tensor,
    sq: torch.Tensor,
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None,
) -> torch.Tensor:
    """Σ_i ‖φ_i‖² G_i with G_i = ∂²ℓ_i/∂z_i², from k Hessian-vector products of the summed loss."""
    per_sample = F.cross_entropy(out, y, reduction="none") if loss is None else loss(out, y)
    if per_sample.ndim != 1 or per_sample.shape[0] != z.shape[0]:
        raise ValueError(f"loss must return one value per sample, shape ({z.shape[0]},), got {tuple(per_sample.shape)}")
    (g,) = torch.autograd.grad(per_sample.sum(), z, create_graph=True)
    k = z.shape[1]
    t = torch.zeros(k, k, dtype=torch.float64, device=z.device)
    for s in range(k):  # loop over output neurons (k), never over samples
        (row,) = torch.autograd.grad(g[:, s].sum(), z, retain_graph=s < k - 1, allow_unused=True)
        if row is not None:
            t[s] = sq @ row.detach().double()  # row[i, s'] = G_i[s, s'] (samples are independent)
    return t
