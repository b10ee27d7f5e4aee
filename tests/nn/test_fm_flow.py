"""Flow matching (genlab.nn.flow, genlab.training.flow_matching): OT pairing, ensembles, samplers, hybrid field."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genlab.nn.flow import (
    EnsembleVelocityMLP,
    VelocityMLP,
    adaptive_sample,
    closed_form_velocity,
    euler_sample,
    hybrid_sample_sweep,
    hybrid_velocity,
)
from genlab.training.flow_matching import FlowMember, FlowTrainConfig, ot_pair, train_flow, train_flow_ensemble


def test_ot_pair_is_the_optimal_assignment():
    from itertools import permutations

    g = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g)
    perm = ot_pair(x0, x1)
    cost = lambda p: float(((x0 - x1[list(p)]) ** 2).sum())  # noqa: E731
    best = min(cost(p) for p in permutations(range(6)))
    assert sorted(perm.tolist()) == list(range(6))
    assert cost(perm.tolist()) == np.float32(best) or abs(cost(perm.tolist()) - best) < 1e-5


def test_ensemble_member_matches_batched_forward():
    g = torch.Generator().manual_seed(1)
    net = EnsembleVelocityMLP(3, 5, width=16, depth=2, generator=g)
    x, t = torch.randn(3, 7, 5, generator=g), torch.rand(3, 7, generator=g)
    out = net(x, t)
    for i in range(3):
        torch.testing.assert_close(net.member(i)(x[i], t[i]), out[i].detach())


def test_ensemble_members_train_independently():
    """A member's trajectory does not depend on which other members share the ensemble (same RNG draws)."""
    data = torch.randn(40, 4, generator=torch.Generator().manual_seed(2))
    specs = [FlowMember(data[:10]), FlowMember(data, "efm", 8), FlowMember(data, "otcfm")]

    def run(scale_second: float) -> torch.Tensor:
        g = torch.Generator().manual_seed(3)
        net = EnsembleVelocityMLP(3, 4, width=8, depth=1, generator=g)
        with torch.no_grad():
            net.layers[0].weight[1] *= scale_second  # perturb member 1 only
        train_flow_ensemble(net, specs, 20, g, batch=16, grad_clip=0.5)
        return net.layers[-1].weight.detach().clone()

    a, b = run(1.0), run(3.0)
    torch.testing.assert_close(a[0], b[0])
    torch.testing.assert_close(a[2], b[2])
    assert not torch.allclose(a[1], b[1])


def test_training_reduces_loss_and_learns_the_mean():
    g = torch.Generator().manual_seed(4)
    data = torch.tensor([[2.0, -1.0]]).repeat(64, 1) + 0.05 * torch.randn(64, 2, generator=g)
    net = VelocityMLP(2, width=64, depth=2)
    losses = train_flow(net, data, FlowTrainConfig(steps=400, batch=64, lr=3e-3), g, log_every=100)
    assert losses[-1] < 0.3 * losses[0]
    xs = euler_sample(lambda x, t: net(x, t).detach(), torch.randn(256, 2, generator=g), 30)
    assert float((xs.mean(0) - torch.tensor([2.0, -1.0])).norm()) < 0.2


def test_euler_and_adaptive_agree_on_a_linear_field():
    # dx/dt = -x  ->  x(1) = x0 / e
    v = lambda x, t: -x  # noqa: E731
    x0 = torch.randn(10, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    xa, nfe = adaptive_sample(v, x0, rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(xa, x0 * np.exp(-1.0), rtol=1e-6, atol=1e-7)
    assert nfe > 7
    xe = euler_sample(v, x0, steps=1000)
    torch.testing.assert_close(xe, x0 * np.exp(-1.0), rtol=1e-3, atol=1e-4)


def test_hybrid_velocity_switches_at_tau():
    first = lambda x, t: torch.zeros_like(x)  # noqa: E731
    second = lambda x, t: torch.ones_like(x)  # noqa: E731
    h = hybrid_velocity(first, second, 0.5)
    x = torch.zeros(4, 2)
    out = h(x, torch.tensor([0.1, 0.49, 0.5, 0.9]))
    torch.testing.assert_close(out[:, 0], torch.tensor([0.0, 0.0, 1.0, 1.0]))
    # tau = 1 -> closed form throughout: samples land on the bank
    bank = torch.randn(5, 3, generator=torch.Generator().manual_seed(6))
    xs = euler_sample(hybrid_velocity(closed_form_velocity(bank), second, 1.0), torch.randn(8, 3), 40)
    assert float(torch.cdist(xs, bank).min(1).values.max()) < 1e-2


def test_hybrid_sweep_matches_one_hybrid_run_per_tau():
    g = torch.Generator().manual_seed(7)
    bank = torch.randn(6, 3, generator=g)
    net = EnsembleVelocityMLP(1, 3, width=16, depth=2, generator=g).member(0)
    x0 = torch.randn(9, 3, generator=g)
    taus = (0.0, 0.1, 0.25, 0.5, 0.9, 1.0)
    sweep = hybrid_sample_sweep(closed_form_velocity(bank), net, x0, taus, steps=20)
    assert sweep.shape == (len(taus), 9, 3)
    for tau, xs in zip(taus, sweep):
        torch.testing.assert_close(xs, euler_sample(hybrid_velocity(closed_form_velocity(bank), net, tau), x0, 20))
    assert not torch.allclose(sweep[0], sweep[-1])


def _paired_run(specs: list[FlowMember], fused: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(8)
    net = EnsembleVelocityMLP(len(specs), 4, width=8, depth=1, generator=g)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(p[torch.zeros(len(specs), dtype=torch.long)])  # every member starts from member 0's weights
    train_flow_ensemble(net, specs, 15, g, batch=16, fused=fused)
    return net.layers[-1].weight.detach().clone()


def test_paired_members_share_their_draws_and_fused_adam_is_the_same_update():
    data = torch.randn(30, 4, generator=torch.Generator().manual_seed(9))
    # same data, init and pair label: identical trajectories; unpaired: its own draws, so a different one
    specs = [FlowMember(data, pair=0), FlowMember(data, pair=0), FlowMember(data), FlowMember(data, "efm", 30, 0)]
    w = _paired_run(specs)
    torch.testing.assert_close(w[0], w[1])
    assert not torch.allclose(w[0], w[2])
    assert not torch.allclose(w[0], w[3])  # the EFM target differs though the draws are shared
    torch.testing.assert_close(_paired_run(specs, fused=True), w, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="different sizes"):
        _paired_run([FlowMember(data, pair=0), FlowMember(data[:10], pair=0)])


def test_progress_wraps_every_training_step():
    seen: list[int] = []

    def progress(steps):
        for step in steps:
            seen.append(step)
            yield step

    g = torch.Generator().manual_seed(1)
    net = EnsembleVelocityMLP(1, 4, width=8, depth=1, generator=g)
    train_flow_ensemble(net, [FlowMember(torch.randn(10, 4, generator=g))], 7, g, batch=4, progress=progress)
    assert seen == list(range(7))
