"""Score-based branching policies: the choice at a node is the argmax over the LP branching candidates of a score
s_θ(candidate) that is piecewise polynomial in the parameters θ (Cheng & Basu's setting).

Per-candidate features are three classic branching scores, each normalised by its maximum over the candidates
of the current node (a θ-independent rescaling, so the score stays linear / piecewise polynomial in θ):

* ``mostfrac`` — fractionality min(f, 1 − f) of the LP value;
* ``pscost``  — SCIP's pseudo-cost product score (learned from the LP gains of earlier branchings);
* ``objgain`` — an LP-gain proxy: |c_j| · min(f, 1 − f), the objective change of rounding x_j to the nearest
  integer without re-optimising.

Policies: :class:`MixturePolicy` (s = Σ_k w_k · feature_k, linear in θ = w; W = 3) and :class:`ReLUPolicy`
(one hidden ReLU layer over the three features, scalar linear output; piecewise polynomial of degree 2 in θ).
Ties are broken by the lowest variable index (:func:`choose`), so the decision is a function of the binary signs
of score differences — the convention the pseudo-dimension counting assumes.
"""

from __future__ import annotations

import numpy as np

from genlab.measures.bnc_bounds import ClassShape, mixture_shape, relu_shape

SCORES = ("mostfrac", "pscost", "objgain")


def classic_scores(frac: np.ndarray, pscost: np.ndarray, obj: np.ndarray) -> np.ndarray:
    """The (K, 3) feature matrix [mostfrac, pscost, objgain] of K candidates, each column divided by its max
    (a column of zeros stays zero) and rounded to 12 decimals. ``frac`` are fractional parts in (0, 1)."""
    frac, pscost, obj = (np.asarray(a, dtype=float) for a in (frac, pscost, obj))
    dist = np.minimum(frac, 1.0 - frac)
    raw = np.stack([dist, np.maximum(pscost, 0.0), np.abs(obj) * dist], axis=1)
    top = raw.max(axis=0) if raw.size else np.zeros(3)
    # quantised to 1e-12: ulp-level noise in LP values (0.9999999999999998 vs 1.0) must not create spurious
    # near-ties whose sign floating-point scores cannot resolve; a θ-independent map, so the theory is intact
    return np.round(raw / np.where(top > 0, top, 1.0), 12)


def choose(scores: np.ndarray, index: np.ndarray) -> int:
    """Position of the highest score; among exact ties, the candidate with the lowest variable index."""
    scores, index = np.asarray(scores, dtype=float), np.asarray(index)
    if scores.size == 0:
        raise ValueError("no candidates to choose from")
    if not np.all(np.isfinite(scores)):
        raise ValueError("branching scores must be finite")
    return int(np.lexsort((index, -scores))[0])


class ScorePolicy:
    """A parameterised score over candidate features; subclasses define ``scores`` and ``structure``."""

    name: str = "policy"

    def scores(self, features: np.ndarray) -> np.ndarray:  # (K, d) -> (K,)
        raise NotImplementedError

    @property
    def structure(self) -> ClassShape:
        """(W, Γ, γ, β) of the policy's class, for :mod:`genlab.measures.bnc_bounds`."""
        raise NotImplementedError

    @property
    def theta(self) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name}({', '.join(f'{v:.3g}' for v in self.theta)})"


class MixturePolicy(ScorePolicy):
    """s = Σ_k w_k · feature_k over :data:`SCORES`: a linear mixture of the classic scores (W = 3, degree 1)."""

    name = "mixture"

    def __init__(self, weights) -> None:
        w = np.asarray(weights, dtype=float).reshape(-1)
        if w.size != len(SCORES) or not np.all(np.isfinite(w)):
            raise ValueError(f"a mixture needs {len(SCORES)} finite weights (for {', '.join(SCORES)}), got {weights}")
        self.weights = w

    @classmethod
    def pure(cls, score: str) -> MixturePolicy:
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r}; scores: {', '.join(SCORES)}")
        return cls(np.eye(len(SCORES))[SCORES.index(score)])

    def scores(self, features: np.ndarray) -> np.ndarray:
        return features @ self.weights

    @property
    def structure(self) -> ClassShape:
        return mixture_shape(len(SCORES))

    @property
    def theta(self) -> np.ndarray:
        return self.weights.copy()

    def describe(self) -> str:
        return "mixture(" + ", ".join(f"{n}={v:.3g}" for n, v in zip(SCORES, self.weights)) + ")"


