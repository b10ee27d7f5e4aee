"""Steps 2–5 of generalized task arithmetic with torch's ops, as mergekit 0.1.5's ``merge_group`` writes them
(see :mod:`genlab.merging.methods`): the reference that the block-wise and compiled paths reproduce bit for bit."""

from __future__ import annotations

import torch


def sign_mask(deltas: torch.Tensor, method: str = "sum", mask_dtype: torch.dtype | None = None) -> torch.Tensor:
    """TIES sign election on stacked (weighted) task vectors ``deltas[i]``: True where expert i agrees with the
    elected sign. ``sum`` elects the sign of Σᵢ δᵢ (by mass), ``count`` the majority of signs; zero counts as +."""
    mask_dtype = mask_dtype or deltas.dtype
    sign = deltas.sign().to(mask_dtype)
    if method == "sum":
        majority = (deltas.sum(dim=0) >= 0).to(mask_dtype) * 2 - 1
    elif method == "count":
        majority = (sign.sum(dim=0) >= 0).to(mask_dtype) * 2 - 1
    else:
        raise ValueError(f"sign election {method!r}: choose 'sum' or 'count'")
    return sign == majority


def combine_task_vectors(
    base: torch.Tensor, deltas: torch.Tensor, weights: torch.Tensor, *, consensus: str | None,
    mask_dtype: torch.dtype, normalize: bool, lam: float,
) -> torch.Tensor:
    """Steps 2–5 on stacked task vectors ``deltas`` (experts first; scaled in place) and a base of the same shape.
    Every step is elementwise or a sum over the experts, so a block of elements gives the block of the whole
    tensor's result (for :func:`genlab.merging.methods.chunked_max` experts: the order torch sums them in is the
    same; tested)."""
    weights = weights.reshape(-1, *([1] * base.dim()))
    deltas.mul_(weights)
    if consensus:
        mask = sign_mask(deltas, consensus, mask_dtype)
        mixed = (deltas * mask).sum(dim=0)
        divisor = (weights * mask).sum(dim=0)
        divisor[divisor == 0] = 1
    else:
        mixed = deltas.sum(dim=0)
        divisor = weights.sum(dim=0)
        divisor[divisor.abs() < 1e-8] = 1
    if normalize:
        mixed /= divisor
    if lam != 1:
        mixed *= lam
    return (base + mixed).to(base.dtype)
