"""The ``genlab`` command line: list, run, reproduce, sweep, report, and the tools' sub-commands.

Module-level imports stay light (typer only) so that tool commands such as ``genlab ifbench eval`` start fast;
each command imports what it needs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="genlab",
    help="genlab: reproduce generalization papers, and use their tools on your own models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

RootOpt = Annotated[Path, typer.Option("--root", help="Run store directory.")]
PresetOpt = Annotated[str, typer.Option("--preset", "-p", help="smoke | quick | full.")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel runs (local process pool or Ray).")]
BackendOpt = Annotated[str, typer.Option("--backend", help="serial | local | ray.")]
AddressOpt = Annotated[
    str | None, typer.Option("--address", help="Ray cluster address (e.g. auto); default: start a local Ray.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON to stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Rerun finished runs.")]


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    """genlab: reproduce generalization papers, and use their tools on your own models."""


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def _verdict_style(verdict: str) -> str:
    return {"reproduced": "green", "not reproduced": "magenta", "error": "bold red"}.get(verdict, "yellow")


def _result_json(r: Any) -> dict[str, Any]:
    return {
        "study": r.study,
        "preset": r.preset,
        "seed": r.seed,
        "hash": r.run_hash,
        "run_dir": str(r.run_dir),
        "skipped": r.skipped,
        "wall_time": r.wall_time,
        "error": r.error,
        "claims": [v.to_dict() for v in r.verdicts],
    }


def _print_verdicts(results: list[Any]) -> None:
    from rich.table import Table

    table = Table(title="claims", show_lines=False)
    for col in ("study", "seed", "claim", "verdict", "numbers"):
        table.add_column(col, overflow="fold")
    for r in results:
        if not r.ok:
            table.add_row(r.study, str(r.seed), "[red]run failed[/]", "-", r.error or "")
            continue
        for v in r.verdicts:
            style = _verdict_style(v.verdict)
            table.add_row(r.study, str(r.seed), v.claim, f"[{style}]{v.verdict}[/]", v.numbers_text(3))
    _console().print(table)


@app.command("list")
def list_cmd(root: RootOpt = Path("runs"), as_json: JsonOpt = False) -> None:
    """List studies: paper, presets and the last verdicts found in the run store."""
    from genlab.harness.report import group_verdicts, latest_groups
    from genlab.harness.store import finished_runs
    from genlab.harness.study import all_studies

    last: dict[str, dict[str, int]] = {}
    for members in latest_groups(finished_runs(root), presets=("quick",)):
        counts = last.setdefault(members[0].study, {})
        for combined, _ in group_verdicts(members):
            counts[combined.verdict] = counts.get(combined.verdict, 0) + 1
    rows = [
        {
            "name": cls.name,
            "paper": cls.paper.title,
            "arxiv": cls.paper.arxiv,
            "presets": list(cls.presets),
            "claims": len(cls.claims),
            "last_verdicts": last.get(cls.name, {}),
        }
        for cls in all_studies().values()
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    table = Table(title="genlab studies")
    table.add_column("study", no_wrap=True)
    table.add_column("paper", overflow="fold", ratio=3)
    table.add_column("presets", no_wrap=True)
    table.add_column("claims", justify="right")
    table.add_column("last verdicts", overflow="fold", ratio=1)
    for r in rows:
        verdicts = ", ".join(f"[{_verdict_style(k)}]{n} {k}[/]" for k, n in r["last_verdicts"].items()) or "-"
        table.add_row(r["name"], f"{r['paper']} ({r['arxiv']})", "/".join(r["presets"]), str(r["claims"]), verdicts)
    _console().print(table)


@app.command("run")
def run_cmd(
    study: Annotated[str, typer.Argument(help="Study name (see `genlab list`).")],
    preset: PresetOpt = "quick",
    sets: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="Config override key=value (repeatable).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Run seed.")] = 0,
    device: Annotated[str, typer.Option("--device", help="cpu | cuda.")] = "cpu",
    root: RootOpt = Path("runs"),
    force: ForceOpt = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run one study and print its verdicts."""
    from genlab.harness.config import parse_sets
    from genlab.harness.runner import RunSpec, execute

    spec = RunSpec(study, preset, parse_sets(sets or []), seed, str(root), force, device, quiet or as_json)
    result = execute(spec)
    if as_json:
        print(json.dumps(_result_json(result), indent=2))
        return
    what = "already finished (use --force to rerun)" if result.skipped else f"finished in {result.wall_time:.1f} s"
    _console(stderr=True).print(f"{study} [{preset}, seed {seed}] {what}: {result.run_dir}")
    _print_verdicts([result])


