"""Tests for genlab.measures.generative: NN distances, copy fraction, MMD, Fréchet distance, PSNR."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genlab.measures.generative import (
    classifier_accuracy,
    copy_fraction,
    denoising_psnr,
    frechet_distance,
    mmd_rbf,
    nn_distances,
    psnr,
    train_feature_classifier,
)


def test_nn_distances_known_answer_and_copies():
    ref = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    s = np.array([[0.0, 0.1], [1.5, 0.0], [3.0, 0.0]])
    d1, d2 = nn_distances(s, ref, chunk=2)
    np.testing.assert_allclose(d1, [0.1, 1.5, 0.0], atol=1e-5)
    np.testing.assert_allclose(d2, [np.hypot(3, 0.1), 1.5, 3.0], atol=1e-5)
    assert copy_fraction(d1, d2) == pytest.approx(2 / 3)
    _, d2_single = nn_distances(s, ref[:1])
    assert np.isinf(d2_single).all()
    with pytest.raises(ValueError):
        nn_distances(s, np.zeros((3, 3)))


def test_mmd_is_near_zero_for_same_law_and_grows_with_shift():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((400, 5)), rng.standard_normal((400, 5))
    same = mmd_rbf(a, b, bandwidth=2.0)
    shifted = [mmd_rbf(a, b + s, bandwidth=2.0) for s in (0.3, 1.0)]
    assert abs(same) < 0.01
    assert shifted[1] > shifted[0] > same


def test_frechet_distance_closed_form_for_gaussians():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20000, 3))
    b = 2.0 * rng.standard_normal((20000, 3)) + np.array([1.0, 0.0, 0.0])
    # ||mu||^2 + tr(I + 4I - 2*2I) = 1 + 3
    assert frechet_distance(a, b) == pytest.approx(4.0, rel=0.03)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)


def test_psnr_and_denoising_psnr():
    x = torch.zeros(4, 10)
    assert psnr(x + 0.1, x) == pytest.approx(np.full(4, 10 * np.log10(4 / 0.01)))
    # an oracle denoiser gives the clamped maximum, the identity at t gives a finite known value
    g = torch.Generator().manual_seed(0)
    oracle = denoising_psnr(lambda xt, t: x, x, [0.5], g)
    assert oracle[0] > 100
    ident = denoising_psnr(lambda xt, t: xt, x, [0.5], torch.Generator().manual_seed(0))
    # x_t = 0.5 eps, MSE ~ 0.25 -> 10 log10(4 / 0.25) ~ 12 dB
    assert ident[0] == pytest.approx(12.04, abs=1.0)


def test_feature_classifier_learns_digits():
    from genlab.data.images import digits_data

    d = digits_data(8, n_test=300)
    clf = train_feature_classifier(d.x_train, d.y_train, torch.Generator().manual_seed(0), steps=300)
    assert classifier_accuracy(clf, d.x_test, d.y_test) > 0.85
    f_test, f_train = clf.features(d.x_test), clf.features(d.x_train[:300])
    noise = clf.features(np.random.default_rng(0).uniform(-1, 1, (300, 64)).astype(np.float32))
    assert frechet_distance(f_train, f_test) < frechet_distance(noise, f_test)
