"""Estimability: GF(2) rank law, parity ERM numbers, exact identities on finite labs, Lemma H.1, hold-out."""

import math

import numpy as np
import pytest

from genlab.measures import estimability as E


def test_gf2_rank_distribution_small_exact_case():
    # 2x2 matrices over GF(2): 1 of rank 0, 9 of rank 1, 6 of rank 2 (of 16).
    np.testing.assert_allclose(E.gf2_rank_distribution(2, 2), [1 / 16, 9 / 16, 6 / 16], atol=1e-15)
    # Brute force for 3 x 3 by enumerating all 512 matrices.
    counts = np.zeros(4)
    for code in range(512):
        a = np.array([(code >> i) & 1 for i in range(9)]).reshape(3, 3)
        counts[_rank_gf2(a)] += 1
    np.testing.assert_allclose(E.gf2_rank_distribution(3, 3), counts / 512, atol=1e-15)


def _rank_gf2(a):
    a = a.copy() % 2
    r = 0
    for c in range(a.shape[1]):
        piv = [i for i in range(r, a.shape[0]) if a[i, c]]
        if not piv:
            continue
        a[[r, piv[0]]] = a[[piv[0], r]]
        for i in range(a.shape[0]):
            if i != r and a[i, c]:
                a[i] ^= a[r]
        r += 1
    return r


@pytest.mark.parametrize("d", [20, 50, 100])
def test_parity_erm_reproduces_example_1_8(d):
    assert E.parity_erm_success(d + 10, d) >= 0.999
    assert E.parity_erm_success(d, d) == pytest.approx(0.6103, abs=5e-4)
    assert E.parity_erm_success(d - 1, d) == pytest.approx(0.3897, abs=5e-4)
    assert E.parity_erm_success(d - 1, d) >= 0.38


def test_walsh_functions_are_exactly_orthogonal():
    F = E.walsh_functions(6, np.arange(20)).astype(int)
    gram = F @ F.T
    np.testing.assert_array_equal(gram, 64 * np.eye(20, dtype=int))


@pytest.mark.parametrize("alg", [E.first_consistent, E.majority_vote, E.memorizer])
def test_exact_lab_mmse_equals_v(alg):
    F = E.walsh_functions(3, 8)
    r = E.estimability_exact(F, 3, alg)
    assert r.mmse == pytest.approx(r.v, abs=1e-15)
    assert abs(sum(r.k_dist.values()) - 1) < 1e-12


def test_exact_lab_first_consistent_closed_form_and_lemma_h1():
    F = E.walsh_functions(3, 8)
    r = E.estimability_exact(F, 2, E.first_consistent)
    assert r.v == pytest.approx(E.orthogonal_v_closed_form(r.k_dist), abs=1e-15)
    assert r.lemma_h1 == pytest.approx(E.lemma_h1_bound(r.k_dist))
    # Lemma H.1 defeats every estimator: the MMSE one and the training loss (0 for interpolators).
    assert r.fail_mmse >= r.lemma_h1 - 1e-12 and r.fail_empirical >= r.lemma_h1 - 1e-12
    # Hand count for m = 1: a point x != 0 leaves the 4 functions agreeing with the target there (prob 7/8);
    # x = 0, where every Walsh function is +1, leaves all 8. v = Σ p_k (k-1)/(4k²).
    r1 = E.estimability_exact(F, 1, E.first_consistent)
    assert r1.k_dist == {4: 7 / 8, 8: 1 / 8}
    assert r1.v == pytest.approx(7 / 8 * 3 / 64 + 1 / 8 * 7 / 256, abs=1e-15)


def test_theorem_3_2_construction_monte_carlo():
    rng = np.random.default_rng(0)
    rows = rng.choice(4096, 65, replace=False)
    F = E.walsh_functions(12, rows)  # |F| = 2^6 + 1 orthogonal functions on 4096 >= 100 * 6^2 points
    r = E.estimability_mc(F, 6, E.first_consistent, 4000, rng)
    assert r.lemma_h1 >= 0.16
    assert r.fail_mmse >= r.lemma_h1 - 0.03
    assert r.v == pytest.approx(E.orthogonal_v_closed_form(r.k_dist), abs=1e-12)
    stable = E.estimability_mc(F, 6, E.memorizer, 4000, np.random.default_rng(1))
    assert stable.v < r.v / 10


def test_memorizer_and_majority_outputs():
    F = np.array([[1, 1, -1, -1], [1, -1, 1, -1], [1, -1, -1, 1]], dtype=np.int8)
    xs = np.array([[0, 1]])
    ys = np.array([[1, -1]])
    mask = np.array([[False, True, True]])
    np.testing.assert_array_equal(E.memorizer(F, mask, xs, ys), [[1, -1, 1, 1]])
    np.testing.assert_array_equal(E.majority_vote(F, mask, xs, ys), [[1, -1, 1, 1]])
    np.testing.assert_array_equal(E.first_consistent(F, mask, xs, ys), [F[1]])
    with pytest.raises(ValueError):
        E.estimability_exact(F * 2, 1, E.memorizer)


def test_hoeffding_and_holdout():
    assert E.hoeffding_radius(200, 0.05) == pytest.approx(math.sqrt(math.log(40) / 400))
    est, a0 = E.holdout_estimate(np.array([0, 1, 0, 0]), 0.1)
    assert est == 0.25 and a0 == pytest.approx(math.sqrt(math.log(20) / 8))
    with pytest.raises(ValueError):
        E.hoeffding_radius(0, 0.05)


def test_stability_check_on_a_perfectly_stable_learner():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = (x[:, 0] > 0).astype(int)

    def fit(xtr, ytr):  # ignores the data: perfectly hypothesis- and loss-stable (Example 1.5)
        return lambda z: (z[:, 0] + 0.1 > 0).astype(int)

    xt = rng.normal(size=(5000, 3))
    res = E.stability_check(fit, x, y, 100, xt, (xt[:, 0] > 0).astype(int), rng)
    assert res.agreement == 1.0 and res.loss_instability == 0.0
    assert res.covers()
    assert res.loss_full == pytest.approx(0.04, abs=0.01)


def test_resampled_stability_term_sees_an_unstable_learner_without_test_labels():
    """α̂₁ comes from refits on the training sample only: 0 for a learner that ignores its data, clearly positive
    for 1-nearest-neighbour on noisy labels (whose hold-out errors move when k more points go)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(600, 2))
    y = ((x[:, 0] > 0) ^ (rng.random(600) < 0.3)).astype(int)

    def fixed(xtr, ytr):
        return lambda z: (z[:, 0] > 0).astype(int)

    def nn1(xtr, ytr):
        return lambda z: ytr[np.argmin(((z[:, None, :] - xtr[None]) ** 2).sum(-1), axis=1)]

    xt = rng.normal(size=(2000, 2))
    yt = (xt[:, 0] > 0).astype(int)
    stable = E.stability_check(fixed, x, y, 100, xt, yt, np.random.default_rng(2), draws=4)
    unstable = E.stability_check(nn1, x, y, 100, xt, yt, np.random.default_rng(2), draws=4)
    assert stable.instability_resampled == 0.0
    assert unstable.instability_resampled > 0.01
    with pytest.raises(ValueError):
        E.stability_check(fixed, x, y, 300, xt, yt, rng)  # 2k must leave training points
