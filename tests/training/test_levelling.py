"""Levelling rules and PCGrad: equal weights for equal losses, detached weights, closed forms, projections."""

import math

import pytest
import torch

from genlab.training.levelling import RULES, Leveller, level_target, pcgrad


@pytest.mark.parametrize("rule", RULES)
def test_equal_losses_give_equal_weights(rule):
    lev = Leveller(rule, [1.0, 25.0, 10.0, 1.0], rate=1.0, ema=0.5)
    for _ in range(4):  # dwa needs two steps of history before it levels
        w = lev.weights(torch.full((4,), 0.3), grad_norms=torch.full((4,), 2.0))
    assert torch.allclose(w, torch.ones(4), atol=1e-6)
    assert math.isclose(float(w.sum()), 4.0, rel_tol=1e-6)


@pytest.mark.parametrize("rule", RULES)
def test_slow_relaxation_reaches_the_level_weights_from_unequal_initial_weights(rule):
    lev = Leveller(rule, [1.0, 25.0, 10.0, 1.0], rate=0.1)
    start = lev.w.clone()
    for _ in range(200):
        w = lev.weights(torch.full((4,), 0.7), grad_norms=torch.full((4,), 0.1))
    assert torch.allclose(start, torch.tensor([1.0, 25.0, 10.0, 1.0]) * 4 / 37)
    assert torch.allclose(w, torch.ones(4), atol=1e-6)


def test_loss_rule_levels_contributions_and_gradnorm_levels_gradient_lengths():
    losses = torch.tensor([2.0, 0.01, 0.5, 0.1])
    w = level_target("loss", losses)
    contrib = w * losses
    assert torch.allclose(contrib, contrib[0].expand(4), rtol=1e-5)
    norms = torch.tensor([3.0, 0.2, 1.0, 7.0])
    w = level_target("gradnorm", norms)
    assert torch.allclose(w * norms, (w * norms)[0].expand(4), rtol=1e-5)
    assert math.isclose(float(w.sum()), 4.0, rel_tol=1e-6)


def test_dwa_closed_form():
    prev, last = torch.tensor([1.0, 1.0, 2.0]), torch.tensor([0.5, 1.0, 2.2])
    w = level_target("dwa", last, prev, temperature=2.0)
    ratio = torch.tensor([0.5, 1.0, 1.1])
    expected = 3 * torch.exp(ratio / 2) / torch.exp(ratio / 2).sum()
    assert torch.allclose(w, expected, atol=1e-6)
    assert w[0] < w[1] < w[2]  # the objective falling fastest gets the least weight


@pytest.mark.parametrize("rule", RULES)
def test_weights_are_detached_from_the_graph(rule):
    theta = torch.tensor([1.0, -2.0], requires_grad=True)
    lev = Leveller(rule, [1.0, 1.0])
    for _ in range(3):
        losses = [(theta**2).sum(), (3 * theta).sum().abs()]
        grads = torch.stack([torch.autograd.grad(li, theta, retain_graph=True)[0].norm() for li in losses])
        w = lev.weights(losses, grads)
    assert not w.requires_grad and w.grad_fn is None
    # the gradient of the combined loss is Σ w_i ∇L_i with w held constant (no term from ∂w/∂θ)
    losses = [(theta**2).sum(), (3 * theta).sum().abs()]
    grads = torch.stack([torch.autograd.grad(li, theta, retain_graph=True)[0].norm() for li in losses])
    total = lev.combine(losses, grads)
    (g,) = torch.autograd.grad(total, theta)
    w = lev.w
    expected = w[0] * 2 * theta.detach() + w[1] * 3 * torch.sign(torch.tensor(3 * (1.0 - 2.0)))
    assert torch.allclose(g, expected, atol=1e-6)