class ReLUPolicy(ScorePolicy):
    """s = w2 · relu(W1 f + b1) + b2 over the three features f: d_in = 3, ``hidden`` ReLU units, one hidden layer.
    θ = (W1 row-major, b1, w2, b2), W = hidden·(3 + 1) + hidden + 1. On each activation pattern the score is a
    polynomial of degree 2 in θ (products w2·W1); the pattern is cut out by ``hidden`` degree-1 polynomials."""

    name = "relu"

    def __init__(self, theta, hidden: int = 4) -> None:
        d = len(SCORES)
        t = np.asarray(theta, dtype=float).reshape(-1)
        if hidden < 1 or t.size != self.n_params(hidden) or not np.all(np.isfinite(t)):
            raise ValueError(f"a ReLU scorer with {hidden} hidden units needs {self.n_params(hidden)} finite "
                             f"parameters, got {t.size}")
        self.hidden = hidden
        self._theta = t
        self.w1 = t[: hidden * d].reshape(hidden, d)
        self.b1 = t[hidden * d : hidden * (d + 1)]
        self.w2 = t[hidden * (d + 1) : hidden * (d + 2)]
        self.b2 = float(t[-1])

    @staticmethod
    def n_params(hidden: int) -> int:
        return hidden * (len(SCORES) + 1) + hidden + 1

    @classmethod
    def pure(cls, score: str, hidden: int = 4) -> ReLUPolicy:
        """The ReLU scorer equal to one classic score (features are >= 0, so relu(f_k) = f_k): unit k passes
        feature k, the output reads unit 0. Puts the pure scores inside the ReLU candidate set."""
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r}; scores: {', '.join(SCORES)}")
        d = len(SCORES)
        w1, w2 = np.zeros((hidden, d)), np.zeros(hidden)
        w1[0, SCORES.index(score)], w2[0] = 1.0, 1.0
        return cls(np.concatenate([w1.ravel(), np.zeros(hidden), w2, [0.0]]), hidden)

    @classmethod
    def random(cls, rng: np.random.Generator, hidden: int = 4) -> ReLUPolicy:
        """Gaussian θ (weights and biases N(0, 1)): the candidates of a random-search ERM."""
        return cls(rng.normal(size=cls.n_params(hidden)), hidden)

    def scores(self, features: np.ndarray) -> np.ndarray:
        return np.maximum(features @ self.w1.T + self.b1, 0.0) @ self.w2 + self.b2

    @property
    def structure(self) -> ClassShape:
        return relu_shape(len(SCORES), self.hidden, 1)

    @property
    def theta(self) -> np.ndarray:
        return self._theta.copy()

    def describe(self) -> str:
        return f"relu(hidden={self.hidden}, theta=[{', '.join(f'{v:.3g}' for v in self._theta)}])"


def simplex_lattice(resolution: int, dims: int = len(SCORES)) -> np.ndarray:
    """All weight vectors with entries in {0, 1/r, ..., 1} summing to 1 (C(r + d − 1, d − 1) points), in a fixed
    order (lexicographic in the integer counts, last coordinate fastest) so ERM ties resolve the same way."""
    if resolution < 1 or dims < 1:
        raise ValueError("simplex_lattice needs resolution >= 1 and dims >= 1")

    def rec(left: int, d: int) -> list[list[int]]:
        if d == 1:
            return [[left]]
        return [[k, *rest] for k in range(left, -1, -1) for rest in rec(left - k, d - 1)]

    return np.asarray(rec(resolution, dims), dtype=float) / resolution
