"""``genlab bnc ...``: learn a score-based branching policy for SCIP on your MIPs, and the theory's numbers.

    genlab bnc generate knapsack --count 20 --out mips/          # seeded instances as .lp files
    genlab bnc solve mips/knapsack_0.lp --weights 0.5,0.5,0       # one solve: tree size, LP iterations
    genlab bnc tune --instances mips/ --policy mixture --budget 15 # ERM on train, held-out mean, certified ε(N)
    genlab bnc tune --instances knapsack:items=14 --count 20      # generate, then tune
    genlab bnc bound --candidates 14 --cap 200                     # the pseudo-dimension / ε(N) table

    genlab bnc solve mips/knapsack_0.lp --scip-param limits/time=60 --sol best.sol

``solve`` reports SCIP's status (optimal, infeasible, unbounded, nodelimit, timelimit, ...), the gap and the
solving time as results. Bad MIP files, bad options and a missing solver are one line and exit code 2
(:class:`~genlab.bnc.errors.BncInputError`, a ConfigError), and so are infeasible or unbounded instances given
to ``tune`` (a branching policy is learned from trees). Module-level imports stay light.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from genlab.bnc.errors import BncInputError

app = typer.Typer(help="Learned score-based branching in SCIP's branch-and-cut, with sample-complexity bounds.",
                  no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Learned score-based branching in SCIP's branch-and-cut, with sample-complexity bounds."""


