"""The statistics helper: paired differences, permutation/bootstrap tests, Holm."""

import numpy as np
import pytest

from genlab.stats import bootstrap_ci, holm, holm_adjusted, mean_se, paired, permutation_p, sign_flip_p


def test_paired_difference_and_exact_sign_flip_p():
    p = paired([1.0, 2.0, 3.0, 4.0, 5.0], [0.0] * 5)
    assert p.mean == 3.0 and p.n == 5 and p.se == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1) / np.sqrt(5))
    assert p.p == pytest.approx(2 / 32)  # only all-plus and all-minus reach |mean| = 3
    assert p.above(0.0) is True and p.above(10.0) is False and p.above(3.0) is None


def test_sign_flip_null_is_uniform_ish():
    rng = np.random.default_rng(0)
    ps = [sign_flip_p(rng.normal(size=8)) for _ in range(400)]
    assert 0.03 < np.mean(np.asarray(ps) <= 0.05) < 0.09


def test_permutation_and_bootstrap():
    assert permutation_p([0, 0, 0, 0, 0], [5, 5, 5, 5, 5], n_perm=2000) < 0.01
    assert permutation_p([1, 2, 3], [1, 2, 3], n_perm=500) == 1.0
    lo, hi = bootstrap_ci(np.arange(100.0))
    assert lo < 49.5 < hi and hi - lo < 15


def test_holm_controls_many_comparisons():
    assert holm([0.01, 0.04, 0.03, 0.5]) == [True, False, False, False]
    assert holm_adjusted([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    rng = np.random.default_rng(1)  # 28 null comparisons: "any p < 0.05" fires often, Holm rarely
    raw = holm_any = 0
    for _ in range(300):
        ps = rng.random(28)
        raw += ps.min() < 0.05
        holm_any += any(holm(ps))
    assert raw / 300 > 0.6 and holm_any / 300 < 0.1


def test_mean_se_ignores_nan():
    mean, se, n = mean_se([1.0, 2.0, 3.0, float("nan")])
    assert (mean, n) == (2.0, 3) and se == pytest.approx(1 / np.sqrt(3))
