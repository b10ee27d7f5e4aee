"""Generalized task arithmetic on bfloat16 tensors in compiled loops over their bits: mergekit's result, faster.

mergekit's ``merge_group`` runs a dozen whole-tensor torch ops (task vectors, the TIES trim, weights, the sign
election, two sums over the experts, a division, the base). On a bfloat16 tensor every such op widens each element
to float32 (exactly: the 16 bits become the top half), computes in float32 and rounds back to nearest-even; a
sum over the experts adds them in order into a float32 accumulator that starts at +0 and rounds once. The loops
here do the same arithmetic per element, one pass for each expert's task vector and one for the combination,
with no full-size temporaries; the trim keeps the entries torch's argsort keeps (:mod:`genlab.merging.introsort`).

They are used only after :func:`agrees_with_torch` found them equal, bit for bit, to the torch ops
(:func:`genlab.merging.combine.combine_task_vectors`) on awkward values in this process (signed zeros, overflow
to infinity, negative weights, a λ that bfloat16 cannot hold), and only for finite task vectors; anything else
takes the torch ops. One thing is not reproduced: a NaN *output* (a merge that overflowed) has the bits torch's
vectorised loop gives (0xFFFF), also where mergekit's whole-tensor op handled that element in its scalar tail
(0x7FC0); it is NaN either way.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Sequence

import numba
import numpy as np
import torch
from numba import types
from numba.extending import intrinsic

from genlab.merging import introsort
from genlab.merging.jit import compiled
from genlab.merging.threads import each_expert, in_halves

CONSENSUS = {None: 0, "sum": 1, "count": 2}


@intrinsic
def _bits_to_f32(typingctx, bits):  # pragma: no cover - compiled
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return types.float32(types.uint32), codegen


@intrinsic
def _f32_to_bits(typingctx, value):  # pragma: no cover - compiled
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.uint32))

    return types.uint32(types.float32), codegen


@numba.njit(inline="always")
def widen(h):  # pragma: no cover - compiled
    """bfloat16 bits -> float32 (exact)."""
    return _bits_to_f32(np.uint32(h) << np.uint32(16))


@numba.njit(inline="always")
def narrow(x):  # pragma: no cover - compiled
    """float32 -> bfloat16 bits, rounding to nearest-even; every NaN 0xFFFF, as torch's vectorised conversion
    writes it (its scalar loop tails write 0x7FC0: where a NaN lands in a whole-tensor op decides its bits)."""
    u = _f32_to_bits(x)
    rounded = np.uint16((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    return np.uint16(0xFFFF) if x != x else rounded


@numba.njit(inline="always")
def rounded(x):  # pragma: no cover - compiled
    """float32 rounded to the nearest bfloat16, as float32."""
    return widen(narrow(x))


@compiled
def task_vector(expert, base, delta, keys, positions):  # pragma: no cover - compiled
    """δ = θ − θ₀ into ``delta``; the trim's sort keys (``|δ|``'s bits) and positions 0..n−1 alongside (if
    given, i.e. non-empty). False if some δ is not finite."""
    finite = True
    ranked = keys.shape[0] > 0
    for j in range(delta.shape[0]):
        d = narrow(widen(expert[j]) - widen(base[j]))
        delta[j] = d
        magnitude = d & np.uint16(0x7FFF)
        if magnitude >= np.uint16(0x7F80):
            finite = False
        if ranked:
            keys[j] = magnitude
            positions[j] = j
    return finite


@compiled
def zero_dropped(delta, positions, k):  # pragma: no cover - compiled
    """``δ · mask`` for a finite δ where the mask is 0 at ``positions[k:]``: a zero of δ's sign there."""
    for j in range(k, positions.shape[0]):
        p = positions[j]
        delta[p] = delta[p] & np.uint16(0x8000)


BLOCK = 2048  # elements per stage of :func:`combine`: its float32 rows stay in the L1/L2 cache


