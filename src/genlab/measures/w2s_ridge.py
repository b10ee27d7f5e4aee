"""Weak-to-strong ridge regression: deterministic equivalents (DE) and a vectorised Monte Carlo check.

Setting (all quantities in the eigenbasis of the feature covariance, so Σ = diag(eigs)):

* data  x ~ N(0, Σ),  y = <β, x> + ε,  ε ~ N(0, σ²);
* teacher: (weighted) ridge on n clean samples,
  ŵ_T = (XᵀX/n + λ_T Γ_T)⁻¹ XᵀY/n;
* student: (weighted) ridge on m fresh inputs labelled by the teacher (noiseless pseudo-labels X̃ŵ_T),
  ŵ_S = (X̃ᵀX̃/m + λ_S Γ_S)⁻¹ X̃ᵀX̃ ŵ_T/m.

Normalisation is explicit: Gram matrices are divided by the sample count (``XᵀX/n``), so λ is on the scale of
the eigenvalues of Σ. A diagonal weighting Γ is handled by the change of variables Σ → Γ^{-1/2} Σ Γ^{-1/2},
β → Γ^{1/2} β (generalised ridge is plain ridge in transformed coordinates).

The DE is the standard one for ridge with Gaussian features (effective regularisation κ solving
λ = κ(1 − df₁(κ)/n)); the student formula plugs the teacher's first and second moments into the DE of a
noiseless ridge regression with random target ŵ_T. This is our derivation of the paper's setting
(arXiv 2505.18346), checked against simulation in tests/measures/test_w2s_ridge_de.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from genlab.measures.deterministic_equivalents import ridge_lambda_star

__all__ = [
    "WeightedRidgeDE",
    "best_shrinkage_isotropic",
    "dof",
    "effective_regularization",
    "lambda_opt_isotropic",
    "mc_w2s",
    "student_de",
    "w2s_de",
    "weighted_ridge_de",
]


def _as_vec(name: str, v: np.ndarray | float, d: int) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(v, dtype=float), (d,)).copy()
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _check_spectrum(eigs: np.ndarray) -> np.ndarray:
    eigs = np.asarray(eigs, dtype=float)
    if eigs.ndim != 1 or eigs.size == 0 or np.any(eigs <= 0) or not np.all(np.isfinite(eigs)):
        raise ValueError("eigs must be a non-empty 1-d array of positive eigenvalues of Σ")
    return eigs


def dof(eigs: np.ndarray, kappa: float, k: int = 1) -> float:
    """Degrees of freedom df_k(κ) = Tr(Σᵏ (Σ + κ)⁻ᵏ) for one κ ≥ 0 (κ = 0: the ridgeless limits)."""
    eigs = np.asarray(eigs, dtype=float)
    return float(np.sum((eigs / (eigs + kappa)) ** k))


def effective_regularization(eigs: np.ndarray, lam: float, n: int) -> float:
    """κ ≥ 0 solving λ = κ (1 − df₁(κ)/n) (normalisation XᵀX/n).

    For λ > 0 this is :func:`genlab.measures.deterministic_equivalents.ridge_lambda_star` with
    ``normalisation="mean"``. For λ = 0 and n > d the answer is κ = 0 (OLS); for λ = 0 and n < d it is the κ
    with df₁(κ) = n (minimum-norm interpolation), found in log κ where 1 − df₁(κ)/n is increasing.
    """
    eigs = _check_spectrum(eigs)
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    d = eigs.size
    if lam == 0.0:
        if n > d:
            return 0.0
        if n == d:
            raise ValueError("ridgeless regression with n == d is at the interpolation threshold (infinite risk)")

    if lam > 0.0:
        return float(ridge_lambda_star(eigs, float(n), lam, normalisation="mean"))

    def g(logk: float) -> float:
        k = np.exp(logk)
        return 1.0 - dof(eigs, k) / n - lam / k

    scale = float(np.max(eigs))
    lo, hi = np.log(scale * 1e-14 + 1e-300), np.log(scale * 1e8 + lam * 10 + 1.0)
    while g(lo) > 0:  # extremely small λ with n > d: κ ≈ λ / (1 − d/n) can sit below the bracket
        lo -= 10.0
    return float(np.exp(brentq(g, lo, hi, xtol=1e-13, rtol=1e-12, maxiter=500)))


@dataclass(frozen=True)
class WeightedRidgeDE:
    """Deterministic equivalent of one (weighted) ridge fit, in the eigenbasis of Σ.

    ``mean_error`` is E[ŵ − β] (vector), ``sq_error`` the diagonal of E[(ŵ − β)(ŵ − β)ᵀ]; ``excess`` the
    excess risk E[(ŵ − β)ᵀ Σ (ŵ − β)] and ``test_mse`` = excess + σ².
    """

    kappa: float
    df1: float
    df2: float
    bias: float
    variance: float
    excess: float
    test_mse: float
    mean_error: np.ndarray
    sq_error: np.ndarray

    def second_moment(self, beta: np.ndarray) -> np.ndarray:
        """Diagonal of E[ŵ ŵᵀ] = E[(ŵ−β)(ŵ−β)ᵀ] + 2 β E[ŵ−β]ᵀ (diag) + ββᵀ (diag)."""
        return self.sq_error + 2.0 * beta * self.mean_error + beta**2


def weighted_ridge_de(
    eigs: np.ndarray,
    beta: np.ndarray,
    sigma2: float,
    n: int,
    lam: float,
    gamma: np.ndarray | None = None,
) -> WeightedRidgeDE:
    """DE of ridge ŵ = (XᵀX/n + λΓ)⁻¹XᵀY/n on n samples with label noise σ² (Γ diagonal, default I)."""
    eigs = _check_spectrum(eigs)
    d = eigs.size
    beta = _as_vec("beta", beta, d)
    g = np.ones(d) if gamma is None else _as_vec("gamma", gamma, d)
    if np.any(g <= 0):
        raise ValueError("gamma must be positive")
    if sigma2 < 0:
        raise ValueError("sigma2 must be >= 0")
    s, b = eigs / g, np.sqrt(g) * beta  # transformed coordinates
    kappa = effective_regularization(s, lam, n)
    d1, d2 = dof(s, kappa, 1), dof(s, kappa, 2)
    if n - d2 <= 0:
        raise ValueError("degenerate ridge (n <= df2): the risk diverges")
    shrink = kappa / (s + kappa)
    bias = float(np.sum(s * (shrink * b) ** 2))
    tau2_over_n = (sigma2 + bias) / (n - d2)
    variance = tau2_over_n * d2
    mean_err_t = -shrink * b
    sq_err_t = (shrink * b) ** 2 + tau2_over_n * s / (s + kappa) ** 2
    excess = bias + variance
    return WeightedRidgeDE(
        kappa=kappa,
        df1=d1,
        df2=d2,
        bias=bias,
        variance=variance,
        excess=excess,
        test_mse=excess + sigma2,
        mean_error=mean_err_t / np.sqrt(g),
        sq_error=sq_err_t / g,
    )


def student_de(
    eigs: np.ndarray,
    beta: np.ndarray,
    sigma2: float,
    teacher: WeightedRidgeDE,
    m: int,
    lam: float,
    gamma: np.ndarray | None = None,
) -> WeightedRidgeDE:
    """DE of the student ridge fitted to noiseless teacher labels on m fresh inputs.

    With S = (Σ' + κ_S)⁻¹ in the student's transformed coordinates (Σ' = Σ/Γ, β' = √Γβ, ŵ'_T = √Γŵ_T):
    R_S = Q_T(Σ'³S²) − 2κ_S ⟨E[ŵ'_T − β'], Σ'²S²β'⟩ + κ_S²⟨β', Σ'S²β'⟩ + τ_S²/m · df₂(κ_S),
    τ_S² = κ_S² E[ŵ'_Tᵀ Σ'S² ŵ'_T] / (1 − df₂(κ_S)/m), Q_T(A) = E[(ŵ'_T − β')ᵀA(ŵ'_T − β')].
    ``mean_error``/``sq_error`` of the result are not propagated (set to NaN): the student is a final model.
    """
    eigs = _check_spectrum(eigs)
    d = eigs.size
    beta = _as_vec("beta", beta, d)
    g = np.ones(d) if gamma is None else _as_vec("gamma", gamma, d)
    if np.any(g <= 0):
        raise ValueError("gamma must be positive")
    s, b = eigs / g, np.sqrt(g) * beta
    e = np.sqrt(g) * teacher.mean_error
    q = g * teacher.sq_error
    second = q + 2.0 * b * e + b**2  # diag E[ŵ'_T ŵ'_Tᵀ]
    kappa = effective_regularization(s, lam, m)
    d1, d2 = dof(s, kappa, 1), dof(s, kappa, 2)
    if m - d2 <= 0:
        raise ValueError("degenerate student ridge (m <= df2)")
    S2 = 1.0 / (s + kappa) ** 2
    core = float(np.sum(s**3 * S2 * q) - 2 * kappa * np.sum(e * s**2 * S2 * b) + kappa**2 * np.sum(s * S2 * b**2))
    tau2 = kappa**2 * float(np.sum(s * S2 * second)) / (1.0 - d2 / m)
    variance = tau2 / m * d2
    excess = core + variance
    nan = np.full(d, np.nan)
    return WeightedRidgeDE(kappa, d1, d2, core, variance, excess, excess + sigma2, nan, nan)


def w2s_de(
    eigs: np.ndarray,
    beta: np.ndarray,
    sigma2: float,
    n: int,
    lam_t: float,
    m: int,
    lam_s: float,
    gamma_t: np.ndarray | None = None,
    gamma_s: np.ndarray | None = None,
) -> tuple[float, float]:
    """(teacher test MSE, student test MSE) predicted by the DE."""
    t = weighted_ridge_de(eigs, beta, sigma2, n, lam_t, gamma_t)
    st = student_de(eigs, beta, sigma2, t, m, lam_s, gamma_s)
    return t.test_mse, st.test_mse


def lambda_opt_isotropic(sigma2: float, d: int, n: int, beta_norm2: float) -> float:
    """Optimal teacher λ for Σ = I (normalisation XᵀX/n): λ_opt = σ² d / (n ‖β‖²)."""
    if beta_norm2 <= 0 or n < 1:
        raise ValueError("need beta_norm2 > 0 and n >= 1")
    return sigma2 * d / (n * beta_norm2)


def best_shrinkage_isotropic(teacher: WeightedRidgeDE, beta: np.ndarray) -> float:
    """Best student λ_S* = max(0, E‖ŵ_T‖²/E⟨ŵ_T, β⟩ − 1) in the limit Σ = I, m → ∞ (student = ŵ_T/(1+λ_S))."""
    beta = np.asarray(beta, dtype=float)
    norm2 = float(np.sum(teacher.second_moment(beta)))
    inner = float(np.sum(beta * (beta + teacher.mean_error)))
    return max(0.0, norm2 / inner - 1.0)


# --------------------------------------------------------------------------------------------------
# Monte Carlo
# --------------------------------------------------------------------------------------------------


def _ridge_path(Z: np.ndarray, target: np.ndarray, lams: np.ndarray) -> np.ndarray:
    """Ridge (ZᵀZ/k + λ)⁻¹ ZᵀT/k for every λ at once via one eigendecomposition.

    ``target`` is (k, c) labels; returns (d, c, len(lams)). λ = 0 gives the minimum-norm solution.
    """
    k = Z.shape[0]
    ev, V = np.linalg.eigh(Z.T @ Z / k)
    ev = np.where(ev > 1e-10 * max(ev.max(), 1e-300), ev, 0.0)
    c = V.T @ (Z.T @ target / k)  # (d, c)
    denom = ev[:, None] + lams[None, :]
    inv = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0)
    coef = c[:, :, None] * inv[:, None, :]  # (d, c, L)
    return (V @ coef.reshape(coef.shape[0], -1)).reshape(coef.shape)


def mc_w2s(
    eigs: np.ndarray,
    beta: np.ndarray,
    sigma2: float,
    n: int,
    m: int,
    lam_t: np.ndarray,
    lam_s: np.ndarray,
    reps: int,
    rng: np.random.Generator,
    gamma_t: np.ndarray | None = None,
    gamma_s: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate the weak-to-strong ridge pipeline ``reps`` times for every (λ_T, λ_S) pair.

    Returns (teacher test MSE of shape (reps, len(lam_t)), student test MSE of shape
    (reps, len(lam_t), len(lam_s))). Test MSE is the exact population risk (ŵ−β)ᵀΣ(ŵ−β) + σ² of each fit.
    One teacher is trained per repetition and λ_T; the student inputs are shared across λ_T and λ_S.
    """
    eigs = _check_spectrum(eigs)
    d = eigs.size
    beta = _as_vec("beta", beta, d)
    gt = np.ones(d) if gamma_t is None else _as_vec("gamma_t", gamma_t, d)
    gs = np.ones(d) if gamma_s is None else _as_vec("gamma_s", gamma_s, d)
    lam_t = np.atleast_1d(np.asarray(lam_t, dtype=float))
    lam_s = np.atleast_1d(np.asarray(lam_s, dtype=float))
    if reps < 1 or n < 1 or m < 1:
        raise ValueError("reps, n and m must be >= 1")
    sq = np.sqrt(eigs)
    t_mse = np.empty((reps, lam_t.size))
    s_mse = np.empty((reps, lam_t.size, lam_s.size))
    for r in range(reps):
        X = rng.standard_normal((n, d)) * sq
        y = X @ beta + np.sqrt(sigma2) * rng.standard_normal(n)
        wt = _ridge_path(X / np.sqrt(gt), y[:, None], lam_t)[:, 0, :] / np.sqrt(gt)[:, None]  # (d, nT)
        err_t = wt - beta[:, None]
        t_mse[r] = np.sum(eigs[:, None] * err_t**2, axis=0) + sigma2
        Xs = rng.standard_normal((m, d)) * sq
        labels = Xs @ wt  # (m, nT) noiseless pseudo-labels
        ws = _ridge_path(Xs / np.sqrt(gs), labels, lam_s) / np.sqrt(gs)[:, None, None]  # (d, nT, nS)
        err_s = ws - beta[:, None, None]
        s_mse[r] = np.einsum("i,itl->tl", eigs, err_s**2) + sigma2
    return t_mse, s_mse
