"""Gradual-shift digit sequences for gradual domain adaptation (STDW, GST, GOAT), built offline from scikit-learn's
digits.

Two shifts after the papers' benchmarks:

* ``rotated``: Kumar et al. (2020) / GOAT rotated MNIST on 8x8 digits: the labelled source is rotated U(0, 5) degrees,
  the unlabelled stream sweeps the angle continuously from 5 to ``max_angle`` (60 by default) and is cut into
  ``n_domains`` consecutive domains; the target test split is rotated U(max_angle - 5, max_angle). Images are padded to
  12x12 before rotating with :func:`scipy.ndimage.rotate` (``reshape=False``, bilinear), so no stroke leaves the frame.
* ``intensity``: GOAT's colour-shifted MNIST: x -> (1 - c delta) x + delta with delta sweeping 0 -> 1 (brightness
  rises, contrast falls by c).

The digit images are split once per seed into disjoint pools: target-test images, source-validation images and a
training pool; the source and the unlabelled domains redraw images from the training pool with fresh shifts (as
Kumar et al. reuse MNIST images), so no target-test image is ever seen during adaptation. Labels of the unlabelled
domains are kept for evaluation only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genlab.data.digits import load_digits_arrays

PAD = 2  # 8x8 digits padded to 12x12: a 60-degree rotation keeps the whole digit in frame


@dataclass(frozen=True)
class GradualDigits:
    """``x_src, y_src`` labelled source (train); ``x_val, y_val`` labelled source validation (the only data
    hyper-parameters may be selected on); ``xs[t], ys[t]`` for t = 0..T-1 the unlabelled domains in order (the last
    one is the target's unlabelled training data; ``ys`` for evaluation only); ``x_test, y_test`` the target test
    split; ``shifts[t]`` the mean shift of domain t (``shift_src`` of the source)."""

    name: str
    x_src: np.ndarray
    y_src: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    xs: list[np.ndarray]
    ys: list[np.ndarray]
    x_test: np.ndarray
    y_test: np.ndarray
    shifts: list[float]
    shift_src: float
    shift_name: str
    n_classes: int = 10

    @property
    def dim(self) -> int:
        return int(self.x_src.shape[1])


def rotate_digits(images: np.ndarray, angles_deg: np.ndarray) -> np.ndarray:
    """Rotate each (h, w) image by its angle (degrees, counter-clockwise) about its centre: scipy.ndimage.rotate,
    bilinear, zero fill, same frame size."""
    from scipy.ndimage import rotate

    out = np.empty_like(images, dtype=np.float32)
    for i, (img, a) in enumerate(zip(images, angles_deg)):
        out[i] = rotate(img, float(a), reshape=False, order=1, mode="constant", cval=0.0)
    return out


def _pad(x: np.ndarray) -> np.ndarray:
    return np.pad(x, ((0, 0), (PAD, PAD), (PAD, PAD)))


SHIFTS = ("rotated", "intensity")


def gradual_digits(
    kind: str,
    seed: int = 0,
    n_domains: int = 8,
    per_domain: int = 300,
    n_source: int = 500,
    n_val: int = 200,
    n_test: int = 400,
    max_angle: float = 60.0,
    source_angle: float = 5.0,
    contrast_drop: float = 0.6,
) -> GradualDigits:
    """A labelled source, ``n_domains`` unlabelled domains of ``per_domain`` examples with a gradually growing
    shift, and a labelled target test split (see the module docstring)."""
    if kind not in SHIFTS:
        raise ValueError(f"unknown shift {kind!r}; known: {', '.join(SHIFTS)}")
    rng = np.random.default_rng(seed)
    x, y = load_digits_arrays(flat=False)
    x = _pad(x)
    perm = rng.permutation(len(y))
    test, val, pool = perm[:n_test], perm[n_test : n_test + n_val], perm[n_test + n_val :]
    src = rng.choice(pool, n_source)
    draw = rng.choice(pool, n_domains * per_domain)
    n_stream = n_domains * per_domain
    if kind == "rotated":
        lo, hi = source_angle, max_angle
        s_src, s_val = rng.uniform(0, source_angle, n_source), rng.uniform(0, source_angle, n_val)
        s_stream = np.sort(rng.uniform(lo, hi, n_stream))
        s_test = rng.uniform(max_angle - source_angle, max_angle, n_test)

        def apply(imgs: np.ndarray, s: np.ndarray) -> np.ndarray:
            return rotate_digits(imgs, s)

        name, shift_name = "rotated-digits", "angle (deg)"
    else:
        s_src, s_val = np.zeros(n_source), np.zeros(n_val)
        s_stream = np.sort(rng.uniform(0.0, 1.0, n_stream))
        s_test = rng.uniform(0.95, 1.0, n_test)

        def apply(imgs: np.ndarray, s: np.ndarray) -> np.ndarray:
            d = s[:, None, None]
            return ((1 - contrast_drop * d) * imgs + d).astype(np.float32)

        name, shift_name = "intensity-digits", "intensity shift"

    def flat(a: np.ndarray) -> np.ndarray:
        return a.reshape(len(a), -1).astype(np.float32)

    stream = flat(apply(x[draw], s_stream))
    xs = [stream[t * per_domain : (t + 1) * per_domain] for t in range(n_domains)]
    ys = [y[draw[t * per_domain : (t + 1) * per_domain]] for t in range(n_domains)]
    shifts = [float(s_stream[t * per_domain : (t + 1) * per_domain].mean()) for t in range(n_domains)]
    return GradualDigits(
        name,
        flat(apply(x[src], s_src)), y[src],
        flat(apply(x[val], s_val)), y[val],
        xs, ys,
        flat(apply(x[test], s_test)), y[test],
        shifts, float(s_src.mean()), shift_name,
    )