@compiled
def combine(deltas, weights, base, out, lo, hi, consensus, normalize, divisor, lam):  # pragma: no cover - compiled
    """Steps 2–5 of :mod:`genlab.merging.methods` for elements ``lo:hi``: ``deltas`` (experts × n) and ``base``
    bfloat16 bits, ``weights`` the bfloat16 weights widened; ``divisor`` the summed weights (consensus 0 only).
    Each stage is a plain loop over a block of elements, which the compiler vectorises."""
    n_experts = deltas.shape[0]
    scaled = np.empty((n_experts, BLOCK), dtype=np.float32)
    elect = np.empty(BLOCK, dtype=np.float32)
    mixed = np.empty(BLOCK, dtype=np.float32)
    total = np.empty(BLOCK, dtype=np.float32)
    for start in range(lo, hi, BLOCK):
        m = min(BLOCK, hi - start)
        for i in range(n_experts):  # δᵢ ← wᵢ·δᵢ
            _scale(deltas[i, start : start + m], weights[i], scaled[i])
        mixed[:m] = 0
        if consensus == 0:
            for i in range(n_experts):
                _accumulate(scaled[i], mixed, m)
            total[:m] = divisor
        else:
            elect[:m] = 0  # the elected sign: of Σᵢ wᵢδᵢ (sum) or of Σᵢ sign(wᵢδᵢ) (count), zero counting as +
            for i in range(n_experts):
                if consensus == 1:
                    _accumulate(scaled[i], elect, m)
                else:
                    _count_sign(scaled[i], elect, m)
            for j in range(m):
                elect[j] = np.float32(rounded(elect[j]) >= 0)
            total[:m] = 0
            for i in range(n_experts):  # the entries that agree with it, and their weights
                _agreeing(scaled[i], weights[i], elect, mixed, total, m)
            for j in range(m):
                t = rounded(total[j])
                total[j] = np.float32(1.0) if t == 0 else t
        _finish(mixed, total, base[start : start + m], out[start : start + m], normalize, lam)


@numba.njit(inline="always")
def _scale(delta, w, scaled):  # pragma: no cover - compiled
    for j in range(delta.shape[0]):
        scaled[j] = rounded(widen(delta[j]) * w)


@numba.njit(inline="always")
def _accumulate(x, acc, m):  # pragma: no cover - compiled
    for j in range(m):
        acc[j] += x[j]


@numba.njit(inline="always")
def _count_sign(x, elect, m):  # pragma: no cover - compiled
    for j in range(m):
        elect[j] += np.float32(x[j] > 0) - np.float32(x[j] < 0)


@numba.njit(inline="always")
def _agreeing(x, w, elect, mixed, total, m):  # pragma: no cover - compiled
    for j in range(m):  # x·keep and w·keep need no rounding: both are bfloat16 values times 0 or 1
        keep = np.float32((x[j] > 0) if elect[j] > 0 else (x[j] < 0))
        mixed[j] += x[j] * keep
        total[j] += w * keep


@numba.njit(inline="always")
def _finish(mixed, total, base, out, normalize, lam):  # pragma: no cover - compiled
    m = base.shape[0]
    for j in range(m):
        mixed[j] = rounded(mixed[j])
    if normalize:
        for j in range(m):
            mixed[j] = rounded(mixed[j] / total[j])
    if lam != 1:
        for j in range(m):
            mixed[j] = rounded(mixed[j] * lam)
    for j in range(m):
        out[j] = narrow(widen(base[j]) + mixed[j])


_SCRATCH: dict[tuple[int, str], torch.Tensor] = {}


def scratch(name: str, n: int, dtype: torch.dtype) -> torch.Tensor:
    """A work array of ``n`` elements, the same memory on every call from this thread (grown when too small):
    fresh pages cost more than the loops that fill them. Valid until the next call with ``name`` here, or until
    :func:`release_scratch`."""
    key = (threading.get_ident(), name)
    have = _SCRATCH.get(key)
    if have is None or have.numel() < n or have.dtype != dtype:
        have = _SCRATCH[key] = torch.empty(n, dtype=dtype)
    return have[:n]


def release_scratch() -> None:
    """Free every thread's work arrays (the merge engine calls this when a merge ends)."""
    _SCRATCH.clear()


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy().view(np.uint16)


def task_vectors(
    base: torch.Tensor, experts: Iterable[torch.Tensor], n_experts: int, density: Sequence[float] | None
) -> tuple[torch.Tensor, bool]:
    """The stacked bfloat16 task vectors θᵢ − θ₀ (experts × n), each trimmed to its top ``density[i]``
    magnitudes as mergekit's TIES does (``density`` None: no trim), and whether all are finite (else
    :func:`combine_into` does not apply). Experts run two at a time on the worker threads
    (:func:`genlab.merging.threads.each_expert`)."""
    from genlab.merging.sparsify import magnitude

    flat_base = _bits(base.reshape(-1))
    n = flat_base.shape[0]
    deltas = scratch("deltas", n_experts * n, torch.bfloat16).reshape(n_experts, n)
    bits = _bits(deltas)

    def one(i: int, expert: torch.Tensor) -> bool:
        d = 1.0 if density is None else density[i]
        if d <= 0:
            deltas[i].zero_()
            return True
        ranked = n if d < 1 else 0
        keys = scratch("keys", ranked, torch.int16).numpy().view(np.uint16)
        positions = scratch("positions", ranked, torch.int32 if n < 2**31 else torch.int64).numpy()
        if not task_vector(_bits(expert.reshape(-1)), flat_base, bits[i], keys, positions):
            deltas[i] = magnitude(deltas[i], d)  # NaN or infinity: the torch ops
            return False
        if ranked:
            k = max(1, int(d * n))
            if not introsort.select(keys, positions, k):  # the sort would finish in a heapsort: the torch ops
                deltas[i] = magnitude(deltas[i], d)
                return True
            zero_dropped(bits[i], positions, k)
        return True

    finite = all(each_expert(one, experts, n_experts, n))
    return deltas, finite


