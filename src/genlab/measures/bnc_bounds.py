"""Sample-complexity calculators for learned score-based branch-and-cut policies.

Setting (Cheng & Basu, "Generalization Guarantees for Learning (Score-Based) Branch-and-Cut Policies in Integer
Programming", arXiv:2505.11636, NeurIPS 2025): every decision of a run (node, cut, branching variable) takes the
argmax over ≤ K candidates of a score s_θ(state, candidate), θ ∈ R^W, piecewise polynomial in θ; the cost of the
run (tree size, capped at H) is then piecewise constant in θ, so the class of cost functions has bounded
pseudo-dimension and learning θ from sampled instances converges uniformly.

**What is implemented is derived (Warren counting), not the paper's theorem.** The paper's exact statements and
constants could not be read (only its abstract was retrievable; a second-hand note reports the shape
Pdim = O(W·M·Σ_k log ρ_k) for linear scores — no constants). This module counts explicitly:

Inputs: W parameters; (Γ, γ, β) = (pieces, boundaries, degree): γ polynomials of degree ≤ β whose binary sign
vector picks one of ≤ Γ pieces, on each of which the score is a polynomial of degree ≤ β in θ; S = max scored
decisions per run (≤ H: one branching decision per processed node); K = max candidates per decision; ties go to
the lowest index, so each comparison is the binary sign of s_a − s_b ≥ 0.

1. One decision, history fixed: m = K·γ + C(K, 2)·Γ² polynomials of degree ≤ β decide the argmax.
2. All reachable histories of one instance: M₁ = m·(K^S − 1)/(K − 1) (m·S if K = 1), exact integers.
3. Warren (1968, "Lower bounds for approximation by nonlinear manifolds", Thm 3): n ≥ W polynomials of degree
   ≤ β in W variables have ≤ (4eβn/W)^W connected components of the complement of their zero sets; an ε-shift
   turns binary sign vectors into such components. So log₂ Π(n) = n if n < W, else min(n, W·log₂(4eβn/W)).
4. Pdim ≤ N* = max{N ≥ 0 : N ≤ log₂ Π(N·M₁)} (shattering N instances needs 2^N cost patterns; 0 if M₁ = 0).
5. Uniform convergence for costs in [0, H], probability ≥ 1 − δ, simultaneously for all θ:
   ε(N, δ) = 2H·sqrt(2·ln C(N)/N) + H·sqrt(ln(2/δ)/(2N)), C(N) = Π(N·M₁) ≥ the number of distinct cost vectors
   on N instances — the Rademacher bound (Mohri, Rostamizadeh, Talwalkar, *Foundations of ML*, 2nd ed., Thm 3.3,
   scaled by H, two-sided with δ/2 per side) with Massart's lemma (Thm 3.7) on ≤ C(N) vectors of norm ≤ H√N.

Also: the finite-class certificate for ERM over a fixed candidate set Θ_G (Hoeffding + union bound),
ε = H·sqrt(ln(2|Θ_G|/δ)/(2N)); the data-dependent Massart form 2H·sqrt(2 ln|A_S|/N) + 3H·sqrt(ln(4/δ)/(2N)) with
|A_S| the exact number of distinct cost vectors on the sample; the exact one-parameter staircase count (L lines in
μ of degree ≤ β leave ≤ 1 + β·L constant pieces); and the usual shape N = O((H/ε)²(Pdim + ln(1/δ))) (Pollard /
Anthony–Bartlett; constant not given, shown with constant 1 and labelled a shape).

numpy-free and harness-free: plain Python integers while M₁ is of moderate size, and log₂ M₁ beyond that (M₁ has
hundreds of digits at K = 14, H = 300, and K^S is never formed when it would have more than ``EXACT_BITS`` bits):
no count is ever converted to a float, so nothing overflows.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

LOG2_4E = math.log2(4 * math.e)
EXACT_BITS = 4096  # M₁ is kept as an exact integer up to this size, and handled by its log₂ beyond it


def _check_structure(params: int, pieces: int, boundaries: int, degree: int) -> None:
    if params < 1:
        raise ValueError(f"W (parameters) must be >= 1, got {params}")
    if pieces < 1:
        raise ValueError(f"pieces (Γ) must be >= 1, got {pieces}")
    if boundaries < 0:
        raise ValueError(f"boundaries (γ) must be >= 0, got {boundaries}")
    if degree < 1:
        raise ValueError(f"degree (β) must be >= 1, got {degree}")


def step_polynomials(candidates: int, pieces: int = 1, boundaries: int = 0) -> int:
    """m = K·γ + C(K, 2)·Γ²: polynomials whose signs decide one argmax over K candidates (history fixed)."""
    if candidates < 1:
        raise ValueError(f"candidates (K) must be >= 1, got {candidates}")
    return candidates * boundaries + math.comb(candidates, 2) * pieces**2


def history_polynomials(step: int, candidates: int, decisions: int) -> int:
    """M₁ = m·(K^S − 1)/(K − 1) (= m·S for K = 1): polynomials over all histories of ≤ S decisions."""
    if decisions < 0:
        raise ValueError(f"decisions (S) must be >= 0, got {decisions}")
    if candidates == 1:
        return step * decisions
    return step * ((candidates**decisions - 1) // (candidates - 1))


def log2_sign_patterns(n: int, params: int, degree: int) -> float:
    """log₂ of Warren's bound on binary sign patterns of n polynomials of degree ≤ β in W variables (n may be an
    integer of any size: it is compared, never converted, unless it is the smaller term)."""
    if n < params:
        return float(n)
    warren = params * (LOG2_4E + math.log2(degree) + math.log2(n) - math.log2(params))
    return warren if warren < n else float(n)


def _log2_history(step: int, candidates: int, decisions: int) -> float:
    """log₂ M₁ without forming K^S: log₂ m + S·log₂ K + log₂(1 − K^−S) − log₂(K − 1) (−inf when M₁ = 0)."""
    if step == 0 or decisions == 0:
        return float("-inf")
    if candidates == 1:
        return math.log2(step) + math.log2(decisions)
    bits = decisions * math.log2(candidates)
    return math.log2(step) + bits + math.log1p(-(2.0 ** -bits)) / math.log(2) - math.log2(candidates - 1)


class _Count:
    """M₁ as an exact integer when it has at most EXACT_BITS bits, else by its log₂ alone."""

    def __init__(self, step: int, candidates: int, decisions: int) -> None:
        if decisions < 0:
            raise ValueError(f"decisions (S) must be >= 0, got {decisions}")
        self.log2 = _log2_history(step, candidates, decisions)
        small = self.log2 <= EXACT_BITS - 64
        self.exact = history_polynomials(step, candidates, decisions) if small else None

    def log2_patterns(self, n: int, params: int, degree: int) -> float:
        """log₂ Π(n·M₁) (Warren), for n ≥ 1."""
        if self.exact is not None:
            return log2_sign_patterns(n * self.exact, params, degree)
        log2_n = math.log2(n) + self.log2  # > EXACT_BITS - 64: far above any W in practice
        if log2_n < math.log2(params):  # n·M₁ < W: every sign pattern
            return 2.0**log2_n
        warren = params * (LOG2_4E + math.log2(degree) + log2_n - math.log2(params))
        return warren if math.log2(warren) < log2_n else 2.0**log2_n


def pdim_bound(params: int, candidates: int, decisions: int, pieces: int = 1, boundaries: int = 0,
               degree: int = 1) -> int:
    """N* = max{N : N ≤ log₂ Π(N·M₁)}, an upper bound on the pseudo-dimension (derived, Warren counting)."""
    _check_structure(params, pieces, boundaries, degree)
    m1 = _Count(step_polynomials(candidates, pieces, boundaries), candidates, decisions)
    if m1.exact == 0:
        return 0

    def feasible(n: int) -> bool:
        return n == 0 or n <= m1.log2_patterns(n, params, degree)

    hi = 1
    while feasible(hi):  # the feasible N form an initial segment {0, ..., N*}
        hi *= 2
    lo = hi // 2  # feasible (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def log_cost_vectors(n: int, params: int, candidates: int, decisions: int, pieces: int = 1, boundaries: int = 0,
                     degree: int = 1) -> float:
    """ln C(N), C(N) = Π(N·M₁): a bound on the number of distinct cost vectors the class has on N instances."""
    _check_structure(params, pieces, boundaries, degree)
    m1 = _Count(step_polynomials(candidates, pieces, boundaries), candidates, decisions)
    return math.log(2) * m1.log2_patterns(n, params, degree) if m1.exact != 0 and n > 0 else 0.0


def _check_sample(n: int, delta: float, cap: float) -> None:
    if n < 1:
        raise ValueError(f"N (training instances) must be >= 1, got {n}")
    if not 0 < delta < 1:
        raise ValueError(f"δ must lie in (0, 1), got {delta}")
    if not (math.isfinite(cap) and cap > 0):
        raise ValueError(f"the cost cap H must be positive and finite, got {cap}")


def epsilon_uniform(n: int, delta: float, cap: float, params: int, candidates: int, decisions: int,
                    pieces: int = 1, boundaries: int = 0, degree: int = 1) -> float:
    """ε(N, δ) = 2H·sqrt(2·ln C(N)/N) + H·sqrt(ln(2/δ)/(2N)) for costs in [0, H], uniformly over the whole
    (continuous) policy class. The raw value: above H it is vacuous (say so; do not clip silently)."""
    _check_sample(n, delta, cap)
    ln_c = log_cost_vectors(n, params, candidates, decisions, pieces, boundaries, degree)
    return 2 * cap * math.sqrt(2 * ln_c / n) + cap * math.sqrt(math.log(2 / delta) / (2 * n))


def epsilon_finite(n: int, delta: float, cap: float, n_policies: int) -> float:
    """ε = H·sqrt(ln(2|Θ_G|/δ)/(2N)): Hoeffding + a union bound over a finite, data-independent candidate set
    Θ_G (ERM over a grid or a seeded random search) — uniform over Θ_G, so it covers the ERM choice."""
    _check_sample(n, delta, cap)
    if n_policies < 1:
        raise ValueError(f"the candidate set must hold >= 1 policy, got {n_policies}")
    return cap * math.sqrt(math.log(2 * n_policies / delta) / (2 * n))


def epsilon_massart(n: int, delta: float, cap: float, n_vectors: int) -> float:
    """Data-dependent: 2H·sqrt(2 ln|A_S|/N) + 3H·sqrt(ln(4/δ)/(2N)), |A_S| = distinct cost vectors of the class
    on the N training instances (empirical Rademacher bound, MRT Thm 3.3, with Massart's lemma)."""
    _check_sample(n, delta, cap)
    if n_vectors < 1:
        raise ValueError(f"|A_S| must be >= 1, got {n_vectors}")
    return 2 * cap * math.sqrt(2 * math.log(n_vectors) / n) + 3 * cap * math.sqrt(math.log(4 / delta) / (2 * n))


def staircase_pieces(lines: int, degree: int = 1) -> int:
    """A function of one parameter μ decided by the signs of L polynomials of degree ≤ β has ≤ 1 + β·L pieces."""
    if lines < 0 or degree < 1:
        raise ValueError("lines must be >= 0 and degree >= 1")
    return 1 + degree * lines


def sample_size_shape(eps: float, delta: float, cap: float, pdim: int) -> float:
    """(H/ε)²·(Pdim + ln(1/δ)): the O(·) shape of the sample size (constant 1: a shape, not a certificate)."""
    if eps <= 0 or not 0 < delta < 1 or cap <= 0 or pdim < 0:
        raise ValueError("need eps > 0, 0 < delta < 1, cap > 0, pdim >= 0")
    return (cap / eps) ** 2 * (pdim + math.log(1 / delta))


# -- the two policy classes of genlab.bnc ---------------------------------------------------------------------


@dataclass(frozen=True)
class ClassShape:
    """(W, Γ, γ, β) of a policy class."""

    name: str
    params: int
    pieces: int
    boundaries: int
    degree: int


def mixture_shape(n_scores: int = 3) -> ClassShape:
    """A linear mixture of n classic scores: W = n, one piece, no boundaries, degree 1."""
    if n_scores < 1:
        raise ValueError("a mixture needs >= 1 score")
    return ClassShape(f"mixture of {n_scores} scores", n_scores, 1, 0, 1)


def relu_shape(d_in: int = 3, hidden: int = 4, layers: int = 1) -> ClassShape:
    """A ReLU scorer (d_in → hidden × layers → 1, all weights and biases trained): W = n(d+1) + (L−1)n(n+1) +
    (n+1), Γ = 2^{nL}, γ = Σ_l n·2^{n(l−1)}, β = L + 1 (derived; crude: log Γ² ≈ 1.4·nL per decision)."""
    if d_in < 1 or hidden < 1 or layers < 1:
        raise ValueError("a ReLU scorer needs d_in, hidden, layers >= 1")
    n, L = hidden, layers
    params = n * (d_in + 1) + (L - 1) * n * (n + 1) + (n + 1)
    boundaries = sum(n * 2 ** (n * (level - 1)) for level in range(1, L + 1))
    return ClassShape(f"ReLU {d_in}->{'x'.join([str(n)] * L)}->1", params, 2 ** (n * L), boundaries, L + 1)


@dataclass(frozen=True)
class BoundRow:
    name: str
    params: int
    pieces: int
    boundaries: int
    degree: int
    candidates: int
    decisions: int
    cap: float
    log2_m1: float
    pdim: int
    eps: dict[int, float]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["eps"] = {str(k): v for k, v in self.eps.items()}
        d["log2_m1"] = self.log2_m1 if math.isfinite(self.log2_m1) else None  # M₁ = 0: strict JSON has no -inf
        return d


def bound_row(shape: ClassShape, candidates: int, decisions: int, cap: float, ns: list[int],
              delta: float = 0.05) -> BoundRow:
    """Pdim bound and ε(N) at each N for one class at (K, S, H)."""
    m1 = _Count(step_polynomials(candidates, shape.pieces, shape.boundaries), candidates, decisions)
    log2_m1 = m1.log2 if m1.exact is None else (math.log2(m1.exact) if m1.exact else float("-inf"))
    pdim = pdim_bound(shape.params, candidates, decisions, shape.pieces, shape.boundaries, shape.degree)
    eps = {n: epsilon_uniform(n, delta, cap, shape.params, candidates, decisions, shape.pieces, shape.boundaries,
                              shape.degree) for n in ns}
    return BoundRow(shape.name, shape.params, shape.pieces, shape.boundaries, shape.degree, candidates, decisions,
                    cap, log2_m1, pdim, eps)
