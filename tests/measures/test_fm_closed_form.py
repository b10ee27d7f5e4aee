"""Tests for genlab.measures.flow_matching: the closed-form velocity and the EFM estimator."""

from __future__ import annotations

import pytest
import torch

from genlab.measures.flow_matching import efm_target, optimal_velocity, optimal_velocity_pairwise, target_collapse
from genlab.nn.flow import closed_form_velocity, euler_sample


def test_single_point_closed_form():
    b = torch.tensor([[1.0, -2.0, 0.5]])
    x = torch.randn(7, 3, generator=torch.Generator().manual_seed(0))
    for t in (0.0, 0.3, 0.9):
        r = optimal_velocity(x, t, b)
        torch.testing.assert_close(r.velocity, (b - x) / (1 - t))
        torch.testing.assert_close(r.max_weight, torch.ones(7))


def test_chunked_matches_pairwise_and_per_row_times():
    g = torch.Generator().manual_seed(1)
    bank = torch.randn(300, 16, generator=g, dtype=torch.float64)
    x = torch.randn(20, 16, generator=g, dtype=torch.float64)
    t = torch.rand(20, generator=g, dtype=torch.float64) * 0.98
    ref = optimal_velocity_pairwise(x, t, bank)
    for chunk in (1, 7, 64, 4096):
        r = optimal_velocity(x, t, bank, chunk=chunk)
        torch.testing.assert_close(r.velocity, ref.velocity)
        torch.testing.assert_close(r.max_weight, ref.max_weight)


def test_stable_near_t_one_and_rejects_t_one():
    g = torch.Generator().manual_seed(2)
    bank = 5 * torch.randn(50, 8, generator=g)
    x = torch.randn(10, 8, generator=g)
    r = optimal_velocity(x, 0.9999, bank)
    assert torch.isfinite(r.velocity).all()
    with pytest.raises(ValueError):
        optimal_velocity(x, 1.0, bank)


def test_efm_with_m1_is_the_conditional_target():
    g = torch.Generator().manual_seed(3)
    x0, x1 = torch.randn(32, 5, generator=g), torch.randn(32, 5, generator=g)
    t = torch.rand(32, generator=g) * 0.99
    xt = (1 - t[:, None]) * x0 + t[:, None] * x1
    torch.testing.assert_close(efm_target(xt, t, x1, None), x1 - x0, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(efm_target(xt, t, x1, torch.zeros(0, 5)), x1 - x0, atol=1e-4, rtol=1e-4)


def test_efm_equals_closed_form_over_self_plus_bank_and_masking():
    g = torch.Generator().manual_seed(4)
    xt, x1 = torch.randn(6, 4, generator=g, dtype=torch.float64), torch.randn(6, 4, generator=g, dtype=torch.float64)
    t = torch.full((6,), 0.6, dtype=torch.float64)
    extra = torch.randn(9, 4, generator=g, dtype=torch.float64)
    out = efm_target(xt, t, x1, extra)
    for i in range(6):
        bank = torch.cat([x1[i : i + 1], extra])
        torch.testing.assert_close(out[i], optimal_velocity(xt[i : i + 1], 0.6, bank).velocity[0])
    # masking columns == dropping them; ensemble leading dims work
    valid = torch.arange(9) < 4
    torch.testing.assert_close(efm_target(xt, t, x1, extra, extra_valid=valid), efm_target(xt, t, x1, extra[:4]))
    stacked = efm_target(torch.stack([xt, xt]), torch.stack([t, t]), torch.stack([x1, x1]),
                         torch.stack([extra, extra[torch.arange(8, -1, -1)]]))
    torch.testing.assert_close(stacked[0], stacked[1])


def test_efm_is_unbiased_with_the_generating_point_and_biased_without():
    """Prop. 2: with b1 = x1 ~ p(x1 | x_t) and M - 1 uniform draws, E[estimator] = u*(x_t, t)."""
    g = torch.Generator().manual_seed(5)
    data = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 3.0], [-2.5, -1.0], [1.0, 1.0]], dtype=torch.float64)
    t = 0.55
    xt = torch.tensor([[0.7, 0.4]], dtype=torch.float64)
    truth = optimal_velocity(xt, t, data)
    post = torch.softmax(-((xt - t * data) ** 2).sum(1) / (2 * (1 - t) ** 2), 0)  # p(x1 = x_i | x_t)
    reps, m = 40_000, 3
    x1 = data[torch.multinomial(post, reps, replacement=True, generator=g)]
    extra = data[torch.randint(len(data), (reps, m - 1), generator=g)]
    xs = xt.expand(reps, 2)[:, None]  # each repetition is its own ensemble member with B = 1
    tt = torch.full((reps, 1), t, dtype=torch.float64)
    with_self = efm_target(xs, tt, x1[:, None], extra)[:, 0].mean(0)
    extra_m = data[torch.randint(len(data), (reps, m), generator=g)]
    without = efm_target(xs, tt, x1[:, None], extra_m, include_self=False)[:, 0].mean(0)
    err_with = float((with_self - truth.velocity[0]).norm())
    err_without = float((without - truth.velocity[0]).norm())
    assert err_with < 0.03, err_with
    assert err_without > 0.1, err_without


def test_integrating_closed_form_reproduces_training_points():
    g = torch.Generator().manual_seed(6)
    bank = torch.randn(20, 10, generator=g) * 2
    x = euler_sample(closed_form_velocity(bank), torch.randn(50, 10, generator=g), steps=50)
    d = torch.cdist(x, bank).min(1).values
    assert float(d.max()) < 1e-2  # every sample lands on a training point (copy fraction 1)


def test_target_collapse_is_earlier_in_high_dimension():
    g = torch.Generator().manual_seed(7)
    ts = [0.1, 0.3, 0.5, 0.7]
    low = torch.randn(200, 2, generator=g)
    high = torch.randn(200, 512, generator=g)
    r_low = target_collapse(low[:64], low, ts, g)
    r_high = target_collapse(high[:64], high, ts, g)
    assert all(h > lo for h, lo in zip(r_high["max_weight"], r_low["max_weight"]))
    assert r_high["max_weight"][1] > 0.9 and r_low["max_weight"][1] < 0.2
