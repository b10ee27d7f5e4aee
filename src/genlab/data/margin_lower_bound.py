"""The hard distribution behind the margin lower bound (Thm 1 of Larsen & Schalburg 2025, after Grønlund, Kamma &
Larsen 2020) and the worst max-margin halfspace on a sample from it, with exact population error.

Construction (our offline reconstruction of the lower bound's form; see docs/studies/margin-bounds.md):

* Points x_j = a·e_0 + b·e_j, j = 1..u, in R^{u+1}, all with label +1, a = √2·γ, b = sqrt(1 − a²) (so ‖x_j‖ = 1).
  D is uniform over the u points. The target e_0 classifies every point correctly with margin a > γ.
* A halfspace that errs on a set E of k points and keeps a margin on the rest: w = c·e_0 − t·Σ_{j∈E} e_j with
  ⟨w, x_j⟩ = c·a − b·t. With t = (1 + ε)·c·a/b (strictly wrong on E) and c = 1/sqrt(1 + k(1 + ε)²a²/b²) (unit
  norm) its margin on every other point is c·a; K = the largest k with c·a > γ, i.e. K < b²/(2γ²(1 + ε)²) ≈
  1/(2γ²): a margin-γ halfspace can be wrong on ≈ 1/(2γ²) chosen points. K sets the support size u below. The
  learner itself is the exact max-margin halfspace erring on E (``max_margin_wrong``), which also puts weight s on
  the m kept sample points: margin sqrt(a²/A + b²/m), slightly above c·a when m is large.
* The adversary (the "some w" of the theorem) picks E among the least-sampled points: points in E that occur in the
  sample count towards L_S^γ(w), so E is filled in order of increasing sample count while 1/u > count/n (the point
  adds to the gap) and the sample fraction stays ≤ τ. Exact: L_D(w) = |E|/u, L_S^γ(w) = Σ_{j∈E} count_j / n.
* u sets the regime. Log term (τ small): u = n/λ with λ e^λ = n/(s·K) (Lambert W), so about s·K points are unseen
  and the adversary errs on K of them: gap ≈ K·λ/n ≈ ln(γ²n)/(2γ²n). τ term: λ = τn/K, so the K least-sampled points
  carry ≈ τ of the sample but K·z_τ·sqrt(λ)/n less than their mass: gap ≈ sqrt(2Kτ ln(1/τ)/n) ≈ sqrt(τ ln(1/τ)/(γ²n)).
  We take λ = max of the two (the theorem's sum of terms equals their maximum up to a factor 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 0.01  # strictness of the errors on E (⟨w, x⟩ < 0, not = 0)


@dataclass(frozen=True)
class HardInstance:
    n: int
    gamma: float
    tau: float
    a: float
    b: float
    k_max: int  # K: most points a margin-γ halfspace can err on
    u: int  # support size
    lam: float  # expected count per point n/u (before rounding u)
    regime: str  # "log" or "tau"


def max_errors(gamma: float) -> int:
    """K: the largest k for which the widest halfspace erring on k points keeps margin > γ elsewhere."""
    a2 = 2.0 * gamma * gamma
    bound = (1.0 - a2) / (2.0 * gamma * gamma * (1.0 + EPS) ** 2)
    return int(np.ceil(bound)) - 1


def widest_wrong(k: int, a: float, b: float) -> tuple[float, float, float]:
    """(c, t, margin): the unit-norm w = c·e_0 − t·Σ_E e_j erring on k chosen points with the widest margin c·a."""
    c = 1.0 / np.sqrt(1.0 + k * (1.0 + EPS) ** 2 * a * a / (b * b))
    t = (1.0 + EPS) * c * a / b
    return float(c), float(t), float(c * a)


def instance(n: int, gamma: float, tau: float, slack: float = 1.0) -> HardInstance:
    from scipy.special import lambertw

    if not 0 < gamma < 0.7:
        raise ValueError("gamma must lie in (0, 0.7) (the construction needs a = √2·γ < 1)")
    a = float(np.sqrt(2.0) * gamma)
    b = float(np.sqrt(1.0 - a * a))
    k = max_errors(gamma)
    if k < 1:
        raise ValueError(f"gamma={gamma} leaves no room for errors (K = {k})")
    lam_log = float(lambertw(n / (slack * k)).real)
    lam_tau = tau * n / k
    lam = max(lam_log, lam_tau)
    u = max(int(round(n / lam)), k)
    return HardInstance(n, gamma, tau, a, b, k, u, lam, "tau" if lam_tau > lam_log else "log")


def max_margin_wrong(k: int, m: int, a: float, b: float) -> tuple[float, float, float, float]:
    """(c, s, t, margin) of the max-margin unit w that errs (strictly) on k chosen points and keeps m others.

    By symmetry w = c·e_0 + s·Σ_kept e_j − t·Σ_E e_j. The errors need c·a − b·t < 0: t = (1 + ε)·c·a/b. The margin
    c·a + b·s under c²·A + m·s² = 1, A = 1 + k(1 + ε)²a²/b², is largest (Cauchy–Schwarz) at c ∝ a/A, s ∝ b/m,
    margin = sqrt(a²/A + b²/m). With m = 0 there is nothing to keep and the margin is +inf.
    """
    big_a = 1.0 + k * (1.0 + EPS) ** 2 * a * a / (b * b)
    if m == 0:
        c = 1.0 / np.sqrt(big_a)
        return float(c), 0.0, float((1.0 + EPS) * c * a / b), float("inf")
    margin = np.sqrt(a * a / big_a + b * b / m)
    c, s = (a / big_a) / margin, (b / m) / margin
    return float(c), float(s), float((1.0 + EPS) * c * a / b), float(margin)


def worst_halfspace(counts: np.ndarray, inst: HardInstance) -> tuple[np.ndarray, np.ndarray]:
    """The adversary's choice for a sample with per-point ``counts``: (E's indices, the dense unit w in R^{u+1}).

    E is a prefix of the points in order of increasing count (ties by index): each added point must add to the gap
    (1/u > count/n), keep L_S^γ ≤ τ, and the max-margin w erring on E must keep a margin > γ on every other
    sample point. The largest such prefix is taken. (Dense w: for checks on small instances.)
    """
    chosen, c, s, t = _choose(counts, inst)
    w = np.concatenate([[c], np.where(counts > 0, s, 0.0)])
    w[1 + chosen] = -t
    return chosen, w


def _choose(counts: np.ndarray, inst: HardInstance) -> tuple[np.ndarray, float, float, float]:
    n, u, a, b = inst.n, inst.u, inst.a, inst.b
    order = np.argsort(counts, kind="stable")
    cs = counts[order].astype(float)
    ok = np.logical_and.accumulate((1.0 / u - cs / n > 0) & (np.cumsum(cs) <= inst.tau * n + 1e-9))
    kk = np.arange(1, u + 1)
    m_kept = int(np.sum(counts > 0)) - np.cumsum(cs > 0)  # distinct kept sample points when E = first k
    big_a = 1.0 + kk * (1.0 + EPS) ** 2 * a * a / (b * b)
    margin2 = a * a / big_a + np.where(m_kept > 0, b * b / np.maximum(m_kept, 1), np.inf)
    feasible = np.flatnonzero(ok & (margin2 > inst.gamma**2))
    k = int(feasible[-1] + 1) if feasible.size else 0
    chosen = order[:k]
    m = int(np.sum(counts > 0) - np.sum(counts[chosen] > 0))
    c, s, t, _ = max_margin_wrong(k, m, a, b)
    return chosen, c, s, t


def adversary(counts: np.ndarray, inst: HardInstance) -> dict[str, float]:
    """The worst max-margin halfspace (``worst_halfspace``) for a sample with per-point ``counts``: exact L_D,
    L_S^γ and the numbers that check w, computed from the structure (w_j ∈ {s, 0, −t}) without dense vectors."""
    n, a, b = inst.n, inst.a, inst.b
    chosen, c, s, t = _choose(counts, inst)
    k = len(chosen)
    m = int(np.sum(counts > 0) - np.sum(counts[chosen] > 0))
    # the explicit margins y⟨w, x_j⟩ = a·w_0 + b·w_j of every support point
    wj = np.where(counts > 0, s, 0.0)
    wj[chosen] = -t
    margins = a * c + b * wj
    norm = float(np.sqrt(c * c + m * s * s + k * t * t))
    wrong = margins <= 0
    kept_seen = (counts > 0) & ~wrong
    l_d = float(np.mean(wrong))  # D is uniform over the u points, all labelled +1
    l_s = float(np.sum(counts * (margins <= inst.gamma)) / n)
    return {
        "k": k,
        "l_d": l_d,
        "l_s": l_s,
        "gap": l_d - l_s,
        "norm": norm,
        "min_margin_kept": float(margins[kept_seen].min()) if kept_seen.any() else float("nan"),
        "max_margin_wrong": float(margins[wrong].max()) if wrong.any() else float("nan"),
    }


def sample_gap(inst: HardInstance, rng: np.random.Generator) -> dict[str, float]:
    """Draw S ~ Dⁿ (as per-point counts) and return the adversary's exact gap L_D(w) − L_S^γ(w)."""
    counts = np.bincount(rng.integers(0, inst.u, size=inst.n), minlength=inst.u)
    return adversary(counts, inst)


