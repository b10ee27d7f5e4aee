"""Geometric merges of one tensor: spherical interpolation (``slerp``, ``nuslerp``), the spherical weighted mean
(``karcher``) and Model Stock's interpolation towards the base (``model_stock``).

Each follows mergekit 0.1.5 operation by operation (same dtypes, the same reduction order, the same chunking of
slerp's reductions), because a merge must give the same bits; the maths is standard:

- slerp(t; a, b) = sin((1−t)θ)/sin θ · a + sin(tθ)/sin θ · b with cos θ = ⟨a/|a|, b/|b|⟩ over the whole tensor,
  linear interpolation when |cos θ| > 0.9995 (nearly collinear). Computed in float32 (float64 for float64 inputs),
  in chunks of 2²⁰ elements, so no full-size float32 copy of an input exists.
- nuslerp: the same interpolation of the task vectors (or of the models when there is no base) with t from the
  two weights, over the flattened tensor (``nuslerp_flatten``, default), over rows (``nuslerp_row_wise``) or over
  the last axis; in the inputs' dtype.
- karcher: the Karcher (Fréchet) mean on the unit sphere of the normalised tensors by Riemannian gradient steps
  (at most ``max_iter``, stop when the tangent norm is below ``tol``), rescaled by the mean norm.
- model_stock (Jang et al. 2024): t = k·cos θ / (1 + (k−1)·cos θ) from the mean pairwise cosine of the k task
  vectors (over the whole tensor, or per row with ``filter_wise``), then t·mean(models) + (1−t)·base.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

SLERP_CHUNK = 1 << 20  # elements per chunk of slerp's float32 work (mergekit's bound on scratch memory)
DOT_THRESHOLD = 0.9995


def _acc_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def slerp(t: float, v0: torch.Tensor, v1: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Spherical interpolation from ``v0`` (t = 0) to ``v1`` (t = 1) over the whole tensor, in the inputs' dtype."""
    acc = _acc_dtype(v0)
    a, b = v0.reshape(1, -1), v1.reshape(1, -1)
    tt = torch.tensor([[t]], dtype=acc)
    n = a.shape[1]
    if n == 0:
        return ((1 - tt) * a + tt * b).reshape(v0.shape).to(v0.dtype)
    spans = [(s, min(s + SLERP_CHUNK, n)) for s in range(0, n, SLERP_CHUNK)]

    def part(x: torch.Tensor, s: int, e: int) -> torch.Tensor:
        return x[:, s:e].to(acc)

    norm_a = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(part(a, s, e), dim=1, keepdim=True) for s, e in spans]), dim=0
    )
    norm_b = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(part(b, s, e), dim=1, keepdim=True) for s, e in spans]), dim=0
    )
    norm_a = torch.where(norm_a > eps, norm_a, 1)
    norm_b = torch.where(norm_b > eps, norm_b, 1)
    dots = [((part(a, s, e) / norm_a) * (part(b, s, e) / norm_b)).sum(dim=1, keepdim=True) for s, e in spans]
    dot = torch.stack(dots).sum(dim=0).clamp(-1, 1)
    near = dot.abs() > DOT_THRESHOLD
    theta = torch.acos(torch.where(near, 0, dot))
    sin_theta = torch.sin(theta)
    ca = torch.where(near, 1 - tt, torch.sin((1 - tt) * theta) / sin_theta)
    cb = torch.where(near, tt, torch.sin(tt * theta) / sin_theta)
    out = torch.empty_like(a)
    for s, e in spans:
        out[:, s:e] = ca * part(a, s, e) + cb * part(b, s, e)
    return out.reshape(v0.shape)


def nuslerp(
    t: float, v0: torch.Tensor, v1: torch.Tensor, row_wise: bool = False, flatten: bool = True, eps: float = 1e-8
) -> torch.Tensor:
    """Spherical interpolation in the inputs' dtype over the flattened tensor, each row (``row_wise``: the first
    axis is moved last) or the last axis; collinear pairs are interpolated linearly."""
    shape = v0.shape
    if flatten:
        v0, v1 = v0.reshape(-1), v1.reshape(-1)
    elif row_wise:
        v0, v1 = v0.transpose(0, -1), v1.transpose(0, -1)

    def unit(x: torch.Tensor) -> torch.Tensor:
        return x / torch.norm(x, dim=-1, keepdim=True).clamp(min=1e-7)

    cos = torch.sum(unit(v0) * unit(v1), dim=-1, keepdim=True).clamp(-1, 1)
    collinear = (1 - cos.square()) <= eps**2
    theta = torch.acos(torch.where(collinear, 0, cos))
    spherical = (torch.sin((1 - t) * theta) * v0 + torch.sin(t * theta) * v1) / torch.sin(theta)
    out = torch.where(collinear, (1 - t) * v0 + t * v1, spherical)
    if row_wise and not flatten:
        out = out.transpose(0, -1)
    return out.reshape(shape)