def combine_into(
    out: torch.Tensor, base: torch.Tensor, deltas: torch.Tensor, weights: torch.Tensor, consensus: str | None,
    normalize: bool, lam: float,
) -> None:
    """:func:`combine` over flat bfloat16 ``base`` and ``deltas`` (experts × n) into ``out``."""
    args = (_bits(deltas), weights.float().numpy(), _bits(base), _bits(out))
    tail = (CONSENSUS[consensus], normalize, np.float32(_divisor(weights).item()), np.float32(lam))
    in_halves(lambda lo, hi: combine(*args, lo, hi, *tail), out.numel())


def _divisor(weights: torch.Tensor) -> torch.Tensor:
    """Σᵢ wᵢ as the torch ops form it (a sum below 1e-8 in magnitude becoming 1)."""
    total = weights.reshape(-1, 1).sum(dim=0)
    total[total.abs() < 1e-8] = 1
    return total


@functools.cache
def agrees_with_torch() -> bool:
    """Whether the loops give the torch ops' bits on values chosen to catch a different rounding, zero sign,
    overflow or scalar conversion: :func:`task_vector` against ``θ − θ₀``, the trim against
    :func:`genlab.merging.sparsify.magnitude`, :func:`combine` against
    :func:`genlab.merging.combine.combine_task_vectors` (every consensus, 1–5 experts, signed weights)."""
    from genlab.merging.combine import combine_task_vectors
    from genlab.merging.sparsify import magnitude

    if not introsort.agrees_with_torch():
        return False
    gen = torch.Generator().manual_seed(0)
    n = 4096
    for n_experts in (1, 2, 3, 5):
        base = _awkward(n, gen)
        experts = [_awkward(n, gen) for _ in range(n_experts)]
        for e in experts:  # huge values: task vectors overflow to infinity
            out = np.empty(n, dtype=np.uint16)
            task_vector(_bits(e), _bits(base), out, np.empty(0, dtype=np.uint16), np.empty(0, dtype=np.int32))
            if not np.array_equal(out, _bits(e - base)):
                return False
        tame = [_awkward(n, gen, huge=1e30) for _ in experts]
        base = _awkward(n, gen, huge=1e30)
        trimmed, finite = task_vectors(base, tame, n_experts, [0.3] * n_experts)
        if not finite or not same_bits(trimmed, torch.stack([magnitude(e - base, 0.3) for e in tame])):
            return False
        deltas = torch.stack([_awkward(n, gen) for _ in range(n_experts)])  # finite, some products overflow
        for consensus in CONSENSUS:
            for normalize, lam in ((True, 1.0), (False, 0.3), (True, -1.7)):
                weights = (torch.randn(n_experts, generator=gen) * 2).to(torch.bfloat16)
                ours = torch.empty_like(base)
                combine_into(ours, base, deltas, weights, consensus, normalize, lam)
                theirs = combine_task_vectors(base, deltas.clone(), weights, consensus=consensus,
                                              mask_dtype=torch.bfloat16, normalize=normalize, lam=lam)  # fmt: skip
                if not same_bits(ours, theirs):
                    return False
    return True


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit, except that any NaN equals any NaN (see the module doc)."""
    nan = a.isnan()
    zero = torch.zeros((), dtype=torch.int16)
    return torch.equal(nan, b.isnan()) and torch.equal(
        torch.where(nan, zero, a.view(torch.int16)), torch.where(nan, zero, b.view(torch.int16))
    )


def _awkward(n: int, gen: torch.Generator, huge: float = 1e38) -> torch.Tensor:
    """Finite bfloat16 values with signed zeros, tiny and ``huge`` magnitudes and exact ties."""
    x = torch.randn(n, generator=gen) * 0.02
    pick = torch.randint(0, 8, (n,), generator=gen)
    x = torch.where(pick == 0, torch.zeros(n), x)
    x = torch.where(pick == 1, -torch.zeros(n), x)
    x = torch.where(pick == 2, torch.randn(n, generator=gen) * huge, x)
    x = torch.where(pick == 3, torch.randn(n, generator=gen) * 1e-38, x)
    x = torch.where(pick == 4, torch.round(x * 100) / 100, x)
    return x.to(torch.bfloat16)