def _run_with_progress(specs: list[Any], backend: str, jobs: int, address: str | None, quiet: bool) -> list[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from genlab.harness.runner import prepare, run_many

    specs = prepare(specs, backend, jobs)
    if quiet:
        return run_many(specs, backend, jobs, address)  # type: ignore[arg-type]
    console = _console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("runs", total=len(specs))

        def done(r: Any) -> None:
            state = "failed" if not r.ok else ("cached" if r.skipped else f"{r.wall_time:.0f}s")
            bar.console.print(f"  {r.study} seed {r.seed}: {state}")
            bar.advance(task)

        return run_many(specs, backend, jobs, address, on_done=done)  # type: ignore[arg-type]


@app.command("reproduce")
def reproduce_cmd(
    studies: Annotated[list[str] | None, typer.Argument(help="Studies to run (default: all).")] = None,
    preset: PresetOpt = "quick",
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Seeds per study (0..N-1).")] = 1,
    jobs: JobsOpt = 1,
    backend: BackendOpt = "local",
    address: AddressOpt = None,
    root: RootOpt = Path("runs"),
    force: ForceOpt = False,
    report: Annotated[Path | None, typer.Option("--report", help="Report path (default <root>/report.html).")] = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run studies (all by default) and write the HTML report: the main job."""
    from genlab.harness.report import write_report
    from genlab.harness.runner import RunSpec
    from genlab.harness.study import all_studies, get_study

    names = studies or list(all_studies())
    for name in names:
        get_study(name)
    specs = [RunSpec(n, preset, {}, s, str(root), force) for n in names for s in range(seeds)]
    results = _run_with_progress(specs, backend, jobs, address, quiet or as_json)
    path = write_report(root, report, presets=(preset,))
    failed = [r for r in results if not r.ok]
    if as_json:
        print(json.dumps({"report": str(path), "runs": [_result_json(r) for r in results]}, indent=2))
    else:
        _print_verdicts(results)
        _console().print(f"report: {path.resolve()}")
    if failed:
        raise typer.Exit(1)


@app.command("sweep")
def sweep_cmd(
    study: Annotated[str, typer.Argument(help="Study name.")],
    grid: Annotated[
        list[str] | None, typer.Option("--grid", "-g", help="key=v1,v2 (repeatable; ';' splits tuples).")
    ] = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Seeds per grid cell (0..N-1).")] = 1,
    preset: PresetOpt = "quick",
    sets: Annotated[list[str] | None, typer.Option("--set", "-s", help="Fixed override key=value.")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", "-m", help="Metric(s) to tabulate (a/b/c).")] = None,
    jobs: JobsOpt = 1,
    backend: BackendOpt = "local",
    address: AddressOpt = None,
    root: RootOpt = Path("runs"),
    force: ForceOpt = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Expand a grid × seeds into runs and print mean ± standard error per cell."""
    from genlab.harness.config import parse_sets
    from genlab.harness.runner import RunSpec
    from genlab.harness.study import get_study
    from genlab.harness.sweep import expand, parse_grid, table

    cls = get_study(study)
    fixed = parse_sets(sets or [])
    cells = expand(parse_grid(cls.Config, grid or []))
    specs = [RunSpec(study, preset, {**fixed, **cell}, s, str(root), force) for cell in cells for s in range(seeds)]
    results = _run_with_progress(specs, backend, jobs, address, quiet or as_json)
    metrics, rows = table(cells, results, metric)
    failed = [r for r in results if not r.ok]
    if as_json:
        print(json.dumps({"metrics": metrics, "rows": rows, "failed": [_result_json(r) for r in failed]}, indent=2))
    else:
        from rich.table import Table

        t = Table(title=f"{study} sweep ({preset}, {seeds} seed(s) per cell; mean ± s.e., n)")
        keys = list(cells[0]) if cells and cells[0] else []
        for col in keys + list(metrics):
            t.add_column(col, overflow="fold")
        for row in rows:
            t.add_row(*[str(row[k]) for k in keys], *[_fmt_mean_se(row[m]) for m in metrics])
        _console().print(t)
        for r in failed:
            _console(stderr=True).print(f"[red]failed[/] seed {r.seed} {r.config}: {r.error}")
    if failed:
        raise typer.Exit(1)


def _fmt_mean_se(cell: tuple[float, float, int]) -> str:
    mean, se, n = cell
    if n == 0:
        return "-"
    return f"{mean:.4g} (n={n})" if n < 2 else f"{mean:.4g} ± {se:.2g} (n={n})"


@app.command("report")
def report_cmd(
    runs_dir: Annotated[Path, typer.Argument(help="Run store directory.")] = Path("runs"),
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output HTML (default <runs_dir>/report.html).")
    ] = None,
    preset: Annotated[str, typer.Option("--preset", "-p", help="smoke | quick | full | all.")] = "quick",
    recheck: Annotated[
        bool, typer.Option("--recheck", help="Recompute every stored run's verdicts from its metrics and config.")
    ] = False,
) -> None:
    """Write the self-contained HTML report of the finished runs."""
    from genlab.harness.report import write_report

    if not runs_dir.exists():
        from genlab.harness.errors import GenlabError

        raise GenlabError(f"no run store at {runs_dir}: run `genlab reproduce` or `genlab run STUDY` first")
    if recheck:
        from genlab.harness.runner import recheck_runs

        changed, skipped = recheck_runs(runs_dir)
        print(f"rechecked: {changed} verdict(s) changed; {len(skipped)} run(s) could not be rechecked", file=sys.stderr)
        for line in skipped:
            print(f"  {line}", file=sys.stderr)
    path = write_report(runs_dir, out, presets=None if preset == "all" else (preset,))
    print(path.resolve())


# -- tools --------------------------------------------------------------------------------------
# Each tool's CLI module keeps its module-level imports light.
from genlab.ifbench.cli import app as _ifbench_app  # noqa: E402
from genlab.ifbench.generate_cli import add_generation_commands, add_train_command  # noqa: E402
from genlab.measures.cli import app as _bound_app  # noqa: E402
from genlab.measures.oodselect_cli import oodselect as _oodselect  # noqa: E402

add_generation_commands(_ifbench_app)
add_train_command(_ifbench_app)
app.add_typer(_ifbench_app, name="ifbench")
app.add_typer(_bound_app, name="bound")
app.command("oodselect")(_oodselect)

from genlab.bnc.cli import app as _bnc_app  # noqa: E402

app.add_typer(_bnc_app, name="bnc")


def _click_exceptions():
    """Where typer's ClickException lives: recent typer vendors its own click (typer._click)."""
    try:
        from typer._click import exceptions
    except ImportError:  # typer that uses the click package
        from click import exceptions
    return exceptions


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-sentence errors and a non-zero exit code; tracebacks only with --debug."""
    from genlab.harness.errors import ConfigError, GenlabError

    click_exc = _click_exceptions()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:  # accepted anywhere on the line, passed where typer expects it
        args = ["--debug", *(a for a in args if a != "--debug")]
    try:
        code = app(args=args, prog_name="genlab", standalone_mode=False)
        if isinstance(code, int) and code:  # click returns (not raises) typer.Exit codes in this mode
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except click_exc.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("interrupted; finished runs are kept, unfinished ones restart next time", file=sys.stderr)
        sys.exit(130)
    except (GenlabError, ValueError, FileNotFoundError) as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2 if isinstance(exc, ConfigError) else 1)
    except Exception as exc:
        if debug:
            raise
        print(f"error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
