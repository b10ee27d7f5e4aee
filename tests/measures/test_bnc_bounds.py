"""The sample-complexity calculators against hand-computed values, and their monotonicity."""

import math

import pytest

from genlab.measures import bnc_bounds as bb


def test_worked_example():
    # W = 1, (Γ, γ, β) = (1, 0, 1), S = 10, K = 5: m = C(5,2) = 10, M1 = 10 (5^10 - 1)/4, N* = 33
    assert bb.step_polynomials(5, 1, 0) == 10
    assert bb.history_polynomials(10, 5, 10) == 24_414_060
    assert bb.pdim_bound(1, 5, 10) == 33
    # 33 <= log2(4e * 33 * M1) < 34 (by hand: log2(4e) + log2(33 * 24414060) = 3.443 + 29.586 = 33.03)
    assert 33 <= math.log2(4 * math.e * 33 * 24_414_060) < 34
    assert math.log2(4 * math.e * 34 * 24_414_060) < 34


def test_epsilon_by_hand():
    # ln C(1000) = ln(4e * 1000 * M1); eps = 2 sqrt(2 ln C / 1000) + sqrt(ln 40 / 2000), H = 1
    ln_c = math.log(4 * math.e * 1000 * 24_414_060)
    expected = 2 * math.sqrt(2 * ln_c / 1000) + math.sqrt(math.log(40) / 2000)
    assert bb.epsilon_uniform(1000, 0.05, 1.0, 1, 5, 10) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.5017, abs=1e-4)  # the brief's "≈ 0.50 H at N = 1000"
    assert bb.epsilon_uniform(1000, 0.05, 200.0, 1, 5, 10) == pytest.approx(200 * expected, rel=1e-12)
    assert bb.epsilon_finite(50, 0.05, 100.0, 10) == pytest.approx(100 * math.sqrt(math.log(400) / 100))
    assert bb.epsilon_massart(100, 0.05, 1.0, 7) == pytest.approx(
        2 * math.sqrt(2 * math.log(7) / 100) + 3 * math.sqrt(math.log(80) / 200))


def test_small_counts_by_hand():
    assert bb.step_polynomials(3, 16, 4) == 3 * 4 + 3 * 256
    assert bb.step_polynomials(1, 1, 0) == 0 and bb.step_polynomials(1, 2, 3) == 3
    assert bb.history_polynomials(7, 1, 9) == 63  # K = 1: m S
    assert bb.history_polynomials(1, 2, 3) == 7  # 1 + 2 + 4 histories
    assert bb.log2_sign_patterns(3, 5, 1) == 3.0  # n < W: all 2^n
    assert bb.log2_sign_patterns(100, 2, 1) == pytest.approx(2 * math.log2(4 * math.e * 100 / 2))
    assert bb.log2_sign_patterns(2, 2, 1) == 2.0  # min(n, ...) caps at 2^n
    assert bb.pdim_bound(3, 1, 5) == 0  # one candidate: nothing to compare, M1 = 0
    assert bb.staircase_pieces(12, 1) == 13 and bb.staircase_pieces(5, 2) == 11


def test_pdim_is_the_largest_feasible_n():
    for args in [(1, 5, 10), (3, 14, 50), (21, 14, 50, 16, 4, 2), (2, 3, 2)]:
        params, k, s = args[:3]
        rest = args[3:] or (1, 0, 1)
        n_star = bb.pdim_bound(*args)
        m1 = bb.history_polynomials(bb.step_polynomials(k, rest[0], rest[1]), k, s)
        assert n_star <= bb.log2_sign_patterns(n_star * m1, params, rest[2])
        assert n_star + 1 > bb.log2_sign_patterns((n_star + 1) * m1, params, rest[2])


def test_relu_and_mixture_shapes():
    assert bb.relu_shape(2, 4, 1) == bb.ClassShape("ReLU 2->4->1", 17, 16, 4, 2)  # the brief's example
    r = bb.relu_shape(3, 2, 2)  # W = 2*4 + 1*2*3 + 3 = 17; Γ = 2^4; γ = 2 + 2*2^2; β = 3
    assert (r.params, r.pieces, r.boundaries, r.degree) == (17, 16, 10, 3)
    assert bb.mixture_shape(3) == bb.ClassShape("mixture of 3 scores", 3, 1, 0, 1)


BASE = dict(params=3, candidates=6, decisions=20, pieces=2, boundaries=3, degree=2)


@pytest.mark.parametrize("name", list(BASE))
def test_monotone_in_every_structure_argument(name):
    lo, hi = dict(BASE), dict(BASE)
    hi[name] = BASE[name] * 2 + 1
    assert bb.pdim_bound(**hi) >= bb.pdim_bound(**lo)
    assert bb.epsilon_uniform(50, 0.05, 1.0, **hi) >= bb.epsilon_uniform(50, 0.05, 1.0, **lo)


def test_epsilon_falls_with_n_and_rises_with_confidence():
    eps = [bb.epsilon_uniform(n, 0.05, 1.0, **BASE) for n in (10, 100, 1000, 10_000)]
    assert all(a > b for a, b in zip(eps, eps[1:]))
    assert bb.epsilon_uniform(100, 0.01, 1.0, **BASE) > bb.epsilon_uniform(100, 0.1, 1.0, **BASE)
    fin = [bb.epsilon_finite(n, 0.05, 1.0, 15) for n in (10, 40, 160)]
    assert fin[0] / fin[1] == pytest.approx(2.0) and fin[1] / fin[2] == pytest.approx(2.0)  # exactly N^-1/2


def test_bound_row_and_bad_input():
    row = bb.bound_row(bb.mixture_shape(3), 14, 200, 200, [10, 200])
    assert row.pdim == bb.pdim_bound(3, 14, 200) and row.eps[200] < row.eps[10]
    assert row.eps[200] > 200  # vacuous at this scale, reported raw
    assert row.log2_m1 == pytest.approx(math.log2(bb.history_polynomials(91, 14, 200)))
    for bad in (dict(params=0), dict(pieces=0), dict(boundaries=-1), dict(degree=0)):
        with pytest.raises(ValueError):
            bb.pdim_bound(**{**BASE, **bad})
    with pytest.raises(ValueError):
        bb.epsilon_finite(0, 0.05, 1.0, 3)
    with pytest.raises(ValueError):
        bb.epsilon_uniform(10, 1.5, 1.0, **BASE)
    with pytest.raises(ValueError):
        bb.epsilon_massart(10, 0.05, math.inf, 3)
    assert bb.sample_size_shape(0.1, 0.05, 1.0, 10) == pytest.approx(100 * (10 + math.log(20)))
