"""Parallel (log-depth) prefix scans for diagonal linear recurrences.

A diagonal linear recurrence ``h_t = a_t * h_{t-1} + b_t`` (elementwise, real or complex) is a prefix
scan under the associative operator ``(a1, b1) ∘ (a2, b2) = (a2 * a1, a2 * b1 + b2)`` (apply step 1,
then step 2). :func:`associative_scan` evaluates any such scan with a pairwise (Ladner–Fischer) recursion:
O(log T) rounds of whole-tensor operations instead of ``T`` sequential steps, so the Python-level depth
is logarithmic in the sequence length and the total work is O(T). Everything is differentiable by autograd.

The loop versions (``*_loop``) are the sequential references used by tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

Combine = Callable[[Sequence[Tensor], Sequence[Tensor]], tuple[Tensor, ...]]


def _pad_time(x: Tensor, dim: int, fill: float) -> Tensor:
    pad_shape = list(x.shape)
    pad_shape[dim] = 1
    return torch.cat([x, torch.full(pad_shape, fill, dtype=x.dtype, device=x.device)], dim=dim)


def associative_scan(
    combine: Combine, elems: Sequence[Tensor], identity: Sequence[float], dim: int = -1
) -> tuple[Tensor, ...]:
    """Inclusive prefix scan of a tuple of tensors along ``dim`` with an associative ``combine``.

    ``combine(earlier, later)`` merges two tuples of equally shaped tensors (the earlier segment first);
    ``identity`` gives, per tensor, a fill value that is a right identity of ``combine`` (used to pad odd
    lengths). Returns a tuple whose position ``t`` is ``elems[0] ∘ elems[1] ∘ ... ∘ elems[t]``.

    Work-efficient pairwise (Ladner–Fischer / Blelloch-style) recursion: combine neighbours, scan the
    half-length sequence of pair totals, then fill in the even positions — ``2·ceil(log2 T)`` rounds of
    whole-tensor operations and O(T) total work.
    """
    if len(elems) != len(identity):
        raise ValueError(f"got {len(elems)} tensors but {len(identity)} identity values")
    if not elems:
        raise ValueError("associative_scan needs at least one tensor")
    shape = elems[0].shape
    if any(e.shape != shape for e in elems):
        raise ValueError(f"all scanned tensors must share a shape, got {[tuple(e.shape) for e in elems]}")
    return _scan(combine, tuple(elems), tuple(identity), dim % len(shape))


def _scan(
    combine: Combine, elems: tuple[Tensor, ...], identity: tuple[float, ...], dim: int
) -> tuple[Tensor, ...]:
    length = elems[0].shape[dim]
    if length == 1:
        return elems
    odd = length % 2
    if odd:
        elems = tuple(_pad_time(x, dim, f) for x, f in zip(elems, identity, strict=True))
    pairs = [x.unflatten(dim, (x.shape[dim] // 2, 2)) for x in elems]
    left = tuple(p.select(dim + 1, 0) for p in pairs)
    right = tuple(p.select(dim + 1, 1) for p in pairs)
    totals = _scan(combine, combine(left, right), identity, dim)  # prefix up to each odd position
    half = totals[0].shape[dim]
    if half > 1:
        rest = combine(
            tuple(t.narrow(dim, 0, half - 1) for t in totals),
            tuple(x.narrow(dim, 1, half - 1) for x in left),
        )
        evens = tuple(torch.cat([x.narrow(dim, 0, 1), r], dim=dim) for x, r in zip(left, rest, strict=True))
    else:
        evens = left
    out = tuple(torch.stack([e, o], dim=dim + 1).flatten(dim, dim + 1) for e, o in zip(evens, totals, strict=True))
    if odd:
        out = tuple(x.narrow(dim, 0, length) for x in out)
    return out


def prefix_sum(x: Tensor, dim: int = -1) -> Tensor:
    """Inclusive cumulative sum along ``dim`` computed with the log-depth scan (equals ``torch.cumsum``)."""
    return associative_scan(lambda e, l: (e[0] + l[0],), (x,), (0.0,), dim)[0]


def _affine_combine(earlier: Sequence[Tensor], later: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    a1, b1 = earlier
    a2, b2 = later
    return a2 * a1, a2 * b1 + b2


def linear_recurrence(a: Tensor, b: Tensor, h0: Tensor | None = None, dim: int = -2) -> Tensor:
    """All states of ``h_t = a_t * h_{t-1} + b_t`` (t = 1..T) along time axis ``dim``, by a parallel scan.

    ``a`` and ``b`` have the same shape (time along ``dim``); ``h0`` (broadcastable to one time slice,
    default 0) is the state before the first step. Real or complex dtypes.
    """
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    acc_a, acc_b = associative_scan(_affine_combine, (a, b), (1.0, 0.0), dim)
    if h0 is None:
        return acc_b
    return acc_a * h0.unsqueeze(dim % a.ndim) + acc_b


def linear_recurrence_loop(a: Tensor, b: Tensor, h0: Tensor | None = None, dim: int = -2) -> Tensor:
    """Sequential reference for :func:`linear_recurrence` (a Python loop over time)."""
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    dim = dim % a.ndim
    h = torch.zeros_like(b.select(dim, 0)) if h0 is None else h0.expand_as(b.select(dim, 0))
    states = []
    for a_t, b_t in zip(a.unbind(dim), b.unbind(dim), strict=True):  # unbind: O(T) backward, not O(T²)
        h = a_t * h + b_t
        states.append(h)
    return torch.stack(states, dim=dim)
