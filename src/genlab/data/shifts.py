"""Offline generators of distribution shift, built on scikit-learn's digits or pure numpy.

Two kinds:

* **Domain sequences** for gradual domain adaptation (STDW, Kumar et al. 2020, GOAT): :func:`rotated_digits`,
  :func:`intensity_digits`, :func:`portraits_like`, :func:`drifting_tabular`. Each returns a :class:`DomainSequence`:
  domain 0 is the labelled source, domains 1..T are unlabelled intermediate domains with the last one the target;
  labels of domains >= 1 are kept for evaluation only, and ``target_test`` is a held-out labelled target split.
* **A spurious-feature pool dataset** for OODSelect: :func:`spurious_digits` appends a one-hot "colour" channel that
  agrees with the label with probability p in the ID environments, and builds an OOD set hiding a *reversed*
  subgroup (the colour points to a fixed wrong class), plus neutral and covariate-shift-only examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from genlab.data.digits import load_digits_arrays


# ---------------------------------------------------------------------------------------------------------------
# domain sequences
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DomainSequence:
    """Domains in order. ``xs[0], ys[0]`` = labelled source; ``ys[t >= 1]`` are for evaluation only."""

    name: str
    xs: list[np.ndarray]
    ys: list[np.ndarray]
    shifts: list[float]  # the shift parameter of each domain (angle, intensity, time, ...)
    target_test: tuple[np.ndarray, np.ndarray]
    n_classes: int
    shift_name: str = "shift"
    meta: dict = field(default_factory=dict)

    @property
    def n_domains(self) -> int:
        return len(self.xs)

    @property
    def dim(self) -> int:
        return int(self.xs[0].shape[1])


def _chunks(values: np.ndarray, n_domains: int) -> list[np.ndarray]:
    """Indices of ``values`` sorted ascending and cut into ``n_domains`` contiguous, equal chunks."""
    return np.array_split(np.argsort(values, kind="stable"), n_domains)


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


def _digits_pool(rng: np.random.Generator, n_target_test: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    x, y = load_digits_arrays(flat=False)
    perm = rng.permutation(len(y))
    test, rest = perm[:n_target_test], perm[n_target_test:]
    return x[rest], y[rest], x[test], y[test]


def rotated_digits(
    seed: int = 0,
    n_domains: int = 8,
    per_domain: int = 600,
    max_angle: float = 45.0,
    source_angle: float = 5.0,
    n_target_test: int = 400,
) -> DomainSequence:
    """Rotated digits after Kumar et al.: source rotated U(0, source_angle); intermediate domains sweep the angle
    continuously up to ``max_angle`` (images are reused with fresh angles); the last domain and the target test set
    lie in [max_angle - source_angle, max_angle]. Images stay 8x8 (rotation about the centre, zero fill). The default
    sweep is 0 -> 45 degrees: Kumar et al.'s 60 degrees leaves too little of an 8x8 digit recognisable."""
    rng = np.random.default_rng(seed)
    x, y, xt, yt = _digits_pool(rng, n_target_test)
    n_dom = n_domains + 1
    draw = rng.integers(0, len(y), size=n_dom * per_domain)
    src = rng.uniform(0, source_angle, per_domain)
    inter = np.sort(rng.uniform(source_angle, max_angle, (n_dom - 1) * per_domain))
    angles = np.concatenate([src, inter])
    imgs = rotate_images(x[draw], angles).reshape(len(draw), -1)
    xs = [imgs[i * per_domain : (i + 1) * per_domain] for i in range(n_dom)]
    ys = [y[draw[i * per_domain : (i + 1) * per_domain]] for i in range(n_dom)]
    shifts = [float(angles[i * per_domain : (i + 1) * per_domain].mean()) for i in range(n_dom)]
    t_angles = rng.uniform(max_angle - source_angle, max_angle, len(yt))
    target = (rotate_images(xt, t_angles).reshape(len(yt), -1), yt)
    return DomainSequence("rotated-digits", xs, ys, shifts, target, 10, "angle (deg)")


def intensity_digits(
    seed: int = 0,
    n_domains: int = 8,
    per_domain: int = 600,
    max_shift: float = 1.0,
    contrast_drop: float = 0.6,
    n_target_test: int = 400,
) -> DomainSequence:
    """Colour/intensity-shifted digits (GOAT's colour-shift MNIST on 8x8 digits): x -> (1 - c*delta) x + delta with
    delta sweeping 0 -> ``max_shift`` over the domains (brightness rises, contrast falls by ``contrast_drop``)."""
    rng = np.random.default_rng(seed)
    x, y, xt, yt = _digits_pool(rng, n_target_test)
    x, xt = x.reshape(len(x), -1), xt.reshape(len(xt), -1)
    n_dom = n_domains + 1
    draw = rng.integers(0, len(y), size=n_dom * per_domain)
    delta = np.concatenate(
        [np.zeros(per_domain), np.sort(rng.uniform(0, max_shift, (n_dom - 1) * per_domain))]
    )[:, None]
    imgs = ((1 - contrast_drop * delta) * x[draw] + delta).astype(np.float32)
    xs = [imgs[i * per_domain : (i + 1) * per_domain] for i in range(n_dom)]
    ys = [y[draw[i * per_domain : (i + 1) * per_domain]] for i in range(n_dom)]
    shifts = [float(delta[i * per_domain : (i + 1) * per_domain].mean()) for i in range(n_dom)]
    dt = rng.uniform(0.95 * max_shift, max_shift, (len(yt), 1))
    target = (((1 - contrast_drop * dt) * xt + dt).astype(np.float32), yt)
    return DomainSequence("intensity-digits", xs, ys, shifts, target, 10, "intensity shift")


