"""Margin bounds for halfspaces: closed forms, domains, monotonicity, tightness ratios, certificate validity, CLI."""

import math

import numpy as np
import pytest

from genlab.measures import margin_bounds as M

DELTA = math.exp(-1.0)  # ln(e/δ) = 2


def test_tight_upper_closed_form_values():
    # L = 0, γ²n = 25: only ln(eγ²n)/(γ²n) + ln(e/δ)/n remains.
    assert M.tight_upper(0.5, 0.0, 100, DELTA) == pytest.approx((math.log(25) + 1) / 25 + 0.02, rel=1e-12)
    # L = 1/e: ln(e/L) = 2; sqrt(L(2/25 + 2/100)) added.
    L = math.exp(-1)
    want = L + math.sqrt(L * (2 / 25 + 0.02)) + (math.log(25) + 1) / 25 + 0.02
    assert M.tight_upper(0.5, L, 100, DELTA) == pytest.approx(want, rel=1e-12)
    assert M.tight_upper(0.5, L, 100, DELTA, c=2.0) == pytest.approx(L + 2 * (want - L), rel=1e-12)


def test_gkl_lower_and_classics_closed_form():
    n, g, L = 10_000, 0.1, 0.04
    ln = math.log(n)
    assert M.gkl20_upper(g, L, n, DELTA) == pytest.approx(
        L + math.sqrt(L * (ln / 100 + 2 / n)) + ln / 100 + 2 / n, rel=1e-12
    )
    assert M.lower_bound(g, L, n) == pytest.approx(
        L + math.sqrt(L * math.log(math.e / L) / 100) + math.log(100) / 100, rel=1e-12
    )
    assert M.classic_hard_margin(g, n, DELTA) == pytest.approx(ln**2 / 100 + 2 / n, rel=1e-12)
    assert M.classic_soft_margin(g, L, n, DELTA) == pytest.approx(L + 0.1 + math.sqrt(2 / n), rel=1e-12)


def test_zero_fraction_is_the_limit_and_domain_is_enforced():
    assert M.tight_upper(0.2, 1e-300, 1000) == pytest.approx(M.tight_upper(0.2, 0.0, 1000), abs=1e-12)
    assert np.isnan(M.tight_upper(0.01, 0.0, 100))  # γ < n^{-1/2}
    assert np.isnan(M.lower_bound(0.08, 0.0, 100))  # γ²n < 1: ln(γ²n) < 0
    for bad in [dict(gamma=0.0), dict(gamma=1.5), dict(frac=-0.1), dict(n=0)]:
        kw = dict(gamma=0.5, frac=0.1, n=100) | bad
        with pytest.raises(ValueError):
            M.tight_upper(**kw)
    with pytest.raises(ValueError):
        M.tight_upper(0.5, 0.1, 100, delta=1.0)


def test_monotone_in_n_gamma_and_fraction():
    for fn in (M.tight_upper, M.gkl20_upper, M.classic_soft_margin):
        n = np.geomspace(1e3, 1e8, 40)
        assert np.all(np.diff(fn(0.3, 0.05, n)) <= 1e-15)
        g = np.linspace(0.05, 1.0, 40)
        assert np.all(np.diff(fn(g, 0.05, 10_000)) <= 1e-15)
        L = np.linspace(0.0, 1.0, 60)
        assert np.all(np.diff(fn(0.3, L, 10_000)) >= -1e-15)


def test_tight_to_lower_ratio_bounded_but_gkl_ratio_grows():
    sups = []
    for n in np.geomspace(1e3, 1e9, 7):
        g, L = np.meshgrid(np.sqrt(np.geomspace(np.e, n, 25) / n), np.geomspace(1 / n, 0.5, 25))
        gap_lb = M.lower_bound(g, L, n) - L
        sups.append(np.nanmax((M.tight_upper(g, L, n) - L) / gap_lb))
    assert max(sups) <= 2.0 + 1e-9  # ln(eγ²n) ≤ 2 ln(γ²n) for γ²n ≥ e
    ratios = []
    for n in (1e3, 1e5, 1e7, 1e9):  # along L = 1/n at γ²n = 100
        g, L = math.sqrt(100 / n), 1 / n
        ratios.append((M.gkl20_upper(g, L, n) - L) / (M.lower_bound(g, L, n) - L))
    assert np.all(np.diff(ratios) > 0.5) and ratios[-1] > 2.5 * ratios[0]  # grows like ln n


