"""Norm / rank-sparse bounds: Schatten limits, p optimisation, rescaling invariance, conv patches, closed forms."""

import numpy as np
import pytest
import torch
from torch import nn

from genlab.measures import norm_bounds as NB


def _mlp(widths, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b, bias=False), nn.ReLU()]
    return nn.Sequential(*layers[:-1]).to(dtype)


def test_schatten_norm_special_cases():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 4)) @ rng.normal(size=(4, 20))  # rank 4
    sv = np.linalg.svd(a, compute_uv=False)
    assert NB.schatten_norm(sv, 2) == pytest.approx(np.linalg.norm(a), rel=1e-12)
    assert NB.schatten_norm(sv, 1) == pytest.approx(np.linalg.norm(a, "nuc"), rel=1e-12)
    assert NB.schatten_norm(sv, 0) == 4
    assert NB.schatten_norm(sv, 1e-4, powered=True) == pytest.approx(4, rel=1e-3)  # ‖A‖_{S_p}^p → rank


def test_schatten_term_p_to_zero_is_low_rank_parameter_count():
    rng = np.random.default_rng(1)
    sv = np.linalg.svd(rng.normal(size=(50, 3)) @ rng.normal(size=(3, 40)), compute_uv=False)
    term0 = np.exp(NB.schatten_term(sv, 90, log_scale=5.0, p=0.0))[0]
    assert term0 == pytest.approx(3 * 90, rel=1e-12)
    small = np.exp(NB.schatten_term(sv, 90, log_scale=5.0, p=1e-7))[0]
    assert small == pytest.approx(3 * 90, rel=1e-5)
    # At p = 2 the term is (scale · ‖A‖_F/s) · sqrt(w + w').
    t2 = np.exp(NB.schatten_term(sv, 90, log_scale=np.log(7.0), p=2.0))[0]
    assert t2 == pytest.approx(7.0 * np.sqrt(np.sum(sv**2)) / sv[0] * np.sqrt(90), rel=1e-10)


def test_zeroing_small_singular_values_never_increases_the_term():
    sv = np.sort(np.random.default_rng(2).uniform(0.1, 1, 20))[::-1]
    p = np.linspace(0, 2, 21)
    base = NB.schatten_term(sv, 60, 3.0, p)
    for r in range(1, 20):
        cut = sv.copy()
        cut[r:] = 0
        assert np.all(NB.schatten_term(cut, 60, 3.0, p) <= base + 1e-12)


def test_optimised_p_never_exceeds_fixed_p_and_limits_agree():
    model = _mlp([10, 32, 32, 3])
    x = torch.randn(100, 10, dtype=torch.float64)
    y = model(x).argmax(1).numpy()
    b = NB.network_bounds(model, x, y)
    assert b.bounds["schatten"] <= b.bounds["schatten_p2"] * (1 + 1e-12)
    assert b.bounds["schatten"] <= b.bounds["schatten_p0"] * (1 + 1e-12)
    assert b.bounds["schatten_aug"] <= b.bounds["schatten"] * (1 + 1e-12)  # B_{l-1} ≤ B ∏_{i<l} s_i
    want_p0 = np.sqrt(3 / 100 * sum(min(o, i) * (o + i) for o, i in [(32, 10), (32, 32), (3, 32)]))
    assert b.bounds["schatten_p0"] == pytest.approx(want_p0, rel=1e-12)
    assert b.low_rank_params == sum(min(o, i) * (o + i) for o, i in [(32, 10), (32, 32), (3, 32)])
    assert b.bounds["param_count"] == pytest.approx(np.sqrt((320 + 1024 + 96) * 3 / 100))
    assert b.biases_ignored == 0
    from genlab.nn.mlp import MLP

    torch.manual_seed(0)
    with_bias = MLP(10, (16,), 3).double()
    assert NB.network_bounds(with_bias, x, with_bias(x).argmax(1).numpy()).biases_ignored == 1


def test_layer_rescaling_leaves_every_bound_unchanged():
    model = _mlp([8, 24, 24, 4], seed=3)
    x = torch.randn(80, 8, dtype=torch.float64)
    y = model(x).argmax(1).numpy()
    before = NB.network_bounds(model, x, y)
    with torch.no_grad():
        model[0].weight.mul_(5.0)
        model[2].weight.div_(5.0)
        model[4].weight.mul_(0.3)
    after = NB.network_bounds(model, x, y)
    assert after.gamma == pytest.approx(before.gamma * 0.3, rel=1e-10)  # only the last layer moves the output
    with torch.no_grad():
        model[4].weight.div_(0.3)
        model[2].weight.mul_(0.3)
    again = NB.network_bounds(model, x, y)
    assert again.gamma == pytest.approx(before.gamma * 0.3, rel=1e-10)
    for k, v in before.bounds.items():
        assert after.bounds[k] == pytest.approx(v, rel=1e-9), k
        assert again.bounds[k] == pytest.approx(v, rel=1e-9), k