def parse_family(spec: str) -> tuple[str, dict[str, Any]]:
    """``knapsack`` or ``knapsack:items=14,rows=2`` -> (family, kwargs), each value of its option's type; an
    unknown option or a value of the wrong type is one line naming the option."""
    import difflib

    from genlab.data.mip import FAMILIES, generator_options

    name, _, rest = spec.partition(":")
    if name not in FAMILIES:
        raise BncInputError(f"{spec!r} is neither a directory nor an instance family ({', '.join(FAMILIES)})")
    options = generator_options(name)
    kwargs = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key:
            raise BncInputError(f"bad generator option {item!r} in {spec!r}; write key=value")
        if key not in options:
            near = difflib.get_close_matches(key, options, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise BncInputError(f"{name} has no option {key!r}; {hint}options: "
                                + ", ".join(f"{k}={v}" for k, v in options.items()))
        kwargs[key] = _option_value(name, key, value, options[key])
    return name, kwargs


def _option_value(family: str, key: str, text: str, default: Any) -> Any:
    from genlab.bnc.solver import WANT
    from genlab.harness.config import parse_value
    from genlab.harness.errors import ConfigError

    kind = type(default)
    try:
        return parse_value(text, kind, key)
    except ConfigError:
        raise BncInputError(f"{family} option {key} must be {WANT.get(kind, kind.__name__)}, got {text!r}") from None


MAX_COUNT = 100_000


def _write(family: str, kwargs: dict[str, Any], directory: Path, count: int, seed: int, fmt: str) -> list[Path]:
    from genlab.data.mip import write_family

    if not 1 <= count <= MAX_COUNT:
        raise BncInputError(f"--count must be in [1, {MAX_COUNT:,}] instances, got {count:,}")
    try:
        return write_family(family, directory, count, seed, fmt, **kwargs)
    except (TypeError, ValueError) as exc:
        raise BncInputError(f"cannot generate {family} instances: {exc}") from None


def _floats(text: str, name: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise BncInputError(f"{name} must be comma-separated numbers, got {text!r}") from None


def _settings(node_limit: int, seed: int, presolve: str, separating: str, heuristics: str,
              scip_params: list[str] | None = None):
    from genlab.bnc.solver import SolverSettings, parse_scip_params, scip, set_scip_param

    s = SolverSettings(node_limit=node_limit, seed=seed, presolve=presolve, separating=separating,
                       heuristics=heuristics, user_params=parse_scip_params(scip_params or []))
    s.validate()
    probe = scip().Model()  # check every --scip-param once, before any solve
    probe.hideOutput()
    for name, value in s.user_params:
        set_scip_param(probe, name, value)
    return s


NodeLimit = Annotated[int, typer.Option("--node-limit", help="tree cap H (nodes); the cost is min(nodes, H)")]
Seed = Annotated[int, typer.Option("--seed", help="SCIP's random seeds, the split and the generators")]
Presolve = Annotated[str, typer.Option("--presolve", help="SCIP presolving: default | fast | off")]
Separating = Annotated[str, typer.Option("--separating", help="cutting planes: default | fast | off")]
Heuristics = Annotated[str, typer.Option("--heuristics", help="primal heuristics: default | fast | off")]
JsonOut = Annotated[bool, typer.Option("--json", help="print JSON")]
ScipParams = Annotated[list[str] | None, typer.Option(
    "--scip-param", help="any SCIP parameter as name=value (repeatable), e.g. limits/time=60; set after genlab's")]


@app.command("generate")
def generate_cmd(
    family: Annotated[str, typer.Argument(help="knapsack | setcover | facility, optionally :key=value,...")],
    out: Annotated[Path, typer.Option("--out", help="directory to write the instances to")],
    count: Annotated[int, typer.Option("--count", help="number of instances")] = 10,
    seed: Seed = 0,
    fmt: Annotated[str, typer.Option("--format", help="lp | mps")] = "lp",
) -> None:
    """Write seeded instances of a family (0-1 knapsack, set cover, capacitated facility location)."""
    name, kwargs = parse_family(family)
    if fmt not in ("lp", "mps"):
        raise BncInputError(f"--format must be lp or mps, got {fmt!r}")
    paths = _write(name, kwargs, out, count, seed, fmt)
    typer.echo(f"wrote {len(paths)} {name} instances to {out}")


@app.command("solve")
def solve_cmd(
    instance: Annotated[Path, typer.Argument(help="a .lp or .mps file")],
    weights: Annotated[str, typer.Option("--weights", help="mixture weights for mostfrac,pscost,objgain")] = "0,1,0",
    node_limit: NodeLimit = 1000,
    seed: Seed = 0,
    presolve: Presolve = "default",
    separating: Separating = "default",
    heuristics: Heuristics = "off",
    scip_param: ScipParams = None,
    sol: Annotated[Path | None, typer.Option("--sol", help="write SCIP's best solution here (.sol format)")]
    = None,
    as_json: JsonOut = False,
) -> None:
    """Solve one MIP with a mixture policy: SCIP's status, tree size (node count, capped), objective, gap,
    LP iterations, solving time. Infeasible, unbounded or stopped by a limit is a status, not an error."""
    from genlab.bnc.policies import MixturePolicy
    from genlab.bnc.solver import solve

    try:
        policy = MixturePolicy(_floats(weights, "--weights"))
    except ValueError as exc:
        raise BncInputError(str(exc)) from None
    settings = _settings(node_limit, seed, presolve, separating, heuristics, scip_param)
    if sol is not None and sol.is_dir():
        raise BncInputError(f"--sol {sol} is a folder; give a file name such as {sol / 'solution.sol'}")
    res = solve(instance, policy, settings, need_tree=False, sol_path=sol)
    wrote = sol is not None and sol.is_file()
    if as_json:
        from genlab.harness.io import to_jsonable

        typer.echo(json.dumps(to_jsonable({**res.summary(), "wall_s": res.wall_s, "solve_s": res.solve_s,
                                           "sol": str(sol) if wrote else None}), allow_nan=False))
        return
    typer.echo(_solve_line(res, node_limit))
    if sol is not None:
        typer.echo(f"wrote the best solution to {sol}" if wrote else "no solution found: nothing written to --sol")


def _solve_line(res: Any, node_limit: int) -> str:
    import math

    head = f"{res.instance}: {res.status}"
    if res.status in ("infeasible", "unbounded", "inforunbd"):
        return f"{head} after {res.nodes} nodes, {res.solve_s:.2f} s"
    gap = "inf" if math.isinf(res.gap) else f"{100 * res.gap:.2f}%"
    return (f"{head}, objective {res.primal_bound:.6g} (bound {res.dual_bound:.6g}, gap {gap}), {res.nodes} nodes "
            f"(cost {res.cost}, cap {node_limit}{', capped' if res.capped else ''}), {res.lp_iterations} LP "
            f"iterations, {res.decisions} branchings (<= {res.max_candidates} candidates), {res.solve_s:.2f} s")


@app.command("tune")
def tune_cmd(
    instances: Annotated[str, typer.Option("--instances", help="a directory of .lp/.mps files, or a family "
                                           "(knapsack|setcover|facility[:key=value,...]) to generate")],
    policy: Annotated[str, typer.Option("--policy", help="mixture | relu")] = "mixture",
    budget: Annotated[int, typer.Option("--budget", help="candidate policies tried (the ERM's finite class)")] = 15,
    count: Annotated[int, typer.Option("--count", help="instances to generate when --instances is a family")] = 20,
    test_frac: Annotated[float, typer.Option("--test-frac", help="held-out fraction of the instances")] = 0.5,
    delta: Annotated[float, typer.Option("--delta", help="failure probability of the certificates")] = 0.05,
    hidden: Annotated[int, typer.Option("--hidden", help="hidden units of the ReLU scorer")] = 4,
    node_limit: NodeLimit = 500,
    seed: Seed = 0,
    presolve: Presolve = "default",
    separating: Separating = "default",
    heuristics: Heuristics = "off",
    scip_param: ScipParams = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="parallel SCIP processes")] = 1,
    out: Annotated[Path | None, typer.Option("--out", help="write tune.json (and generated instances) here")] = None,
    as_json: JsonOut = False,
) -> None:
    """Learn θ by ERM on the training instances; report held-out mean tree size and the certified ε(N)."""
    from genlab.bnc.solver import find_instances
    from genlab.bnc.tune import tune

    settings = _settings(node_limit, seed, presolve, separating, heuristics, scip_param)
    if out is not None and out.exists() and not out.is_dir():
        raise BncInputError(f"--out {out} is a file, not a folder")
    with tempfile.TemporaryDirectory(prefix="genlab-bnc-") as tmp:
        generated = None
        if Path(instances).is_dir():
            paths = find_instances(instances)
        else:
            name, kwargs = parse_family(instances)
            generated = Path(tmp) / "instances"  # moved to --out only once tuning succeeded
            paths = _write(name, kwargs, generated, count, seed, "lp")
        report = tune(paths, policy, budget, settings, test_frac, seed, delta, hidden, _mapper(jobs))
        if out is not None:
            _save_tune(out, report, generated)
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
        return
    _print_tune(report)


