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

import numpy as np
import torch

from genlab.merging.jit import compiled

SMALL = 16  # libstdc++'s _S_threshold: segments this small are left to the final insertion sort
BLOCK = 512  # positions scanned at a time by each side of :func:`partition`


@compiled
def partition(v, ix, f, last, left, right):  # pragma: no cover - compiled
    """libstdc++'s ``std::__unguarded_partition(f + 1, last, pivot=f)`` with ``a > b``, done without its
    unpredictable branches; returns the cut.

    Hoare's partition swaps the i-th position from the left whose key is not above the pivot with the i-th
    from the right whose key is not below it, as long as the first is left of the second; the cut is the
    first such left position that is not (or the last swapped right position, if that comes first). Both
    lists depend only on the keys as they were, so each side collects its candidates a block at a time with
    no branch on the keys (``left``, ``right``: scratch of :data:`BLOCK` positions); a block never reaches a
    position a swap has changed."""
    pivot = v[f]
    lo, hi = f + 1, last  # next position the left side scans; the right side scans hi - 1 downwards
    done_left, done_right = f, last  # the last swapped pair: everything outside (done_left, done_right) is placed
    n_left = at_left = n_right = at_right = 0
    while True:
        if at_left == n_left:
            if lo >= done_right:
                return done_right
            end = min(lo + BLOCK, done_right)
            n_left = 0
            for q in range(lo, end):
                left[n_left] = q
                n_left += not v[q] > pivot
            at_left, lo = 0, end
            continue
        a = left[at_left]
        if a >= done_right:
            return done_right
        if at_right == n_right:
            if hi - 1 <= done_left:  # the right side would stop at done_left: no swap, the cut is a
                return a
            start = max(hi - BLOCK, done_left + 1)
            n_right = 0
            for q in range(hi - 1, start - 1, -1):
                right[n_right] = q
                n_right += not pivot > v[q]
            at_right, hi = 0, start
            continue
        b = right[at_right]
        if b <= done_left or a >= b:
            return a
        v[a], v[b] = v[b], v[a]
        ix[a], ix[b] = ix[b], ix[a]
        done_left, done_right = a, b
        at_left += 1
        at_right += 1


@compiled
def select(v: np.ndarray, ix: np.ndarray, k: int) -> bool:  # pragma: no cover - compiled
    """Permute ``v`` (keys) and ``ix`` (positions) as libstdc++'s ``std::sort`` with ``a > b`` would, but
    only the segments that contain the boundary ``k``; then ``ix[:k]`` are the first ``k`` positions.
    False where the sort would switch to heapsort on that segment."""
    f, last = 0, v.shape[0]
    left = np.empty(BLOCK, dtype=ix.dtype)
    right = np.empty(BLOCK, dtype=ix.dtype)
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
        lo = partition(v, ix, f, last, left, right)
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
    if not 0 < k <= w.numel() or not agrees_with_torch():
        return None
    return _first_k(w, k)


def _first_k(w: torch.Tensor, k: int) -> torch.Tensor | None:
    n = w.numel()
    positions = torch.arange(n, dtype=torch.int32 if n < 2**31 else torch.int64)
    return positions[:k] if select(sort_keys(w), positions.numpy(), k) else None


@functools.cache
def agrees_with_torch() -> bool:
    """Whether :func:`top_k_positions`' partitions are this torch's: compared with ``torch.argsort`` on arrays
    full of ties (sizes 17 to 5,000, eight k each) — a differently built sort disagrees within a few cases."""
    gen = torch.Generator().manual_seed(0)
    for n in (17, 33, 257, 1000, 5000):
        w = torch.randint(0, 7, (n,), generator=gen).to(torch.bfloat16)
        order = torch.argsort(w.float(), descending=True)
        for k in sorted({1, 2, n // 7, n // 3, n // 2, 2 * n // 3, n - 1, n}):
            first = _first_k(w, k)
            if first is None or not torch.equal(first.sort().values.long(), order[:k].sort().values):
                return False
    return True
