"""Patch data with an easy signal, a hard signal and label-independent noise (weak-to-strong CNN study).

A reconstruction of the data model of Oh, Song & Yun (arXiv 2510.24812, Definition 1; the exact definition was
not in hand): every input has three patches X = [x⁽¹⁾, x⁽²⁾, x⁽³⁾] ∈ R^{3×d}, a label y ∈ {±1}, and one of
three sample types

* easy-only (prob. p_e):  [μ_y,  μ_y, ξ]
* hard-only (prob. p_h):  [ν_y, −ν_y, ξ]
* both      (prob. p_b):  [μ_y,  ν_y, ξ]

with μ₊, μ₋, ν₊, ν₋ orthogonal signal vectors (coordinates 0..3 of R^d, norms ‖μ‖ and ‖ν‖) and ξ ~ N(0, σ_p²(I − P))
where P projects onto the signal span. A linear CNN Σ_p⟨w, x⁽ᵖ⁾⟩ = ⟨w, Σ_p x⁽ᵖ⁾⟩ sees ν_y − ν_y = 0 on hard-only
inputs, so it is at chance there whatever it learns; a ReLU CNN computes |⟨w, ν_y⟩| and can tell ν₊ from ν₋.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BOTH", "EASY", "HARD", "PatchData", "PatchModel"]

EASY, HARD, BOTH = 0, 1, 2
N_SIGNAL_DIMS = 4  # coordinates holding μ₊, μ₋, ν₊, ν₋


@dataclass(frozen=True)
class PatchData:
    """x: (n, 3, d) float32 patches; y: (n,) labels in {−1, +1}; kind: (n,) sample type (EASY, HARD, BOTH)."""

    x: np.ndarray
    y: np.ndarray
    kind: np.ndarray

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def subset(self, mask: np.ndarray) -> PatchData:
        return PatchData(self.x[mask], self.y[mask], self.kind[mask])


@dataclass(frozen=True)
class PatchModel:
    """The three-patch distribution; ``sample(n, rng)`` draws n i.i.d. labelled inputs."""

    d: int = 200
    mu_norm: float = 4.0
    nu_norm: float = 4.0
    sigma_p: float = 1.0
    p_easy: float = 0.5
    p_hard: float = 0.3
    p_both: float = 0.2

    def __post_init__(self) -> None:
        if self.d <= N_SIGNAL_DIMS:
            raise ValueError(f"d must exceed {N_SIGNAL_DIMS} (the signal coordinates), got {self.d}")
        if min(self.mu_norm, self.nu_norm) <= 0 or self.sigma_p < 0:
            raise ValueError("need mu_norm > 0, nu_norm > 0 and sigma_p >= 0")
        probs = np.array([self.p_easy, self.p_hard, self.p_both])
        if np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
            raise ValueError(f"p_easy + p_hard + p_both must be 1 with each >= 0, got {probs.tolist()}")

    def signals(self) -> tuple[np.ndarray, np.ndarray]:
        """(μ, ν), each of shape (2, d): row 0 is the signal of label −1, row 1 of label +1."""
        mu, nu = np.zeros((2, self.d)), np.zeros((2, self.d))
        mu[0, 1], mu[1, 0] = self.mu_norm, self.mu_norm
        nu[0, 3], nu[1, 2] = self.nu_norm, self.nu_norm
        return mu, nu

    def sample(self, n: int, rng: np.random.Generator, kind: int | None = None) -> PatchData:
        """Draw n samples (of one ``kind`` only if given). Labels are balanced in expectation."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        y = rng.choice(np.array([-1, 1]), size=n)
        if kind is None:
            kinds = rng.choice(3, size=n, p=[self.p_easy, self.p_hard, self.p_both])
        else:
            if kind not in (EASY, HARD, BOTH):
                raise ValueError(f"kind must be EASY, HARD or BOTH, got {kind}")
            kinds = np.full(n, kind)
        mu, nu = self.signals()
        lab = (y > 0).astype(int)
        mu_y, nu_y = mu[lab], nu[lab]
        x = np.zeros((n, 3, self.d))
        x[:, 0] = np.where((kinds == HARD)[:, None], nu_y, mu_y)
        x[:, 1] = np.select([(kinds == EASY)[:, None], (kinds == HARD)[:, None]], [mu_y, -nu_y], nu_y)
        noise = self.sigma_p * rng.standard_normal((n, self.d))
        noise[:, :N_SIGNAL_DIMS] = 0.0  # ξ ⟂ every signal: projection, not assumption
        x[:, 2] = noise
        return PatchData(x.astype(np.float32), y.astype(np.int64), kinds.astype(np.int64))

    def snr(self, n: int) -> float:
        """Scarce-regime statistic n p_b² ‖ν‖⁴ / (σ_p⁴ d) (benign vs harmful overfitting, up to constants)."""
        return n * self.p_both**2 * self.nu_norm**4 / (self.sigma_p**4 * self.d)

    def signal_noise_ratio(self, n: int) -> float:
        """Regime statistic r = n p_b ‖ν‖² / (σ_p² d): hard-signal growth vs per-sample noise memorisation."""
        return n * self.p_both * self.nu_norm**2 / (self.sigma_p**2 * self.d)
