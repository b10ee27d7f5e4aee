"""Deterministic equivalents of weak-to-strong ridge regression against exact identities and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from genlab.measures.w2s_ridge import (
    best_shrinkage_isotropic,
    dof,
    effective_regularization,
    lambda_opt_isotropic,
    mc_w2s,
    student_de,
    w2s_de,
    weighted_ridge_de,
)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(1):
        yield


def _unit(d: int, seed: int = 0) -> np.ndarray:
    b = np.random.default_rng(seed).standard_normal(d)
    return b / np.linalg.norm(b)


def test_effective_regularization_solves_its_equation():
    eigs = 3.0 / np.arange(1, 101)
    for n, lam in [(50, 1e-3), (50, 0.3), (400, 1e-2), (400, 5.0)]:
        k = effective_regularization(eigs, lam, n)
        assert k > 0
        assert k * (1 - dof(eigs, k) / n) == pytest.approx(lam, rel=1e-8, abs=1e-12)


def test_effective_regularization_ridgeless_limits():
    eigs = np.linspace(0.5, 2.0, 80)
    assert effective_regularization(eigs, 0.0, 200) == 0.0  # OLS
    k = effective_regularization(eigs, 0.0, 40)  # min-norm interpolation: df1 = n
    assert dof(eigs, k) == pytest.approx(40, rel=1e-9)
    with pytest.raises(ValueError):
        effective_regularization(eigs, 0.0, 80)
    with pytest.raises(ValueError):
        effective_regularization(eigs, -1.0, 10)


def test_ols_closed_form():
    # Σ = I, λ = 0, n > d: excess risk σ² d / (n − d) (the exact value is σ² d / (n − d − 1))
    d, n, s2 = 50, 150, 0.7
    t = weighted_ridge_de(np.ones(d), _unit(d), s2, n, 0.0)
    assert t.excess == pytest.approx(s2 * d / (n - d), rel=1e-12)
    assert t.bias == pytest.approx(0.0, abs=1e-15)


def test_lambda_opt_is_the_de_minimiser():
    d, n, s2 = 100, 60, 0.5
    beta = _unit(d)
    lam_opt = lambda_opt_isotropic(s2, d, n, 1.0)
    grid = lam_opt * np.logspace(-1, 1, 201)
    risk = [weighted_ridge_de(np.ones(d), beta, s2, n, lam).test_mse for lam in grid]
    assert grid[int(np.argmin(risk))] == pytest.approx(lam_opt, rel=0.03)


def test_ridgeless_student_with_m_greater_than_d_copies_the_teacher():
    d, s2 = 60, 0.5
    eigs, beta = 2.0 / np.arange(1, d + 1), np.arange(1, d + 1) ** -0.5
    t = weighted_ridge_de(eigs, beta, s2, 40, 0.05)
    st = student_de(eigs, beta, s2, t, 200, 0.0)
    assert st.test_mse == pytest.approx(t.test_mse, rel=1e-12)
    tm, sm = mc_w2s(eigs, beta, s2, 40, 200, [0.05], [0.0], 3, np.random.default_rng(0))
    np.testing.assert_allclose(sm[:, :, 0], tm, rtol=1e-8)


def test_uniform_weighting_is_a_rescaled_lambda():
    d, s2 = 80, 0.4
    eigs, beta = 1.0 / np.arange(1, d + 1) ** 0.8, _unit(d, 3)
    a = weighted_ridge_de(eigs, beta, s2, 50, 0.2, gamma=np.full(d, 3.0))
    b = weighted_ridge_de(eigs, beta, s2, 50, 0.6)
    assert a.test_mse == pytest.approx(b.test_mse, rel=1e-9)
    np.testing.assert_allclose(a.mean_error, b.mean_error, rtol=1e-8, atol=1e-14)
    sa = student_de(eigs, beta, s2, a, 120, 0.1, gamma=np.full(d, 2.0))
    sb = student_de(eigs, beta, s2, b, 120, 0.2)
    assert sa.test_mse == pytest.approx(sb.test_mse, rel=1e-9)


def test_best_shrinkage_closed_form_isotropic():
    d, n, s2 = 100, 50, 1.0
    beta = _unit(d)
    lam_opt = lambda_opt_isotropic(s2, d, n, 1.0)
    at_opt = weighted_ridge_de(np.ones(d), beta, s2, n, lam_opt)
    assert best_shrinkage_isotropic(at_opt, beta) == pytest.approx(0.0, abs=1e-9)
    t = weighted_ridge_de(np.ones(d), beta, s2, n, 0.05 * lam_opt)
    star = best_shrinkage_isotropic(t, beta)
    assert star > 0.1
    # with m -> infinity the DE student curve is minimised at λ_S*
    grid = np.linspace(0.5 * star, 1.5 * star, 101)
    curve = [student_de(np.ones(d), beta, s2, t, 10**8, ls).test_mse for ls in grid]
    assert grid[int(np.argmin(curve))] == pytest.approx(star, abs=grid[1] - grid[0])


@pytest.mark.parametrize(
    ("spectrum", "n", "m", "lam_t", "lam_s"),
    [("iso", 100, 800, 0.02, 1.0), ("iso", 100, 100, 0.02, 0.0), ("pow", 300, 140, 0.01, 0.05)],
)
def test_de_matches_monte_carlo(spectrum, n, m, lam_t, lam_s):
    d, s2, reps = 200, 1.0, 40
    if spectrum == "iso":
        eigs, beta = np.ones(d), _unit(d)
    else:
        i = np.arange(1, d + 1)
        eigs, beta = 3.0 / i, i**-0.75
    t_de, s_de = w2s_de(eigs, beta, s2, n, lam_t, m, lam_s)
    tm, sm = mc_w2s(eigs, beta, s2, n, m, [lam_t], [lam_s], reps, np.random.default_rng(1))
    tol = 0.10 if (lam_s == 0 and 0.5 <= m / d <= 1.5) else 0.05
    assert t_de == pytest.approx(tm.mean(), rel=0.05)
    assert s_de == pytest.approx(sm.mean(), rel=tol)


def test_student_beats_under_regularised_teacher_but_not_optimal_one():
    d, n, m, s2 = 100, 50, 100_000, 1.0
    beta = _unit(d)
    lam_opt = lambda_opt_isotropic(s2, d, n, 1.0)
    grid = np.concatenate([[0.0], np.logspace(-3, 2, 200)])
    for factor, wins in [(0.05, True), (1.0, False), (5.0, False)]:
        t = weighted_ridge_de(np.ones(d), beta, s2, n, factor * lam_opt)
        best = min(student_de(np.ones(d), beta, s2, t, m, ls).test_mse for ls in grid)
        assert (best < t.test_mse - 1e-3) == wins


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        weighted_ridge_de(np.array([1.0, -1.0]), np.ones(2), 0.1, 10, 0.1)
    with pytest.raises(ValueError):
        weighted_ridge_de(np.ones(3), np.ones(3), 0.1, 10, 0.1, gamma=np.array([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError):
        mc_w2s(np.ones(3), np.ones(3), 0.1, 0, 5, [0.1], [0.1], 2, np.random.default_rng(0))


def test_teacher_risk_agrees_with_the_shared_unnormalised_ridge_de():
    from genlab.measures import deterministic_equivalents as de

    d, n, lam, s2 = 120, 80, 0.07, 0.6
    eigs, beta = 2.0 / np.arange(1, d + 1) ** 0.9, np.arange(1, d + 1) ** -0.6
    ours = weighted_ridge_de(eigs, beta, s2, n, lam)
    shared = de.ridge_de(eigs, beta, n, lam, noise_var=s2, normalisation="mean")
    assert de.ridge_de(eigs, beta, n, n * lam, noise_var=s2).risk == pytest.approx(shared.risk, rel=1e-12)
    assert ours.excess == pytest.approx(float(shared.risk), rel=1e-8)
    assert ours.kappa == pytest.approx(float(shared.lambda_star), rel=1e-8)