def nuslerp_merge(
    experts: Sequence[torch.Tensor],
    weights: Sequence[float],
    base: torch.Tensor | None = None,
    row_wise: bool = False,
    flatten: bool = True,
) -> torch.Tensor:
    """Two experts, t = w₂ / (w₁ + w₂) (0.5 when the weights cancel); around the base when one is given."""
    total = sum(weights)
    t = 0.5 if abs(total) < 1e-6 else weights[1] / total
    if base is None:
        return nuslerp(t, experts[0], experts[1], row_wise, flatten)
    return base + nuslerp(t, experts[0] - base, experts[1] - base, row_wise, flatten)


def model_stock(base: torch.Tensor, experts: Sequence[torch.Tensor], filter_wise: bool = False) -> torch.Tensor:
    """Model Stock: interpolate between the experts' mean and the base by the experts' mean pairwise cosine."""
    shape = base.shape
    if filter_wise:
        if base.dim() == 1:
            base, experts = base.unsqueeze(0), [e.unsqueeze(0) for e in experts]
    else:
        base, experts = base.reshape(-1), [e.reshape(-1) for e in experts]
    deltas = [e - base for e in experts]
    cosines = []
    for i in range(len(deltas)):
        for j in range(i + 1, len(deltas)):
            norms = torch.norm(deltas[i], dim=-1) * torch.norm(deltas[j], dim=-1)
            cosines.append(((deltas[i] * deltas[j]).sum(dim=-1) / norms.clamp(min=1e-6)).clamp(-1, 1))
    cos = torch.stack(cosines).mean(dim=0).unsqueeze(-1)
    k = len(experts)
    denom = 1 + (k - 1) * cos
    singular = denom.abs() < 1e-6
    t = torch.where(singular, torch.zeros_like(cos), (k * cos) / torch.where(singular, torch.ones_like(denom), denom))
    mean = sum(experts) / k  # from int 0, as Python's sum (0 + −0.0 is +0.0)
    return (t * mean + (1 - t) * base).reshape(shape)


def karcher(tensors: Sequence[torch.Tensor], max_iter: int = 10, tol: float = 1e-5) -> torch.Tensor:
    """The equally weighted Karcher mean of the tensors' directions on the unit sphere, times their mean norm."""
    if len(tensors) == 1:
        return tensors[0]
    alphas = [1.0 / len(tensors)] * len(tensors)
    acc = _acc_dtype(tensors[0])
    norms = [torch.linalg.vector_norm(x.to(acc)) for x in tensors]
    units = [torch.zeros_like(x) if n.item() == 0.0 else (x / n).to(x.dtype) for x, n in zip(tensors, norms)]
    keep = [i for i, n in enumerate(norms) if n.item() > tol]
    if not keep:
        return sum(x * 0 for x in tensors)
    total = sum(alphas[i] for i in keep)
    weights = [alphas[i] / total for i in keep]
    dirs = [units[i] for i in keep]
    mean = torch.zeros_like(dirs[0])
    for w, u in zip(weights, dirs):
        mean += w * u
    mean_norm = torch.linalg.vector_norm(mean.to(acc))
    mean = dirs[0].clone() if mean_norm.item() < tol else (mean / mean_norm).to(mean.dtype)
    for _ in range(max_iter):
        tangent = torch.zeros_like(mean)
        for w, u in zip(weights, dirs):
            cos = torch.clamp(torch.dot(mean.flatten(), u.flatten()), -1.0, 1.0)
            theta = torch.arccos(cos)
            if theta.item() < tol:
                continue
            tangent += w * (theta / torch.sin(theta)) * (u - cos * mean)
        step = torch.linalg.vector_norm(tangent.to(acc))
        if step.item() < tol:
            break
        mean = (torch.cos(step) * mean + torch.sin(step) * (tangent / step)).to(mean.dtype)
        length = torch.linalg.vector_norm(mean.to(acc))
        if length.item() > tol:
            mean = (mean / length).to(mean.dtype)
    return sum(a * n for a, n in zip(alphas, norms)) * mean
