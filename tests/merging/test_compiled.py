"""The compiled merge paths against torch's own ops: the TIES trim's emulation of ``torch.argsort``
(genlab.merging.introsort) and the bfloat16 loops (genlab.merging.fused)."""

import numpy as np
import pytest
import torch

from genlab.merging import fused, gta_merge, introsort
from genlab.merging.methods import get_method
from genlab.merging.sparsify import magnitude
from genlab.merging.threads import CHUNK

TIES = get_method("ties")
TA = get_method("task_arithmetic")


def _argsort_top(w: torch.Tensor, k: int) -> torch.Tensor:
    return torch.argsort(w.abs().reshape(-1).float(), descending=True)[:k].sort().values


def _tied(n: int, dtype: torch.dtype, gen: torch.Generator, levels: float) -> torch.Tensor:
    """Values on a coarse grid (many exact ties), some NaN, in ``dtype``."""
    x = torch.round(torch.randn(n, generator=gen, dtype=torch.float64) * levels) / levels
    x[torch.rand(n, generator=gen) < 0.01] = float("nan")
    return x.to(dtype)


def test_the_compiled_paths_agree_with_this_torch():
    assert introsort.agrees_with_torch()
    assert fused.agrees_with_torch()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_top_k_positions_are_the_entries_argsort_keeps(dtype):
    """Tied magnitudes are where an emulation would go wrong: coarse grids, NaNs (which argsort ranks first),
    sizes from one partition to millions of entries, k from 1 to n."""
    gen = torch.Generator().manual_seed(0)
    for n, levels in [(17, 2), (18, 3), (1000, 5), (70_001, 50), (1_500_000, 300)]:
        w = _tied(n, dtype, gen, levels)
        for k in sorted({1, 2, n // 3, n // 2, n - 1, n}):
            got = introsort.top_k_positions(w, k)
            assert got is not None
            assert torch.equal(got.long().sort().values, _argsort_top(w, k)), (n, k)


def test_partitions_beyond_one_block_are_hoares():
    """Segments far larger than the scan block, of a few distinct keys (long runs of pivot-equal entries)."""
    gen = torch.Generator().manual_seed(1)
    for distinct in (1, 2, 3):
        w = torch.randint(0, distinct, (200_000,), generator=gen).to(torch.bfloat16)
        for k in (1, 99_999, 100_000, 150_001):
            assert torch.equal(introsort.top_k_positions(w, k).long().sort().values, _argsort_top(w, k))


def test_when_the_sort_would_fall_back_to_heapsort_the_sort_is_asked(monkeypatch):
    monkeypatch.setattr(introsort, "select", lambda *args: False)
    w = _tied(5000, torch.bfloat16, torch.Generator().manual_seed(2), 5).nan_to_num()
    assert introsort.top_k_positions(w, 2000) is None
    mask = torch.zeros(5000, dtype=w.dtype).index_fill(0, _argsort_top(w, 2000), 1)
    assert fused.same_bits(magnitude(w, 0.4), w * mask)
    base, experts = _experts(2, (70_001,), torch.Generator().manual_seed(3))  # the compiled TIES path too
    fast = gta_merge(TIES, base, iter(experts), 2, [0.5, 0.5], [0.4, 0.4])
    slow = gta_merge(TIES, base, iter(experts), 2, [0.5, 0.5], [0.4, 0.4], chunked=False)
    assert fused.same_bits(fast, slow)


def _experts(n_experts: int, shape: tuple[int, ...], gen: torch.Generator, huge: bool = False):
    scale = torch.logspace(-6, 1, shape[-1], dtype=torch.float64)
    base = (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(torch.bfloat16)
    experts = []
    for _ in range(n_experts):
        e = base.double() + torch.round(torch.randn(shape, generator=gen, dtype=torch.float64) * 40) / 40 * scale
        experts.append(e.to(torch.bfloat16))
    if huge:
        experts[0].view(-1)[::97] = float("inf")
    base.view(-1)[::31] = -0.0
    return base, experts


@pytest.mark.parametrize("n_experts", [1, 2, 3, 5])
@pytest.mark.parametrize("threads", [False, True])
def test_compiled_ties_gives_the_torch_ops_bits(n_experts, threads, monkeypatch):
    """TIES (and its sign elections) through the compiled loops equals mergekit's whole-tensor ops
    (chunked=False), with densities of 0, 0.3 and 1, int8 masks, normalize and lambda, signed zeros in the base,
    and the experts on two threads; a task vector with infinities takes the torch ops and gives their bits."""
    from genlab.merging import threads as worker_threads

    if threads:
        monkeypatch.setattr(worker_threads, "SPLIT_MIN", CHUNK)
        monkeypatch.setattr(worker_threads, "PARALLEL_MIN", 1)
    gen = torch.Generator().manual_seed(n_experts)
    for shape, huge in [((2 * CHUNK + 17,), False), ((130, 257), False), ((3,), False), ((4099,), True)]:
        base, experts = _experts(n_experts, shape, gen, huge)
        weights = torch.randn(n_experts, generator=gen).tolist()
        density = [(0.3, 1.0, 0.0, 0.6, 0.3)[i] for i in range(n_experts)]
        for consensus, normalize, lam, int8 in [("sum", True, 1.0, False), ("count", False, 0.7, True),
                                                ("none", True, 1.3, False)]:  # fmt: skip
            kw = dict(normalize=normalize, lam=lam, consensus=consensus, int8_mask=int8)
            fast = gta_merge(TIES, base, iter(experts), n_experts, weights, density, **kw)
            slow = gta_merge(TIES, base, iter(experts), n_experts, weights, density, **kw, chunked=False)
            assert fused.same_bits(fast, slow), (shape, consensus, int(((fast != slow) & ~slow.isnan()).sum()))


def test_compiled_task_arithmetic_sums_from_positive_zero():
    """torch's sum over experts starts at +0, so a base of −0 with zero task vectors and negative weights
    merges to +0 (mergekit's bits); the block path used to give −0."""
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        base = -torch.zeros(8, dtype=dtype)
        for n in (1, 2, 3):
            experts = [torch.zeros(8, dtype=dtype) for _ in range(n)]
            fast = gta_merge(TA, base, iter(experts), n, [-1.0] * n)
            slow = gta_merge(TA, base, iter(experts), n, [-1.0] * n, chunked=False)
            assert not torch.signbit(slow.float()).any()
            assert torch.equal(torch.signbit(fast.float()), torch.signbit(slow.float())), (dtype, n)


def test_the_first_use_check_sees_a_wrong_rounding(monkeypatch):
    """The check that guards the compiled loops fails when they differ from torch (here: the last bit of some
    merged entries), so a platform where they differ would take the torch ops."""
    fused.agrees_with_torch.cache_clear()
    real = fused.combine_into

    def truncating(out, base, deltas, weights, *rest):
        real(out, base, deltas, weights, *rest)
        bits = out.view(torch.int16).numpy()
        bits[np.arange(0, bits.size, 7)] ^= 1

    monkeypatch.setattr(fused, "combine_into", truncating)
    try:
        assert not fused.agrees_with_torch()
    finally:
        fused.agrees_with_torch.cache_clear()


def test_a_merge_frees_the_compiled_paths_work_arrays(monkeypatch):
    """The trim's keys and positions are kept per thread while a merge runs (fresh pages cost more than the loops),
    and freed when it ends."""
    from genlab.merging import merge

    held, release = [], fused.release_scratch
    monkeypatch.setattr(fused, "release_scratch", lambda: (held.append(len(fused._SCRATCH)), release()))

    gen = torch.Generator().manual_seed(5)
    base = {"w": (torch.randn(300, 300, generator=gen) * 0.02).to(torch.bfloat16)}
    experts = [{"w": (base["w"].float() + torch.randn(300, 300, generator=gen) * 0.002).to(torch.bfloat16)}
               for _ in range(2)]  # fmt: skip
    merged = merge("ties", base, experts, weights=1.0, densities=0.5)
    assert merged["w"].dtype == torch.bfloat16
    assert held and held[-1] > 0 and fused._SCRATCH == {}


def test_without_a_writable_cache_the_loops_compile_anyway(monkeypatch):
    """numba raises at decoration when it finds nowhere to write its cache (a read-only install, no writable
    home); the loops then compile in the process instead of failing."""
    import numba

    from genlab.merging import jit

    real = numba.njit

    def no_cache(*args, **kwargs):
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file 'f.py'")
        return real(*args, **kwargs)

    monkeypatch.setattr(numba, "njit", no_cache)

    def twice(x):
        return 2 * x

    assert jit.compiled(twice)(21) == 42