def _save_tune(out: Path, report: Any, generated: Path | None) -> None:
    """tune.json (and the generated instances) into --out; a failure part-way removes what this call wrote."""
    import shutil

    from genlab.harness.io import atomic_write_bytes

    created = not out.exists()
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        if generated is not None:
            (out / "instances").mkdir(exist_ok=True)
            for f in sorted(generated.iterdir()):
                written.append(out / "instances" / f.name)
                shutil.copyfile(f, written[-1])
        written.append(out / "tune.json")
        atomic_write_bytes(written[-1], (json.dumps(report.to_dict(), indent=2) + "\n").encode())
    except BaseException:
        for f in written:
            f.unlink(missing_ok=True)
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise


def _mapper(jobs: int):
    if jobs <= 1:
        return None
    from genlab.harness.workers import run_in_pool

    return lambda fn, js: run_in_pool(fn, list(js), jobs)


def _print_tune(r) -> None:
    h = r.node_limit
    typer.echo(f"ERM over {r.n_candidates} {r.kind} policies on {r.n_train} training instances "
               f"({r.n_test} held out); cost = SCIP nodes capped at H = {h}; {100 * r.capped_frac:.0f}% of solves "
               f"hit the cap")
    typer.echo(f"learned: {r.learned}")
    typer.echo(f"  mean tree size: train {r.train_mean:.2f}, held-out {r.test_mean:.2f}")
    typer.echo("  pure scores (held-out mean; learned − pure on held-out: mean, 95% CI, one-sided p of < 0):")
    for score, row in r.pure.items():
        lo, hi = row["diff_ci"]
        typer.echo(f"    {score:<9} {row['test_mean']:9.2f}   {row['diff_mean']:+.2f} [{lo:+.2f}, {hi:+.2f}]  "
                   f"p={row['diff_p']:.2g}")
    typer.echo(f"certified, uniformly over the {r.n_candidates} candidates (Hoeffding + union bound), "
               f"with prob. >= {1 - r.delta:g}: |train − expected| <= eps(N={r.n_train}) = {r.eps_finite:.2f} nodes "
               f"({r.eps_finite / h:.3f} H)")
    vac = " — vacuous (> H)" if r.eps_class > h else ""
    typer.echo(f"whole {r.kind} class (derived Warren counting, Pdim <= {r.pdim_class} at K = {r.candidates_bound}, "
               f"S = H): eps = {r.eps_class:.4g} nodes ({r.eps_class / h:.3g} H){vac}")
    if r.fallback_calls:
        typer.echo(f"note: {r.fallback_calls} node(s) had no LP solution and were branched by SCIP's own rules")