def portraits_like(
    seed: int = 0,
    n_domains: int = 8,
    per_domain: int = 600,
    size: int = 10,
    drift: float = 1.0,
    noise: float = 0.35,
    n_target_test: int = 400,
) -> DomainSequence:
    """A synthetic stand-in for Portraits (yearbook photos by decade, binary label): size x size "faces" whose
    class is carried by the shape of a blob (wide vs tall ellipse). Over "time" t in [0, 1] the blob drifts
    upward and both classes' log aspect ratios drift by 0.7 ``drift`` (class 1 ends near the old boundary), while
    a slowly changing style (overall brightness, a growing "hair" band) adds nuisance shift."""
    rng = np.random.default_rng(seed)
    n_dom = n_domains + 1
    n = n_dom * per_domain + n_target_test
    t = np.concatenate([rng.uniform(0, 0.05, per_domain), np.sort(rng.uniform(0.05, 1.0, n - per_domain))])
    # the target test split is drawn at the end of time
    t[n_dom * per_domain :] = rng.uniform(0.95, 1.0, n_target_test)
    y = rng.integers(0, 2, n)
    c = (size - 1) / 2.0
    yy, xx = np.meshgrid(np.arange(size) - c, np.arange(size) - c, indexing="ij")
    # class 0: wide ellipse, class 1: tall ellipse at t = 0; both get wider as time passes (class 1 becomes wide)
    log_aspect = np.where(y == 1, 0.6, -0.6) - 0.7 * drift * t + 0.15 * rng.normal(size=n)
    sx = 2.2 * np.exp(log_aspect / 2)
    sy = 2.2 * np.exp(-log_aspect / 2)
    cy = 0.8 - 1.5 * drift * t + 0.4 * rng.normal(size=n)
    cx = 0.4 * rng.normal(size=n)
    blob = np.exp(
        -0.5 * (((xx[None] - cx[:, None, None]) / sx[:, None, None]) ** 2
                + ((yy[None] - cy[:, None, None]) / sy[:, None, None]) ** 2)
    )
    hair = (yy[None] < (-c + 3.0 * t[:, None, None])).astype(np.float64) * 0.5
    img = blob + hair + 0.3 * t[:, None, None] + noise * rng.normal(size=blob.shape)
    img = img.reshape(n, -1).astype(np.float32)
    m = n_dom * per_domain
    xs = [img[i * per_domain : (i + 1) * per_domain] for i in range(n_dom)]
    ys = [y[i * per_domain : (i + 1) * per_domain] for i in range(n_dom)]
    shifts = [float(t[i * per_domain : (i + 1) * per_domain].mean()) for i in range(n_dom)]
    return DomainSequence("portraits-like", xs, ys, shifts, (img[m:], y[m:]), 2, "time")


def drifting_tabular(
    seed: int = 0,
    n_domains: int = 8,
    per_domain: int = 600,
    dim: int = 16,
    n_classes: int = 5,
    max_angle: float = 90.0,
    n_target_test: int = 400,
) -> DomainSequence:
    """A drifting tabular stand-in for Cover Type: class-conditional Gaussian clusters in ``dim`` features, with
    the feature space rotated (in dim/2 planes) by an angle that grows along a sorted "elevation" covariate, as
    GOAT slices the Cover Type stream by elevation. Domains are consecutive elevation slices."""
    rng = np.random.default_rng(seed)
    n_dom = n_domains + 1
    n = n_dom * per_domain
    means = rng.normal(size=(n_classes, dim)) * 1.6
    y = rng.integers(0, n_classes, n + n_target_test)
    z = means[y] + rng.normal(size=(len(y), dim))
    elev = np.concatenate([rng.uniform(0, 1, n), rng.uniform(0.97, 1.0, n_target_test)])
    order = np.concatenate([np.argsort(elev[:n], kind="stable"), np.arange(n, n + n_target_test)])
    y, z, elev = y[order], z[order], elev[order]
    ang = np.deg2rad(max_angle) * elev
    cos, sin = np.cos(ang)[:, None], np.sin(ang)[:, None]
    a, b = z[:, 0::2], z[:, 1::2]
    x = np.empty_like(z)
    x[:, 0::2] = cos * a - sin * b
    x[:, 1::2] = sin * a + cos * b
    x = np.concatenate([x, elev[:, None]], axis=1).astype(np.float32)
    x /= np.abs(x[:per_domain]).max(0, keepdims=True) + 1e-6  # scale by the source's range only
    xs = [x[i * per_domain : (i + 1) * per_domain] for i in range(n_dom)]
    ys = [y[i * per_domain : (i + 1) * per_domain] for i in range(n_dom)]
    shifts = [float(elev[i * per_domain : (i + 1) * per_domain].mean()) for i in range(n_dom)]
    return DomainSequence("drifting-tabular", xs, ys, shifts, (x[n:], y[n:]), n_classes, "elevation")


DOMAIN_SEQUENCES = {
    "rotated-digits": rotated_digits,
    "intensity-digits": intensity_digits,
    "portraits-like": portraits_like,
    "drifting-tabular": drifting_tabular,
}


def domain_sequence(name: str, seed: int = 0, **kwargs) -> DomainSequence:
    """Build a named domain sequence (see ``DOMAIN_SEQUENCES``)."""
    if name not in DOMAIN_SEQUENCES:
        raise ValueError(f"unknown domain sequence {name!r}; known: {', '.join(DOMAIN_SEQUENCES)}")
    return DOMAIN_SEQUENCES[name](seed=seed, **kwargs)


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
