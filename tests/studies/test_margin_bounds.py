"""margin-bounds: the lower bound's hard distribution, the worst max-margin halfspace on it and the slope claims."""

import numpy as np
import pytest

from genlab.data import margin_lower_bound as mlb
from genlab.studies import margin_bounds as smb


class _Ctx:
    """The one run-context service the lower-bound sweep uses."""

    def rng(self, *stream):
        # a stable stream id (str hash() changes with PYTHONHASHSEED, which made this test flaky)
        return np.random.default_rng([int.from_bytes(str(s).encode(), "little") % 2**32 for s in stream])


def test_widest_wrong_is_the_max_margin_solution():
    """The closed form equals a numerical max-margin solve: max m s.t. ⟨w,x⟩ ≥ m off E, ⟨w,x⟩ ≤ 0 on E, ‖w‖ ≤ 1."""
    from scipy.optimize import minimize

    gamma, u, k = 0.25, 6, 2
    a, b = np.sqrt(2) * gamma, np.sqrt(1 - 2 * gamma**2)
    x = np.hstack([np.full((u, 1), a), b * np.eye(u)])  # x_j = a e_0 + b e_j
    wrong = np.arange(u) < k
    cons = [
        {"type": "ineq", "fun": lambda z: x[~wrong] @ z[:-1] - z[-1]},
        {"type": "ineq", "fun": lambda z: -(x[wrong] @ z[:-1])},
        {"type": "ineq", "fun": lambda z: 1 - z[:-1] @ z[:-1]},
    ]
    z0 = np.concatenate([[0.5], np.zeros(u), [0.0]])
    res = minimize(lambda z: -z[-1], z0, constraints=cons, method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
    assert res.success
    exact = np.sqrt(a * a / (1 + k * a * a / (b * b)) + b * b / (u - k))  # ε = 0
    assert -res.fun == pytest.approx(exact, rel=1e-5)
    c, s, t, margin = mlb.max_margin_wrong(k, u - k, a, b)
    assert exact / (1 + mlb.EPS) < margin < exact  # strictly wrong on E costs a factor ≤ (1 + ε)
    w = np.concatenate([[c], np.where(wrong, -t, s)])
    assert np.linalg.norm(w) == pytest.approx(1.0) and np.all(x[wrong] @ w < 0)
    assert np.min(x[~wrong] @ w) == pytest.approx(margin)
    # without kept points to spread weight over, it is the one-direction form behind K
    assert mlb.widest_wrong(k, a, b)[2] < margin


@pytest.mark.parametrize("gamma", [0.02, 0.1, 0.3])
def test_max_errors_is_the_largest_k_keeping_margin_gamma(gamma):
    a, b = np.sqrt(2) * gamma, np.sqrt(1 - 2 * gamma**2)
    k = mlb.max_errors(gamma)
    assert mlb.widest_wrong(k, a, b)[2] > gamma >= mlb.widest_wrong(k + 1, a, b)[2]
    assert k == pytest.approx(1 / (2 * gamma**2), rel=0.3)  # ≈ 1/(2γ²)


def test_adversary_exact_errors_on_hand_counts():
    inst = mlb.HardInstance(
        n=20, gamma=0.3, tau=0.1, a=np.sqrt(2) * 0.3, b=np.sqrt(0.82), k_max=3, u=10, lam=2.0, regime="log"
    )
    counts = np.array([0, 5, 1, 3, 0, 2, 4, 1, 2, 2])  # sums to 20; 8 distinct points seen
    r = mlb.adversary(counts, inst)
    # E = the two unseen points and both count-1 points (budget τn = 2; each adds 1/10 − 1/20 > 0); a count-2 point
    # would exceed the budget. Margin with k = 4, m = 6 kept: sqrt(0.18/1.896 + 0.82/6) = 0.481 > γ.
    assert r["k"] == 4 and r["l_d"] == pytest.approx(0.4) and r["l_s"] == pytest.approx(0.1)
    assert r["gap"] == pytest.approx(0.3) and r["norm"] == pytest.approx(1.0)
    assert r["min_margin_kept"] == pytest.approx(0.481, abs=1e-3) and r["max_margin_wrong"] < 0
    tight = mlb.adversary(counts, mlb.HardInstance(**{**inst.__dict__, "gamma": 0.49}))
    assert tight["k"] < 4 and tight["min_margin_kept"] > 0.49  # a wider required margin allows fewer errors
    r0 = mlb.adversary(counts, mlb.HardInstance(**{**inst.__dict__, "tau": 0.0}))
    assert r0["k"] == 2 and r0["l_s"] == 0.0 and r0["gap"] == pytest.approx(0.2)


@pytest.mark.parametrize("tau", [0.0, 0.05])
def test_adversary_numbers_match_dense_vectors(tau):
    """Build X and w densely and recompute ‖w‖, L_S^γ(w) from the sample and L_D(w) from D: the same numbers."""
    inst = mlb.instance(3000, 0.2, tau)
    rng = np.random.default_rng(4)
    idx = rng.integers(0, inst.u, size=inst.n)
    counts = np.bincount(idx, minlength=inst.u)
    x = np.hstack([np.full((inst.u, 1), inst.a), inst.b * np.eye(inst.u)])
    chosen, w = mlb.worst_halfspace(counts, inst)
    r = mlb.adversary(counts, inst)
    margins = x @ w  # labels are all +1
    assert np.linalg.norm(w) == pytest.approx(1.0) and r["norm"] == pytest.approx(1.0)
    assert r["l_d"] == pytest.approx(np.mean(margins <= 0)) and r["k"] == len(chosen) > 0
    assert r["l_s"] == pytest.approx(np.mean(margins[idx] <= inst.gamma)) and r["l_s"] <= tau
    assert r["gap"] > 0 and set(np.flatnonzero(margins <= 0)) == set(chosen.tolist())


def test_fixed_distribution_gap_against_dense_vectors():
    """One fixed D (masses ∝ j^-2): the halfspace errs on the heaviest unseen points; recompute densely."""
    masses = mlb.power_law(300, 2.0)
    assert masses.sum() == pytest.approx(1.0) and np.all(np.diff(masses) < 0)
    gamma = 0.15
    r = mlb.fixed_gap(masses, 3000, gamma, np.random.default_rng(5))
    # the same draw, by hand: inverse-CDF sampling with the same generator state
    u01 = np.random.default_rng(5).random(3000)
    idx = np.minimum(np.searchsorted(np.cumsum(masses), u01 * masses.sum(), side="right"), 299)
    counts = np.bincount(idx, minlength=300)
    unseen = np.flatnonzero(counts == 0)
    a, b = np.sqrt(2) * gamma, np.sqrt(1 - 2 * gamma**2)
    m = 300 - len(unseen)
    c, s, t, margin = mlb.max_margin_wrong(r["k"], m, a, b)
    assert r["min_margin_kept"] == pytest.approx(margin)
    w = np.concatenate([[c], np.where(counts > 0, s, 0.0)])
    w[1 + unseen[: r["k"]]] = -t
    x = np.hstack([np.full((300, 1), a), b * np.eye(300)])
    margins = x @ w
    assert np.linalg.norm(w) == pytest.approx(1.0)
    assert np.min(margins[idx]) > gamma  # L_S^γ = 0
    assert r["gap"] == pytest.approx(masses[margins <= 0].sum()) and 0 < r["k"] < len(unseen)
    assert mlb.max_margin_wrong(r["k"] + 1, m, a, b)[3] <= gamma  # one more error would cost the margin


def test_log_regime_gap_matches_the_unseen_count():
    """τ = 0: gap ≈ min(K, #unseen)/u (K up to the max-margin solver's extra room); its mean over samples matches
    the binomial expectation."""
    inst = mlb.instance(4000, 0.1, 0.0)
    assert inst.regime == "log"
    rng = np.random.default_rng(1)
    gaps = [mlb.sample_gap(inst, rng)["gap"] for _ in range(400)]
    p0 = (1 - 1 / inst.u) ** inst.n
    unseen = np.random.default_rng(2).binomial(inst.u, p0, size=200_000)
    # errors the max-margin w can afford with m = u − U kept points: a²/A_k + b²/m > γ² (strictly)
    a2, b2, g2 = inst.a**2, inst.b**2, inst.gamma**2
    bound = (a2 / (g2 - b2 / (inst.u - unseen)) - 1) * b2 / ((1 + mlb.EPS) ** 2 * a2)
    k_room = np.ceil(bound).astype(int) - 1
    assert np.all(k_room >= inst.k_max)
    expected = np.mean(np.minimum(unseen, k_room)) / inst.u
    assert np.mean(gaps) == pytest.approx(expected, rel=0.02)
    # and the order of the theorem's term: within a factor 4 of ln(γ²n)/(γ²n)
    assert 0.25 < np.mean(gaps) / mlb.lb_rate(4000, 0.1, 0.0)[1] < 1.0


def test_tau_regime_gap_is_the_poisson_tail():
    """τ term: gap ≈ z_τ·sqrt(Kτ/n) (the K least-sampled points lie z_τ standard deviations below their mean)."""
    from scipy.stats import norm

    n, gamma, tau = 100_000, 0.1, 0.02
    inst = mlb.instance(n, gamma, tau)
    assert inst.regime == "tau" and inst.u == pytest.approx(inst.k_max / tau, rel=0.01)
    rng = np.random.default_rng(3)
    r = [mlb.sample_gap(inst, rng) for _ in range(50)]
    assert max(x["l_s"] for x in r) <= tau
    # mean of the lowest τ-fraction of a normal, in standard deviations: φ(z_τ)/τ
    z_bar = norm.pdf(norm.ppf(1 - tau)) / tau
    assert np.mean([x["gap"] for x in r]) == pytest.approx(z_bar * np.sqrt(inst.k_max * tau / n), rel=0.1)


def test_lb_axis_slopes_on_a_small_grid():
    cfg = smb.MarginBounds.config("smoke", {"lb_seeds": 6})
    ax = smb._lb_axis("n", cfg, _Ctx())
    assert ax["regime"] == ["log"] * len(cfg.lb_n)
    assert np.nanmean(ax["slopes"]) == pytest.approx(ax["theory_slope"], abs=0.1)
    assert ax["checks"]["norm_err"] < 1e-12 and ax["checks"]["kept_margin_minus_gamma"] > 0
    tau = smb._lb_axis("tau", cfg, _Ctx())
    assert tau["regime"] == ["tau"] * len(cfg.lb_taus)
    assert np.nanmean(tau["slopes"]) == pytest.approx(tau["theory_slope"], abs=0.1)
    assert tau["checks"]["ls_minus_tau"] <= 0


def _fake_lb(shift, se=0.01, seeds=10, regime="log"):
    rng = np.random.default_rng(0)
    return {
        "slopes": list(-1.0 + shift + se * np.sqrt(seeds) * rng.standard_normal(seeds)),
        "theory_slope": -1.0,
        "constants": [0.4] * seeds,
        "regime": [regime] * 3,
        "gap_mean": [0.4, 0.2, 0.1],
        "rate": [1.0, 0.5, 0.25],
    }


def test_tuned_slope_claims_are_construction_checks():
    cfg = smb.MarginBounds.config("quick", {})
    m = {"lower_bound": {"n": _fake_lb(0.0), "gamma": _fake_lb(0.02), "tau": _fake_lb(0.0, regime="tau")}}
    for axis in smb.TUNED_AXES:
        ev = smb._tuned_slope_claim(axis)(m, cfg)
        assert ev.held is True and ev.test is None  # identity: no test
    ev = smb._tuned_slope_claim("n")(m, cfg)
    assert ev.numbers["ratio_first"] == pytest.approx(0.4) and ev.numbers["constant"] == pytest.approx(0.4)
    m["lower_bound"]["gamma"] = _fake_lb(0.5)  # clearly outside ±0.15
    assert smb._tuned_slope_claim("gamma")(m, cfg).held is False
    m["lower_bound"]["tau"] = _fake_lb(0.0, regime="log")  # τ points outside the τ regime: inconclusive
    assert smb._tuned_slope_claim("tau")(m, cfg).held is None
    kinds = {c.key: c.kind for c in smb.MarginBounds.claims}
    assert [kinds[f"lb-slope-{a}"] for a in ("n", "gamma", "tau")] == ["identity"] * 3
    assert [kinds[f"lb-slope-{a}-fixed"] for a in ("n", "gamma", "tau")] == ["empirical"] * 3


def test_fixed_slope_claims_decide_both_ways_by_tost():
    cfg = smb.MarginBounds.config("quick", {})
    m = {"lower_bound": {"n_fixed": _fake_lb(-0.01), "gamma_fixed": _fake_lb(0.5),
                         "tau_fixed": _fake_lb(0.15, se=0.05)}}
    ev = smb._fixed_slope_claim("n_fixed")(m, cfg)
    assert ev.held is True and ev.test.method == "t" and ev.test.direction == "within" and ev.test.n == 10
    assert ev.test.margin == (-cfg.slope_tol, cfg.slope_tol)
    ev = smb._fixed_slope_claim("gamma_fixed")(m, cfg)
    assert ev.held is False and ev.numbers["diff"] == pytest.approx(0.5, abs=0.05)
    assert smb._fixed_slope_claim("tau_fixed")(m, cfg).held is None  # straddles the tolerance: undecided
    m["lower_bound"]["n_fixed"] = dict(_fake_lb(0.0, seeds=4))  # 4 samples < 5 units: at most inconclusive
    assert smb._fixed_slope_claim("n_fixed")(m, cfg).held is None


def test_fixed_distribution_tau_budget():
    """τ > 0 on the fixed D: E may take under-sampled seen points, L_S^γ stays ≤ τ, and the gap grows with τ."""
    masses = mlb.power_law(20000, 2.0)
    gaps = []
    for tau in (0.0, 0.01, 0.05):
        r = mlb.fixed_gap(masses, 40000, 0.1, np.random.default_rng(3), tau)
        assert r["l_s"] <= tau + 1e-12 and r["min_margin_kept"] > 0.1 and r["max_margin_wrong"] < 0
        assert r["norm"] == pytest.approx(1.0)
        gaps.append(r["gap"])
    assert gaps[0] < gaps[1] < gaps[2]
    assert mlb.fixed_gap(masses, 40000, 0.1, np.random.default_rng(3))["l_s"] == 0.0


def test_lower_bound_config_validation():
    with pytest.raises(ValueError):
        smb.MarginBounds.config("quick", {"lb_n": (100, 200, 400), "lb_gamma": 0.1})  # γ²n = 1 < e
    with pytest.raises(ValueError):
        smb.MarginBounds.config("quick", {"lb_taus": (0.1, 0.2)})  # too few points for a slope
    with pytest.raises(ValueError):
        mlb.instance(1000, 0.8, 0.0)