@pytest.mark.parametrize("rule", RULES)
def test_one_objective_wrapper_is_the_identity(rule):
    theta = torch.tensor([0.5, 1.5], requires_grad=True)
    lev = Leveller(rule, [7.0])
    for _ in range(3):
        loss = (theta**3).sum()
        total = lev.combine([loss], torch.ones(1))
        assert float(total.detach()) == float(loss.detach())
        g_total = torch.autograd.grad(total, theta, retain_graph=True)[0]
        assert torch.equal(g_total, torch.autograd.grad(loss, theta)[0])


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        Leveller("magic", [1.0])
    with pytest.raises(ValueError):
        Leveller("loss", [1.0, -1.0])
    with pytest.raises(ValueError):
        Leveller("loss", [1.0], rate=0.0)
    with pytest.raises(ValueError):
        Leveller("gradnorm", [1.0, 1.0]).weights(torch.ones(2))
    with pytest.raises(ValueError):
        Leveller("loss", [1.0, 1.0]).weights(torch.ones(3))


def test_pcgrad_removes_the_conflicting_component():
    g1, g2 = torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])  # g1·g2 = -1 < 0
    out = pcgrad(torch.stack([g1, g2]), torch.Generator().manual_seed(0))
    p1 = g1 - (g1 @ g2) / (g2 @ g2) * g2  # (0.5, 0.5)
    p2 = g2 - (g2 @ g1) / (g1 @ g1) * g1  # (0, 1)
    assert torch.allclose(out, p1 + p2)
    assert abs(float(p1 @ g2)) < 1e-7 and abs(float(p2 @ g1)) < 1e-7
    # the surgered direction no longer decreases either objective's progress: it has a non-negative inner
    # product with both original gradients
    assert float(out @ g1) >= 0 and float(out @ g2) >= 0


def test_pcgrad_leaves_agreeing_gradients_alone():
    grads = torch.tensor([[1.0, 2.0, 0.0], [0.5, 0.1, 3.0], [2.0, 0.0, 1.0]])  # all pairwise inner products > 0
    assert torch.allclose(pcgrad(grads, torch.Generator().manual_seed(1)), grads.sum(0))


def test_pcgrad_projections_hold_for_random_gradients():
    gen = torch.Generator().manual_seed(3)
    for _ in range(20):
        g = torch.randn(3, 6, generator=gen)
        out = pcgrad(g, torch.Generator().manual_seed(0))
        assert out.shape == (6,) and torch.isfinite(out).all()
        # with two objectives the surgered sum never conflicts with either gradient
        two = pcgrad(g[:2], torch.Generator().manual_seed(0))
        assert float(two @ g[0]) >= -1e-6 and float(two @ g[1]) >= -1e-6


@pytest.mark.parametrize("rule", ["loss", "gradnorm"])
def test_an_objective_that_is_zero_at_the_start_keeps_its_weight(rule):
    """Issue 33: image-L1 is exactly 0 at step 0 (zero pixel prompt); 1 / (0 + eps) must not take every weight."""
    lev = Leveller(rule, [1.0, 25.0, 10.0, 1.0], rate=1.0, ema=0.0)
    values = torch.tensor([1.6, 0.05, 0.0, 0.2])
    w = lev.weights(values, grad_norms=values)
    start = torch.tensor([1.0, 25.0, 10.0, 1.0]) * 4 / 37
    assert math.isclose(float(w[2]), float(start[2]), rel_tol=1e-6)  # held, not levelled
    assert math.isclose(float(w.sum()), 4.0, rel_tol=1e-6) and float(w[0]) > 0.01
    active = w[[0, 1, 3]] * values[[0, 1, 3]]
    assert torch.allclose(active, active[0].expand(3), rtol=1e-5)  # the material ones are levelled
    w = lev.weights(torch.tensor([1.6, 0.05, 0.04, 0.2]), grad_norms=torch.tensor([1.6, 0.05, 0.04, 0.2]))
    assert float(w[2]) > float(start[2])  # once material it joins the levelling
