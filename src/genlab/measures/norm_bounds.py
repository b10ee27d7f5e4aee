"""Capacity bounds for trained torch MLPs and CNNs: Schatten-p quasi-norm bounds for rank-sparse networks
(Ledent, Alves, Lei, arXiv:2510.21945) side by side with parameter counting and norm-based bounds.

Every value here is the **dominant term of a generalization-gap bound, without constants and log factors**
(``certified=False``): the numbers are for comparing bounds with each other on the same network, margin and
sample, not certificates of the test error. All bounds use the same margin γ.

Network model: a feed-forward composition of Linear / Conv layers (weights A_ℓ, biases ignored: the theorems are
stated for bias-free networks) and 1-Lipschitz, positively homogeneous activations (ReLU: ρ_ℓ = 1). Layers are
taken in the order they run during a forward pass. A conv layer's matrix is its (out channels × in channels·kernel)
reshape; its spectral norm is that matrix's (a convention, not the operator norm of the convolution).

Notation: N training points, depth L, s_ℓ = ‖A_ℓ‖ (spectral), ‖·‖_F, widths w_ℓ (out) and w_{ℓ−1} (in; the patch
dimension for conv), B = max‖x‖₂, M_ℓ = 0 (reference matrices), γ the margin, σ(A) singular values.

* Schatten-p quasi-norm: ‖A‖_{S_p} = (Σ σ_i^p)^{1/p}; ‖A‖_{S_p}^p → rank(A) as p → 0. Singular values ≤ ``rank_tol``
  · σ_max are treated as exact zeros (numerical noise) for every p.
* Thm 3.6 (our reading of the shape): gap ≲ sqrt(L/N · Σ_ℓ T_ℓ(p_ℓ)) with
  T_ℓ(p) = (B ∏_i s_i / γ)^{2p/(p+2)} · (‖A_ℓ‖_{S_p}/s_ℓ)^{2p/(p+2)} · (w_ℓ + w_{ℓ−1})^{2/(p+2)} · P_ℓ^{p/(p+2)},
  P_ℓ the number of spatial positions of a conv layer (1 for dense layers); p_ℓ ∈ [0, 2] optimised per layer
  over a grid (the grid's union-bound log factor is dropped). At p → 0, T_ℓ → rank(A_ℓ)·(w_ℓ + w_{ℓ−1}): the
  parameter count of a rank-r factorisation. Where 1/γ enters is our reading (the brief marks it open).
* Thm 3.7 (loss augmentation): B ∏_i s_i in T_ℓ becomes B_{ℓ−1} ∏_{i≥ℓ} s_i with B_{ℓ−1} the largest norm of a
  layer-ℓ input (patch) over the training points.
* Parameter counting (Long & Sedghi 2020; Graf et al. 2022): sqrt(P·L/N), P = number of weights.
* Spectral (Bartlett, Foster, Telgarsky 2017): (‖X‖_F/(γN)) ∏ s_i · (Σ_i (‖A_iᵀ‖_{2,1}/s_i)^{2/3})^{3/2}.
* Frobenius (Golowich, Rakhlin, Shamir 2018): B sqrt(L) ∏‖A_i‖_F / (γ sqrt(N)).
* PAC-Bayes spectral (Neyshabur et al. 2018): sqrt(B² L² h ∏ s_i² Σ_i ‖A_i‖_F²/s_i² / (γ² N)), h = max width.
* ℓ₁ path norm (Neyshabur, Tomioka, Srebro 2015, the p = 1 case, width-free): 2^L φ₁ B_∞ / (γ sqrt(N)),
  φ₁ = Σ over input-output paths of ∏|w| (one forward pass of the net with |weights| on an all-ones input),
  B_∞ = max‖x‖_∞ (the sqrt(log d) factor is dropped with the other logs).

All of these are invariant to rescaling layer ℓ by c > 0 and layer ℓ+1 by 1/c (the network function is too).

**With logs and union-bound factors** (``NetworkBounds.accounted``; constants still 1, the papers' constants are
not used): every bound gets the confidence term sqrt(ln(1/δ)/N); the Schatten bounds pay for choosing p_ℓ per
layer from G grid values by a union bound over the G^L choices, sqrt((L ln G + ln(1/δ))/N) instead; the
fixed-p Schatten bounds (p = 0, p = 2) pay only the confidence term. The multiplicative log factors the comparison
bounds state are restored: ln W for Bartlett et al. (W the largest width) and sqrt(ln(L·h)) for the PAC-Bayes
bound. (Factors hidden in Õ(·) without a stated form are not added to any bound.)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "LayerStats",
    "NetworkBounds",
    "effective_rank",
    "margins_of",
    "network_bounds",
    "schatten_norm",
    "schatten_term",
]

DEFAULT_P_GRID = np.concatenate([[0.0], np.geomspace(0.01, 2.0, 80)])


def schatten_norm(sv: np.ndarray, p: float, rank_tol: float = 1e-6, powered: bool = False) -> float:
    """‖A‖_{S_p} (or ‖A‖_{S_p}^p when ``powered``) from singular values; p = 0 returns the numerical rank
    (the limit of ‖A‖_{S_p}^p). Unpowered values overflow to inf for tiny p: use ``powered`` there."""
    sv = np.asarray(sv, dtype=float)
    kept = sv[sv > rank_tol * sv.max()] if sv.size and sv.max() > 0 else sv[:0]
    if p == 0:
        return float(kept.size)
    if p < 0:
        raise ValueError(f"p must be >= 0, got {p}")
    total = float(np.sum(kept**p))
    return total if powered else total ** (1.0 / p)


def effective_rank(sv: np.ndarray) -> float:
    """Roy & Vetterli's effective rank exp(H(σ/Σσ)) (1 for rank one, n for n equal singular values)."""
    sv = np.asarray(sv, dtype=float)
    q = sv[sv > 0] / sv.sum()
    return float(np.exp(-np.sum(q * np.log(q))))


