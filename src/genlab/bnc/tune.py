"""Learning a branching policy by ERM over instances, and what the theory certifies about it.

The candidate set Θ_G is fixed before looking at any instance (a simplex lattice of mixtures, or the three pure
scores plus seeded Gaussian ReLU scorers), every candidate is solved once on every instance (a cost table,
P instances × G policies: one SCIP solve per cell, in parallel if asked), and ERM picks the candidate with the
lowest mean capped cost on the training instances (ties: the first in Θ_G's fixed order). Because Θ_G is
data-independent and finite, Hoeffding + a union bound certify the ERM choice's generalisation gap uniformly:
ε = H·sqrt(ln(2|Θ_G|/δ)/(2N)); the Warren-counting ε of the whole continuous class is reported beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genlab.bnc.errors import BncInputError
from genlab.bnc.policies import SCORES, MixturePolicy, ReLUPolicy, ScorePolicy, simplex_lattice
from genlab.bnc.solver import SolverSettings, solve
from genlab.measures import bnc_bounds as bb

POLICY_KINDS = ("mixture", "relu")
Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


# -- candidate sets ------------------------------------------------------------------------------------------


def mixture_candidates(budget: int) -> list[MixturePolicy]:
    """The finest simplex lattice over the three scores with at most ``budget`` points (≥ 3: the pure scores)."""
    if budget < 3:
        raise BncInputError(f"a mixture budget must be >= 3 (the three pure scores), got {budget}")
    r = 1
    while math.comb(r + 1 + len(SCORES) - 1, len(SCORES) - 1) <= budget:
        r += 1
    return [MixturePolicy(w) for w in simplex_lattice(r)]


def relu_candidates(budget: int, seed: int = 0, hidden: int = 4) -> list[ReLUPolicy]:
    """The three pure scores written as ReLU scorers, then ``budget − 3`` Gaussian ReLU scorers (seeded)."""
    if budget < 3:
        raise BncInputError(f"a relu budget must be >= 3 (the three pure scores come first), got {budget}")
    rng = np.random.default_rng([seed, 7919])
    return [ReLUPolicy.pure(s, hidden) for s in SCORES] + [ReLUPolicy.random(rng, hidden) for _ in range(budget - 3)]


MAX_BUDGET = 100_000  # candidate policies: each is one SCIP solve per instance


def candidates(kind: str, budget: int, seed: int = 0, hidden: int = 4) -> list[ScorePolicy]:
    if budget > MAX_BUDGET:
        raise BncInputError(f"--budget is at most {MAX_BUDGET:,} candidate policies (one SCIP solve per instance "
                            f"each), got {budget:,}")
    if kind == "relu" and not 1 <= hidden <= 4096:
        raise BncInputError(f"--hidden must be a number of hidden units in [1, 4096], got {hidden}")
    if kind == "mixture":
        return list(mixture_candidates(budget))
    if kind == "relu":
        return list(relu_candidates(budget, seed, hidden))
    raise BncInputError(f"--policy must be one of {', '.join(POLICY_KINDS)}, got {kind!r}")


def pure_positions(policies: Sequence[ScorePolicy]) -> dict[str, int]:
    """Where each pure classic score sits in a candidate list (mixtures: unit weights; ReLU: ``ReLUPolicy.pure``)."""
    out = {}
    for score in SCORES:
        for i, p in enumerate(policies):
            ref = MixturePolicy.pure(score) if isinstance(p, MixturePolicy) else ReLUPolicy.pure(score, p.hidden)
            if np.array_equal(p.theta, ref.theta):
                out[score] = i
                break
    return out


def _spec(policy: ScorePolicy) -> tuple[str, list[float], int]:
    return (policy.name, policy.theta.tolist(), getattr(policy, "hidden", 0))


def _from_spec(spec: tuple[str, list[float], int]) -> ScorePolicy:
    kind, theta, hidden = spec
    return MixturePolicy(theta) if kind == "mixture" else ReLUPolicy(theta, hidden)


# -- the cost table ------------------------------------------------------------------------------------------


def evaluate_instance(job: tuple[str, list, dict]) -> dict[str, Any]:
    """Solve one instance with every candidate (a module-level job for process pools)."""
    path, specs, settings = job
    s = SolverSettings(**settings)
    rows = [solve(path, _from_spec(spec), s) for spec in specs]
    return {
        "cost": [r.cost for r in rows],
        "nodes": [r.nodes for r in rows],
        "lp_iterations": [r.lp_iterations for r in rows],
        "capped": [r.capped for r in rows],
        "max_candidates": max(r.max_candidates for r in rows),
        "int_vars": rows[0].int_vars,
        "fallback_calls": sum(r.fallback_calls for r in rows),
        "wall_s": sum(r.wall_s for r in rows),
    }


@dataclass
class CostTable:
    """Capped costs of every (instance, candidate) pair, in the order of ``instances`` × ``policies``."""

    instances: list[str]
    policies: list[str]
    cost: np.ndarray  # (P, G) int
    lp_iterations: np.ndarray  # (P, G) int
    capped: np.ndarray  # (P, G) bool
    max_candidates: np.ndarray  # (P,)
    int_vars: np.ndarray  # (P,)
    fallback_calls: int
    wall_s: float = field(default=0.0, repr=False)


def cost_table(paths: Sequence[str | Path], policies: Sequence[ScorePolicy], settings: SolverSettings,
               mapper: Mapper | None = None) -> CostTable:
    """Solve every instance with every policy. ``mapper(fn, jobs)`` runs the per-instance jobs (default: a loop;
    pass a process-pool map to parallelise — results never depend on it)."""
    settings.validate()
    specs = [_spec(p) for p in policies]
    jobs = [(str(p), specs, asdict(settings)) for p in paths]
    rows = (mapper or (lambda fn, js: [fn(j) for j in js]))(evaluate_instance, jobs)
    return CostTable(
        instances=[Path(p).name for p in paths],
        policies=[p.describe() for p in policies],
        cost=np.array([r["cost"] for r in rows], dtype=np.int64).reshape(len(paths), len(policies)),
        lp_iterations=np.array([r["lp_iterations"] for r in rows], dtype=np.int64).reshape(len(paths), -1),
        capped=np.array([r["capped"] for r in rows], dtype=bool).reshape(len(paths), -1),
        max_candidates=np.array([r["max_candidates"] for r in rows], dtype=np.int64),
        int_vars=np.array([r["int_vars"] for r in rows], dtype=np.int64),
        fallback_calls=int(sum(r["fallback_calls"] for r in rows)),
        wall_s=float(sum(r["wall_s"] for r in rows)),
    )


def erm(costs: np.ndarray) -> int:
    """Column with the lowest mean cost over the rows (training instances); ties go to the first column."""
    return int(np.argmin(np.asarray(costs, dtype=float).mean(axis=0)))


# -- the tool: split, learn, certify -------------------------------------------------------------------------


def split(n: int, test_frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded train / held-out split of n instances (both non-empty)."""
    if not 0 < test_frac < 1:
        raise BncInputError(f"--test-frac must lie in (0, 1), got {test_frac}")
    n_test = min(n - 1, max(1, round(test_frac * n)))
    if n < 2:
        raise BncInputError("tuning needs at least 2 instances (one to train on, one held out)")
    perm = np.random.default_rng([seed, 104729]).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