def test_one_layer_closed_forms_and_path_norm():
    torch.manual_seed(4)
    lin = nn.Linear(6, 1, bias=False).double()
    x = torch.randn(50, 6, dtype=torch.float64)
    y = np.sign(lin(x).detach().numpy().ravel())
    b = NB.network_bounds(lin, x, y, gamma=0.05)
    w = lin.weight.detach().numpy().ravel()
    B = x.norm(dim=1).max().item()
    xf = x.norm().item()
    nw = np.linalg.norm(w)
    assert b.bounds["spectral"] == pytest.approx(xf / (0.05 * 50) * nw, rel=1e-10)
    assert b.bounds["frobenius"] == pytest.approx(B * nw / (0.05 * np.sqrt(50)), rel=1e-10)
    binf = x.abs().max().item()
    assert b.bounds["path_norm"] == pytest.approx(2 * np.abs(w).sum() * binf / (0.05 * np.sqrt(50)), rel=1e-10)
    two = _mlp([5, 7, 2], seed=5)
    w1, w2 = two[0].weight.detach().numpy(), two[2].weight.detach().numpy()
    phi = np.sum(np.abs(w2) @ np.abs(w1))
    xb = torch.randn(10, 5, dtype=torch.float64)
    bb = NB.network_bounds(two, xb, two(xb).argmax(1).numpy())
    B2 = xb.abs().max().item()
    assert bb.bounds["path_norm"] == pytest.approx(4 * phi * B2 / (bb.gamma * np.sqrt(10)), rel=1e-10)


def test_conv_layers_patches_and_positions():
    torch.manual_seed(6)
    net = nn.Sequential(
        nn.Conv2d(1, 4, 3, bias=False),
        nn.ReLU(),
        nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=False),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(6 * 3 * 3, 5, bias=False),
    ).double()
    x = torch.randn(20, 1, 8, 8, dtype=torch.float64)
    b = NB.network_bounds(net, x, net(x).argmax(1).numpy())
    l0, l1, l2 = b.layers
    assert (l0.shape, l0.positions) == ((4, 9), 36)
    assert (l1.shape, l1.positions) == ((6, 36), 9)
    assert (l2.shape, l2.positions) == ((5, 54), 1)
    patch_norm = max(x[i, 0, r : r + 3, c : c + 3].norm().item() for i in range(20) for r in range(6) for c in range(6))
    assert l0.in_norm == pytest.approx(patch_norm, rel=1e-12)
    assert b.params == 36 + 216 + 270


def test_margins_and_errors():
    out = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0]])
    np.testing.assert_allclose(NB.margins_of(out, np.array([0, 2])), [1.0, -2.0])
    np.testing.assert_allclose(NB.margins_of(np.array([[0.5], [-0.2]]), np.array([1, 0])), [0.5, 0.2])
    model = _mlp([4, 8, 3])
    x = torch.randn(30, 4, dtype=torch.float64)
    wrong = (model(x).argmax(1).numpy() + 1) % 3
    with pytest.raises(ValueError, match="misclassifies"):
        NB.network_bounds(model, x, wrong)
    with pytest.raises(ValueError):
        NB.network_bounds(model, x, wrong, gamma=-1.0)
    assert NB.effective_rank(np.ones(5)) == pytest.approx(5.0)


def test_accounted_bounds_add_the_grid_union_bound_and_the_stated_logs():
    model = _mlp([10, 32, 32, 3])
    x = torch.randn(100, 10, dtype=torch.float64)
    y = model(x).argmax(1).numpy()
    b = NB.network_bounds(model, x, y, delta=0.05)
    conf = np.sqrt(np.log(20) / 100)
    grid = np.sqrt((3 * np.log(len(NB.DEFAULT_P_GRID)) + np.log(20)) / 100)
    assert b.accounted["schatten"] == pytest.approx(b.bounds["schatten"] + grid, rel=1e-12)
    assert b.accounted["schatten_p0"] == pytest.approx(b.bounds["schatten_p0"] + conf, rel=1e-12)
    assert b.accounted["param_count"] == pytest.approx(b.bounds["param_count"] + conf, rel=1e-12)
    assert b.accounted["spectral"] == pytest.approx(b.bounds["spectral"] * np.log(32) + conf, rel=1e-12)
    assert b.accounted["pac_bayes"] == pytest.approx(b.bounds["pac_bayes"] * np.sqrt(np.log(3 * 32)) + conf)
    assert set(b.to_dict()["accounted"]) == set(b.bounds)
    with pytest.raises(ValueError):
        NB.accounted_bounds(b.bounds, 100, 3, 81, 32, delta=1.5)