def schatten_term(
    sv: np.ndarray,
    width_sum: float,
    log_scale: float,
    p: np.ndarray | float,
    positions: int = 1,
    rank_tol: float = 1e-6,
) -> np.ndarray:
    """log T_ℓ(p) of Thm 3.6 for one layer, for each p (vectorized; p = 0 is the exact limit).

    ``log_scale`` = log(B ∏ s_i / γ) (or the loss-augmented scale of Thm 3.7). Returned in log space.
    """
    p = np.atleast_1d(np.asarray(p, dtype=float))
    sv = np.asarray(sv, dtype=float)
    r = sv[sv > rank_tol * sv.max()] / sv.max()
    # (2p/(p+2)) * log(‖A‖_{S_p}/s) = (2/(p+2)) * log Σ (σ/s)^p  — finite and continuous at p = 0.
    log_sum = np.log(np.sum(r[None, :] ** p[:, None], axis=1))
    return (
        (2 * p / (p + 2)) * log_scale
        + (2 / (p + 2)) * log_sum
        + (2 / (p + 2)) * np.log(width_sum)
        + (p / (p + 2)) * np.log(positions)
    )


@dataclass
class LayerStats:
    name: str
    kind: str
    shape: tuple[int, int]  # (w_out, w_in) of the layer matrix
    positions: int
    sv: np.ndarray = field(repr=False)
    in_norm: float  # B_{ℓ−1}: largest input (patch) norm over the data
    spectral: float = 0.0
    frobenius: float = 0.0
    norm21: float = 0.0  # ‖Aᵀ‖_{2,1}: sum of the l2 norms of the rows of A
    rank: int = 0
    stable_rank: float = 0.0
    eff_rank: float = 0.0
    p_opt: float = 0.0
    p_opt_aug: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        keys = (
            "name",
            "kind",
            "shape",
            "positions",
            "in_norm",
            "spectral",
            "frobenius",
            "rank",
            "stable_rank",
            "eff_rank",
            "p_opt",
            "p_opt_aug",
        )
        return {k: getattr(self, k) for k in keys}


@dataclass
class NetworkBounds:
    """All bound shapes (key → value; dominant terms, no constants, no logs) for one network."""

    gamma: float
    margin_loss: float
    n: int
    depth: int
    params: int
    low_rank_params: int
    bounds: dict[str, float]
    layers: list[LayerStats]
    certified: bool = False
    biases_ignored: int = 0  # layers whose bias the bounds leave out (the theorems assume bias-free nets)
    accounted: dict[str, float] = field(default_factory=dict)  # with logs and union-bound factors (see module)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gamma": self.gamma,
            "margin_loss": self.margin_loss,
            "n": self.n,
            "depth": self.depth,
            "params": self.params,
            "low_rank_params": self.low_rank_params,
            "bounds": dict(self.bounds),
            "layers": [layer.to_dict() for layer in self.layers],
            "certified": self.certified,
            "biases_ignored": self.biases_ignored,
            "accounted": dict(self.accounted),
        }


