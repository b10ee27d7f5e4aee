"""Deterministic equivalents for ridge and random-features ridge: structure, limits and Monte Carlo agreement."""

from __future__ import annotations

import numpy as np
import pytest

from genlab.measures.deterministic_equivalents import (
    df,
    empirical_kernel_spectrum,
    erf_kernel,
    rf_nu,
    rf_ridge_de,
    ridge_bias_norm_alt,
    ridge_de,
    ridge_lambda_star,
)


def power_law(k: int, alpha: float = 1.5, r: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(1, k + 1, dtype=float)
    return i**-alpha, i ** (-(1 + 2 * alpha * r) / 2)


XI, BETA = power_law(300)


def test_df_known_answer() -> None:
    xi = np.full(10, 2.0)
    kappa = np.array([0.5, 1.0, 3.0])
    np.testing.assert_allclose(df(xi, kappa), 10 * 2 / (2 + kappa))
    np.testing.assert_allclose(df(xi, kappa, power=2), 10 * (2 / (2 + kappa)) ** 2)


def test_ridge_lambda_star_solves_its_equation_on_a_grid() -> None:
    n = np.array([20.0, 100.0, 400.0])[:, None]
    lam = np.array([1e-8, 1e-3, 1.0, 50.0])[None, :]
    ls = ridge_lambda_star(XI, n, lam)
    assert ls.shape == (3, 4)
    resid = n - lam / ls - df(XI, ls)
    np.testing.assert_allclose(resid, 0, atol=1e-9 * n.max())
    assert np.all(ls > lam / n)  # n − λ/λ* = df₁ > 0


def test_rf_nu_ordering_and_fixed_point() -> None:
    n = 100
    p = np.array([10, 50, 99, 100, 101, 150, 400, 5000.0])[:, None]
    lam = np.array([1e-9, 1e-6, 1e-2, 1.0, 100.0])[None, :]
    nu1, nu2 = rf_nu(XI, n, p, lam)
    assert nu1.shape == (8, 5)
    assert np.all(nu1 > 0) and np.all(nu1 <= nu2 * (1 + 1e-12))
    # both defining equations hold; h = ν₁/ν₂ is the positive root of h² − (1 − n/p)h = λ/(pν₂)
    a, h = 1 - n / p, nu1 / nu2
    assert np.all(np.abs(h * h - a * h - lam / (p * nu2)) <= 1e-12 * np.maximum(h * h, np.abs(a * h)))
    np.testing.assert_allclose(p - p * nu1 / nu2, df(XI, nu2), rtol=1e-8, atol=1e-9)


def test_grid_call_equals_pointwise_calls() -> None:
    p = np.array([30.0, 200.0])
    lam = np.array([1e-3, 0.3])
    grid = rf_ridge_de(XI, BETA, 80, p[:, None], lam[None, :], 0.01)
    for i, pi in enumerate(p):
        for j, lj in enumerate(lam):
            one = rf_ridge_de(XI, BETA, 80, pi, lj, 0.01)
            assert float(one.risk) == pytest.approx(grid.risk[i, j], rel=1e-12)
            assert float(one.norm) == pytest.approx(grid.norm[i, j], rel=1e-12)


@pytest.mark.parametrize("lam", [1e-4, 0.05, 2.0])
def test_infinite_features_reduce_to_ridge(lam: float) -> None:
    n, s2 = 120, 0.01
    rf = rf_ridge_de(XI, BETA, n, 1e9, lam, s2)
    ls = ridge_lambda_star(XI, n, lam)
    assert rf.nu2 == pytest.approx(ls, rel=1e-6)
    assert rf.nu1 / rf.nu2 == pytest.approx(1.0, rel=1e-6)
    assert rf.upsilon == pytest.approx(df(XI, ls, 2) / n, rel=1e-6)
    # the latent linear model with x = Σ^{1/2} g has coefficients Σ^{-1/2} β*
    lin = ridge_de(XI, BETA / np.sqrt(XI), n, lam, s2)
    assert rf.risk == pytest.approx(lin.risk, rel=1e-6)
    assert rf.norm == pytest.approx(lin.norm, rel=1e-6)


def test_norm_decreases_in_lambda() -> None:
    lam = np.geomspace(1e-6, 1e3, 60)
    for p in (30.0, 100.0, 300.0):
        norm = rf_ridge_de(XI, BETA, 100, p, lam, 0.01).norm
        assert np.all(np.diff(norm) < 0), p
    norm = ridge_de(XI, BETA, 100, lam, 0.01).norm
    assert np.all(np.diff(norm) < 0)


def test_large_lambda_limits() -> None:
    rf = rf_ridge_de(XI, BETA, 100, np.array([30.0, 300.0]), 1e9, 0.01)
    np.testing.assert_allclose(rf.risk, BETA @ BETA, rtol=1e-6)
    assert np.all(rf.norm < 1e-10)
    lin = ridge_de(XI, BETA, 100, 1e9, 0.01)
    assert lin.risk == pytest.approx(XI @ BETA**2, rel=1e-6)
    assert lin.norm < 1e-10


def test_overparameterised_ridgeless_risk_is_affine_in_norm() -> None:
    n = 100
    p = np.linspace(1.3 * n, 10 * n, 40)
    de = rf_ridge_de(XI, BETA, n, p, 1e-10, 0.01)
    design = np.stack([np.ones_like(p), de.norm], 1)
    coef, *_ = np.linalg.lstsq(design, de.risk, rcond=None)
    rel = np.abs(de.risk - design @ coef).max() / de.risk.mean()
    assert rel < 1e-4
    assert coef[1] > 0  # risk and norm fall together as p grows


def test_two_ridge_bias_norm_forms_agree() -> None:
    n = np.array([20.0, 150.0, 290.0, 600.0])[:, None]
    lam = np.array([1e-6, 1e-2, 3.0])[None, :]
    de = ridge_de(XI, BETA, n, lam, 0.0)
    np.testing.assert_allclose(de.bias_norm, ridge_bias_norm_alt(XI, BETA, n, lam), rtol=1e-10)


# -- Monte Carlo, by direct solves (independent of the study's SVD shortcuts) ---------------------------------
def _rf_mc_direct(xi, beta, n, ps, lams, s2, reps, seed):
    rng = np.random.default_rng(seed)
    out = np.zeros((2, reps, len(ps), len(lams)))
    for rep in range(reps):
        g = rng.standard_normal((n, xi.size))
        f = rng.standard_normal((max(ps), xi.size)) * np.sqrt(xi)
        for i, p in enumerate(ps):
            fp = f[:p]
            z = g @ fp.T / np.sqrt(p)
            for j, lam in enumerate(lams):
                a = np.linalg.solve(z.T @ z + lam * np.eye(p), z.T)  # â = a y
                coef = a @ (g @ beta)
                m = fp.T @ a / np.sqrt(p)
                out[0, rep, i, j] = np.sum((beta - m @ (g @ beta)) ** 2) + s2 * np.sum(m**2)
                out[1, rep, i, j] = coef @ coef + s2 * np.sum(a**2)
    return out


def _ridge_mc_direct(xi, beta, ns, lams, s2, reps, seed):
    rng = np.random.default_rng(seed)
    out = np.zeros((2, reps, len(ns), len(lams)))
    for rep in range(reps):
        for i, n in enumerate(ns):
            x = rng.standard_normal((n, xi.size)) * np.sqrt(xi)
            for j, lam in enumerate(lams):
                a = np.linalg.solve(x.T @ x + lam * np.eye(xi.size), x.T)
                err = a @ (x @ beta) - beta
                out[0, rep, i, j] = err @ (xi * err) + s2 * np.sum(xi[:, None] * a**2)
                out[1, rep, i, j] = np.sum((a @ (x @ beta)) ** 2) + s2 * np.sum(a**2)
    return out


def _assert_within(de, mc, tol, z=2.58):
    mean = mc.mean(0)
    se = mc.std(0, ddof=1) / np.sqrt(mc.shape[0])
    assert np.all(np.abs(de - mean) <= tol * mean + z * se), (de / mean - 1, se / mean)


def test_rf_de_matches_monte_carlo() -> None:
    xi, beta = power_law(200)
    n, ps, lams, s2 = 80, [30, 160], [1e-2, 1.0], 0.01
    mc = _rf_mc_direct(xi, beta, n, ps, lams, s2, reps=40, seed=1)
    de = rf_ridge_de(xi, beta, n, np.array(ps, float)[:, None], np.array(lams)[None, :], s2)
    _assert_within(de.risk, mc[0], 0.05)
    _assert_within(de.norm, mc[1], 0.05)


def test_ridge_de_matches_monte_carlo() -> None:
    xi, beta = power_law(80, alpha=1.0, r=1.0)
    ns, lams, s2 = [40, 160], [1e-2, 1.0], 0.0004
    mc = _ridge_mc_direct(xi, beta, ns, lams, s2, reps=30, seed=2)
    de = ridge_de(xi, beta, np.array(ns, float)[:, None], np.array(lams)[None, :], s2)
    _assert_within(de.risk, mc[0], 0.05)
    _assert_within(de.norm, mc[1], 0.05)


# -- real data helpers ---------------------------------------------------------------------------------------
def test_erf_kernel_matches_feature_average() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (4, 6)) / 2
    v = rng.standard_normal((6, 100_000))
    from scipy.special import erf

    phi = erf(x @ v)
    np.testing.assert_allclose(erf_kernel(x, x), phi @ phi.T / v.shape[1], atol=1e-2)


