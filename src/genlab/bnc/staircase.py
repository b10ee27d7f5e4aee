"""The exact piecewise-constant structure of tree size along a line of mixture weights.

On a fixed instance, let θ(μ) = w0 + μ (w1 − w0), μ ∈ [0, 1] (e.g. μ·mostfrac + (1 − μ)·pscost). A run of
branch-and-cut is a deterministic function of its sequence of branching decisions, and each decision is the
argmax of scores that are *linear in μ* given the history. So from one run's logged decisions we know exactly
the μ-interval on which every decision — hence the whole tree and its size — stays the same: it ends at the
first root (beyond μ) of a score difference between the chosen candidate and another one. :func:`trace` walks
[0, 1] piece by piece this way (one solve per piece), which gives the exact staircase μ ↦ tree size, its
breakpoints, and every comparison polynomial the runs involved (Balcan et al.'s and Cheng–Basu's structural
argument, made executable).

Pieces narrower than ``eta`` (default 1e-9) can be stepped over; the grid check in the study tests the traced
staircase against independent solves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genlab.bnc.policies import MixturePolicy
from genlab.bnc.solver import BncResult, Decision, SolverSettings, solve


@dataclass
class Piece:
    start: float
    end: float
    cost: int
    nodes: int
    lp_iterations: int
    decisions: int
    signature: tuple = field(repr=False, default=())


@dataclass
class Staircase:
    """The traced function μ ↦ cost: pieces of constant decisions, sorted, covering [0, 1] up to slivers."""

    pieces: list[Piece]
    runs: int
    complete: bool  # every part of [0, 1] wider than eta was explored (False: stopped at max_runs)
    slivers: int  # unexplored intervals narrower than eta (pieces that may have been missed)
    inconsistent: int  # runs whose logged choices disagree with their own recomputed scores (should be 0)
    roots_chosen: np.ndarray  # distinct roots in [0, 1] of chosen-vs-other score differences, over all runs
    comparisons_all: int  # distinct pairwise comparison polynomials (lines in μ) logged over all runs
    roots_all: int  # distinct roots in [0, 1] of those
    max_candidates: int

    @property
    def breakpoints(self) -> list[float]:
        """μ values where the cost changes (the end of a piece whose successor has a different cost)."""
        return [a.end for a, b in zip(self.pieces, self.pieces[1:]) if a.cost != b.cost]

    @property
    def distinct_costs(self) -> int:
        return len({p.cost for p in self.pieces})

    def costs_at(self, mu: float) -> set[int]:
        """Costs of the pieces containing μ: one value inside a piece, possibly two at a boundary (where the
        tie-break decides), none in an unexplored sliver."""
        return {p.cost for p in self.pieces if p.start <= mu <= p.end}

    @property
    def sign_patterns(self) -> int:
        """Three-valued sign patterns (<0, =0, >0) of all logged comparison lines on [0, 1]: each distinct root
        is a cell of its own and splits an open interval, so 2·(distinct roots) + 1."""
        return 2 * self.roots_all + 1

    def to_dict(self) -> dict:
        return {
            "starts": [p.start for p in self.pieces],
            "ends": [p.end for p in self.pieces],
            "costs": [p.cost for p in self.pieces],
            "runs": self.runs,
            "complete": self.complete,
            "slivers": self.slivers,
            "inconsistent": self.inconsistent,
            "run_pieces": len(self.pieces),
            "breakpoints": self.breakpoints,
            "distinct_costs": self.distinct_costs,
            "roots_chosen": len(self.roots_chosen),
            "comparisons_all": self.comparisons_all,
            "roots_all": self.roots_all,
            "sign_patterns": self.sign_patterns,
            "max_candidates": self.max_candidates,
        }


def differences(decision: Decision, w0: np.ndarray, w1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s_chosen − s_b along the line as α_b + μ·β_b for every candidate b. Differences are taken in feature
    space first, so candidates whose features differ only where the line puts no weight get exactly α = β = 0
    (a permanent tie, decided by the index), not a rounding-error root."""
    g = decision.features[decision.chosen] - decision.features
    return g @ w0, g @ (w1 - w0)


def validity(decision: Decision, w0: np.ndarray, w1: np.ndarray) -> tuple[float, float]:
    """(lo, hi): the chosen candidate stays the argmax for μ' in [lo, hi] (±inf when unbounded): between
    the last root below and the first root above of the differences s_chosen − s_b."""
    alpha, beta = differences(decision, w0, w1)
    rising, falling = beta > 0, beta < 0
    lo = float(np.max(-alpha[rising] / beta[rising])) if rising.any() else -math.inf
    hi = float(np.min(-alpha[falling] / beta[falling])) if falling.any() else math.inf
    return lo, hi


