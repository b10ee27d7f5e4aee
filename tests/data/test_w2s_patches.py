"""The reconstructed three-patch data model and the two CNNs of the w2s-cnn study."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genlab.data.patches import BOTH, EASY, HARD, PatchModel
from genlab.nn.patch_cnn import LinearCNN, ReLUCNN
from genlab.training.gd import train_gd


def test_patch_layout_and_orthogonal_noise():
    pm = PatchModel(d=50, mu_norm=3.0, nu_norm=2.0, sigma_p=1.5)
    data = pm.sample(3000, np.random.default_rng(0))
    mu, nu = pm.signals()
    assert data.x.shape == (3000, 3, 50) and data.x.dtype == np.float32
    lab = (data.y > 0).astype(int)
    for kind, p1, p2 in [(EASY, mu, mu), (HARD, nu, -nu), (BOTH, mu, nu)]:
        sel = data.kind == kind
        np.testing.assert_allclose(data.x[sel, 0], p1[lab[sel]], atol=1e-6)
        np.testing.assert_allclose(data.x[sel, 1], p2[lab[sel]], atol=1e-6)
    noise = data.x[:, 2].astype(float)
    assert np.abs(noise @ np.vstack([mu, nu]).T).max() == 0.0  # exactly orthogonal to every signal
    assert noise[:, 4:].var() == pytest.approx(1.5**2, rel=0.03)
    freq = np.bincount(data.kind, minlength=3) / len(data)
    np.testing.assert_allclose(freq, [pm.p_easy, pm.p_hard, pm.p_both], atol=0.03)
    assert np.mean(data.y == 1) == pytest.approx(0.5, abs=0.03)


def test_statistics_and_validation():
    pm = PatchModel(d=100, nu_norm=2.0, sigma_p=1.0, p_easy=0.5, p_hard=0.3, p_both=0.2)
    assert pm.snr(50) == pytest.approx(50 * 0.04 * 16 / 100)
    assert pm.signal_noise_ratio(50) == pytest.approx(50 * 0.2 * 4 / 100)
    with pytest.raises(ValueError):
        PatchModel(d=4)
    with pytest.raises(ValueError):
        PatchModel(p_easy=0.5, p_hard=0.5, p_both=0.5)
    with pytest.raises(ValueError):
        pm.sample(5, np.random.default_rng(0), kind=7)


def test_any_linear_cnn_is_blind_to_the_hard_signal():
    # Σ_p <w, x_p> on [ν_y, −ν_y, ξ] is <w, ξ>: it does not depend on y, for every w
    pm = PatchModel(d=30, sigma_p=0.0)
    hard = pm.sample(40, np.random.default_rng(1), kind=HARD)
    model = LinearCNN(30)
    with torch.no_grad():
        model.w.copy_(torch.randn(30, generator=torch.Generator().manual_seed(0)))
        out = model(torch.from_numpy(hard.x))
    assert torch.allclose(out, torch.zeros_like(out), atol=1e-5)


def test_relu_cnn_can_separate_hard_only_inputs():
    # a filter bank aligned with ν₊ / ν₋ classifies hard-only inputs perfectly (Prop. 2.2's construction)
    pm = PatchModel(d=20, nu_norm=2.0, sigma_p=0.3)
    hard = pm.sample(200, np.random.default_rng(2), kind=HARD)
    _, nu = pm.signals()
    model = ReLUCNN(20, 1, 0.0)
    with torch.no_grad():
        model.W[0, 0] = torch.from_numpy(nu[0]).float()
        model.W[1, 0] = torch.from_numpy(nu[1]).float()
        pred = torch.sign(model(torch.from_numpy(hard.x))).numpy()
    assert np.all(pred == hard.y)


def test_relu_cnn_forward_matches_the_formula():
    gen = torch.Generator().manual_seed(3)
    model = ReLUCNN(7, 4, 0.5, gen)
    x = torch.randn(5, 3, 7, generator=gen)
    W = model.W.detach()
    F_pos = torch.relu(torch.einsum("npd,rd->nrp", x, W[1])).sum(-1).mean(-1)
    F_neg = torch.relu(torch.einsum("npd,rd->nrp", x, W[0])).sum(-1).mean(-1)
    torch.testing.assert_close(model(x), F_pos - F_neg)


def test_train_gd_decreases_logistic_loss_and_snapshots():
    pm = PatchModel(d=40)
    data = pm.sample(200, np.random.default_rng(4))
    model = LinearCNN(40)
    hist = train_gd(model, torch.from_numpy(data.x), torch.from_numpy(data.y), lr=0.1, steps=30, snapshot_every=10)
    assert hist.steps == [0, 10, 20, 30]
    assert hist.loss[0] == pytest.approx(np.log(2), rel=1e-6)  # w = 0
    assert all(b < a for a, b in zip(hist.loss, hist.loss[1:]))
    # the snapshots are copies, not views of the live parameters
    assert not torch.equal(hist.snapshots[0]["w"], hist.snapshots[-1]["w"])


def test_linear_teacher_is_at_chance_on_hard_only_and_right_elsewhere():
    pm = PatchModel(d=60)
    rng = np.random.default_rng(5)
    tr, te = pm.sample(200, rng), pm.sample(3000, rng)
    model = LinearCNN(60)
    train_gd(model, torch.from_numpy(tr.x), torch.from_numpy(tr.y), lr=0.1, steps=100)
    with torch.no_grad():
        pred = torch.sign(model(torch.from_numpy(te.x))).numpy()
    wrong = pred != te.y
    assert wrong[te.kind == HARD].mean() == pytest.approx(0.5, abs=0.06)
    assert wrong[te.kind != HARD].mean() < 0.02