def test_empirical_spectrum_reconstructs_labels() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (50, 5))
    y = rng.standard_normal(50)
    k = erf_kernel(x, x)
    xi, beta = empirical_kernel_spectrum(k, y)
    assert np.all(np.diff(xi) <= 0) and np.all(xi >= 0)
    assert xi.sum() == pytest.approx(np.trace(k) / 50)
    evals, evecs = np.linalg.eigh(k / 50)
    order = np.argsort(evals)[::-1]
    psi = evecs[:, order] * np.sqrt(50)
    np.testing.assert_allclose(psi @ beta, y, atol=1e-10)
    assert beta @ beta == pytest.approx(y @ y / 50)  # Parseval on the empirical measure


@pytest.mark.parametrize(
    "call",
    [
        lambda: rf_ridge_de(-XI, BETA, 10, 10, 1.0),
        lambda: rf_ridge_de(XI, BETA[:-1], 10, 10, 1.0),
        lambda: rf_ridge_de(XI, BETA, 10, 10, 0.0),
        lambda: ridge_de(XI, BETA, 0, 1.0),
        lambda: ridge_de(XI, BETA, 10, 1.0, noise_var=-1),
        lambda: empirical_kernel_spectrum(np.ones((3, 4)), np.ones(3)),
    ],
)
def test_bad_inputs_raise(call) -> None:
    with pytest.raises(ValueError):
        call()
