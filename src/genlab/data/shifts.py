"""An offline spurious-feature shift built on scikit-learn's digits (gradual domain shifts for STDW live in
:mod:`genlab.data.gradual`).

* **A spurious-feature pool dataset** for OODSelect: :func:`spurious_digits` appends a one-hot "colour" channel that
  agrees with the label with probability p in the ID environments, and builds an OOD set hiding a *reversed*
  subgroup (the colour points to a fixed wrong class), plus neutral and covariate-shift-only examples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genlab.data.digits import load_digits_arrays


def rotate_images(images: np.ndarray, angles_deg: np.ndarray) -> np.ndarray:
    """Rotate each square image (n, h, w) by its own angle about the centre, bilinear, zero fill, no cropping of
    the frame size. Vectorized: one sampling grid per image, gathered at once."""
    n, h, w = images.shape
    theta = np.deg2rad(np.asarray(angles_deg, dtype=np.float64))[:, None, None]
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    yy, xx = np.meshgrid(np.arange(h) - cy, np.arange(w) - cx, indexing="ij")
    # inverse map: output pixel (y, x) samples the input at R(-theta) (y, x)
    src_x = np.cos(theta) * xx + np.sin(theta) * yy + cx
    src_y = -np.sin(theta) * xx + np.cos(theta) * yy + cy
    x0, y0 = np.floor(src_x).astype(np.int64), np.floor(src_y).astype(np.int64)
    fx, fy = src_x - x0, src_y - y0
    idx = np.arange(n)[:, None, None]
    out = np.zeros((n, h, w), dtype=np.float64)
    for dy, dx, wgt in ((0, 0, (1 - fy) * (1 - fx)), (0, 1, (1 - fy) * fx), (1, 0, fy * (1 - fx)), (1, 1, fy * fx)):
        yi, xi = y0 + dy, x0 + dx
        ok = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
        out += np.where(ok, images[idx, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)], 0.0) * wgt
    return out.astype(np.float32)


# ---------------------------------------------------------------------------------------------------------------
# spurious-feature digits for OODSelect
# ---------------------------------------------------------------------------------------------------------------
NEUTRAL, REVERSED, COVARIATE = 0, 1, 2
GROUP_NAMES = {NEUTRAL: "neutral", REVERSED: "reversed", COVARIATE: "covariate"}


@dataclass(frozen=True)
class SpuriousData:
    """Features = 64 noisy pixels + a 10-dim one-hot spurious "colour" (scaled by ``spurious_scale``).

    ``group_ood`` marks each OOD example as neutral / reversed / covariate; it is for evaluation only.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    env_train: np.ndarray
    x_id: np.ndarray
    y_id: np.ndarray
    x_ood: np.ndarray
    y_ood: np.ndarray
    group_ood: np.ndarray
    misleading_ood: np.ndarray  # colour present and pointing to a wrong class (evaluation only)
    n_core: int = 64
    n_classes: int = 10


def _colour(y: np.ndarray, p_agree: np.ndarray, wrong: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Colour index: the label with probability p_agree, else ``wrong`` (a class != label)."""
    agree = rng.random(len(y)) < p_agree
    return np.where(agree, y, wrong)


def spurious_digits(
    seed: int = 0,
    p_envs: tuple[float, ...] = (0.9, 0.8),
    n_train: int = 1000,
    n_id: int = 300,
    ood_mix: tuple[float, float, float] = (0.6, 0.25, 0.15),
    pixel_noise: float = 0.5,
    covariate_noise: float = 0.8,
    covariate_angle: float = 25.0,
    spurious_scale: float = 1.0,
    p_neutral: float | None = None,
) -> SpuriousData:
    """Digits with a planted spurious colour channel (10 one-hot dims).

    * ID training data: split evenly over environments with colour = label w.p. p in ``p_envs`` (else a random
      other class); ``x_id`` is a held-out ID split drawn from the same environments (for ID accuracy).
    * OOD set (the remaining images): fractions ``ood_mix`` of *neutral* (by default the colour channel is absent,
      all zeros, so only the digit speaks; with ``p_neutral`` = p the colour is the label w.p. p, else a random other
      class), *reversed* (colour = (label + 1) mod 10 w.p. 0.9: the hidden subgroup on which colour-reliant models
      fail)
      and *covariate* (colour as in ID at p = mean(p_envs), images rotated and noisier).
    Every image gets Gaussian pixel noise of sd ``pixel_noise`` so that the digit alone is not trivially separable.
    """
    if len(ood_mix) != 3 or not np.isclose(sum(ood_mix), 1.0):
        raise ValueError(f"ood_mix must be three fractions summing to 1, got {ood_mix}")
    rng = np.random.default_rng(seed)
    img, y = load_digits_arrays(flat=False)
    perm = rng.permutation(len(y))
    if n_train + n_id >= len(y):
        raise ValueError(f"n_train + n_id must leave OOD images (digits has {len(y)}), got {n_train} + {n_id}")
    tr, idv, ood = perm[:n_train], perm[n_train : n_train + n_id], perm[n_train + n_id :]
    k = 10

    def other(yy: np.ndarray) -> np.ndarray:
        return (yy + rng.integers(1, k, len(yy))) % k

    def features(images: np.ndarray, colour: np.ndarray, noise: float) -> np.ndarray:
        pix = images.reshape(len(images), -1) + noise * rng.normal(size=(len(images), 64))
        onehot = np.vstack([np.eye(k), np.zeros((1, k))])[colour] * spurious_scale  # colour -1 = absent
        return np.concatenate([pix, onehot], axis=1).astype(np.float32)

    def env_data(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        env = np.arange(len(idx)) % len(p_envs)
        p = np.asarray(p_envs)[env]
        col = _colour(y[idx], p, other(y[idx]), rng)
        return features(img[idx], col, pixel_noise), y[idx], env

    x_train, y_train, env_train = env_data(tr)
    x_id, y_id, _ = env_data(idv)

    n_ood = len(ood)
    counts = np.floor(np.asarray(ood_mix) * n_ood).astype(int)
    counts[0] += n_ood - counts.sum()
    group = np.repeat([NEUTRAL, REVERSED, COVARIATE], counts)
    group = group[rng.permutation(n_ood)]
    yo = y[ood]
    col = np.empty(n_ood, dtype=np.int64)
    g0, g1, g2 = group == NEUTRAL, group == REVERSED, group == COVARIATE
    if p_neutral is None:
        col[g0] = -1
    else:
        col[g0] = _colour(yo[g0], np.full(g0.sum(), p_neutral), other(yo[g0]), rng)
    col[g1] = _colour(yo[g1], np.full(g1.sum(), 0.1), (yo[g1] + 1) % k, rng)
    col[g2] = _colour(yo[g2], np.full(g2.sum(), float(np.mean(p_envs))), other(yo[g2]), rng)
    images = img[ood].copy()
    if g2.any():
        images[g2] = rotate_images(images[g2], rng.uniform(-covariate_angle, covariate_angle, g2.sum()))
    x_ood = np.empty((n_ood, 64 + k), dtype=np.float32)
    x_ood[~g2] = features(images[~g2], col[~g2], pixel_noise)
    x_ood[g2] = features(images[g2], col[g2], covariate_noise)
    misleading = (col >= 0) & (col != yo)
    return SpuriousData(x_train, y_train, env_train, x_id, y_id, x_ood, yo, group, misleading)