def test_certified_bound_value_and_validity_by_simulation():
    # Closed form: frac + 4/(γ sqrt n) + sqrt(ln log2(2/γ)/n) + sqrt(ln(2/δ)/(2n)).
    want = 0.1 + 4 / (0.5 * 20) + math.sqrt(math.log(math.log2(4)) / 400) + math.sqrt(math.log(40) / 800)
    assert M.certified_margin_bound(0.5, 0.1, 400, 0.05) == pytest.approx(want, rel=1e-12)
    # A halfspace with known population error: x uniform on the unit circle, labels flipped w.p. 0.1 → error 0.1.
    rng = np.random.default_rng(0)
    w = np.array([1.0, 0.0])
    violations = 0
    for _ in range(100):
        theta = rng.uniform(0, 2 * np.pi, 2000)
        x = np.c_[np.cos(theta), np.sin(theta)]
        y = np.sign(x @ w) * np.where(rng.random(2000) < 0.1, -1, 1)
        best = M.best_margin(M.normalized_margins(w, x, y), "certified")
        violations += best.value < 0.1
    assert violations == 0


def test_best_margin_matches_brute_force_and_margin_loss():
    rng = np.random.default_rng(1)
    margins = np.clip(rng.normal(0.3, 0.2, 500), -1, 1)
    grid = np.geomspace(500**-0.5, 1, 50)
    frac = np.array([np.mean(margins <= g) for g in grid])
    np.testing.assert_allclose(M.margin_loss(margins, grid), frac)
    vals = M.tight_upper(grid, frac, 500)
    best = M.best_margin(margins, "tight", grid=grid)
    assert best.value == pytest.approx(np.nanmin(vals)) and best.gamma == grid[np.nanargmin(vals)]
    with pytest.raises(ValueError):
        M.best_margin(margins, "nope")


def test_normalized_margins_keep_signs_and_lie_in_unit_interval():
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=(300, 5)) * 7, rng.normal(size=5), 0.7
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    m = M.normalized_margins(w, x, y, b=b)
    assert np.all(np.abs(m) <= 1 + 1e-12)
    np.testing.assert_array_equal(np.sign(m), np.sign(y * (x @ w + b)))
    with pytest.raises(ValueError):
        M.normalized_margins(w, x, np.zeros(300))


def test_clopper_pearson_known_values():
    lo, hi = M.clopper_pearson(0, 10, 0.05)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-9)
    lo, hi = M.clopper_pearson(5, 10, 0.05)
    assert lo == pytest.approx(0.18709, abs=1e-5) and hi == pytest.approx(0.81291, abs=1e-5)


def test_cli_prints_bounds_and_rejects_bad_input():
    from typer.testing import CliRunner

    from genlab.commands.bound import app

    runner = CliRunner()
    res = runner.invoke(app, ["margin", "--gamma", "0.1", "--n", "10000", "--frac", "0.02"])
    assert res.exit_code == 0, res.output
    assert "tight" in res.output and "certified" in res.output
    assert f"{M.tight_upper(0.1, 0.02, 10000):.6g}" in res.output
    res = runner.invoke(app, ["margin", "--gamma", "0.1", "--n", "1000", "--json"])
    import json

    data = json.loads(res.output)
    assert data["bounds"]["tight (Larsen-Schalburg'25 Thm 2)"]["certified"] is False
    assert runner.invoke(app, ["margin", "--gamma", "2", "--n", "100"]).exit_code == 2