@app.command("bound")
def bound_cmd(
    candidates: Annotated[int, typer.Option("--candidates", help="K: max branching candidates per decision")],
    cap: Annotated[int, typer.Option("--cap", help="H: tree-size cap (nodes)")],
    decisions: Annotated[int | None, typer.Option("--decisions", help="S: scored decisions per run (default H)")]
    = None,
    n: Annotated[str, typer.Option("--n", help="training-set sizes N")] = "10,20,50,100,200",
    delta: Annotated[float, typer.Option("--delta", help="failure probability δ")] = 0.05,
    scores: Annotated[int, typer.Option("--scores", help="classic scores in the mixture (W)")] = 3,
    hidden: Annotated[int, typer.Option("--hidden", help="ReLU hidden width")] = 4,
    layers: Annotated[int, typer.Option("--layers", help="ReLU hidden layers")] = 1,
    grid: Annotated[int, typer.Option("--grid", help="also the finite-class ε for this many candidates (0: no)")]
    = 15,
    as_json: JsonOut = False,
) -> None:
    """Pseudo-dimension bound and uniform-convergence ε(N) for the mixture and ReLU policy classes."""
    from genlab.measures import bnc_bounds as bb

    try:
        ns = [int(v) for v in n.split(",") if v.strip()]
    except ValueError:
        raise BncInputError(f"--n must be comma-separated whole numbers, got {n!r}") from None
    s = cap if decisions is None else decisions
    try:
        rows = [bb.bound_row(shape, candidates, s, cap, ns, delta)
                for shape in (bb.mixture_shape(scores), bb.relu_shape(scores, hidden, layers))]
        finite = {k: bb.epsilon_finite(k, delta, cap, grid) for k in ns} if grid else {}
    except ValueError as exc:
        raise BncInputError(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"candidates": candidates, "cap": cap, "decisions": s, "delta": delta,
                               "classes": [r.to_dict() for r in rows],
                               "finite": {str(k): v for k, v in finite.items()}, "grid": grid}))
        return
    typer.echo(f"K = {candidates} candidates, S = {s} decisions, costs in [0, H = {cap}], delta = {delta:g}")
    typer.echo("derived bounds (Warren counting; not the paper's constants):")
    head = f"  {'class':<26} {'W':>3} {'Γ':>6} {'γ':>3} {'β':>2} {'log2 M1':>8} {'Pdim<=':>7}  " + "  ".join(
        f"eps(N={k})/H" for k in ns)
    typer.echo(head)
    for r in rows:
        eps = "  ".join(f"{r.eps[k] / cap:>{len(f'eps(N={k})/H')}.3g}" for k in ns)
        typer.echo(f"  {r.name:<26} {r.params:>3} {r.pieces:>6} {r.boundaries:>3} {r.degree:>2} {r.log2_m1:>8.1f} "
                   f"{r.pdim:>7}  {eps}")
    if finite:
        eps = "  ".join(f"{finite[k] / cap:>{len(f'eps(N={k})/H')}.3g}" for k in ns)
        typer.echo(f"  {f'finite class, {grid} policies':<26} {'':>3} {'':>6} {'':>3} {'':>2} {'':>8} {'':>7}  {eps}")
    typer.echo("eps/H > 1 is vacuous. The finite-class row (Hoeffding + union bound) certifies ERM over a fixed grid.")