def pair_lines(decision: Decision, w0: np.ndarray, w1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All C(K, 2) pairwise score differences s_i − s_j (i < j) along the line, as intercepts and slopes."""
    i, j = np.triu_indices(decision.features.shape[0], k=1)
    g = decision.features[i] - decision.features[j]
    return g @ w0, g @ (w1 - w0)


def _roots(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Roots in [0, 1] of the lines α + μ β with β ≠ 0."""
    ok = beta != 0
    r = -alpha[ok] / beta[ok]
    return r[(r >= 0) & (r <= 1)]


def trace(path: str | Path, w0, w1, settings: SolverSettings | None = None, max_runs: int = 200,
          eta: float = 1e-9) -> Staircase:
    """Trace μ ↦ cost on [0, 1] for the mixture w0 + μ (w1 − w0), one solve per piece of constant decisions.

    Unexplored intervals are kept on a stack; each is solved at its midpoint, the run's logged decisions give
    the exact interval on which it stays the same, and what is left on either side goes back on the stack."""
    w0, w1 = np.asarray(w0, dtype=float), np.asarray(w1, dtype=float)
    settings = settings or SolverSettings()
    pieces: list[Piece] = []
    chosen_roots: list[np.ndarray] = []
    all_roots: list[np.ndarray] = []
    lines: set[tuple[float, float]] = set()
    todo: list[tuple[float, float]] = []
    runs = kmax = slivers = inconsistent = 0

    def explore(mu: float, a: float, b: float) -> None:
        """Solve at μ ∈ [a, b]; record its piece and put back what is left of [a, b] on either side."""
        nonlocal runs, kmax, inconsistent
        res: BncResult = solve(path, MixturePolicy(w0 + mu * (w1 - w0)), settings, record=True)
        runs += 1
        kmax = max(kmax, res.max_candidates)
        lo, hi = -math.inf, math.inf
        for dec in res.log:
            d_lo, d_hi = validity(dec, w0, w1)
            lo, hi = max(lo, d_lo), min(hi, d_hi)
            chosen_roots.append(_roots(*differences(dec, w0, w1)))
            alpha, beta = pair_lines(dec, w0, w1)
            all_roots.append(_roots(alpha, beta))
            lines.update(map(tuple, np.round(np.stack([alpha, beta], axis=1), 12)))
        if not lo <= mu <= hi:  # the run's choices do not follow from its own scores: record, keep the point
            inconsistent += 1
            lo = hi = mu
        lo, hi = max(lo, a), min(hi, b)
        sig = tuple(int(dec.index[dec.chosen]) for dec in res.log)
        pieces.append(Piece(lo, hi, res.cost, res.nodes, res.lp_iterations, res.decisions, sig))
        if hi < b:
            todo.append((hi, b))
        if lo > a:
            todo.append((a, lo))

    # the end points first: at μ = 0 or 1 a weight is exactly zero, so ties there can make them pieces of
    # their own; inside, every interval is solved at its midpoint (far from every root, where floating-point
    # scores resolve the comparisons reliably)
    explore(0.0, 0.0, 1.0)
    if todo:
        a, b = todo.pop()
        explore(1.0, a, b)
    while todo and runs < max_runs:
        a, b = todo.pop()
        if b - a < eta:
            slivers += 1
            continue
        explore(0.5 * (a + b), a, b)
    pieces = _merge(sorted(pieces, key=lambda p: p.start))
    return Staircase(
        pieces=pieces,
        runs=runs,
        complete=not todo,
        slivers=slivers,
        inconsistent=inconsistent,
        roots_chosen=_distinct(chosen_roots),
        comparisons_all=len({ln for ln in lines if ln != (0.0, 0.0)}),
        roots_all=len(_distinct(all_roots)),
        max_candidates=kmax,
    )


def _merge(pieces: list[Piece]) -> list[Piece]:
    """Join neighbouring pieces with the same decision sequence (a root of a comparison that did not matter)."""
    out: list[Piece] = []
    for p in pieces:
        if out and out[-1].signature == p.signature:
            out[-1].end = max(out[-1].end, p.end)
        else:
            out.append(p)
    return out


def _distinct(parts: list[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.zeros(0)
    return np.unique(np.round(np.concatenate(parts), 12))
