"""Curriculum (progressive) merging: schedules, the running-average identity, order effects, conflict ranking."""

import itertools

import pytest
import torch

from genlab.merging import (
    curriculum_order,
    effective_weights,
    merge,
    progressive_merge_tensor,
    schedule_alphas,
    task_vector_conflict,
)


def _experts(k, shape=(20, 10), seed=0):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(*shape, generator=g)
    return base, [base + torch.randn(*shape, generator=g) for _ in range(k)]


def test_harmonic_progressive_task_arithmetic_is_uniform_averaging_in_every_order():
    base, experts = _experts(4)
    mean = torch.stack(experts).mean(0)
    for order in itertools.permutations(range(4)):
        got = progressive_merge_tensor(base, [experts[i] for i in order], schedule_alphas(4, "harmonic"))
        assert torch.allclose(got, mean, atol=1e-5)


def test_constant_schedule_weights_follow_the_closed_form_and_depend_on_order():
    alphas = schedule_alphas(4, "constant", 0.5)
    assert alphas == [1.0, 0.5, 0.5, 0.5]
    assert effective_weights(alphas) == [0.125, 0.125, 0.25, 0.5]
    assert sum(effective_weights(alphas)) == pytest.approx(1.0)
    base, experts = _experts(4, seed=1)
    got = progressive_merge_tensor(base, experts, alphas)
    want = sum(w * e for w, e in zip(effective_weights(alphas), experts))
    assert torch.allclose(got, want, atol=1e-5)
    reverse = progressive_merge_tensor(base, experts[::-1], alphas)
    assert not torch.allclose(got, reverse, atol=1e-3)


def test_ties_steps_trim_each_new_task_vector():
    base, experts = _experts(2, shape=(100,), seed=2)
    out = progressive_merge_tensor(base, experts, [1.0, 0.5], step="ties", density=[0.1, 0.1])
    # step 1 keeps 10 entries of expert 0's task vector; step 2 adds at most 10 more non-zero entries
    assert 10 <= int((out - base).ne(0).sum()) <= 20


def test_curriculum_order_is_a_stable_sort():
    assert curriculum_order([0.3, 0.1, 0.3, 0.2]) == [1, 3, 0, 2]
    assert curriculum_order([0.3, 0.1, 0.3, 0.2], "descending") == [0, 2, 3, 1]
    with pytest.raises(ValueError):
        curriculum_order([1.0], "sideways")
    with pytest.raises(ValueError):
        schedule_alphas(3, "cosine")


def test_conflict_score_known_answers():
    base = {"w": torch.zeros(4), "step": torch.tensor([3])}
    agree1 = {"w": torch.tensor([1.0, 1.0, 1.0, 1.0]), "step": torch.tensor([3])}
    agree2 = {"w": torch.tensor([2.0, 1.0, 1.0, 0.0]), "step": torch.tensor([3])}
    rebel = {"w": torch.tensor([-1.0, -1.0, 1.0, -1.0]), "step": torch.tensor([3])}
    scores = task_vector_conflict(base, [agree1, agree2, rebel])
    assert scores[0] == 0.0 and scores[1] == 0.0
    assert scores[2] == pytest.approx(3 / 4)  # three of its four unit entries oppose the elected sign


def test_cmm_through_the_engine_orders_by_score_and_matches_the_kernel():
    base, experts = _experts(3, seed=3)
    sd = lambda t: {"layer.weight": t}  # noqa: E731
    scores = [0.9, 0.1, 0.5]  # ascending capability: expert 1, then 2, then 0
    got = merge("cmm", sd(base), [sd(e) for e in experts], scores=scores, order="score", schedule="constant", alpha=0.5)
    want = progressive_merge_tensor(base, [experts[i] for i in (1, 2, 0)], [1.0, 0.5, 0.5])
    assert torch.equal(got["layer.weight"], want)
    given = merge("cmm", sd(base), [sd(e) for e in experts], schedule="constant", alpha=0.5)
    assert torch.equal(given["layer.weight"], progressive_merge_tensor(base, experts, [1.0, 0.5, 0.5]))
