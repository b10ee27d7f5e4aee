"""The merge's two worker threads: a tensor's elements in two halves (:func:`in_halves`), or a tensor's experts
two at a time (:func:`each_expert`). torch ops and the compiled loops release the GIL, so both cores work."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

CHUNK = 1 << 15  # elements: torch's grain size, so each op runs inline with its operands in the L2 cache
SPLIT_MIN = 1 << 20  # elements: a block-wise merge of a larger tensor runs its two halves on two threads
PARALLEL_MIN = 1 << 16  # elements: experts of smaller tensors are not worth a thread hop
PARALLEL_MAX = 1 << 24  # elements: a larger tensor (an embedding) takes its experts one at a time, so that its
#                         sparsification's work arrays exist once (they would set the peak memory)
_POOL = None


def pool():
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="genlab-merge")
    return _POOL


def in_halves(span: Callable[[int, int], None], n: int) -> None:
    """Run ``span(lo, hi)`` over ``[0, n)``: for ``n >= SPLIT_MIN`` as two halves (split at a block boundary),
    one on a helper thread and one on this one, else in one go. Each element's arithmetic does not depend on
    which thread or block computes it."""
    if n < SPLIT_MIN:
        span(0, n)
        return
    mid = (n // 2 + CHUNK - 1) // CHUNK * CHUNK
    other = pool().submit(span, mid, n)
    try:
        span(0, mid)
    finally:
        other.result()


def each_expert(
    fn: Callable[[int, torch.Tensor], Any], experts: Iterable[torch.Tensor], n_experts: int, size: int,
    parallel: bool = True,
) -> list[Any]:
    """``[fn(i, expert) for i, expert in enumerate(experts)]``, two experts at a time on the worker threads when
    ``parallel`` and the tensor's ``size`` is in [:data:`PARALLEL_MIN`, :data:`PARALLEL_MAX`] (experts are loaded
    here, in order, as the loop asks for them); checks that there were ``n_experts``."""
    results: list[Any] = []
    pending: list[Any] = []
    threaded = parallel and n_experts > 1 and PARALLEL_MIN <= size <= PARALLEL_MAX
    count = 0
    for i, expert in enumerate(experts):
        if not threaded:
            results.append(fn(i, expert))
        else:
            if len(pending) >= 2:
                results.append(pending.pop(0).result())
            pending.append(pool().submit(fn, i, expert))
        del expert
        count += 1
    results += [f.result() for f in pending]
    if count != n_experts:
        raise ValueError(f"expected {n_experts} expert tensors, got {count}")
    return results
