"""The decision rule: each method against scipy.stats on known cases, the verdict from the CI, Holm, failed units,
the unit floor, pooling runs, and the record's round trip."""

import math

import numpy as np
import pytest
from scipy import stats

from genlab.harness import decide
from genlab.harness.claims import (
    ERROR,
    IDENTITY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Verdict,
    combine_claims,
    evidence,
    finalize,
)
from genlab.harness.decision import MIN_UNITS, ClaimTest, holm_adjusted, pool

X = np.array([0.31, 0.12, 0.55, -0.05, 0.42, 0.27, 0.18, 0.36, 0.09, 0.48])


def test_student_t_matches_scipy():
    t = decide.mean(X, above=0.1).test
    ref = stats.ttest_1samp(X, 0.0).confidence_interval(0.95)
    assert t.ci == pytest.approx((ref.low, ref.high)) and t.effect == pytest.approx(X.mean())
    assert t.p == pytest.approx(stats.ttest_1samp(X, 0.1, alternative="greater").pvalue)
    assert t.method == "t" and t.n == 10 and t.direction == "above" and t.margin == 0.1
    below = decide.mean(X, below=0.5).test
    assert below.p == pytest.approx(stats.ttest_1samp(X, 0.5, alternative="less").pvalue)


def test_paired_is_the_mean_of_differences():
    a, b = X + 1.0, np.full(10, 1.0)
    assert decide.paired(a, b, above=0.0).test.ci == decide.mean(X, above=0.0).test.ci
    with pytest.raises(ValueError):
        decide.paired([1.0, 2.0], [1.0], above=0.0)


def test_sign_flip_p_is_the_exact_enumeration_and_its_ci_inverts_it():
    d = np.array([0.4, 0.1, 0.3, -0.1, 0.5, 0.2, 0.6])
    t = decide.mean(d, above=0.0, method="sign-flip").test
    signs = ((np.arange(2**7)[:, None] >> np.arange(7)) & 1) * 2.0 - 1.0
    exact = np.mean((signs @ d) >= d.sum() - 1e-12)
    assert t.p == pytest.approx(exact)
    lo, hi = t.ci
    ref = stats.permutation_test((d - lo,), np.mean, permutation_type="samples", alternative="greater").pvalue
    assert ref == pytest.approx(0.025, abs=0.02) and lo < d.mean() < hi
    # five units: no sign pattern gets below p = 1/32, so a two-sided 95 % interval is unbounded
    five = decide.mean([1, 2, 3, 4, 5], above=0.0, method="sign-flip").test
    assert five.ci == (-math.inf, math.inf) and five.held is None


def test_permutation_two_sample_matches_scipy():
    a, b = X + 0.3, X[::-1].copy()
    t = decide.two_sample(a, b, above=0.0).test
    ref = stats.permutation_test((a, b), lambda x, y, axis: x.mean(axis) - y.mean(axis), vectorized=True,
                                 alternative="greater", rng=np.random.default_rng(0)).pvalue  # fmt: skip
    assert t.p == pytest.approx(ref) and t.effect == pytest.approx(0.3)
    assert t.ci[0] < 0.3 < t.ci[1]
    welch = decide.two_sample(a, b, above=0.0, method="t").test
    ref_ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert welch.ci == pytest.approx((ref_ci.low, ref_ci.high))


def test_bootstrap_uses_scipy_bca():
    t = decide.mean(X, above=0.0, method="bootstrap").test
    ref = stats.bootstrap((X,), np.mean, n_resamples=9_999, method="BCa", rng=np.random.default_rng(0))
    assert t.ci == pytest.approx(tuple(ref.confidence_interval))


def test_proportions_wilson_and_clopper_pearson():
    units = [1] * 45 + [0] * 5
    w = decide.proportion(units, above=0.75).test
    ref = stats.binomtest(45, 50)
    assert w.ci == pytest.approx(tuple(ref.proportion_ci(0.95, "wilson")))
    assert w.p == pytest.approx(stats.binomtest(45, 50, 0.75, alternative="greater").pvalue)
    cp = decide.proportion(units, above=0.75, method="clopper-pearson").test
    assert cp.ci == pytest.approx(tuple(ref.proportion_ci(0.95, "exact")))
    assert decide.proportion(units, above=0.75).held is True and decide.proportion(units, below=0.75).held is False
    with pytest.raises(ValueError):
        decide.proportion([0.5, 1.0], above=0.1)