def power_law(support: int, exponent: float) -> np.ndarray:
    """Masses p_j ∝ j^(−exponent), j = 1..support: one fixed distribution for every n (not tuned to n)."""
    p = np.arange(1, support + 1, dtype=float) ** (-exponent)
    return p / p.sum()


def fixed_gap(masses: np.ndarray, n: int, gamma: float, rng: np.random.Generator, tau: float = 0.0
              ) -> dict[str, float]:
    """A fixed D (points x_j = a·e_0 + b·e_j with masses ``masses``, decreasing; not tuned to n, γ or τ): draw
    S ~ Dⁿ and let the max-margin halfspace err on a set E chosen greedily: points in order of decreasing gain
    p_j − count_j/n (> 0), each taken if it keeps L_S^γ ≤ τ and margin > γ on the kept sample points. At τ = 0
    E is the heaviest unseen points. Exact L_D = Σ_E p_j and L_S^γ = Σ_E count_j / n."""
    a = float(np.sqrt(2.0) * gamma)
    b = float(np.sqrt(1.0 - a * a))
    cdf = np.cumsum(masses)
    idx = np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), len(masses) - 1)
    counts = np.bincount(idx, minlength=len(masses))
    gain = masses - counts / n
    cand = np.flatnonzero(gain > 0)
    order = cand[np.argsort(-gain[cand], kind="stable")]
    seen = int(np.sum(counts > 0))
    budget, k, m, wrong = tau * n + 1e-9, 0, seen, []
    for j in order:  # stops once an unseen point no longer fits the margin (nothing later can)
        c_j = int(counts[j])
        if c_j > budget:
            continue
        m_next = m - (c_j > 0)
        big_a = 1.0 + (k + 1) * (1.0 + EPS) ** 2 * a * a / (b * b)
        if a * a / big_a + b * b / max(m_next, 1) <= gamma * gamma:
            if c_j == 0:
                break
            continue
        wrong.append(j)
        k, m, budget = k + 1, m_next, budget - c_j
    wrong_idx = np.asarray(wrong, dtype=int)
    c, s, t, margin = max_margin_wrong(k, m, a, b)
    l_d, l_s = float(masses[wrong_idx].sum()), float(counts[wrong_idx].sum() / n)
    return {
        "k": k,
        "l_d": l_d,
        "l_s": l_s,
        "gap": l_d - l_s,
        "norm": float(np.sqrt(c * c + m * s * s + k * t * t)),
        "min_margin_kept": margin,
        "max_margin_wrong": float(a * c - b * t) if k else float("nan"),
    }


def lb_rate(n: float, gamma: float, tau: float) -> tuple[float, float]:
    """The two terms of Thm 1's rate: sqrt(τ ln(e/τ)/(γ²n)) and ln(γ²n)/(γ²n) (c = 1)."""
    g2n = gamma * gamma * n
    t_term = float(np.sqrt(tau * np.log(np.e / tau) / g2n)) if tau > 0 else 0.0
    return t_term, float(np.log(g2n) / g2n)
