"""Estimability: which algorithms admit tight generalization bounds (Gastpar, Nachum, Shafer, Weinberger,
arXiv:2410.01969).

Definitions used throughout (the paper's notation):

* A learning algorithm A maps a sample S ∈ (X × Y)^m to a hypothesis; L_D(h) is its 0-1 population loss.
* ℓ₂-estimability (Def. 5.1, Prop. 5.2): over a family 𝔇 of distributions with D ~ U(𝔇) and S ~ D^m,
  A is (ε, m)-estimable in ℓ₂ iff  v := E[ var(L_D(A(S)) | S) ] ≤ ε. The optimal estimator is the posterior
  mean E*(S) = E[L_D(A(S)) | S] and its mean squared error equals v. Estimable ⇔ a tight bound exists.
* Finite labs: X = {0, …, N−1}, a class F of ±1 functions (rows of a matrix), D_f = uniform over the graph
  {(x, f(x))}, f ~ U(F). Given S the posterior is uniform over the consistent set F_S, so v and E* are exact
  functions of S (computed here by enumeration or Monte Carlo over S).
* Lemma H.1: for exactly orthogonal F (pairwise disagreement 1/2) and any A that outputs a member of F_S, every
  estimator E has P[|E(S) − L_D(A(S))| ≥ 1/4] ≥ Σ_{k≥2} p_k / k with p_k = P[|F_S| = k]. Theorem 3.2 uses
  |F| = 2^m + 1 such functions on |X| ≥ 100 m² points and gets ≥ 0.16.
* Theorem 4.3 (stability ⇒ estimability): split S = S₁ ∘ S₂ with |S₂| = k. If A is (α₁, β₁)-loss stable
  (|L_D(A(S₁)) − L_D(A(S))| ≤ α₁ w.p. ≥ 1 − β₁), the hold-out estimate E(S) = L_{S₂}(A(S₁)) satisfies
  |E(S) − L_D(A(S))| ≤ α₀ + α₁ w.p. ≥ 1 − β₀ − β₁, with α₀ = sqrt(ln(2/β₀)/(2k)) (Hoeffding).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Algorithm",
    "EstimabilityResult",
    "StabilityResult",
    "estimability_exact",
    "estimability_mc",
    "first_consistent",
    "gf2_rank_distribution",
    "hoeffding_radius",
    "holdout_estimate",
    "lemma_h1_bound",
    "majority_vote",
    "memorizer",
    "orthogonal_v_closed_form",
    "parity_erm_success",
    "stability_check",
    "walsh_functions",
]

# -- parities (Example 1.8) ---------------------------------------------------------------------------


def gf2_rank_distribution(m: int, d: int) -> np.ndarray:
    """P[rank = r], r = 0..d, of an m × d matrix with i.i.d. uniform entries over GF(2).

    Exact row-by-row Markov chain: a new uniform row lies in the span of a rank-r matrix with probability 2^{r−d}.
    """
    if m < 0 or d < 1:
        raise ValueError(f"need m >= 0 and d >= 1, got m={m}, d={d}")
    p = np.zeros(d + 1)
    p[0] = 1.0
    stay = 2.0 ** (np.arange(d + 1) - d)
    for _ in range(m):
        up = p * (1.0 - stay)
        p = p * stay
        p[1:] += up[:-1]
    return p


def parity_erm_success(m: int, d: int) -> float:
    """Probability that an ERM for parities on {0,1}^d recovers the target from m uniform examples.

    The target is uniform over the 2^d parities; the consistent set is an affine subspace of size 2^{d−rank},
    and any ERM returns each member with the same posterior probability, so P[correct] = E[2^{−(d−rank)}].
    Example 1.8: ≥ 0.999 at m = d + 10, ≈ 0.61 at m = d, ≈ 0.38 at m = d − 1 (the loss is 0 or exactly 1/2).
    """
    p = gf2_rank_distribution(m, d)
    return float(np.sum(p * 2.0 ** (np.arange(d + 1) - d)))


# -- finite labs ----------------------------------------------------------------------------------------


def walsh_functions(n_bits: int, rows: np.ndarray | int) -> np.ndarray:
    """Rows of the 2^n_bits Sylvester–Hadamard matrix as ±1 int8 functions on X = {0, …, 2^n_bits − 1}.

    H[i, x] = (−1)^{popcount(i AND x)}; distinct rows disagree on exactly half of X (exact orthogonality).
    """
    n = 1 << n_bits
    rows = np.arange(rows) if np.isscalar(rows) else np.asarray(rows)
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"row indices must lie in [0, {n})")
    bits = np.bitwise_and(rows[:, None], np.arange(n)[None, :]).astype(np.uint64)
    parity = np.bitwise_count(bits) & 1
    return (1 - 2 * parity).astype(np.int8)


# An algorithm sees the class F (|F| × N), the consistent mask (T × |F|), sample points xs (T × m) and labels
# ys (T × m); it returns hypotheses as ±1 values on X (T × N).
Algorithm = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def first_consistent(F: np.ndarray, mask: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """An F-interpolating rule: the first consistent function in F's order (fixed tie-break; unstable)."""
    return F[np.argmax(mask, axis=1)]


