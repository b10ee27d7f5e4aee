"""Small statistics for claims: paired differences with standard errors, permutation and bootstrap tests, and
Holm's multiple-comparison correction.

A claim that passes when *any* of many comparisons is significant must correct for the number of comparisons
(:func:`holm`); a claim about "A beats B" over seeds reads a :func:`paired` difference. Everything here is
numpy only and deterministic given a seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Paired:
    """The mean of paired differences ``a - b``, its standard error and a two-sided sign-flip permutation p."""

    mean: float
    se: float
    n: int
    p: float

    def above(self, margin: float = 0.0, z: float = 2.0) -> bool | None:
        """True when mean − z·se > margin, False when mean + z·se < margin, None (undecided) otherwise."""
        if self.n < 2 or not math.isfinite(self.se):
            return None
        if self.mean - z * self.se > margin:
            return True
        if self.mean + z * self.se < margin:
            return False
        return None

    def as_numbers(self, prefix: str = "diff") -> dict[str, float]:
        return {f"{prefix}_mean": self.mean, f"{prefix}_se": self.se, f"{prefix}_n": self.n, f"{prefix}_p": self.p}


def mean_se(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean (nan when n < 2) and n, ignoring NaNs."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    if n == 0:
        return math.nan, math.nan, 0
    se = float(arr.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return float(arr.mean()), se, n


def paired(a: Sequence[float], b: Sequence[float], n_perm: int = 10_000, seed: int = 0) -> Paired:
    """Paired difference ``a - b`` (same seeds / same instances): mean, s.e. and a permutation p-value."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.ndim != 1:
        raise ValueError("paired() takes two 1-D sequences of equal length")
    mean, se, n = mean_se(d)
    return Paired(mean, se, n, sign_flip_p(d[~np.isnan(d)], n_perm, seed))


def sign_flip_p(d: Sequence[float], n_perm: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of mean(d) = 0 under random sign flips (exact enumeration when 2^n <= n_perm)."""
    d = np.asarray(d, dtype=float)
    n = d.size
    if n == 0:
        return math.nan
    observed = abs(d.mean()) - 1e-12
    if 2**n <= n_perm:  # every sign pattern: the exact p-value
        signs = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2.0 - 1.0
        return float(np.mean(np.abs(signs @ d / n) >= observed))
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_perm, n))
    return float((np.sum(np.abs(signs @ d / n) >= observed) + 1) / (n_perm + 1))


def permutation_p(a: Sequence[float], b: Sequence[float], n_perm: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of mean(a) = mean(b) for two independent samples, by label permutation."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((n_perm, pooled.size)), axis=1)
    shuffled = pooled[perms]
    null = np.abs(shuffled[:, : a.size].mean(axis=1) - shuffled[:, a.size :].mean(axis=1))
    return float((np.sum(null >= observed - 1e-12) + 1) / (n_perm + 1))


def bootstrap_ci(
    values: Sequence[float], level: float = 0.95, n_boot: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    idx = np.random.default_rng(seed).integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def holm(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down correction: which hypotheses are rejected at family-wise error ``alpha``."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    rejected = np.zeros(p.size, dtype=bool)
    for rank, i in enumerate(order):
        if p[i] > alpha / (p.size - rank):
            break
        rejected[i] = True
    return rejected.tolist()


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (monotone, capped at 1): reject where adjusted p <= alpha."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    adjusted = np.empty(p.size)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (p.size - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95 % for z = 1.96); (0, 1) when n = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
