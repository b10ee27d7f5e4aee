"""Merge kernels: the invariants every method must satisfy, known answers, and the sparsifiers' contracts."""

import pytest
import torch

from genlab.merging import METHODS, gta_merge, merge_tensor, sign_mask
from genlab.merging.methods import get_method
from genlab.merging.sparsify import bernoulli, magnitude, magnitude_outliers, rescale_to_l1

TA = get_method("task_arithmetic")


def _randn(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _params(n, weight=1.0, density=1.0):
    return [{}] + [{"weight": weight, "density": density}] * n


@pytest.mark.parametrize("name", sorted(set(METHODS) - {"cmm"}))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_identical_experts_return_that_expert(name, dtype):
    """Every method merges k copies of one expert into that expert (weights normalised where the method does;
    task arithmetic needs Σw = 1, DARE keeps the mass by L1 rescaling)."""
    base, expert = _randn(40, 30, seed=1, dtype=dtype), _randn(40, 30, seed=2, dtype=dtype)
    k = 3
    tol = 1e-6 if dtype == torch.float32 else 2e-2
    if name in ("linear", "karcher", "passthrough"):  # no base: k copies (one for passthrough)
        n = 1 if name == "passthrough" else k
        got = merge_tensor(name, [expert] * n, None, [{"weight": 0.7}] * n)
        assert torch.allclose(got.float(), expert.float(), atol=tol, rtol=tol)
        return
    if name in ("slerp", "nuslerp"):  # base + one expert at t = 1; two copies of the expert
        inputs, per, shared = [base, expert, expert], [{}, {"weight": 0.3}, {"weight": 0.7}], {}
        if name == "slerp":
            inputs, shared = [base, expert], {"t": 1.0}
        got = merge_tensor(name, inputs, 0, per[: len(inputs)], shared)
        assert torch.allclose(got.float(), expert.float(), atol=tol, rtol=tol)
        return
    per = [{}] + [{"weight": 1.0 / k, "density": 1.0}] * k
    shared = {"normalize": True}
    got = merge_tensor(name, [base] + [expert] * k, 0, per, shared, generator=_gen(0))
    assert torch.allclose(got.float(), expert.float(), atol=tol, rtol=tol)


def test_ties_density_one_without_sign_conflicts_is_task_arithmetic():
    base = _randn(50, 20, seed=3)
    mags = [_randn(50, 20, seed=s).abs() for s in (4, 5, 6)]
    signs = torch.where(_randn(50, 20, seed=7) > 0, 1.0, -1.0)  # one sign pattern shared by all experts
    experts = [base + signs * m for m in mags]
    weights = [0.2, 0.5, 0.3]  # sum 1: TIES normalises by Σw of the agreeing experts = 1
    per = [{}] + [{"weight": w, "density": 1.0} for w in weights]
    ties = merge_tensor("ties", [base, *experts], 0, per)
    ta = merge_tensor("task_arithmetic", [base, *experts], 0, per)
    assert torch.allclose(ties, ta, atol=1e-6)
    # and with normalize off the two are the same computation exactly
    ties_raw = merge_tensor("ties", [base, *experts], 0, per, {"normalize": False})
    assert torch.equal(ties_raw, ta)


def test_ties_with_conflicts_differs_from_task_arithmetic_by_the_known_amount():
    base = torch.zeros(4)
    a, b = torch.tensor([1.0, 2.0, -3.0, 0.5]), torch.tensor([-2.0, 1.0, 1.0, 0.5])
    per = [{}, {"weight": 1.0}, {"weight": 1.0}]
    got = merge_tensor("ties", [base, a, b], 0, per)  # density 1: only sign election + disjoint mean
    # sums: -1 (→ -), 3 (+), -2 (-), 1 (+); agreeing entries averaged
    assert torch.equal(got, torch.tensor([-2.0, 1.5, -3.0, 0.5]))
    assert torch.equal(merge_tensor("task_arithmetic", [base, a, b], 0, per), a + b)


def test_dare_with_drop_rate_zero_is_task_arithmetic():
    base = _randn(30, 30, seed=8)
    experts = [_randn(30, 30, seed=s) for s in (9, 10)]
    per = [{}, {"weight": 0.6, "density": 1.0}, {"weight": 0.9, "density": 1.0}]
    ta = merge_tensor("task_arithmetic", [base, *experts], 0, per)
    assert torch.equal(merge_tensor("dare_linear", [base, *experts], 0, per, generator=_gen(1)), ta)
    ties_no_drop = merge_tensor("dare_ties", [base, *experts], 0, per, generator=_gen(1))
    assert torch.equal(ties_no_drop, merge_tensor("ties", [base, *experts], 0, per, {"normalize": False}))


def test_dare_is_deterministic_given_a_seed_and_varies_with_it():
    base = _randn(64, 64, seed=11)
    experts = [_randn(64, 64, seed=s) for s in (12, 13)]
    per = [{}, {"weight": 1.0, "density": 0.3}, {"weight": 1.0, "density": 0.3}]
    a = merge_tensor("dare_ties", [base, *experts], 0, per, generator=_gen(5))
    b = merge_tensor("dare_ties", [base, *experts], 0, per, generator=_gen(5))
    c = merge_tensor("dare_ties", [base, *experts], 0, per, generator=_gen(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_dare_keeps_the_density_fraction_and_the_l1_mass():
    delta = _randn(200, 200, seed=14)
    out = bernoulli(delta, 0.25, rescale=True, generator=_gen(0))
    kept = (out != 0).float().mean().item()
    assert abs(kept - 0.25) < 4 * (0.25 * 0.75 / delta.numel()) ** 0.5
    assert out.abs().sum().item() == pytest.approx(delta.abs().sum().item(), rel=1e-5)
    # the rescale is |δ|₁/|mask⊙δ|₁, close to but not exactly 1/density
    ratio = (out[out != 0] / delta[out != 0]).mean().item()
    assert ratio == pytest.approx(4.0, rel=0.05) and ratio != pytest.approx(4.0, rel=1e-6)
    assert torch.equal(rescale_to_l1(torch.zeros(3), torch.zeros(3)), torch.zeros(3))  # tiny norms: unchanged


def test_magnitude_trim_keeps_the_top_k():
    x = torch.tensor([0.1, -5.0, 3.0, -0.2, 0.0, 4.0, -1.0, 2.0])
    assert torch.equal(magnitude(x, 0.5), torch.tensor([0.0, -5.0, 3.0, 0.0, 0.0, 4.0, 0.0, 2.0]))
    assert torch.equal(magnitude(x, 0.01), torch.tensor([0.0, -5.0, 0, 0, 0, 0, 0, 0]))  # at least one kept
    assert torch.equal(magnitude(x, 0.0), torch.zeros(8)) and magnitude(x, 1.0) is x
    # breadcrumbs: drop the top gamma then the bottom, keeping density
    bc = magnitude_outliers(x, density=0.5, gamma=0.125)
    assert torch.equal(bc, torch.tensor([0.0, 0.0, 3.0, 0.0, 0.0, 4.0, -1.0, 2.0]))


def test_sign_election_by_sum_and_by_count():
    deltas = torch.tensor([[3.0, 1.0], [-1.0, -1.0], [-1.0, 0.5]])
    # column 0: sum +1 → +, count (1 − 2) → −; column 1: sum 0.5 → +, count +1 → +
    assert sign_mask(deltas, "sum").tolist() == [[True, True], [False, False], [False, True]]
    assert sign_mask(deltas, "count").tolist() == [[False, True], [True, False], [True, True]]
    count = gta_merge(get_method("ties"), torch.zeros(2), iter(deltas), 3, [1.0, 1.0, 1.0], consensus="count")
    assert torch.equal(count, torch.tensor([-1.0, 0.75]))


def test_linear_is_the_weighted_mean_in_float32():
    a, b = torch.tensor([1.0, 2.0], dtype=torch.bfloat16), torch.tensor([3.0, 6.0], dtype=torch.bfloat16)
    got = merge_tensor("linear", [a, b], None, [{"weight": 1.0}, {"weight": 3.0}])
    assert got.dtype == torch.bfloat16 and torch.equal(got, torch.tensor([2.5, 5.0], dtype=torch.bfloat16))
    raw = merge_tensor("linear", [a, b], None, [{"weight": 1.0}, {"weight": 3.0}], {"normalize": False})
    assert torch.equal(raw, torch.tensor([10.0, 20.0], dtype=torch.bfloat16))


def test_lambda_scales_the_merged_task_vector():
    base, e = torch.ones(3), torch.tensor([2.0, 3.0, 5.0])
    got = merge_tensor("task_arithmetic", [base, e], 0, [{}, {"weight": 1.0}], {"lambda": 0.5})
    assert torch.equal(got, torch.tensor([1.5, 2.0, 3.0]))


def test_unknown_and_mergekit_only_methods_are_clear_errors():
    from genlab.merging import MergeConfigError

    with pytest.raises(MergeConfigError, match="does not implement"):
        get_method("arcee_fusion")
    with pytest.raises(MergeConfigError, match="unknown merge_method"):
        get_method("tie")


@pytest.mark.parametrize("chunk", [1 << 22, 997])  # one chunk, and many (a prime size: a ragged last chunk)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_threshold_trim_keeps_the_top_k_and_differs_from_argsort_only_at_ties(dtype, chunk, monkeypatch):
    from genlab.merging import sparsify
    from genlab.merging.sparsify import magnitude, top_k_mask

    monkeypatch.setattr(sparsify, "CHUNK", chunk)
    x = (_randn(300, 211, seed=8) * 0.01).to(dtype)
    for density in (0.001, 0.3, 0.5, 0.99):
        k = max(1, int(density * x.numel()))
        mask = top_k_mask(x, k)
        a = x.abs().double()
        kth = a.reshape(-1).sort(descending=True).values[k - 1]
        assert int(mask.sum()) == k and bool((a[mask] >= kth).all()) and bool((a[~mask] <= kth).all())
        ours, theirs = magnitude(x, density, trim="threshold"), magnitude(x, density)
        differ = ours != theirs
        assert bool((a[differ] == kth).all())  # only entries tied at the k-th magnitude
        if dtype in (torch.float32, torch.float64) and int((a == kth).sum()) == 1:
            assert torch.equal(ours, theirs)


def test_threshold_trim_gives_mergekit_bits_without_ties():
    """Distinct magnitudes: the sort-free TIES is the argsort TIES, bit for bit."""
    base = _randn(64, 48, seed=9)
    experts = [base + _randn(64, 48, seed=s) * 0.1 for s in (10, 11)]
    per = [{}, {"weight": 0.6, "density": 0.4}, {"weight": 0.9, "density": 0.7}]
    exact = merge_tensor("ties", [base, *experts], 0, per)
    fast = merge_tensor("ties", [base, *experts], 0, per, trim="threshold")
    assert torch.equal(exact, fast)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 17])
@pytest.mark.parametrize("halves", [False, True])
def test_blockwise_task_arithmetic_matches_the_stacked_ops_bit_for_bit(dtype, n, halves, monkeypatch):
    """gta_merge without sparsification runs block by block (methods.task_arithmetic); it must give the bits of
    mergekit's stacked ops (chunked=False), over several blocks with a ragged last one, with normalize and lambda,
    for task vectors of mixed magnitudes (so that every rounding shows), also with the two halves on two threads
    (``halves``: SPLIT_MIN lowered to one block); past chunked_max the stacked path runs."""
    from genlab.merging import threads
    from genlab.merging.threads import CHUNK

    if halves:
        monkeypatch.setattr(threads, "SPLIT_MIN", CHUNK)

    g = _gen(n)
    for shape in [(2 * CHUNK + 17,), (130, 257), (3,)]:
        scale = torch.logspace(-6, 1, shape[-1], dtype=torch.float64)
        base = (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)
        experts = [(base.double() + torch.randn(shape, generator=g, dtype=torch.float64) * scale * 0.3).to(dtype)
                   for _ in range(n)]  # fmt: skip
        weights = torch.randn(n, generator=g).tolist()
        for normalize, lam in [(False, 1.0), (True, 0.7), (False, 1.3)]:
            fast = gta_merge(TA, base, iter(experts), n, weights, normalize=normalize, lam=lam)
            slow = gta_merge(TA, base, iter(experts), n, weights, normalize=normalize, lam=lam, chunked=False)
            assert fast.dtype == dtype and fast.shape == base.shape
            assert torch.equal(fast, slow), (shape, normalize, lam, int((fast != slow).sum()))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("halves", [False, True])
def test_blockwise_linear_matches_the_whole_tensor_ops_bit_for_bit(dtype, normalize, halves, monkeypatch):
    from genlab.merging import linear_merge, threads
    from genlab.merging.threads import CHUNK

    if halves:
        monkeypatch.setattr(threads, "SPLIT_MIN", CHUNK)

    g = _gen(7)
    for n in (1, 2, 3, 5):
        for shape in [(2 * CHUNK + 17,), (130, 257), (3,)]:
            scale = torch.logspace(-6, 1, shape[-1], dtype=torch.float64)
            tensors = [(torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype) for _ in range(n)]
            weights = torch.randn(n, generator=g).tolist()
            fast = linear_merge(iter(tensors), weights, normalize)
            slow = linear_merge(iter(tensors), weights, normalize, chunked=False)
            assert fast.dtype == dtype and fast.shape == tensors[0].shape
            assert torch.equal(fast, slow), (n, shape, int((fast != slow).sum()))