@dataclass
class TuneReport:
    kind: str
    n_train: int
    n_test: int
    train_instances: list[str]
    test_instances: list[str]
    n_candidates: int
    node_limit: int
    delta: float
    learned: str
    learned_theta: list[float]
    train_mean: float
    test_mean: float
    pure: dict[str, dict[str, float]]  # score -> train_mean, test_mean, diff (learned − pure) mean/se on test
    eps_finite: float  # certified, uniform over the candidate set
    eps_class: float  # Warren counting over the continuous class (raw; vacuous when > H)
    pdim_class: int
    candidates_bound: int  # K used in the class bound
    capped_frac: float
    fallback_calls: int
    settings: dict[str, Any]
    table: CostTable = field(repr=False, default=None)  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "table"}
        if self.table is not None:
            d["table"] = {"instances": self.table.instances, "policies": self.table.policies,
                          "cost": self.table.cost.tolist()}
        return d


def tune(paths: Sequence[str | Path], kind: str = "mixture", budget: int = 15, settings: SolverSettings | None = None,
         test_frac: float = 0.5, seed: int = 0, delta: float = 0.05, hidden: int = 4,
         mapper: Mapper | None = None) -> TuneReport:
    """ERM over a fixed candidate set on the training part of ``paths``; held-out means and certificates."""
    from genlab.harness import decide

    settings = settings or SolverSettings()
    if not 0 < delta < 1:
        raise BncInputError(f"--delta must lie in (0, 1), got {delta}")
    policies = candidates(kind, budget, seed, hidden)
    train, test = split(len(paths), test_frac, seed)
    table = cost_table(paths, policies, settings, mapper)
    cost = table.cost.astype(float)
    best = erm(cost[train])
    pure = {}
    for score, j in pure_positions(policies).items():
        d = decide.paired(cost[test, best], cost[test, j], below=0.0).test  # learned − pure, per held-out instance
        pure[score] = {"train_mean": float(cost[train, j].mean()), "test_mean": float(cost[test, j].mean()),
                       "diff_mean": d.effect, "diff_ci": list(d.ci), "diff_p": d.p}
    h = settings.node_limit
    shape = policies[best].structure
    k = int(max(table.int_vars.max(), table.max_candidates.max(), 1))
    return TuneReport(
        kind=kind,
        n_train=int(train.size),
        n_test=int(test.size),
        train_instances=[table.instances[i] for i in train],
        test_instances=[table.instances[i] for i in test],
        n_candidates=len(policies),
        node_limit=h,
        delta=delta,
        learned=policies[best].describe(),
        learned_theta=policies[best].theta.tolist(),
        train_mean=float(cost[train, best].mean()),
        test_mean=float(cost[test, best].mean()),
        pure=pure,
        eps_finite=bb.epsilon_finite(int(train.size), delta, h, len(policies)),
        eps_class=bb.epsilon_uniform(int(train.size), delta, h, shape.params, k, h, shape.pieces, shape.boundaries,
                                     shape.degree),
        pdim_class=bb.pdim_bound(shape.params, k, h, shape.pieces, shape.boundaries, shape.degree),
        candidates_bound=k,
        capped_frac=float(table.capped.mean()),
        fallback_calls=table.fallback_calls,
        settings=settings.to_dict(),
        table=table,
    )
