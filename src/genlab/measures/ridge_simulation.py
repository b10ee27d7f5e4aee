"""Monte Carlo risks and norms of ridge and random-features ridge, to set beside their deterministic equivalents.

The label noise is averaged analytically (conditional on the design) and every ridge λ comes from one SVD or
eigendecomposition per (repetition, model size), batched over repetitions. Used by the φ-curve study
(arXiv 2502.01585) and by anyone checking :mod:`genlab.measures.deterministic_equivalents` on their own spectrum.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_REP_CHUNK = 8  # repetitions per batched SVD (bounds memory: digits at p = 1200 holds ~8 × 1800 × 1200 floats)


def power_law_problem(k: int, alpha: float, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Spectrum ξ_i = i^−α and target β*_i = i^−(1+2αr)/2, i = 1..k (the official code's source/capacity setup)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    i = np.arange(1, k + 1, dtype=np.float64)
    return i**-alpha, i ** (-(1 + 2 * alpha * r) / 2)


def rf_ridge_mc(
    spectrum: np.ndarray,
    beta_star: np.ndarray,
    n: int,
    ps: Sequence[int],
    lams: Sequence[float],
    noise_var: float,
    reps: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Excess risk ‖β* − Fᵀâ/√p‖² and norm ‖â‖² of random-features ridge, averaged over the label noise
    exactly, for ``reps`` draws of (G, F); the features of smaller p are the first rows of one F.

    Returns two arrays of shape (reps, len(ps), len(lams)).
    """
    xi = np.asarray(spectrum, float)
    beta = np.asarray(beta_star, float)
    ps = np.asarray(ps, int)
    lam = np.asarray(lams, float)
    k, p_max = xi.size, int(ps.max())
    risk = np.empty((reps, ps.size, lam.size))
    norm = np.empty_like(risk)
    b2 = float(beta @ beta)
    for start in range(0, reps, _REP_CHUNK):
        m = min(_REP_CHUNK, reps - start)
        g = rng.standard_normal((m, n, k))
        f = rng.standard_normal((m, p_max, k)) * np.sqrt(xi)
        gf = g @ f.transpose(0, 2, 1)  # (m, n, p_max)
        gb = g @ beta  # (m, n): noiseless labels
        fb = f @ beta  # (m, p_max)
        ff = f @ f.transpose(0, 2, 1)  # (m, p_max, p_max)
        del g, f
        for j, p in enumerate(ps):
            u, s, vt = np.linalg.svd(gf[:, :, :p] / np.sqrt(p), full_matrices=False)
            c = np.einsum("mnr,mn->mr", u, gb)  # Uᵀy
            b = np.einsum("mrp,mp->mr", vt, fb[:, :p]) / np.sqrt(p)  # Wᵀβ*, W = FᵀV/√p
            w_gram = vt @ ff[:, :p, :p] @ vt.transpose(0, 2, 1) / p  # WᵀW
            d = s[:, None, :] / (s[:, None, :] ** 2 + lam[None, :, None])  # (m, L, r)
            x = d * c[:, None, :]
            bias = b2 - 2 * np.einsum("mlr,mr->ml", x, b) + np.einsum("mlr,mrq,mlq->ml", x, w_gram, x)
            var = noise_var * np.einsum("mlr,mr->ml", d**2, np.einsum("mrr->mr", w_gram))
            risk[start : start + m, j] = bias + var
            norm[start : start + m, j] = (x**2).sum(-1) + noise_var * (d**2).sum(-1)
    return risk, norm


