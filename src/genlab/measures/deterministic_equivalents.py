"""Deterministic equivalents (DE) of test risk and estimator norm for ridge and random-features ridge.

High-dimensional approximations of expectations (Wang, Chen, Rosasco, Liu, arXiv 2502.01585, and the
random-features DE of Bach 2023 / Defilippis et al. 2024 that it builds on). Everything is expressed through a
diagonal covariance ``spectrum`` ξ (eigenvalues of Σ, shape ``(k,)``) and the target's coefficients
``beta_star`` in that eigenbasis (shape ``(k,)``). Notation: df_m(κ) = Tr(Σᵐ (Σ + κ)⁻ᵐ).

**Linear ridge**: β̂ = (XᵀX + λI)⁻¹Xᵀy with x ~ N(0, Σ), y = ⟨β*, x⟩ + ε, Var ε = σ² (``normalisation="sum"``,
the default; ``"mean"`` takes λ of (XᵀX/n + λI)⁻¹Xᵀy/n). The effective regularisation λ* solves
n − λ/λ* = df₁(λ*). The weighted and teacher–student ridge of weak-to-strong generalisation
(:mod:`genlab.measures.w2s_ridge`) is built on the same solver.

**Random-features ridge (RFRR)**: latent g ~ N(0, I_k), y = ⟨g, β*⟩ + ε, features z = Fg/√p with the p rows
of F drawn from N(0, Σ); â = (ZᵀZ + λI)⁻¹Zᵀy. Excess risk R = ‖β* − Fᵀâ/√p‖², norm N = ‖â‖². The pair
(ν₁, ν₂) solves ν₁ = (ν₂/2)[(1 − n/p) + √((1 − n/p)² + 4λ/(pν₂))] and p − pν₁/ν₂ = df₁(ν₂).

All public functions broadcast ``n``, ``p`` and ``lam`` against each other (numpy broadcasting), so a whole
grid of model sizes and ridge strengths is one call. Memory is O(grid size × k) per chunk; grids are processed
in chunks of about ``_CHUNK`` spectrum entries.

For real data, :func:`empirical_kernel_spectrum` turns a kernel matrix over a pool of points and their labels
into (ξ, β*) as in the paper's real-data experiments, and :func:`erf_kernel` is the closed-form kernel of
erf random features with standard Gaussian weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

Normalisation = Literal["sum", "mean"]  # (XᵀX + λ) or (XᵀX/n + λ): see ridge_lambda_star
_CHUNK = 1 << 21  # grid points × spectrum entries evaluated at once
_MAX_NEWTON = 200
_LAST_ITERATIONS = [0]  # Newton iterations of the last root-find (for benchmarks)


# ---------------------------------------------------------------------------------------------------------
# validation and small helpers
# ---------------------------------------------------------------------------------------------------------
def _check_spectrum(spectrum: np.ndarray, beta_star: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    xi = np.asarray(spectrum, dtype=np.float64)
    if xi.ndim != 1 or xi.size == 0:
        raise ValueError(f"spectrum must be a non-empty 1-D array of eigenvalues, got shape {xi.shape}")
    if not np.all(np.isfinite(xi)) or np.any(xi < 0):
        raise ValueError("spectrum must be finite and non-negative (clip tiny negative eigenvalues to 0)")
    if not np.any(xi > 0):
        raise ValueError("spectrum must have at least one positive eigenvalue")
    if beta_star is None:
        return (xi,)
    beta = np.asarray(beta_star, dtype=np.float64)
    if beta.shape != xi.shape:
        raise ValueError(f"beta_star must have the spectrum's shape {xi.shape}, got {beta.shape}")
    if not np.all(np.isfinite(beta)):
        raise ValueError("beta_star must be finite")
    return xi, beta


def _positive(name: str, value: np.ndarray | float) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0 (got min {np.min(arr)!r}); use a tiny lam such as "
                         "1e-8 for the ridgeless limit")
    return arr


def df(spectrum: np.ndarray, kappa: np.ndarray | float, power: int = 1) -> np.ndarray:
    """Degrees of freedom df_m(κ) = Tr(Σᵐ (Σ + κ)⁻ᵐ) for every κ in ``kappa`` (any shape)."""
    (xi,) = _check_spectrum(spectrum)
    kappa = _positive("kappa", kappa)
    return _spectral_sums(xi, kappa, lambda r, s: r**power)


def _spectral_sums(
    xi: np.ndarray, kappa: np.ndarray, term: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """Σ_i term(ξ_i/(ξ_i+κ), 1/(ξ_i+κ)) for each κ, chunked over the flattened κ grid."""
    flat = kappa.reshape(-1)
    out = np.empty(flat.shape, dtype=np.float64)
    step = max(1, _CHUNK // xi.size)
    for start in range(0, flat.size, step):
        kap = flat[start : start + step, None]
        inv = 1.0 / (xi[None, :] + kap)
        out[start : start + step] = term(xi[None, :] * inv, inv).sum(axis=1)
    return out.reshape(kappa.shape)


def _df1_and_slope(xi: np.ndarray, kappa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """df₁(κ) and Tr Σ(Σ+κ)⁻² (= −d df₁/dκ) in one pass over the spectrum, for 1-D ``kappa``."""
    d1 = np.empty(kappa.shape)
    d1p = np.empty(kappa.shape)
    step = max(1, _CHUNK // xi.size)
    for start in range(0, kappa.size, step):
        inv = 1.0 / (xi[None, :] + kappa[start : start + step, None])
        ratio = xi[None, :] * inv
        d1[start : start + step] = ratio.sum(1)
        d1p[start : start + step] = np.einsum("ij,ij->i", ratio, inv)
    return d1, d1p


@dataclass(frozen=True)
class _Moments:
    """Spectral sums at κ that every DE formula needs (each has the grid's shape)."""

    df1: np.ndarray  # Tr Σ(Σ+κ)⁻¹
    df2: np.ndarray  # Tr Σ²(Σ+κ)⁻²
    tr_s_k2: np.ndarray  # Tr Σ(Σ+κ)⁻²
    b_k1: np.ndarray  # ⟨β, (Σ+κ)⁻¹ β⟩
    b_k2: np.ndarray  # ⟨β, (Σ+κ)⁻² β⟩
    b_s_k1: np.ndarray  # ⟨β, Σ(Σ+κ)⁻¹ β⟩
    b_s_k2: np.ndarray  # ⟨β, Σ(Σ+κ)⁻² β⟩
    b_s2_k2: np.ndarray  # ⟨β, Σ²(Σ+κ)⁻² β⟩


def _moments(xi: np.ndarray, beta: np.ndarray, kappa: np.ndarray) -> _Moments:
    flat = kappa.reshape(-1)
    b2 = beta**2
    cols = np.empty((8, flat.size), dtype=np.float64)
    step = max(1, _CHUNK // xi.size)
    for start in range(0, flat.size, step):
        kap = flat[start : start + step, None]
        inv = 1.0 / (xi[None, :] + kap)
        ratio = xi[None, :] * inv
        inv2 = inv * inv
        sl = slice(start, start + step)
        cols[0, sl] = ratio.sum(1)
        cols[1, sl] = (ratio * ratio).sum(1)
        cols[2, sl] = (xi[None, :] * inv2).sum(1)
        cols[3, sl] = inv @ b2
        cols[4, sl] = inv2 @ b2
        cols[5, sl] = ratio @ b2
        cols[6, sl] = (xi[None, :] * inv2) @ b2
        cols[7, sl] = (ratio * ratio) @ b2
    return _Moments(*(c.reshape(kappa.shape) for c in cols))


def _solve_increasing(
    fun: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    lo: np.ndarray,
    hi: np.ndarray,
    what: str,
) -> np.ndarray:
    """Root of an increasing function of t > 0, elementwise over a grid, by safeguarded Newton in log t.

    ``fun(t, mask)`` returns (f, t·df/dt) at ``t[mask]``. ``lo`` must have f < 0; ``hi`` is pushed up
    until f > 0. Newton steps on u = log t that leave the bracket are replaced by bisection.
    """
    lo = np.log(lo)
    hi = np.log(hi)
    for _ in range(400):  # grow the upper end until the sign changes
        f_hi, _ = fun(np.exp(hi), np.ones(hi.shape, bool))
        bad = f_hi <= 0
        if not bad.any():
            break
        hi = np.where(bad, hi + 2.0, hi)
    else:
        raise ValueError(f"could not bracket the root for {what}")
    u = 0.5 * (lo + hi)
    active = np.ones(u.shape, bool)
    for it in range(_MAX_NEWTON):
        f, fp = fun(np.exp(u[active]), active)
        f_full = np.zeros(u.shape)
        fp_full = np.ones(u.shape)
        f_full[active], fp_full[active] = f, fp
        lo = np.where(active & (f_full < 0), u, lo)
        hi = np.where(active & (f_full > 0), u, hi)
        step = f_full / np.where(fp_full > 0, fp_full, np.inf)
        u_new = u - step
        outside = (u_new <= lo) | (u_new >= hi) | ~np.isfinite(u_new)
        u_new = np.where(outside, 0.5 * (lo + hi), u_new)
        converged = (np.abs(u_new - u) < 1e-14 * np.maximum(1.0, np.abs(u))) | (hi - lo < 1e-14)
        u = np.where(active, u_new, u)
        active = active & ~converged
        if not active.any():
            _LAST_ITERATIONS[0] = it + 1
            return np.exp(u)
    # Newton stalls only on pathological inputs; the bracket is still valid, so finish by bisection.
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        f, _ = fun(np.exp(mid), np.ones(mid.shape, bool))
        lo = np.where(f < 0, mid, lo)
        hi = np.where(f >= 0, mid, hi)
    return np.exp(0.5 * (lo + hi))


# ---------------------------------------------------------------------------------------------------------
# linear ridge
# ---------------------------------------------------------------------------------------------------------
def ridge_lambda_star(
    spectrum: np.ndarray, n: np.ndarray | float, lam: np.ndarray | float, normalisation: Normalisation = "sum"
) -> np.ndarray:
    """Effective regularisation λ* > 0 solving n − λ/λ* = df₁(λ*), broadcast over ``n`` and ``lam``.

    ``normalisation`` says which ridge ``lam`` belongs to: ``"sum"`` for (XᵀX + λI)⁻¹Xᵀy (this module's
    convention), ``"mean"`` for (XᵀX/n + λI)⁻¹Xᵀy/n (λ on the scale of Σ's eigenvalues, as in weak-to-strong
    ridge); the two are the same estimator with λ_sum = n·λ_mean, and the solution λ* is the same κ.
    """
    (xi,) = _check_spectrum(spectrum)
    n_arr, lam_arr = np.broadcast_arrays(_positive("n", n), _positive("lam", lam))
    if normalisation == "mean":
        lam_arr = n_arr * lam_arr
    elif normalisation != "sum":
        raise ValueError(f"normalisation must be 'sum' or 'mean', got {normalisation!r}")
    shape = n_arr.shape
    n_arr, lam_arr = n_arr.astype(np.float64).ravel(), lam_arr.astype(np.float64).ravel()

    def fun(t: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lam_m, n_m = lam_arr[mask], n_arr[mask]
        d1, d1p = _df1_and_slope(xi, t)
        return n_m - lam_m / t - d1, t * (lam_m / t**2 + d1p)

    # at t = λ/(2n): n − λ/t = −n < 0 ≤ … so f < 0
    hi = np.maximum(lam_arr / n_arr, xi.sum() / n_arr) * 4
    return _solve_increasing(fun, lam_arr / (2 * n_arr), hi, "ridge lambda_star").reshape(shape)


@dataclass(frozen=True)
class RidgeDE:
    """Deterministic equivalents for linear ridge (every field has the broadcast grid's shape)."""

    lambda_star: np.ndarray
    df1: np.ndarray
    df2: np.ndarray
    bias_risk: np.ndarray
    var_risk: np.ndarray
    bias_norm: np.ndarray
    var_norm: np.ndarray

    @property
    def risk(self) -> np.ndarray:
        """Excess test risk E(β̂ − β*)ᵀΣ(β̂ − β*)."""
        return self.bias_risk + self.var_risk

    @property
    def norm(self) -> np.ndarray:
        """Squared norm E‖β̂‖²."""
        return self.bias_norm + self.var_norm


def ridge_de(
    spectrum: np.ndarray,
    beta_star: np.ndarray,
    n: np.ndarray | float,
    lam: np.ndarray | float,
    noise_var: float = 0.0,
    normalisation: Normalisation = "sum",
) -> RidgeDE:
    """DE of risk and squared norm for linear ridge (module docstring; ``normalisation`` as in
    :func:`ridge_lambda_star`).

    R̄ = λ*²⟨β*, Σ(Σ+λ*)⁻²β*⟩/(1 − df₂/n) + σ² df₂/(n − df₂);
    N̄ = ⟨β*, Σ²(Σ+λ*)⁻²β*⟩ + Tr(Σ(Σ+λ*)⁻²)/n · λ*²⟨β*, Σ(Σ+λ*)⁻²β*⟩/(1 − df₂/n) + σ² Tr(Σ(Σ+λ*)⁻²)/(n − df₂).
    """
    xi, beta = _check_spectrum(spectrum, beta_star)
    if noise_var < 0:
        raise ValueError(f"noise_var must be >= 0, got {noise_var}")
    n_arr, lam_arr = np.broadcast_arrays(_positive("n", n), _positive("lam", lam))
    ls = ridge_lambda_star(xi, n_arr, lam_arr, normalisation)
    m = _moments(xi, beta, ls)
    shrink = 1.0 - m.df2 / n_arr
    bias_risk = ls**2 * m.b_s_k2 / shrink
    return RidgeDE(
        lambda_star=ls,
        df1=m.df1,
        df2=m.df2,
        bias_risk=bias_risk,
        var_risk=noise_var * m.df2 / (n_arr - m.df2),
        bias_norm=m.b_s2_k2 + m.tr_s_k2 / n_arr * bias_risk,
        var_norm=noise_var * m.tr_s_k2 / (n_arr - m.df2),
    )


def ridge_bias_norm_alt(
    spectrum: np.ndarray, beta_star: np.ndarray, n: np.ndarray | float, lam: np.ndarray | float
) -> np.ndarray:
    """The official code's second form of the ridge norm's bias part (algebraically equal to ``bias_norm``):
    ⟨β*, Σ(Σ+λ*)⁻¹β*⟩ − (λ/n)⟨β*, Σ(Σ+λ*)⁻²β*⟩/(1 − df₂/n)."""
    xi, beta = _check_spectrum(spectrum, beta_star)
    n_arr, lam_arr = np.broadcast_arrays(_positive("n", n), _positive("lam", lam))
    m = _moments(xi, beta, ridge_lambda_star(xi, n_arr, lam_arr))
    return m.b_s_k1 - lam_arr / n_arr * m.b_s_k2 / (1.0 - m.df2 / n_arr)


# ---------------------------------------------------------------------------------------------------------
# random-features ridge
# ---------------------------------------------------------------------------------------------------------
def _nu_ratio(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """h = ν₁/ν₂ = (a + √(a² + c))/2 with c = 4λ/(pν₂), computed without cancellation when a < 0."""
    root = np.sqrt(a * a + c)
    return np.where(a >= 0, 0.5 * (a + root), 0.5 * c / np.maximum(root - a, np.finfo(float).tiny))


def rf_nu(
    spectrum: np.ndarray, n: np.ndarray | float, p: np.ndarray | float, lam: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """The RFRR fixed point (ν₁, ν₂), broadcast over ``n``, ``p`` and ``lam``; 0 < ν₁ ≤ ν₂.

    ν₂ is the unique root of p(1 − h(ν₂)) = df₁(ν₂) with h = ν₁/ν₂ from the closed form in the module docstring;
    the left side increases from −∞ to min(n, p) and df₁ decreases, so the root is bracketed by ν₂ = λ/(2n).
    """
    (xi,) = _check_spectrum(spectrum)
    n_arr, p_arr, lam_arr = (
        a.astype(np.float64).ravel()
        for a in np.broadcast_arrays(_positive("n", n), _positive("p", p), _positive("lam", lam))
    )
    shape = np.broadcast_shapes(np.shape(n), np.shape(p), np.shape(lam))
    a_arr = 1.0 - n_arr / p_arr

    def fun(t: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, lam_m, p_m = a_arr[mask], lam_arr[mask], p_arr[mask]
        c = 4 * lam_m / (p_m * t)
        h = _nu_ratio(a, c)
        d1, d1p = _df1_and_slope(xi, t)
        # d/dt [p(1 − h)] = λ / (t² √(a² + c));   d/dt[−df₁] = Tr Σ(Σ+t)⁻²
        return p_m * (1 - h) - d1, t * (lam_m / (t * t * np.sqrt(a * a + c)) + d1p)

    hi = np.maximum(lam_arr / n_arr, xi.sum() / np.minimum(n_arr, p_arr)) * 4
    nu2 = _solve_increasing(fun, lam_arr / (2 * n_arr), hi, "random-features nu2")
    nu1 = nu2 * _nu_ratio(a_arr, 4 * lam_arr / (p_arr * nu2))
    return nu1.reshape(shape), nu2.reshape(shape)


@dataclass(frozen=True)
class RFRidgeDE:
    """Deterministic equivalents for random-features ridge (every field has the broadcast grid's shape)."""

    nu1: np.ndarray
    nu2: np.ndarray
    upsilon: np.ndarray
    chi: np.ndarray
    bias_risk: np.ndarray
    var_risk: np.ndarray
    bias_norm: np.ndarray
    var_norm: np.ndarray

    @property
    def risk(self) -> np.ndarray:
        """Excess test risk E‖β* − Fᵀâ/√p‖²."""
        return self.bias_risk + self.var_risk

    @property
    def norm(self) -> np.ndarray:
        """Squared norm E‖â‖²."""
        return self.bias_norm + self.var_norm

    def as_dict(self) -> dict[str, np.ndarray]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["risk"], out["norm"] = self.risk, self.norm
        return out


def rf_ridge_de(
    spectrum: np.ndarray,
    beta_star: np.ndarray,
    n: np.ndarray | float,
    p: np.ndarray | float,
    lam: np.ndarray | float,
    noise_var: float = 0.0,
) -> RFRidgeDE:
    """DE of excess risk and squared norm for random-features ridge (see the module docstring).

    Υ = (p/n)[(1 − ν₁/ν₂)² + (ν₁/ν₂)² df₂(ν₂)/(p − df₂(ν₂))], χ = Tr(Σ(Σ+ν₂)⁻²)/(p − df₂(ν₂)),
    R̄ = ν₂²/(1 − Υ)·[⟨β*,(Σ+ν₂)⁻²β*⟩ + χ⟨β*,Σ(Σ+ν₂)⁻²β*⟩] + σ²Υ/(1 − Υ),
    N̄ = (ν₂/ν₁)⟨β*,(Σ+ν₂)⁻¹β*⟩ − (λ/n)(ν₂/ν₁)²·[…same bracket…]/(1 − Υ) + σ²(p/n)χ/(1 − Υ).

    In the under-parameterised ridgeless corner (p < n, λ → 0) the two bias-norm terms are each O(1/λ) and
    cancel to O(1): expect a relative accuracy of about 1e-16/λ there.
    """
    xi, beta = _check_spectrum(spectrum, beta_star)
    if noise_var < 0:
        raise ValueError(f"noise_var must be >= 0, got {noise_var}")
    n_arr, p_arr, lam_arr = (
        a.astype(np.float64)
        for a in np.broadcast_arrays(_positive("n", n), _positive("p", p), _positive("lam", lam))
    )
    nu1, nu2 = rf_nu(xi, n_arr, p_arr, lam_arr)
    m = _moments(xi, beta, nu2)
    h = nu1 / nu2
    upsilon = p_arr / n_arr * ((1 - h) ** 2 + h**2 * m.df2 / (p_arr - m.df2))
    chi = m.tr_s_k2 / (p_arr - m.df2)
    bracket = (m.b_k2 + chi * m.b_s_k2) / (1 - upsilon)
    return RFRidgeDE(
        nu1=nu1,
        nu2=nu2,
        upsilon=upsilon,
        chi=chi,
        bias_risk=nu2**2 * bracket,
        var_risk=noise_var * upsilon / (1 - upsilon),
        bias_norm=m.b_k1 / h - lam_arr / n_arr * bracket / h**2,
        var_norm=noise_var * p_arr / n_arr * chi / (1 - upsilon),
    )


# ---------------------------------------------------------------------------------------------------------
# real data: empirical kernel spectrum
# ---------------------------------------------------------------------------------------------------------
def erf_kernel(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """E_v[erf(⟨v, x⟩) erf(⟨v, x'⟩)] for v ~ N(0, I): (2/π) arcsin(2⟨x,x'⟩ / √((1+2‖x‖²)(1+2‖x'‖²)))."""
    x1 = np.asarray(x1, dtype=np.float64)
    x2 = np.asarray(x2, dtype=np.float64)
    if x1.ndim != 2 or x2.ndim != 2 or x1.shape[1] != x2.shape[1]:
        raise ValueError(f"erf_kernel needs 2-D inputs with equal widths, got {x1.shape} and {x2.shape}")
    n1 = 1 + 2 * np.einsum("ij,ij->i", x1, x1)
    n2 = 1 + 2 * np.einsum("ij,ij->i", x2, x2)
    arg = 2 * (x1 @ x2.T) / np.sqrt(n1[:, None] * n2[None, :])
    return (2 / np.pi) * np.arcsin(np.clip(arg, -1.0, 1.0))


def empirical_kernel_spectrum(kernel: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ξ, β*) of a kernel on the empirical measure of a pool of N points, for the RFRR DE on real data.

    ξ are the eigenvalues of K/N (descending, clipped at 0); with eigenvectors ψ_k scaled so that
    (1/N)Σ_i ψ_k(x_i)² = 1, β*_k = (1/N)Σ_i ψ_k(x_i) y_i, so y = Σ_k β*_k ψ_k exactly on the pool.
    """
    k = np.asarray(kernel, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise ValueError(f"kernel must be a square matrix, got shape {k.shape}")
    if y.shape != (k.shape[0],):
        raise ValueError(f"y must have shape ({k.shape[0]},), got {y.shape}")
    if not np.allclose(k, k.T, atol=1e-10 * max(1.0, np.abs(k).max())):
        raise ValueError("kernel must be symmetric")
    n_pool = k.shape[0]
    evals, evecs = np.linalg.eigh(k / n_pool)
    order = np.argsort(evals)[::-1]
    evals, evecs = np.clip(evals[order], 0.0, None), evecs[:, order]
    beta = (evecs * np.sqrt(n_pool)).T @ y / n_pool
    return evals, beta
