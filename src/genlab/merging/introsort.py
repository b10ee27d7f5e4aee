"""The entries ``torch.argsort(w, descending=True)[:k]`` picks on CPU, found in linear time.

mergekit's TIES trim keeps ``argsort(|δ|, descending=True)[:k]``. Among entries tied at the k-th magnitude (bf16
task vectors have only 2¹⁵ magnitudes, so about 1 % of a tensor shares it) the sort is not stable, so which of
them are kept is decided by the sort's algorithm. On CPU, torch sorts one dimension with the C++ library's
``std::sort`` (``stable=False``): on Linux, libstdc++'s introsort — median-of-three pivots, Hoare partitions,
a heapsort below ``2·⌊log₂ n⌋`` levels, insertion sort below 16 elements. Every later step moves entries only
inside their partition, so the set of the first ``k`` positions is settled by the partitions that contain
position ``k``: :func:`top_k_positions` runs exactly those (quickselect on the sort's own pivots, about 3n
comparisons instead of n·log₂n), then the stable insertion sort of the last small segment.

It is used only after :func:`agrees_with_torch` has compared it with ``torch.argsort`` on tie-heavy arrays in
this process (a C++ library whose ``std::sort`` differs, e.g. libc++, is detected and then the sort is used). Where
the partitions would run into the heapsort (never seen on task vectors), it answers None and the caller sorts.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
import torch

SMALL = 16  # libstdc++'s _S_threshold: segments this small are left to the final insertion sort


@numba.njit(nogil=True, cache=True)
def select(v: np.ndarray, ix: np.ndarray, k: int) -> bool:  # pragma: no cover - compiled
    """Permute ``v`` (keys) and ``ix`` (positions) as libstdc++'s ``std::sort`` with ``a > b`` would, but
    only the segments that contain the boundary ``k``; then ``ix[:k]`` are the first ``k`` positions.
    False where the sort would switch to heapsort on that segment."""
    f, last = 0, v.shape[0]
    depth, m = 0, v.shape[0]
    while m > 1:
        m >>= 1
        depth += 1
    depth *= 2
    while last - f > SMALL:
        if depth == 0:
            return False
        depth -= 1
        # the median of v[f + 1], v[mid], v[last - 1] moves to f (std::__move_median_to_first)
        a, b, c = f + 1, f + (last - f) // 2, last - 1
        if v[a] > v[b]:
            med = b if v[b] > v[c] else (c if v[a] > v[c] else a)
        else:
            med = a if v[a] > v[c] else (c if v[b] > v[c] else b)
        v[f], v[med] = v[med], v[f]
        ix[f], ix[med] = ix[med], ix[f]
        pivot = v[f]
        lo, hi = f + 1, last  # std::__unguarded_partition on [f + 1, last)
        while True:
            while v[lo] > pivot:
                lo += 1
            hi -= 1
            while pivot > v[hi]:
                hi -= 1
            if lo >= hi:
                break
            v[lo], v[hi] = v[hi], v[lo]
            ix[lo], ix[hi] = ix[hi], ix[lo]
            lo += 1
        if lo == k:
            return True
        if k < lo:
            last = lo
        else:
            f = lo
    for i in range(f + 1, last):  # the insertion sort, which keeps ties in place
        key, pos, j = v[i], ix[i], i
        while j > f and key > v[j - 1]:
            v[j] = v[j - 1]
            ix[j] = ix[j - 1]
            j -= 1
        v[j] = key
        ix[j] = pos
    return True


def sort_keys(w: torch.Tensor) -> np.ndarray:
    """Integer keys that order as ``torch.argsort`` orders ``w.abs().float()`` (NaN largest, all NaNs equal):
    the magnitude's bit pattern (2 bytes for bfloat16 / float16, whose magnitudes convert to float32 exactly)."""
    flat = w.reshape(-1)
    if flat.dtype in (torch.bfloat16, torch.float16):
        keys, inf = flat.view(torch.int16).bitwise_and(0x7FFF), 0x7F80 if flat.dtype == torch.bfloat16 else 0x7C00
    else:  # float32, and float64 rounded to float32 as mergekit does
        keys, inf = flat.float().view(torch.int32).bitwise_and(0x7FFFFFFF), 0x7F800000
    return keys.clamp_(max=inf + 1).numpy()  # every NaN one key, above +inf


def top_k_positions(w: torch.Tensor, k: int) -> torch.Tensor | None:
    """The positions (flat, in no particular order) of ``torch.argsort(w.abs().reshape(-1).float(),
    descending=True)[:k]`` on CPU, or None where only the sort can say (see the module doc)."""
    n = w.numel()
    if not 0 < k <= n or not agrees_with_torch():
        return None
    positions = torch.arange(n, dtype=torch.int32 if n < 2**31 else torch.int64)
    if not select(sort_keys(w), positions.numpy(), k):
        return None
    return positions[:k]


@functools.cache
def agrees_with_torch() -> bool:
    """Whether :func:`top_k_positions`' partitions are this torch's: compared with ``torch.argsort`` on arrays
    full of ties (sizes 17 to 5,000, eight k each) — a differently built sort disagrees within a few cases."""
    gen = torch.Generator().manual_seed(0)
    for n in (17, 33, 257, 1000, 5000):
        w = torch.randint(0, 7, (n,), generator=gen).to(torch.bfloat16)
        order = torch.argsort(w.float(), descending=True)
        for k in sorted({1, 2, n // 7, n // 3, n // 2, 2 * n // 3, n - 1, n}):
            positions = torch.arange(n, dtype=torch.int32)
            if not select(sort_keys(w), positions.numpy(), k):
                return False
            if not torch.equal(positions[:k].sort().values.long(), order[:k].sort().values):
                return False
    return True