def test_equivalence_is_two_one_sided_tests():
    t = decide.mean(X, within=(-1.0, 1.0)).test
    p_lo = stats.ttest_1samp(X, -1.0, alternative="greater").pvalue
    p_hi = stats.ttest_1samp(X, 1.0, alternative="less").pvalue
    assert t.p == pytest.approx(max(p_lo, p_hi)) and t.held is True
    assert decide.mean(X, within=(0.9, 2.0)).held is False  # CI wholly below the band
    assert decide.mean(X, within=(0.2, 2.0)).held is None  # straddles its edge


def test_the_verdict_follows_from_the_ci():
    assert decide.mean(X, above=0.0).held is True
    assert decide.mean(X, above=1.0).held is False
    assert decide.mean(X, above=0.25).held is None  # the mean is 0.27: the CI straddles the margin


def test_fewer_than_five_units_is_at_most_inconclusive_except_exact():
    assert decide.mean([1.0, 1.1, 1.2, 1.3], above=0.0).held is None
    assert decide.mean([1.0, 1.1, 1.2, 1.3, 1.4], above=0.0).held is True
    assert MIN_UNITS == 5
    assert decide.exact(2.0, above=1.0).held is True and decide.exact(0.5, above=1.0).held is False


def test_nan_units_are_failed_units_not_errors():
    ev = decide.mean([1.0, None, float("nan"), 1.1, 1.2, 1.3, 1.5, float("inf")], above=0.0)
    assert ev.test.n == 5 and ev.test.failed == 3 and "3 unit(s) failed" in ev.note and ev.held is True
    assert decide.mean([None, None], above=0.0).held is None


def test_all_of_needs_every_part():
    yes, no, maybe = decide.mean(X, above=0.0), decide.mean(X, above=1.0), decide.mean(X, above=0.25)
    assert decide.all_of(yes, yes).held is True
    assert decide.all_of(yes, maybe).held is None and decide.all_of(yes, maybe).test == maybe.test
    assert decide.all_of(yes, maybe, no).held is False


