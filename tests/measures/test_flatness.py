"""Relative flatness: closed form and autograd route vs brute-force Hessians of tiny models."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from genlab.measures.flatness import (
    flatness_penalty,
    relative_flatness,
    relative_flatness_from_features,
    softmax_ce_flatness_terms,
)


@pytest.fixture(autouse=True)
def _float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def brute_kappa(loss_of_w, w: torch.Tensor) -> tuple[float, float, np.ndarray]:
    """κ = Σ_{s,s'} <w_s, w_s'> Tr(H_ss') from the full autograd Hessian of the loss w.r.t. W (k, d)."""
    k, d = w.shape
    h = torch.autograd.functional.hessian(loss_of_w, w.detach().clone()).reshape(k, d, k, d)
    t = torch.einsum("ajbj->ab", h)  # T[s, s'] = Tr(H_ss')
    gram = w @ w.T
    return float((gram * t).sum()), float(torch.trace(t)), t.numpy()


class Tiny(nn.Module):
    def __init__(self, d_in=5, d=4, k=3, head_bias=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, d), nn.Tanh())
        self.head = nn.Linear(d, k, bias=head_bias)

    def forward(self, x):
        return self.head(self.body(x))


@pytest.mark.parametrize("head_bias", [False, True])
def test_closed_form_matches_autograd_hessian_last_layer(head_bias):
    torch.manual_seed(0)
    model = Tiny(head_bias=head_bias)
    x, y = torch.randn(11, 5), torch.randint(0, 3, (11,))
    phi = model.body(x).detach()

    def loss_of_w(w):
        z = phi @ w.T + (model.head.bias if head_bias else 0)
        return F.cross_entropy(z, y)

    w = model.head.weight.detach()
    kappa, trace, t = brute_kappa(loss_of_w, w)
    got = relative_flatness(model, "head", (x, y))
    assert got.kappa == pytest.approx(kappa, rel=1e-9, abs=1e-12)
    assert got.trace_hessian == pytest.approx(trace, rel=1e-9)
    np.testing.assert_allclose(got.neuron_traces, t, atol=1e-12)
    assert got.kappa <= got.kappa_bound + 1e-12  # Lemma A.2 bound
    assert got.kappa_bound == pytest.approx(float((w**2).sum()) * trace, rel=1e-9)
    # per-sample closed form: Tr(H_i) = ‖φ_i‖² Σ p(1-p)
    logits = model(x).detach()
    kap_i, tr_i, _ = softmax_ce_flatness_terms(phi, w, logits)
    p = torch.softmax(logits, 1)
    np.testing.assert_allclose(tr_i, (phi**2).sum(1) * (p * (1 - p)).sum(1), rtol=1e-12)
    assert float(kap_i.mean()) == pytest.approx(kappa, rel=1e-9)


def test_autograd_route_for_an_intermediate_layer():
    """κ of a hidden layer (nonlinear downstream) equals the brute-force Hessian contraction."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    x, y = torch.randn(9, 4), torch.randint(0, 2, (9,))
    w0 = model[0].weight.detach()

    def loss_of_w(w):
        return F.cross_entropy(model[2](torch.tanh(x @ w.T + model[0].bias)), y)

    kappa, trace, t = brute_kappa(loss_of_w, w0)
    got = relative_flatness(model, "0", (x, y))
    assert got.kappa == pytest.approx(kappa, rel=1e-8)
    assert got.trace_hessian == pytest.approx(trace, rel=1e-8)
    np.testing.assert_allclose(got.neuron_traces, t, atol=1e-10)


def test_custom_loss_and_batches_equal_one_pass():
    """A user loss (MSE) via autograd, and a loader of batches gives the same as one full batch."""
    torch.manual_seed(2)
    model = Tiny(k=2)
    x, y = torch.randn(12, 5), torch.randn(12, 2)
    phi = model.body(x).detach()

    def per_sample(out, target):
        return ((out - target) ** 2).sum(1)

    kappa, _, _ = brute_kappa(lambda w: per_sample(phi @ w.T, y).mean(), model.head.weight.detach())
    whole = relative_flatness(model, "head", (x, y), loss=per_sample)
    loader = [(x[:5], y[:5]), (x[5:], y[5:])]
    split = relative_flatness(model, "head", loader, loss=per_sample)
    assert whole.kappa == pytest.approx(kappa, rel=1e-9)
    assert split.kappa == pytest.approx(kappa, rel=1e-9)
    # MSE output Hessian is 2I: T = 2 mean ‖φ‖² I
    np.testing.assert_allclose(whole.neuron_traces, 2 * float((phi**2).sum(1).mean()) * np.eye(2), atol=1e-12)


def test_output_hessian_form_matches_logits_form():
    torch.manual_seed(3)
    phi, w = torch.randn(7, 4), torch.randn(3, 4)
    logits = phi @ w.T
    p = torch.softmax(logits, 1)
    g = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
    a = relative_flatness_from_features(phi, w, logits=logits)
    b = relative_flatness_from_features(phi, w, output_hessian=g)
    assert a.kappa == pytest.approx(b.kappa, rel=1e-12)
    assert a.trace_hessian == pytest.approx(b.trace_hessian, rel=1e-12)


def test_feature_scale_invariance_only_when_normalized():
    torch.manual_seed(4)
    phi, w = torch.randn(20, 6), torch.randn(4, 6)
    logits = phi @ w.T  # keep the logits fixed: scale φ and shrink W to compensate
    base_n = relative_flatness_from_features(phi, w, logits=logits, normalize_features=True)
    scaled_n = relative_flatness_from_features(3.0 * phi, w / 3.0, logits=logits, normalize_features=True)
    base = relative_flatness_from_features(phi, w, logits=logits)
    scaled = relative_flatness_from_features(3.0 * phi, w, logits=logits)
    # un-normalised κ grows with the feature norm squared (feature-norm inflation)
    assert scaled.kappa == pytest.approx(9 * base.kappa, rel=1e-12)
    # normalised κ does not depend on ‖φ‖, only on W and p
    assert relative_flatness_from_features(3.0 * phi, w, logits=logits, normalize_features=True).kappa == (
        pytest.approx(base_n.kappa, rel=1e-12)
    )
    assert scaled_n.kappa == pytest.approx(base_n.kappa / 9, rel=1e-12)


def test_penalty_is_the_bound_and_differentiable():
    torch.manual_seed(5)
    phi, w = torch.randn(8, 4), torch.randn(3, 4, requires_grad=True)
    logits = phi @ w.T
    pen = flatness_penalty(phi, w, logits, temperature=1.0, normalize_features=False)
    ref = relative_flatness_from_features(phi, w.detach(), logits=logits.detach())
    assert float(pen.detach()) == pytest.approx(ref.kappa_bound, rel=1e-12)
    pen.backward()
    assert w.grad is not None and torch.isfinite(w.grad).all()
    # normalised + temperature: ‖W‖² mean Σ p(1-p) with p = softmax(z/τ)
    p = torch.softmax(logits.detach() / 2.0, 1)
    want = float((w.detach() ** 2).sum() * (p * (1 - p)).sum(1).mean())
    assert float(flatness_penalty(phi, w, logits, temperature=2.0).detach()) == pytest.approx(want, rel=1e-12)


def test_errors_are_actionable():
    model = Tiny()
    with pytest.raises(ValueError, match="linear layers are"):
        relative_flatness(model, "nope", (torch.randn(2, 5), torch.tensor([0, 1])))
    with pytest.raises(ValueError, match=r"\(n, d\)"):
        relative_flatness_from_features(torch.randn(2, 3, 4), torch.randn(3, 4), logits=torch.randn(2, 3))
    with pytest.raises(ValueError, match="temperature"):
        flatness_penalty(torch.randn(2, 4), torch.randn(3, 4), torch.randn(2, 3), temperature=0)
