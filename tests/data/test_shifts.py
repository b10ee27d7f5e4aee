"""Shift generators: rotation exactness and spurious-colour statistics."""

from __future__ import annotations

import numpy as np
import pytest

from genlab.data.shifts import (
    COVARIATE,
    NEUTRAL,
    REVERSED,
    rotate_images,
    spurious_digits,
)


def test_rotate_identity_quarter_turn_and_mass():
    rng = np.random.default_rng(0)
    img = rng.random((3, 8, 8))
    assert np.allclose(rotate_images(img, np.zeros(3)), img, atol=1e-6)
    # +90 degrees maps the image like np.rot90 (counter-clockwise in array coordinates with y down -> k=-1 or 1)
    r90 = rotate_images(img, np.full(3, 90.0))
    assert min(np.abs(r90 - np.rot90(img, k, axes=(1, 2))).max() for k in (1, -1)) < 1e-5
    # a centred blob keeps its mass under rotation (no cropping of the frame)
    yy, xx = np.mgrid[:9, :9] - 4.0
    blob = np.exp(-(xx**2 + (yy / 2) ** 2) / 2)[None]
    out = rotate_images(blob, np.array([37.0]))
    assert out.sum() == pytest.approx(blob.sum(), rel=0.03)


def test_spurious_digits_colour_statistics():
    sd = spurious_digits(seed=0, p_envs=(0.9, 0.8), p_neutral=0.85)
    colour = sd.x_train[:, 64:].argmax(1)
    for env, p in enumerate((0.9, 0.8)):
        agree = np.mean(colour[sd.env_train == env] == sd.y_train[sd.env_train == env])
        assert agree == pytest.approx(p, abs=0.05)
    g = sd.group_ood
    assert np.mean(g == REVERSED) == pytest.approx(0.25, abs=0.01)
    assert np.mean(g == COVARIATE) == pytest.approx(0.15, abs=0.01)
    oc = sd.x_ood[:, 64:].argmax(1)
    rev = g == REVERSED
    assert np.mean(oc[rev] == (sd.y_ood[rev] + 1) % 10) == pytest.approx(0.9, abs=0.06)
    assert np.mean(oc[g == NEUTRAL] == sd.y_ood[g == NEUTRAL]) == pytest.approx(0.85, abs=0.06)
    assert np.array_equal(sd.misleading_ood, oc != sd.y_ood)
    # colour absent on neutral examples by default
    sd0 = spurious_digits(seed=0)
    assert np.all(sd0.x_ood[sd0.group_ood == NEUTRAL, 64:] == 0)
    assert not sd0.misleading_ood[sd0.group_ood == NEUTRAL].any()
    with pytest.raises(ValueError, match="ood_mix"):
        spurious_digits(ood_mix=(0.5, 0.5, 0.5))
