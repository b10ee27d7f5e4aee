"""Sparsification of task vectors: TIES "trim" (keep the largest magnitudes), DARE "drop and rescale" (random
Bernoulli mask), Model Breadcrumbs (drop the smallest and the largest outliers) and DELLA (keep probability by
magnitude rank).

Every function follows mergekit 0.1.5 (``mergekit/sparsify.py``) operation by operation, so that a merge gives the
same bits: the same dtypes for masks and random draws, the same ranking (ties between equal magnitudes are
broken the way ``torch.argsort`` breaks them, see :mod:`genlab.merging.introsort`) and the same L1-norm
rescaling. Random methods take an explicit ``torch.Generator``; one seeded the way mergekit's ``--random-seed``
seeds torch's global generator draws the same masks.
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


TRIMS = ("mergekit", "threshold")
CHUNK = 1 << 22  # elements per chunk of the threshold trim's integer work


def magnitude(tensor: torch.Tensor, density: float, rescale: bool = False, trim: str = "mergekit") -> torch.Tensor:
    """TIES trim: keep the ``max(1, int(density·n))`` entries of largest magnitude, zero the rest.

    ``trim="mergekit"`` keeps the entries ``torch.argsort`` ranks first, as mergekit does: among entries tied at
    the k-th magnitude, those the unstable sort happens to put first. On CPU they are found in linear time by
    running only the sort's partitions that decide them (:mod:`genlab.merging.introsort`); elsewhere, or where
    that cannot answer, by the sort. ``trim="threshold"`` finds the k-th magnitude by counting bit patterns
    (:func:`top_k_mask`) and keeps the tied entries of lowest index: the same number of entries, the same ones
    except among those tied at the k-th magnitude, and the same on every platform and C++ library."""
    if density >= 1:
        return tensor
    if density <= 0 or tensor.numel() == 0:
        return torch.zeros_like(tensor)
    k = max(1, int(density * tensor.numel()))
    if trim == "threshold":
        return _apply_mask(tensor, top_k_mask(tensor, k).to(tensor.dtype), rescale)
    from genlab.merging.introsort import top_k_positions  # numba: imported when a trim needs it

    mask = torch.zeros(tensor.numel(), dtype=tensor.dtype, device=tensor.device)
    keep = top_k_positions(tensor, k) if tensor.device.type == "cpu" else None
    if keep is None:  # mergekit's own sort
        w = tensor.abs().reshape(-1)
        if w.device.type == "cpu":
            w = w.float()  # argsort of half precision is slow (and absent for some dtypes) on CPU
        keep = torch.argsort(w, descending=True)[:k]
    mask[keep] = 1
    return _apply_mask(tensor, mask.reshape_as(tensor), rescale)


_INT_VIEW = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32,
             torch.float64: torch.int64}  # fmt: skip


def top_k_mask(tensor: torch.Tensor, k: int) -> torch.Tensor:
    """A bool mask of the ``k`` entries of largest magnitude (ties at the k-th magnitude: lowest index first).

    The magnitude of an IEEE float, read as an integer, orders as the float does, so the k-th magnitude is found
    by counting bit patterns, 16 bits at a time from the top (one ``bincount`` pass for bfloat16 / float16, whose
    magnitudes have 2¹⁵ patterns), in chunks, without sorting. NaN counts as the largest, as in ``argsort``."""
    flat = tensor.reshape(-1)
    n = flat.numel()
    ints = _INT_VIEW[tensor.dtype]
    bits = torch.iinfo(ints).bits - 1  # magnitude bits (the sign bit cleared)
    sign_off = (1 << bits) - 1

    whole = flat.view(ints).bitwise_and(sign_off) if n <= CHUNK else None  # one chunk: compute the keys once

    def keys(s: int, e: int) -> torch.Tensor:
        return whole if whole is not None else flat[s:e].view(ints).bitwise_and(sign_off)

    spans = [(s, min(s + CHUNK, n)) for s in range(0, n, CHUNK)]
    prefix, need, shift = 0, k, max(0, bits - 16)  # the threshold, settled 16 bits at a time from the top
    width = bits - shift
    known = 0  # bits of the threshold settled so far (from the top)
    while True:
        counts = torch.zeros(1 << width, dtype=torch.int64)
        for s, e in spans:
            key = keys(s, e)
            if known:
                key = key[(key >> (bits - known)) == prefix]
            digit = key if width == bits else (key >> shift) & ((1 << width) - 1)
            counts += torch.bincount(digit.to(torch.int32), minlength=1 << width)
        above = counts.flip(0).cumsum(0)  # above[j]: entries whose digit ≥ 2^width − 1 − j
        j = int(torch.searchsorted(above, torch.tensor(need)).item())
        digit = (1 << width) - 1 - j
        need -= int(above[j - 1].item()) if j > 0 else 0
        prefix = (prefix << width) | digit
        known += width
        if shift == 0:
            break
        width = min(16, shift)
        shift -= width
    threshold = prefix  # the k-th magnitude's bit pattern; `need` of its ties are kept
    mask = torch.empty(n, dtype=torch.bool)
    for s, e in spans:
        key = keys(s, e)
        mask[s:e] = key > threshold
        if need > 0:
            tied = (key == threshold).nonzero().reshape(-1)[:need]
            mask[s + tied] = True
            need -= tied.numel()
    return mask.reshape(tensor.shape)


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
    trim: str = "mergekit",
) -> torch.Tensor:
    """Dispatch by mergekit's sparsification name (``trim``: see :func:`magnitude`)."""
    if method == "magnitude":
        return magnitude(tensor, density, rescale, trim)
    if method == "random":
        return bernoulli(tensor, density, rescale, generator)
    if method == "magnitude_outliers":
        return magnitude_outliers(tensor, density, gamma, rescale)
    if method == "della_magprune":
        return della_magprune(tensor, density, epsilon, rescale, generator)
    raise ValueError(f"unknown sparsification {method!r}; known: {', '.join(SPARSIFIERS)}")