def accounted_bounds(bounds: dict[str, float], n: int, depth: int, grid_size: int, width: int,
                     delta: float) -> dict[str, float]:
    """The bounds with their logs and union-bound factors (constants 1; see the module docstring)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    conf = np.sqrt(np.log(1 / delta) / n)
    grid_conf = np.sqrt((depth * np.log(grid_size) + np.log(1 / delta)) / n)
    factor = {"spectral": np.log(width), "pac_bayes": np.sqrt(np.log(depth * width))}
    out = {}
    for key, value in bounds.items():
        extra = grid_conf if key in ("schatten", "schatten_aug") else conf
        out[key] = float(value * factor.get(key, 1.0) + extra)
    return out


def margins_of(outputs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Multi-class margins f(x)_y − max_{j≠y} f(x)_j; for one output column, y·f(x) with y ∈ {−1, +1} (or {0, 1})."""
    out = np.asarray(outputs, dtype=float)
    y = np.asarray(y)
    if out.ndim == 1 or out.shape[1] == 1:
        s = np.where(y > 0, 1.0, -1.0)
        return s * out.reshape(-1)
    idx = y.astype(int)
    true = out[np.arange(len(idx)), idx]
    other = out.copy()
    other[np.arange(len(idx)), idx] = -np.inf
    return true - other.max(axis=1)


def _forward_records(model, x):
    """Run the model once, recording each Linear/Conv layer's matrix, input-norm bound and spatial positions."""
    import torch
    from torch import nn

    kinds = (nn.Linear, nn.Conv1d, nn.Conv2d)
    records: list[tuple[str, Any, float, int]] = []
    seen: set[int] = set()
    names = {id(m): n for n, m in model.named_modules()}

    def hook(mod, inputs, out):
        if id(mod) in seen:
            raise ValueError(f"layer {names[id(mod)]!r} runs twice in one forward pass (weight sharing unsupported)")
        seen.add(id(mod))
        inp = inputs[0].detach()
        if isinstance(mod, nn.Linear):
            in_norm = float(inp.reshape(-1, inp.shape[-1]).norm(dim=1).max())
            positions = 1
        else:
            if isinstance(mod, nn.Conv1d):
                inp = inp.unsqueeze(-1)
                k, s, p, d = (mod.kernel_size[0], 1), (mod.stride[0], 1), (mod.padding[0], 0), (mod.dilation[0], 1)
            else:
                k, s, p, d = mod.kernel_size, mod.stride, mod.padding, mod.dilation
            if isinstance(p, str):
                raise ValueError(f"layer {names[id(mod)]!r}: string padding is not supported")
            patches = torch.nn.functional.unfold(inp, k, dilation=d, padding=p, stride=s)
            in_norm = float(patches.norm(dim=1).max())
            positions = int(np.prod(out.shape[2:]))
        records.append((names[id(mod)], mod, in_norm, positions))

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, kinds)]
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        for h in handles:
            h.remove()
    if not records:
        raise ValueError("the model has no Linear or Conv layers")
    return out.detach(), records


def _path_norm(model, x_one) -> float:
    """φ₁ = Σ over paths of ∏|w|: forward pass of a bias-free copy with |weights| on an all-ones input
    (exact for Linear/Conv/ReLU/flatten/average-pool networks: every activation is then non-negative)."""
    import torch
    from torch import nn

    sq = copy.deepcopy(model)
    with torch.no_grad():
        for m in sq.modules():
            if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                m.weight.abs_()
                if m.bias is not None:
                    m.bias.zero_()
        out = sq(torch.ones_like(x_one))
    return float(out.double().sum().clamp_min(0))