def majority_vote(F: np.ndarray, mask: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Pointwise majority of the consistent functions (ties → +1)."""
    votes = mask.astype(np.float32) @ F.astype(np.float32)  # exact: integer sums far below 2^24
    return np.where(votes >= 0, 1, -1).astype(np.int8)


def memorizer(F: np.ndarray, mask: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Example 1.6: predict the seen label on sample points and +1 elsewhere (estimable via the label fraction)."""
    h = np.ones((xs.shape[0], F.shape[1]), dtype=np.int8)
    np.put_along_axis(h, xs, ys.astype(np.int8), axis=1)
    return h


@dataclass(frozen=True)
class EstimabilityResult:
    """v = E[var(L | S)], the MSE of the posterior-mean estimator E*, and the failure rates of estimators."""

    v: float
    mmse: float
    k_dist: dict[int, float]  # p_k = P[|F_S| = k]
    lemma_h1: float  # Σ_{k≥2} p_k / k
    mean_loss: float
    fail_mmse: float  # P[|E* − L| ≥ threshold]
    fail_empirical: float  # same for the empirical (training) loss as estimator
    threshold: float


def _stats(F: np.ndarray, f_idx: np.ndarray, xs: np.ndarray, algorithm: Algorithm):
    """Per draw: true loss, posterior mean and variance of the loss, |F_S|, and the training loss of A(S)."""
    n_points = F.shape[1]
    ys = F[f_idx[:, None], xs]  # (T, m)
    mask = np.all(F[:, xs] == ys[None], axis=2).T  # (T, |F|)
    h = algorithm(F, mask, xs, ys)  # (T, N)
    agree = (h.astype(np.float32) @ F.T.astype(np.float32)).astype(np.float64)  # exact for N < 2^24
    dis = 0.5 - agree / (2.0 * n_points)  # (T, |F|) 0-1 losses of A(S) against every candidate target
    k = mask.sum(axis=1)
    post_mean = (mask * dis).sum(axis=1) / k
    post_var = (mask * (dis - post_mean[:, None]) ** 2).sum(axis=1) / k
    true = dis[np.arange(len(f_idx)), f_idx]
    train = np.mean(np.take_along_axis(h, xs, axis=1) != ys, axis=1)
    return true, post_mean, post_var, k, train


def _summarize(true, post_mean, post_var, k, train, weights, threshold) -> EstimabilityResult:
    w = weights / weights.sum()
    ks, inv = np.unique(k, return_inverse=True)
    pk = np.bincount(inv, weights=w)
    return EstimabilityResult(
        v=float(w @ post_var),
        mmse=float(w @ (post_mean - true) ** 2),
        k_dist={int(a): float(b) for a, b in zip(ks, pk)},
        lemma_h1=float(np.sum(np.where(ks >= 2, pk / ks, 0.0))),
        mean_loss=float(w @ true),
        fail_mmse=float(w @ (np.abs(post_mean - true) >= threshold - 1e-12)),
        fail_empirical=float(w @ (np.abs(train - true) >= threshold - 1e-12)),
        threshold=threshold,
    )


def estimability_mc(
    F: np.ndarray,
    m: int,
    algorithm: Algorithm,
    n_draws: int,
    rng: np.random.Generator,
    threshold: float = 0.25,
    chunk: int = 2000,
) -> EstimabilityResult:
    """Monte Carlo over f ~ U(F) and S ~ D_f^m of the exact per-sample posterior quantities (see module doc)."""
    F = _check_class(F, m)
    parts = []
    for start in range(0, n_draws, chunk):
        t = min(chunk, n_draws - start)
        f_idx = rng.integers(0, F.shape[0], t)
        xs = rng.integers(0, F.shape[1], (t, m))
        parts.append(_stats(F, f_idx, xs, algorithm))
    cols = [np.concatenate(c) for c in zip(*parts)]
    return _summarize(*cols, weights=np.ones(n_draws), threshold=threshold)


def estimability_exact(
    F: np.ndarray, m: int, algorithm: Algorithm, threshold: float = 0.25, max_cases: int = 2_000_000
) -> EstimabilityResult:
    """Exact v, E* and failure rates by enumerating every target f and every sequence of m points (N^m · |F|)."""
    F = _check_class(F, m)
    n_f, n_points = F.shape
    cases = n_f * n_points**m
    if cases > max_cases:
        raise ValueError(f"{cases} cases to enumerate (> max_cases={max_cases}); use estimability_mc")
    xs = np.indices((n_points,) * m).reshape(m, -1).T
    f_idx = np.repeat(np.arange(n_f), xs.shape[0])
    xs = np.tile(xs, (n_f, 1))
    return _summarize(*_stats(F, f_idx, xs, algorithm), weights=np.ones(len(f_idx)), threshold=threshold)


def _check_class(F: np.ndarray, m: int) -> np.ndarray:
    F = np.asarray(F)
    if F.ndim != 2 or not np.all(np.isin(F, (-1, 1))):
        raise ValueError("F must be a 2-d array of ±1 labels (|F| functions × |X| points)")
    if m < 1:
        raise ValueError(f"sample size m must be >= 1, got {m}")
    return F.astype(np.int8)


def lemma_h1_bound(k_dist: dict[int, float]) -> float:
    """Σ_{k≥2} p_k / k: the Lemma H.1 lower bound on P[|E − L| ≥ 1/4] for orthogonal classes."""
    return float(sum(p / k for k, p in k_dist.items() if k >= 2))


def orthogonal_v_closed_form(k_dist: dict[int, float]) -> float:
    """v for an F_S-valued rule on an orthogonal class: the loss is 0 w.p. 1/k and 1/2 otherwise given |F_S| = k,
    so v = Σ_k p_k (k − 1) / (4k²)."""
    return float(sum(p * (k - 1) / (4.0 * k * k) for k, p in k_dist.items()))


# -- real learners: hold-out estimator and loss stability (Theorem 4.3) ----------------------------------


def hoeffding_radius(k: int, delta: float) -> float:
    """α₀ = sqrt(ln(2/δ) / (2k)): the two-sided Hoeffding radius of a mean of k losses in [0, 1]."""
    if k < 1 or not 0 < delta < 1:
        raise ValueError(f"need k >= 1 and 0 < delta < 1, got k={k}, delta={delta}")
    return float(np.sqrt(np.log(2.0 / delta) / (2.0 * k)))


def holdout_estimate(losses: np.ndarray, delta: float = 0.05) -> tuple[float, float]:
    """The Theorem 4.3 witness E(S) = L_{S₂}(A(S₁)) from the losses on S₂, and its Hoeffding radius α₀."""
    losses = np.asarray(losses, dtype=float)
    if losses.ndim != 1 or losses.size == 0:
        raise ValueError("losses must be a non-empty 1-d array")
    return float(losses.mean()), hoeffding_radius(losses.size, delta)


@dataclass(frozen=True)
class StabilityResult:
    holdout: float  # E(S) = L_{S2}(A(S1))
    alpha0: float  # Hoeffding radius of the hold-out estimate
    loss_s1: float  # L_test(A(S1))
    loss_full: float  # L_test(A(S)): the quantity being bounded
    loss_instability: float  # |L_test(A(S1)) − L_test(A(S))|: α₁ measured with test labels (reported only)
    agreement: float  # P_test[A(S1)(x) = A(S)(x)]: 1 − hypothesis distance
    instability_resampled: float = 0.0  # α̂₁ from the training sample alone (see stability_check)

    @property
    def error(self) -> float:
        """|E(S) − L_test(A(S))|: how far the hold-out estimate is from the (test-estimated) population loss."""
        return abs(self.holdout - self.loss_full)

    def covers(self) -> bool:
        """Does [E − α₀ − α̂₁, E + α₀ + α̂₁] contain L_test(A(S)), with α̂₁ estimated without test labels? (With
        the test-measured α₁ instead the interval would cover whenever Hoeffding holds, by the triangle inequality
        |E − L(A(S))| ≤ |E − L(A(S₁))| + |L(A(S₁)) − L(A(S))|: that check tests Hoeffding, not stability.)"""
        return self.error <= self.alpha0 + self.instability_resampled


def stability_check(
    fit: Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]],
    x: np.ndarray,
    y: np.ndarray,
    k: int,
    x_test: np.ndarray,
    y_test: np.ndarray,
    rng: np.random.Generator,
    delta: float = 0.05,
    draws: int = 3,
) -> StabilityResult:
    """Theorem 4.3 on a real learner: fit A(S₁) (k random points S₂ held out) and A(S) and compare them.

    The loss-stability term α₁ = |L(A(S₁)) − L(A(S))| is estimated from the training sample alone, one size down:
    ``draws`` times, k more random points are removed from S₁ (S₁′) and α̂₁ is the mean of
    |L_{S₂}(A(S₁′)) − L_{S₂}(A(S₁))| — the effect of removing k points, measured on points neither model saw. The
    test set stands in for D only to score the result (L(A(S)), and the test-measured α₁ for comparison).
    ``fit(x, y)`` returns a predict function; it must be deterministic given its data (use a fixed
    initialisation and seed inside: the runs must share the initialisation).
    """
    n = len(y)
    if not 0 < 2 * k < n:
        raise ValueError(f"k must lie in (0, {n // 2}), got {k}")
    perm = rng.permutation(n)
    s1, s2 = perm[: n - k], perm[n - k :]
    pred_s1 = fit(x[s1], y[s1])
    pred_full = fit(x[perm], y[perm])
    err_s1 = pred_s1(x[s2]) != y[s2]
    est, a0 = holdout_estimate(err_s1, delta)
    shifts = []
    for _ in range(draws):
        keep = s1[np.sort(rng.permutation(n - k)[: n - 2 * k])]
        shifts.append(abs(float(np.mean(fit(x[keep], y[keep])(x[s2]) != y[s2])) - est))
    p1, pf = pred_s1(x_test), pred_full(x_test)
    l1, lf = float(np.mean(p1 != y_test)), float(np.mean(pf != y_test))
    return StabilityResult(est, a0, l1, lf, abs(l1 - lf), float(np.mean(p1 == pf)),
                           float(np.mean(shifts)) if shifts else 0.0)