def ridge_mc(
    spectrum: np.ndarray,
    beta_star: np.ndarray,
    ns: Sequence[int],
    lams: Sequence[float],
    noise_var: float,
    reps: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Excess risk (β̂ − β*)ᵀΣ(β̂ − β*) and norm ‖β̂‖² of unnormalised linear ridge, averaged over the label noise
    exactly, for ``reps`` draws of X ~ N(0, Σ); smaller samples are the first rows of one X (drawn block by
    block as n grows, so memory does not scale with the largest n).

    Returns two arrays of shape (reps, len(ns), len(lams)).
    """
    xi = np.asarray(spectrum, float)
    beta = np.asarray(beta_star, float)
    ns = np.asarray(ns, int)
    if np.any(np.diff(ns) <= 0):
        raise ValueError("ns must be strictly increasing")
    lam = np.asarray(lams, float)
    d = xi.size
    risk = np.empty((reps, ns.size, lam.size))
    norm = np.empty_like(risk)
    b_sigma_b = float(xi @ beta**2)
    for start in range(0, reps, _REP_CHUNK):
        m = min(_REP_CHUNK, reps - start)
        gram = np.zeros((m, d, d))
        done = 0
        for j, n in enumerate(ns):
            block = rng.standard_normal((m, n - done, d)) * np.sqrt(xi)  # the next rows only: O(m·Δn·d) memory
            gram += block.transpose(0, 2, 1) @ block
            done = n
            e, v = np.linalg.eigh(gram)
            e = np.clip(e, 0.0, None)
            w = np.einsum("mdr,d->mr", v, beta)  # Vᵀβ*
            q_mat = v.transpose(0, 2, 1) @ (xi[None, :, None] * v)  # VᵀΣV
            q = np.einsum("mrq,mq->mr", q_mat, w)  # VᵀΣβ*
            shrink = e[:, None, :] / (e[:, None, :] + lam[None, :, None])  # (m, L, d)
            d2 = e[:, None, :] / (e[:, None, :] + lam[None, :, None]) ** 2
            z = shrink * w[:, None, :]
            bias = b_sigma_b - 2 * np.einsum("mlr,mr->ml", z, q) + np.einsum("mlr,mrq,mlq->ml", z, q_mat, z)
            var = noise_var * np.einsum("mlr,mr->ml", d2, np.einsum("mrr->mr", q_mat))
            risk[start : start + m, j] = bias + var
            norm[start : start + m, j] = (z**2).sum(-1) + noise_var * d2.sum(-1)
    return risk, norm


def digits_rf_mc(
    x_pool: np.ndarray,
    y_pool: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    n: int,
    ps: Sequence[int],
    lams: Sequence[float],
    reps: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ridge on erf random features erf(⟨v, x⟩)/√p, v ~ N(0, I), trained on n points drawn from the pool; each
    repetition draws new features and a new training subset.

    Returns (held-out test MSE, MSE over the whole pool, ‖â‖²), each of shape (reps, len(ps), len(lams)). The
    pool MSE is the risk under the empirical distribution whose kernel spectrum the DE uses (training points
    included, as they would be for i.i.d. draws from the pool).
    """
    ps = np.asarray(ps, int)
    lam = np.asarray(lams, float)
    if n > len(x_pool):
        raise ValueError(f"n={n} exceeds the pool size {len(x_pool)}")
    from scipy.special import erf

    p_max = int(ps.max())
    test = np.empty((reps, ps.size, lam.size))
    pool = np.empty_like(test)
    norm = np.empty_like(test)
    for start in range(0, reps, _REP_CHUNK):
        m = min(_REP_CHUNK, reps - start)
        idx = np.stack([rng.choice(len(x_pool), n, replace=False) for _ in range(m)])
        v = rng.standard_normal((m, x_pool.shape[1], p_max))
        phi_pool = erf(x_pool[None] @ v)  # (m, N, p_max)
        phi_te = erf(x_test[None] @ v)  # (m, n_test, p_max)
        phi_tr = np.take_along_axis(phi_pool, idx[:, :, None], axis=1)  # (m, n, p_max)
        y_tr = y_pool[idx]
        for j, p in enumerate(ps):
            u, s, vt = np.linalg.svd(phi_tr[:, :, :p] / np.sqrt(p), full_matrices=False)
            c = np.einsum("mnr,mn->mr", u, y_tr)
            d = s[:, None, :] / (s[:, None, :] ** 2 + lam[None, :, None])
            coef = d * c[:, None, :]  # â in the right-singular basis, (m, L, r)
            a_hat = np.einsum("mrp,mlr->mlp", vt, coef) / np.sqrt(p)  # â/√p in feature space, (m, L, p)
            pred_te = phi_te[:, :, :p] @ a_hat.transpose(0, 2, 1)  # (m, n_test, L)
            pred_pool = phi_pool[:, :, :p] @ a_hat.transpose(0, 2, 1)
            test[start : start + m, j] = ((pred_te - y_test[None, :, None]) ** 2).mean(1)
            pool[start : start + m, j] = ((pred_pool - y_pool[None, :, None]) ** 2).mean(1)
            norm[start : start + m, j] = (coef**2).sum(-1)
    return test, pool, norm
