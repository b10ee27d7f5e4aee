"""Sparsification of task vectors: TIES "trim" (keep the largest magnitudes), DARE "drop and rescale" (random
Bernoulli mask), Model Breadcrumbs (drop the smallest and the largest outliers) and DELLA (keep probability by
magnitude rank).

Every function follows mergekit 0.1.5 (``mergekit/sparsify.py``) operation by operation, so that a merge gives the
same bits: the same dtypes for masks and random draws, the same sort calls (ties between equal magnitudes are
broken the way ``torch.argsort`` breaks them) and the same L1-norm rescaling. Random methods take an explicit
``torch.Generator``; one seeded the way mergekit's ``--random-seed`` seeds torch's global generator draws the
same masks.
"""

from __future__ import annotations

import torch

RESCALE_EPS = 1e-7


def rescale_to_l1(tensor: torch.Tensor, masked: torch.Tensor, eps: float = RESCALE_EPS) -> torch.Tensor:
    """``masked`` scaled so its L1 norm equals ``tensor``'s; unchanged when either norm is below ``eps``.

    This is mergekit's DARE rescale. It is close to, but not exactly, the paper's ``1 / density``: the factor
    is ``|δ|₁ / |mask ⊙ δ|₁``, which preserves the task vector's total mass whatever the mask drew.
    """
    before = tensor.abs().sum()
    after = masked.abs().sum()
    if before < eps or after < eps:
        return masked
    return masked * (before / after)


def _apply_mask(tensor: torch.Tensor, mask: torch.Tensor, rescale: bool) -> torch.Tensor:
    masked = tensor * mask
    return rescale_to_l1(tensor, masked) if rescale else masked


def magnitude(tensor: torch.Tensor, density: float, rescale: bool = False) -> torch.Tensor:
    """TIES trim: keep the ``max(1, int(density·n))`` entries of largest magnitude, zero the rest."""
    if density >= 1:
        return tensor
    if density <= 0 or tensor.numel() == 0:
        return torch.zeros_like(tensor)
    k = max(1, int(density * tensor.numel()))
    mask = torch.zeros(tensor.numel(), dtype=tensor.dtype, device=tensor.device)
    w = tensor.abs().reshape(-1)
    if w.device.type == "cpu":
        w = w.float()  # argsort of half precision is slow (and absent for some dtypes) on CPU
    mask[torch.argsort(w, descending=True)[:k]] = 1
    return _apply_mask(tensor, mask.reshape_as(tensor), rescale)


def _work_dtype(tensor: torch.Tensor) -> torch.dtype:
    """Random masks are drawn in float32 on CPU (``bernoulli`` lacks float16 there), except for bfloat16."""
    if tensor.device.type != "cpu" or tensor.dtype == torch.bfloat16:
        return tensor.dtype
    return torch.float32


def bernoulli(
    tensor: torch.Tensor, density: float, rescale: bool = True, generator: torch.Generator | None = None
) -> torch.Tensor:
    """DARE: keep each entry with probability ``density`` (drop rate ``1 - density``), then rescale (L1)."""
    if density >= 1:
        return tensor
    work = _work_dtype(tensor)
    mask = torch.bernoulli(torch.full_like(tensor, fill_value=density, dtype=work), generator=generator)
    return _apply_mask(tensor.to(work), mask, rescale).to(tensor.dtype)


def magnitude_outliers(
    tensor: torch.Tensor, density: float, gamma: float = 0.01, rescale: bool = False
) -> torch.Tensor:
    """Model Breadcrumbs: drop the ``gamma`` fraction of largest magnitudes, then the smallest, keeping ``density``."""
    if density >= 1:
        return tensor
    n = tensor.numel()
    target = int(density * n)
    n_top = int(gamma * n)
    n_bottom = max(0, n - target - n_top)  # shrink the outlier cut when it would undercut the density
    w = tensor.abs().reshape(-1)
    if w.device.type == "cpu":
        w = w.float()
    order = torch.sort(w, descending=False).indices
    mask = torch.zeros(n, dtype=tensor.dtype, device=tensor.device)
    mask[order[n_bottom : n_bottom + target]] = 1
    return _apply_mask(tensor, mask.reshape_as(tensor), rescale)


def della_magprune(
    tensor: torch.Tensor,
    density: float,
    epsilon: float,
    rescale: bool = True,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """DELLA: keep probability rises linearly with magnitude rank within each row, from ``density - epsilon``
    to ``density + epsilon``; then rescale (L1)."""
    if density >= 1:
        return tensor
    if density <= 0:
        return torch.zeros_like(tensor)
    if density + epsilon >= 1 or density - epsilon <= 0:
        raise ValueError("della: epsilon must keep density ± epsilon inside (0, 1)")
    shape = tensor.shape
    work = _work_dtype(tensor)
    if tensor.dim() < 2:
        tensor = tensor.unsqueeze(0)
    ranks = torch.argsort(tensor.abs(), dim=1, descending=False).argsort(dim=1).to(work) + 1
    lo = ranks.min(dim=1, keepdim=True).values
    hi = ranks.max(dim=1, keepdim=True).values
    rank_norm = ((ranks - lo) / (hi - lo)).clamp(0, 1)
    probs = (density - epsilon) + rank_norm * 2 * epsilon
    mask = torch.bernoulli(probs, generator=generator).to(work)
    return _apply_mask(tensor.to(work), mask, rescale).to(tensor.dtype).reshape(shape)


SPARSIFIERS = ("magnitude", "random", "magnitude_outliers", "della_magprune")


def sparsify(
    tensor: torch.Tensor,
    method: str,
    density: float,
    rescale: bool,
    generator: torch.Generator | None = None,
    gamma: float = 0.01,
    epsilon: float = 0.15,
) -> torch.Tensor:
    """Dispatch by mergekit's sparsification name."""
    if method == "magnitude":
        return magnitude(tensor, density, rescale)
    if method == "random":
        return bernoulli(tensor, density, rescale, generator)
    if method == "magnitude_outliers":
        return magnitude_outliers(tensor, density, gamma, rescale)
    if method == "della_magprune":
        return della_magprune(tensor, density, epsilon, rescale, generator)
    raise ValueError(f"unknown sparsification {method!r}; known: {', '.join(SPARSIFIERS)}")
