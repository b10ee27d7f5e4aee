"""scikit-learn's bundled digits (1797 images, 8x8, 10 classes): the default real-data stand-in. No download."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Split:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def load_digits_arrays(flat: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Images scaled to [0, 1] as float32 (n, 64) or (n, 8, 8), and int64 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    if not flat:
        x = x.reshape(-1, 8, 8)
    return x, d.target.astype(np.int64)


def digits_split(test_fraction: float = 0.3, seed: int = 0, flat: bool = True) -> Split:
    """A seeded, class-stratified train/test split of the digits."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    x, y = load_digits_arrays(flat)
    rng = np.random.default_rng(seed)
    test_idx = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        test_idx.append(idx[: round(test_fraction * len(idx))])
    test = np.zeros(len(y), bool)
    test[np.concatenate(test_idx)] = True
    return Split(x[~test], y[~test], x[test], y[test])