def test_holm_adjusted_p_values():
    assert holm_adjusted([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_adjusted([0.5]) == [0.5]


def _claim(key, units, **direction):
    return Claim(key, key, lambda m, cfg: decide.mean(units, **direction))


def test_holm_over_a_studys_claims_withdraws_a_marginal_win():
    marginal = np.array([0.2, 0.9, -0.2, 0.5, 0.6, 0.8, -0.3, 0.7])  # CI above 0, p = 0.021
    alone = finalize([_claim("a", marginal, above=0.0).evaluate({})])
    assert alone[0].verdict == REPRODUCED
    weak = [_claim(k, marginal, above=0.0).evaluate({}) for k in ("a", "b", "c", "d")]
    held = finalize(weak)
    assert all(v.verdict == INCONCLUSIVE and "Holm" in v.note for v in held)
    assert held[0].test.p_holm == pytest.approx(min(1.0, 4 * held[0].test.p))


def test_an_empirical_claim_without_a_test_is_an_error_and_identities_need_none():
    assert Claim("k", "t", lambda m, cfg: True).evaluate({}).verdict == ERROR
    assert Claim("k", "t", lambda m, cfg: True, kind=IDENTITY).evaluate({}).verdict == REPRODUCED
    assert Claim("k", "t", lambda m, cfg: evidence(None, "arm not run")).evaluate({}).verdict == INCONCLUSIVE


def test_a_withheld_test_is_inconclusive_and_keeps_its_record():
    v = Claim("k", "t", lambda m, cfg: decide.mean(X, above=0.0).withheld("no headroom")).evaluate({})
    assert v.verdict == INCONCLUSIVE and v.test.gate == "no headroom" and v.test.side is True
    assert finalize([v])[0].verdict == INCONCLUSIVE


def test_runs_are_pooled_by_their_units():
    halves = [_claim("k", X[:5], above=0.0).evaluate({}), _claim("k", X[5:], above=0.0).evaluate({})]
    combined = combine_claims([halves])[0]
    assert combined.test.n == 10 and combined.test.ci == pytest.approx(decide.mean(X, above=0.0).test.ci)
    assert combined.verdict == REPRODUCED
    exact_runs = [Claim("e", "e", lambda m, cfg, v=v: decide.exact(v, above=0.0)).evaluate({}) for v in X]
    assert pool([v.test for v in exact_runs]).method == "t"
    errors = combine_claims([[halves[0], Verdict("k", "k", ERROR, {}, "boom")]])[0]
    assert errors.verdict == ERROR


def test_the_record_round_trips_through_json():
    import json

    v = finalize([_claim("k", X, above=0.0).evaluate({})])[0]
    back = Verdict.from_dict(json.loads(json.dumps(v.to_dict())))
    assert back == v and back.test.units == X.tolist()
    for bad in ({"method": "t"}, {**v.test.to_dict(), "method": "vote"}, {**v.test.to_dict(), "ci": 3}):
        with pytest.raises(ValueError):
            ClaimTest.from_dict(bad)
    assert NOT_REPRODUCED in {finalize([_claim("k", X, above=5.0).evaluate({})])[0].verdict}


def _premise_and_claim(premise_units, claim_units, extra=()):
    """A premise, a claim that requires it, and ``extra`` unrelated claims (to make Holm's correction bite)."""
    claims = [Claim("premise", "p", lambda m, c: decide.mean(premise_units, above=0.0)),
              Claim("claim", "c", lambda m, c: decide.mean(claim_units, above=0.0), requires=("premise",))]
    claims += [Claim(f"x{i}", "x", lambda m, c, u=u: decide.mean(u, above=0.0)) for i, u in enumerate(extra)]
    return finalize([c.evaluate({}) for c in claims])


def test_a_claim_is_withheld_when_its_precondition_falls_to_holm():
    strong = [1.0, 1.1, 0.9, 1.2, 1.0, 0.95]
    weak = [0.3, -0.1, 0.4, 0.2, 0.5, 0.1]  # p ≈ 0.023 alone: reproduced, not after Holm over four claims
    alone = _premise_and_claim(weak, strong)
    assert [v.verdict for v in alone] == [REPRODUCED, REPRODUCED]
    null = [0.1, -0.2, 0.05, 0.0, 0.1]
    v = _premise_and_claim(weak, strong, extra=(null, null))
    assert v[0].verdict == INCONCLUSIVE and v[0].test.p_holm > 0.05
    assert v[1].verdict == INCONCLUSIVE and v[1].test.held is None
    assert "precondition premise is inconclusive" in v[1].note
    assert v[1].test.p_holm is not None and v[1].to_dict()["requires"] == ["premise"]
    # combining runs decides the precondition again on the pooled units, not on the stored withholding
    pooled = combine_claims([[a, b] for a, b in zip(v, v, strict=True)])
    assert pooled[0].test.n == 12 and pooled[0].verdict == REPRODUCED and pooled[1].verdict == REPRODUCED


def test_requires_must_name_earlier_claims():
    from genlab.harness.study import _check_claims

    class Bad:
        name = "bad"

        class Config:
            __dataclass_fields__ = {}

        claims = [Claim("a", "a", lambda m, c: True, kind="identity", requires=("b",)),
                  Claim("b", "b", lambda m, c: True, kind="identity")]

    with pytest.raises(TypeError, match="requires \\['b'\\], which are not earlier claims"):
        _check_claims(Bad)


def test_t_halfwidth_is_scipys_t_interval():
    from genlab.harness.decision import t_halfwidth

    x = np.array([0.3, 0.1, 0.5, 0.2, 0.4])
    se = x.std(ddof=1) / np.sqrt(x.size)
    lo, hi = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=se)
    assert t_halfwidth(se, x.size) == pytest.approx((hi - lo) / 2)
    assert np.isnan(t_halfwidth(0.1, 1))


def test_power_planning():
    assert decide.units_for_power(1.0, 1.0) == 10  # the textbook one-sample t: d = 1, two-sided 5 %, 80 % power
    assert decide.units_for_power(1.0, 0.5) == 34 and decide.units_for_power(1.0, 1.0, power=0.5) == 6
    x = np.random.default_rng(0).normal(size=9)
    lo, hi = stats.t.interval(0.95, 8, loc=x.mean(), scale=stats.sem(x))
    assert decide.spread_from_ci(lo, hi, 9) == pytest.approx(x.std(ddof=1))
    with pytest.raises(ValueError):
        decide.units_for_power(1.0, 0.0)
