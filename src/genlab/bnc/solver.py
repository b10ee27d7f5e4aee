"""SCIP's branch-and-cut with a genlab branching rule: the cost of one (instance, policy) pair, deterministically.

:func:`solve` reads a ``.lp`` / ``.mps`` file, fixes everything that could make SCIP's run vary (one LP thread,
fixed random seeds, no time limit, presolve / separation / heuristics at recorded emphasis settings), installs
:class:`PolicyBranchrule` at top priority (every LP branching decision is the argmax of the policy's score over
SCIP's LP branching candidates, ties to the lowest variable index) and solves with a node limit H. The cost is
SCIP's own node count, capped at H; LP iterations are recorded too, and wall time in a separate field
(``wall_s``) that is a measurement of the machine, not a result.

The same file, policy and settings give the same tree, node for node (tested), in any process.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genlab.bnc.errors import BncInputError, SolverMissingError
from genlab.bnc.policies import ScorePolicy, choose, classic_scores
from genlab.harness.config import parse_value
from genlab.harness.errors import ConfigError

EMPHASIS = ("default", "fast", "off")
MIP_SUFFIXES = (".lp", ".mps", ".lp.gz", ".mps.gz")
BRANCHRULE_PRIORITY = 10**6  # above every SCIP rule (relpscost is 10 000)


def scip():
    """The pyscipopt module, or a :class:`SolverMissingError` saying how to get it."""
    try:
        import pyscipopt
    except ImportError as exc:
        raise SolverMissingError(
            f"the SCIP solver is not available (import pyscipopt failed: {exc}); install it with "
            "`pip install pyscipopt==6.3.0` (its wheels bundle SCIP)"
        ) from None
    return pyscipopt


@dataclass(frozen=True)
class SolverSettings:
    """Everything that decides a run besides the instance and the policy. Recorded with every result."""

    node_limit: int = 500  # H: the cost is min(SCIP's node count, H)
    seed: int = 0  # randomization/{randomseedshift, permutationseed, lpseed}
    presolve: str = "default"  # SCIP emphasis: default | fast | off
    separating: str = "default"  # cutting planes: default | fast | off
    heuristics: str = "off"  # primal heuristics: default | fast | off
    propagation: bool = True  # domain propagation (off: maxrounds = maxroundsroot = 0)
    conflict: bool = True  # conflict analysis
    symmetry: bool = True  # symmetry handling (off: misc/usesymmetry = 0)
    user_params: tuple[tuple[str, Any], ...] = ()  # the user's own SCIP parameters, set last (they win)

    def validate(self) -> None:
        if self.node_limit < 1:
            raise BncInputError(f"node_limit must be >= 1, got {self.node_limit}")
        if not 0 <= self.seed < 2**31:
            raise BncInputError(f"seed must lie in [0, 2^31), got {self.seed}")
        for name in ("presolve", "separating", "heuristics"):
            if getattr(self, name) not in EMPHASIS:
                raise BncInputError(f"{name} must be one of {', '.join(EMPHASIS)}, got {getattr(self, name)!r}")

    def params(self) -> dict[str, Any]:
        """The SCIP parameters set explicitly (besides the three emphasis settings)."""
        p: dict[str, Any] = {
            "limits/nodes": int(self.node_limit),
            "randomization/randomseedshift": int(self.seed),
            "randomization/permutationseed": int(self.seed),
            "randomization/lpseed": int(self.seed),
            "randomization/permutevars": False,
            "randomization/permuteconss": False,
            "lp/threads": 1,
            "parallel/maxnthreads": 1,
            "conflict/enable": bool(self.conflict),
        }
        if not self.propagation:
            p.update({"propagating/maxrounds": 0, "propagating/maxroundsroot": 0})
        if not self.symmetry:
            p["misc/usesymmetry"] = 0
        return p

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scip_params": self.params(), "scip_version": scip_version()}

    def apply(self, model: Any) -> None:
        ps = scip().SCIP_PARAMSETTING
        level = {"default": ps.DEFAULT, "fast": ps.FAST, "off": ps.OFF}
        model.setPresolve(level[self.presolve])
        model.setSeparating(level[self.separating])
        model.setHeuristics(level[self.heuristics])
        for name, value in self.params().items():
            model.setParam(name, value)
        for name, value in self.user_params:
            set_scip_param(model, name, value)


def set_scip_param(model: Any, name: str, value: Any) -> None:
    """Set one of SCIP's parameters by name, its value converted to the parameter's own type (from text as
    ``--scip-param`` gives it); an unknown name or a bad value is a :class:`BncInputError` naming it."""
    import difflib

    known = model.getParams()
    if name not in known:
        near = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {near[0]}?)" if near else " (SCIP's parameter names look like limits/time)"
        raise BncInputError(f"unknown SCIP parameter {name!r}{hint}")
    kind = type(known[name])
    try:
        typed = parse_value(str(value), kind, name)
    except ConfigError:
        raise BncInputError(f"SCIP parameter {name}: bad value {value!r} ({WANT.get(kind, kind.__name__)} is needed)"
                            ) from None
    try:
        with _captured_output():
            model.setParam(name, typed)
    except (ValueError, TypeError, LookupError) as exc:
        raise BncInputError(f"SCIP parameter {name}: bad value {value!r} ({exc})") from None


WANT = {int: "a whole number", float: "a number", bool: "true or false"}  # a typed value, in words


def parse_scip_params(items: list[str]) -> tuple[tuple[str, str], ...]:
    """``["limits/time=60", "branching/scorefunc=p"]`` -> pairs (values stay text until SCIP's types are known)."""
    pairs = []
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise BncInputError(f"--scip-param {item!r}: write name=value, e.g. limits/time=60")
        pairs.append((name.strip(), value.strip()))
    return tuple(pairs)


def scip_version() -> str:
    try:
        return f"SCIP {scip().Model().version()} / pyscipopt {scip().__version__}"
    except SolverMissingError:
        return "unavailable"


# ------------------------------------------------------------------------------------------------------------
# the branching rule


@dataclass
class Decision:
    """One branching decision: the (K, 3) feature matrix, the candidates' variable indices, the chosen row."""

    features: np.ndarray
    index: np.ndarray
    chosen: int


def lp_candidates(model: Any) -> tuple[list, list, list]:
    """SCIP's LP branching candidates: variables, LP values, fractional parts (the order SCIP gives)."""
    cands, sols, fracs, n = model.getLPBranchCands()[:4]
    return cands[:n], sols[:n], fracs[:n]


def make_branchrule(policy: ScorePolicy, record: bool = False):
    """A pyscipopt ``Branchrule`` whose LP branching is the argmax of ``policy``'s score (a class built on demand
    so this module imports without pyscipopt)."""
    pyscipopt = scip()

    class PolicyBranchrule(pyscipopt.Branchrule):
        def __init__(self) -> None:
            self.policy = policy
            self.record = record
            self.decisions: list[Decision] = []
            self.n_decisions = 0
            self.max_candidates = 0
            self.fallback_calls = 0
            self.error: BaseException | None = None

        def branchexeclp(self, allowaddcons):
            try:
                return self._branch()
            except BaseException as exc:  # an exception must not unwind through SCIP's C stack
                self.error = exc
                self.model.interruptSolve()
                return {"result": pyscipopt.SCIP_RESULT.DIDNOTRUN}

        def _branch(self):
            m = self.model
            cands, sols, fracs = lp_candidates(m)
            n = len(cands)
            feats = classic_scores(
                np.asarray(fracs, dtype=float),
                np.array([m.getVarPseudocostScore(v, s) for v, s in zip(cands, sols)], dtype=float),
                np.array([v.getObj() for v in cands], dtype=float),
            )
            index = np.array([v.getIndex() for v in cands], dtype=np.int64)
            k = choose(self.policy.scores(feats), index)
            if self.record:
                self.decisions.append(Decision(feats, index, k))
            self.n_decisions += 1
            self.max_candidates = max(self.max_candidates, n)
            m.branchVar(cands[k])
            return {"result": pyscipopt.SCIP_RESULT.BRANCHED}

        def branchexecps(self, allowaddcons):
            # no LP solution at this node (SCIP could not solve it): counted, left to SCIP's own rules
            self.fallback_calls += 1
            return {"result": pyscipopt.SCIP_RESULT.DIDNOTRUN}

    return PolicyBranchrule()


# ------------------------------------------------------------------------------------------------------------
# one solve


@dataclass
class BncResult:
    """The outcome of one solve. ``cost`` = min(nodes, H) is the capped cost the theory is about."""

    instance: str
    policy: str
    status: str
    nodes: int
    cost: int
    capped: bool
    lp_iterations: int
    decisions: int
    max_candidates: int
    fallback_calls: int
    int_vars: int  # integer variables of the instance as read (a bound on the candidates per decision)
    primal_bound: float
    dual_bound: float
    gap: float  # SCIP's relative gap |primal - dual| / min(|primal|, |dual|) (inf without a solution)
    wall_s: float = 0.0  # machine time: never part of a result that must be reproducible
    solve_s: float = 0.0  # SCIP's own solving time (machine time too)
    log: list[Decision] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        """The reproducible part (no wall or solving time, no decision log)."""
        d = asdict(self)
        d.pop("wall_s"), d.pop("solve_s"), d.pop("log")
        return d


@contextlib.contextmanager
def _captured_output() -> Iterator[list[str]]:
    """Capture what SCIP's C code prints to fds 1 and 2 (its reader errors bypass the message handler)."""
    import sys

    lines: list[str] = []
    sys.stdout.flush(), sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 1), os.dup2(sink.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            os.close(saved[0]), os.close(saved[1])
            sink.seek(0)
            lines.extend(sink.read().decode(errors="replace").splitlines())


def _scip_message(lines: list[str]) -> str:
    errs = [ln.split("ERROR:", 1)[1].strip() for ln in lines if "ERROR:" in ln and "Error <" not in ln]
    return errs[0] if errs else (lines[0].strip() if lines else "")


def read_model(path: str | Path) -> Any:
    """A pyscipopt Model of the file, quiet; a bad or missing file is a :class:`BncInputError` (one line)."""
    path = Path(path)
    if not path.is_file():
        raise BncInputError(f"{path}: no such MIP file")
    if not str(path).endswith(MIP_SUFFIXES):
        raise BncInputError(f"{path}: not a MIP file (expected {', '.join(MIP_SUFFIXES)})")
    model = scip().Model()
    model.hideOutput()
    with _captured_output() as out:
        try:
            model.readProblem(str(path))
            ok = True
        except Exception:
            ok = False
    if not ok:
        detail = _scip_message(out)
        raise BncInputError(f"{path}: SCIP cannot read this MIP file" + (f" ({detail})" if detail else ""))
    if model.getNVars() == 0:
        raise BncInputError(f"{path}: the MIP has no variables")
    return model


UNSOLVABLE = {"infeasible": "infeasible", "unbounded": "unbounded", "inforunbd": "infeasible or unbounded"}


def solve(path: str | Path, policy: ScorePolicy, settings: SolverSettings | None = None,
          record: bool = False, incumbent: dict[str, float] | None = None, need_tree: bool = True,
          sol_path: str | Path | None = None) -> BncResult:
    """Solve one MIP file with ``policy`` choosing every LP branching variable; returns its capped cost.

    ``record`` keeps every decision (features, candidates, choice) in ``result.log``. ``incumbent`` (variable
    name -> value) is given to SCIP as a starting solution: with the optimum known, the set of nodes B&B
    processes no longer depends on the order it visits them (used to compare with a reference B&B).

    ``sol_path`` writes SCIP's best solution there in its ``.sol`` format (nothing is written without one).

    Raises :class:`BncInputError` for unreadable files and, with ``need_tree`` (learning needs a tree), for
    infeasible or unbounded instances and any stop other than optimal / node limit / gap limit; without it the
    status is the result. Re-raises any error of the policy inside SCIP's callback."""
    settings = settings or SolverSettings()
    settings.validate()
    model = read_model(path)
    int_vars = int(model.getNBinVars() + model.getNIntVars())
    settings.apply(model)
    if incumbent is not None:
        _add_incumbent(model, incumbent, path)
    rule = make_branchrule(policy, record)
    model.includeBranchrule(rule, "genlab_score", "argmax of a parameterised score (genlab.bnc)",
                            priority=BRANCHRULE_PRIORITY, maxdepth=-1, maxbounddist=1.0)
    start = time.perf_counter()
    model.optimize()
    wall = time.perf_counter() - start
    if rule.error is not None:
        raise rule.error
    status = model.getStatus()
    if need_tree and status in UNSOLVABLE:
        raise BncInputError(f"{path}: SCIP reports the instance {UNSOLVABLE[status]}; learning a branching policy "
                            "needs feasible, bounded MIPs")
    if need_tree and status not in ("optimal", "nodelimit", "gaplimit"):
        raise BncInputError(f"{path}: SCIP stopped with status {status!r}")
    if sol_path is not None and model.getNSols() > 0:
        with _captured_output():
            model.writeBestSol(str(sol_path))
    nodes = int(model.getNNodes())
    h = settings.node_limit
    return BncResult(
        instance=Path(path).name,
        policy=policy.describe(),
        status=status,
        nodes=nodes,
        cost=min(nodes, h),
        capped=status == "nodelimit" or nodes >= h,
        lp_iterations=int(model.getNLPIterations()),
        decisions=rule.n_decisions,
        max_candidates=rule.max_candidates,
        fallback_calls=rule.fallback_calls,
        int_vars=int_vars,
        primal_bound=_bound(model, model.getPrimalbound()),
        dual_bound=_bound(model, model.getDualbound()),
        gap=float(model.getGap()),
        wall_s=wall,
        solve_s=float(model.getSolvingTime()),
        log=rule.decisions,
    )


def _bound(model: Any, value: float) -> float:
    """A bound in plain floats: SCIP's infinity (1e20) becomes ±inf."""
    return float(np.sign(value) * np.inf) if model.isInfinity(abs(value)) else float(value)


def _add_incumbent(model: Any, values: dict[str, float], path: str | Path) -> None:
    by_name = {v.name: v for v in model.getVars()}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise BncInputError(f"{path}: the incumbent names unknown variables {unknown[:5]}")
    sol = model.createSol()
    for name, value in values.items():
        model.setSolVal(sol, by_name[name], float(value))
    if not model.addSol(sol, free=True):
        raise BncInputError(f"{path}: SCIP rejected the given incumbent (infeasible)")


def find_instances(directory: str | Path) -> list[Path]:
    """The MIP files (.lp, .mps, optionally gzipped) directly in ``directory``, sorted by name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BncInputError(f"{directory}: not a directory of MIP files")
    files = sorted(p for p in directory.iterdir() if p.is_file() and str(p).endswith(MIP_SUFFIXES))
    if not files:
        raise BncInputError(f"{directory}: no .lp or .mps files in it")
    return files
