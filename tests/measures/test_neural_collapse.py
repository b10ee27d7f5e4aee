"""Neural collapse metrics on constructed features with known collapse, and NCC vs brute force."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from genlab.measures.neural_collapse import (
    class_means,
    nc1,
    nc2,
    nc3,
    nc4,
    ncc,
    neural_collapse,
    neural_collapse_metrics,
)


def simplex_etf(c: int, d: int, seed: int = 0) -> np.ndarray:
    """C unit vectors in R^d with pairwise cosine -1/(C-1) (a random rotation of the centred identity)."""
    m = np.eye(c) - 1.0 / c
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return m @ q[:c]


def collapsed(c=5, d=8, per=6, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    means = 3.0 * simplex_etf(c, d, seed)
    y = np.repeat(np.arange(c), per)
    f = means[y] + noise * rng.normal(size=(len(y), d))
    return f, y, means


def test_perfect_collapse_gives_zero_everywhere():
    f, y, means = collapsed()
    m = neural_collapse_metrics(f, y, weight=means, logits=f @ means.T)
    for key in ("nc1", "nc2_equinorm", "nc2_equiangular", "nc2_max_angle", "ncc", "nc3", "nc4"):
        assert m[key] == pytest.approx(0.0, abs=1e-10), key


def test_nc1_known_value_for_isotropic_noise():
    """Σ_W = σ² I (exactly, after whitening the noise) and Σ_B = M̃ᵀM̃/C: NC1 = σ² Tr(Σ_B^†)/C."""
    c, d, per, sigma = 4, 6, 50, 0.3
    f, y, means = collapsed(c, d, per, noise=0.0)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(c, per, d))
    noise -= noise.mean(1, keepdims=True)
    # whiten the pooled within-class scatter so that Σ_W = σ² I exactly
    cov = np.einsum("cpi,cpj->ij", noise, noise) / (c * per)
    w = np.linalg.cholesky(cov)
    noise = noise @ np.linalg.inv(w).T * sigma
    f = f + noise.reshape(-1, d)
    mt = means - means.mean(0)
    sb = mt.T @ mt / c
    want = sigma**2 * np.trace(np.linalg.pinv(sb)) / c
    assert nc1(f, y) == pytest.approx(want, rel=1e-6)


def test_nc2_detects_unequal_norms_and_angles():
    f, y, _ = collapsed(c=3, d=3)
    assert nc2(f, y)["equinorm"] == pytest.approx(0.0, abs=1e-12)
    # stretch one class mean away: norms differ, cosines move away from -1/2
    f2 = f.copy()
    f2[y == 0] *= 3.0
    out = nc2(f2, y)
    assert out["equinorm"] > 0.1 and out["max_angle"] > 0.01
    # orthogonal class means (not an ETF): cosines after centring are -1/(C-1) only for the ETF
    eye_f = np.eye(4)[np.repeat(np.arange(4), 3)]
    assert nc2(eye_f, np.repeat(np.arange(4), 3))["max_angle"] == pytest.approx(0.0, abs=1e-12)


def test_nc3_scale_invariant_and_detects_misalignment():
    f, y, means = collapsed()
    assert nc3(f, y, 7.0 * means) == pytest.approx(0.0, abs=1e-12)
    rot = means[[1, 2, 3, 4, 0]]
    assert nc3(f, y, rot) > 0.5


def test_nc4_counts_disagreements():
    f, y, means = collapsed(c=3, d=4, per=4)
    logits = f @ means.T
    assert nc4(f, y, logits) == 0.0
    logits[:3] = -logits[:3]  # flip the decisions of three samples
    assert nc4(f, y, logits) == pytest.approx(3 / 12)


def test_ncc_matches_brute_force_and_is_differentiable():
    rng = np.random.default_rng(3)
    c, d = 5, 4
    y = rng.integers(0, c, size=40)
    y[:c] = np.arange(c)
    f = rng.normal(size=(40, d)) + 2 * rng.normal(size=(c, d))[y]
    mu = np.stack([f[y == k].mean(0) for k in range(c)])
    v = np.array([((f[y == k] - mu[k]) ** 2).sum(1).mean() for k in range(c)])
    vals = [(v[a] + v[b]) / (2 * ((mu[a] - mu[b]) ** 2).sum()) for a, b in itertools.permutations(range(c), 2)]
    ft = torch.tensor(f, requires_grad=True)
    out = ncc(ft, torch.tensor(y))
    assert float(out) == pytest.approx(np.mean(vals), rel=1e-10)
    out.backward()
    assert torch.isfinite(ft.grad).all()
    # scaling features does not change NCC; absent classes are skipped
    assert float(ncc(3 * f, y)) == pytest.approx(np.mean(vals), rel=1e-10)
    assert float(ncc(f, y, num_classes=c + 3)) == pytest.approx(np.mean(vals), rel=1e-10)


def test_class_means_and_model_wrapper():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2, bias=False))
    x, y = torch.randn(10, 3), torch.tensor([0, 1] * 5)
    mu, counts = class_means(x, y)
    np.testing.assert_allclose(mu[1], x[y == 1].mean(0), rtol=1e-6)
    assert counts.tolist() == [5, 5]
    got = neural_collapse(model, "2", [(x[:4], y[:4]), (x[4:], y[4:])])
    feats = model[1](model[0](x)).detach()
    want = neural_collapse_metrics(feats, y, weight=model[2].weight, logits=model(x).detach())
    assert got.keys() == want.keys()
    for k in got:
        assert got[k] == pytest.approx(want[k], rel=1e-5, abs=1e-7)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"\(n, d\)"):
        nc1(np.zeros(5), np.zeros(5, int))
    with pytest.raises(ValueError, match="labels"):
        ncc(np.zeros((4, 2)), np.zeros(3, int))
    with pytest.raises(ValueError, match="two classes"):
        ncc(np.random.default_rng(0).normal(size=(4, 2)), np.zeros(4, int))