def network_bounds(
    model,
    x,
    y,
    gamma: float | None = None,
    margin_quantile: float = 0.01,
    p_grid: np.ndarray | None = None,
    rank_tol: float = 1e-6,
    delta: float = 0.05,
) -> NetworkBounds:
    """Every bound shape for a trained network on its training sample (x, y).

    ``gamma``: the margin; by default the ``margin_quantile`` quantile of the training margins (the largest γ
    that loses at most that fraction of training points). Raises ValueError if that margin is not positive.
    Per-layer exponents p_ℓ are optimised over ``p_grid`` (default: 0 and 80 log-spaced points in [0.01, 2]);
    ``delta`` is the confidence of the ``accounted`` bounds.
    """
    import torch

    x = torch.as_tensor(x)
    n = int(x.shape[0])
    was_training = model.training
    model.eval()
    try:
        out, records = _forward_records(model, x)
        margins = margins_of(out.cpu().numpy(), np.asarray(y))
        if gamma is None:
            gamma = float(np.quantile(margins, margin_quantile, method="lower"))
            if gamma <= 0:
                raise ValueError(
                    f"the {margin_quantile:.0%} margin quantile is {gamma:.3g} <= 0: the network misclassifies more "
                    "than that fraction of the training set; pass gamma or a larger margin_quantile"
                )
        elif gamma <= 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        path = _path_norm(model, x[:1])
    finally:
        model.train(was_training)

    grid = DEFAULT_P_GRID if p_grid is None else np.asarray(p_grid, dtype=float)
    if np.any(grid < 0) or np.any(grid > 2):
        raise ValueError("p_grid values must lie in [0, 2]")
    layers: list[LayerStats] = []
    for name, mod, in_norm, positions in records:
        a = mod.weight.detach().double().reshape(mod.weight.shape[0], -1).cpu().numpy()
        sv = np.linalg.svd(a, compute_uv=False)
        st = LayerStats(name, type(mod).__name__, a.shape, positions, sv, in_norm)
        st.spectral = float(sv[0])
        st.frobenius = float(np.sqrt(np.sum(sv**2)))
        st.norm21 = float(np.linalg.norm(a, axis=1).sum())
        st.rank = int(np.sum(sv > rank_tol * sv[0]))
        st.stable_rank = float(st.frobenius**2 / st.spectral**2)
        st.eff_rank = effective_rank(sv)
        layers.append(st)

    depth = len(layers)
    log_s = np.log([st.spectral for st in layers])
    b_in = float(x.reshape(n, -1).double().norm(dim=1).max())
    b_inf = float(x.reshape(n, -1).double().abs().max())
    xf = float(x.reshape(n, -1).double().norm())
    log_scale = np.log(b_in) + log_s.sum() - np.log(gamma)
    terms, terms_aug, terms_p2, terms_p0 = [], [], [], []
    for ell, st in enumerate(layers):
        wsum = st.shape[0] + st.shape[1]
        lt = schatten_term(st.sv, wsum, log_scale, grid, st.positions, rank_tol)
        scale_aug = np.log(max(st.in_norm, 1e-300)) + log_s[ell:].sum() - np.log(gamma)
        lt_aug = schatten_term(st.sv, wsum, scale_aug, grid, st.positions, rank_tol)
        st.p_opt, st.p_opt_aug = float(grid[np.argmin(lt)]), float(grid[np.argmin(lt_aug)])
        terms.append(np.exp(lt.min()))
        terms_aug.append(np.exp(lt_aug.min()))
        terms_p2.append(np.exp(schatten_term(st.sv, wsum, log_scale, 2.0, st.positions, rank_tol)[0]))
        terms_p0.append(st.rank * wsum)

    prod_s = float(np.exp(log_s.sum()))
    params = int(sum(st.shape[0] * st.shape[1] for st in layers))
    width = max(max(st.shape) for st in layers)
    ratio_f = sum((st.frobenius / st.spectral) ** 2 for st in layers)
    bounds = {
        "schatten": float(np.sqrt(depth / n * sum(terms))),
        "schatten_aug": float(np.sqrt(depth / n * sum(terms_aug))),
        "schatten_p0": float(np.sqrt(depth / n * sum(terms_p0))),
        "schatten_p2": float(np.sqrt(depth / n * sum(terms_p2))),
        "param_count": float(np.sqrt(params * depth / n)),
        "spectral": float(
            xf / (gamma * n) * prod_s * sum((st.norm21 / st.spectral) ** (2 / 3) for st in layers) ** 1.5
        ),
        "frobenius": float(b_in * np.sqrt(depth) * np.prod([st.frobenius for st in layers]) / (gamma * np.sqrt(n))),
        "pac_bayes": float(np.sqrt(b_in**2 * depth**2 * width * prod_s**2 * ratio_f / (gamma**2 * n))),
        "path_norm": float(2.0**depth * path * b_inf / (gamma * np.sqrt(n))),
    }
    return NetworkBounds(
        accounted=accounted_bounds(bounds, n, depth, len(grid), width, delta),
        gamma=float(gamma),
        margin_loss=float(np.mean(margins < gamma)),
        n=n,
        depth=depth,
        params=params,
        low_rank_params=int(sum(terms_p0)),
        bounds=bounds,
        layers=layers,
        biases_ignored=sum(getattr(mod, "bias", None) is not None for _, mod, _, _ in records),
    )
