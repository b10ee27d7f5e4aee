"""The ``genlab`` command line: list, run, reproduce, sweep, report, and the tools' sub-commands.

Every command runs through :func:`genlab.commandline.run`, the one error path; ``genlab ifbench ...`` is run on the
same ``ifbench`` group without importing this module (see :mod:`genlab.launch`). Module-level imports stay light;
each command imports what it needs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from genlab.commandline import new_app, run

app = new_app()

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
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu | cuda | cuda:N | mps (must exist here).")]
TrackOpt = Annotated[
    list[str] | None,
    typer.Option("--track", help="Also export runs to mlflow | tensorboard | wandb (repeatable; local files)."),
]
SetOpt = Annotated[list[str] | None, typer.Option("--set", "-s", help="Config override key=value (repeatable).")]


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def _esc(value: Any) -> str:
    """User-supplied text (paths, claim numbers, errors) printed through rich is never parsed as markup."""
    from rich.markup import escape

    return escape(str(value))


def _warn_damaged(damaged: list[str]) -> None:
    for line in damaged:
        print(f"warning: damaged run left out (it will be recomputed by run/reproduce): {line}", file=sys.stderr)


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
    """Claim by claim, readable at 80 columns: the verdict and key, the test that decided it (effect, CI against
    the margin, method, n, p), then the claim's text wrapped at word boundaries."""
    from rich.padding import Padding

    con = _console()
    for r in results:
        con.print(f"[bold]claims[/] ({_esc(r.study)}, seed {r.seed})")
        if not r.ok:
            con.print(f"  [red]run failed[/]: {_esc(r.error or '')}")
            continue
        for v in r.verdicts:
            kind = "" if v.kind == "empirical" else f" [dim]({v.kind})[/]"
            con.print(f"  [{_verdict_style(v.verdict)}]{v.verdict:<14}[/] [bold]{_esc(v.key)}[/]{kind}")
            detail = v.test.summary() if v.test is not None else v.numbers_text(3)
            lines = [f"[cyan]{_esc(detail)}[/]"] if detail else []
            lines += [f"[dim]{_esc(v.claim)}[/]"] + ([f"[yellow]{_esc(v.note)}[/]"] if v.note else [])
            for line in lines:
                con.print(Padding(line, (0, 0, 0, 17)))


def _print_summary(results: list[Any]) -> None:
    """One line per study: empirical verdict counts (seeds combined per claim key), identities, wall time."""
    from collections import defaultdict

    from rich.table import Table

    from genlab.harness.claims import EMPIRICAL, IDENTITY, combine_claims
    from genlab.harness.study import all_studies

    by_study: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r in results:
        by_study[(r.study, r.preset)].append(r)
    presets = sorted({p for _, p in by_study})
    table = Table(title=f"genlab reproduce, {', '.join(presets)}: empirical claims (identities apart)")
    for col in ("study", "repr.", "not", "incon.", "error", "ident.", "wall"):
        table.add_column(col, justify="left" if col == "study" else "right", no_wrap=True)
    for (study, preset), members in by_study.items():
        failed = [m for m in members if not m.ok]
        if failed:
            label = _study_label(study, preset, presets)
            table.add_row(label, "", "", "", f"[bold red]failed[/] ({len(failed)})", "", "")
            continue
        cls = all_studies()[study]
        counts = {EMPIRICAL: defaultdict(int), IDENTITY: defaultdict(int)}
        per_key = [[v for m in members for v in m.verdicts if v.key == claim.key] for claim in cls.claims]
        for combined in combine_claims([seeded for seeded in per_key if seeded]):
            counts[combined.kind][combined.verdict] += 1
        e, i = counts[EMPIRICAL], counts[IDENTITY]
        identities = f"{i['reproduced']}/{sum(i.values())}" if i else "-"
        wall = sum(m.wall_time for m in members)
        cached = " (cached)" if all(m.skipped for m in members) else ""
        table.add_row(
            _study_label(study, preset, presets), f"[green]{e['reproduced']}[/]", f"[magenta]{e['not reproduced']}[/]",
            f"[yellow]{e['inconclusive']}[/]", f"[bold red]{e['error']}[/]" if e["error"] else "0", identities,
            f"{_fmt_seconds(wall)}{cached}",
        )  # fmt: skip
    _console().print(table)


def _short_type(name: str) -> str:
    """Config field types as people say them: ``tuple[float, ...]`` is floats, ``float | None`` optional."""
    for long, short in (("tuple[float, ...]", "floats"), ("tuple[int, ...]", "ints"), ("tuple[str, ...]", "strs"),
                        ("tuple[float, float]", "float pair"), ("tuple[int, int]", "int pair")):  # fmt: skip
        name = name.replace(long, short)
    return name.replace("Optional[", "").replace(" | None", "?")


def _breakable(value: str) -> str:
    """A comma-joined value that a table may wrap after its commas instead of inside a number."""
    return value.replace(",", ", ")


def _study_label(study: str, preset: str, presets: list[str]) -> str:
    return study if len(presets) == 1 else f"{study} ({preset})"


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


@app.command("list")
def list_cmd(root: RootOpt = Path("runs"), as_json: JsonOpt = False) -> None:
    """List studies: paper, claims, typical smoke/quick time on 2 cores and the last quick verdicts in the store."""
    from genlab.harness.catalog import load
    from genlab.harness.report import group_verdicts, latest_groups
    from genlab.harness.store import scan
    from genlab.harness.study import all_studies, registered, typical_seconds

    runs, damaged = scan(root)
    _warn_damaged(damaged)
    last: dict[str, dict[str, int]] = {}
    for members in latest_groups(runs, presets=("quick",)):
        counts = last.setdefault(members[0].study, {})
        for combined, _ in group_verdicts(members):
            counts[combined.verdict] = counts.get(combined.verdict, 0) + 1
    catalog = load()  # the shipped studies, described without importing them
    if not catalog:
        from genlab.harness.catalog import describe_class

        catalog = {name: describe_class(cls) for name, cls in all_studies().items()}
    for name, cls in registered().items():  # studies registered outside genlab.studies in this process
        if name not in catalog:
            from genlab.harness.catalog import describe_class

            catalog[name] = describe_class(cls)
    rows = [
        {
            "name": name,
            "paper": info["paper"],
            "arxiv": info["arxiv"],
            "presets": info["presets"],
            "claims": len(info["claims"]),
            "identity_claims": sum(c["kind"] == "identity" for c in info["claims"]),
            "typical_seconds": typical_seconds(name),
            "last_verdicts": last.get(name, {}),
        }
        for name, info in sorted(catalog.items())
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    console = _console()
    wide = console.width >= 120  # the paper title only where it fits; the arXiv id always
    table = Table(title="genlab studies")
    table.add_column("study", no_wrap=True)
    table.add_column("arXiv", no_wrap=True)
    if wide:
        table.add_column("paper", overflow="ellipsis", no_wrap=True, max_width=40)
    table.add_column("claims", justify="right", no_wrap=True)
    table.add_column("smoke / quick", justify="right", no_wrap=True)
    table.add_column("last quick verdicts", overflow="fold")
    for r in rows:
        verdicts = ", ".join(f"[{_verdict_style(k)}]{n} {k}[/]" for k, n in r["last_verdicts"].items()) or "-"
        t = r["typical_seconds"]
        times = f"{_fmt_seconds(t['smoke'])} / {_fmt_seconds(t['quick'])}" if t else "-"
        claims = f"{r['claims']}" + (f" ({r['identity_claims']} id.)" if r["identity_claims"] else "")
        arxiv = r["arxiv"].removeprefix("arXiv:")
        arxiv = arxiv if arxiv[:1].isdigit() else "-"
        paper = [_esc(r["paper"])] if wide else []
        table.add_row(r["name"], arxiv, *paper, claims, times, verdicts)
    console.print(table)


@app.command("show")
def show_cmd(
    study: Annotated[str, typer.Argument(help="Study name (see `genlab list`).")],
    root: RootOpt = Path("runs"),
    as_json: JsonOpt = False,
) -> None:
    """Show a study: config keys (type, default, presets, range), claims with their thresholds, metric names."""
    from genlab.harness.describe import describe

    info = describe(study, root)
    _warn_damaged(info.pop("damaged"))
    if as_json:
        print(json.dumps(info, indent=2, default=str))
        return
    from rich.table import Table

    con = _console()
    con.print(f"[bold]{_esc(info['name'])}[/]: {_esc(info['paper'])} ({_esc(info['arxiv'])})")
    if info["summary"]:
        con.print(_esc(info["summary"]))
    con.print(f"docs: {_esc(info['docs'])}")
    cfg = Table(title="config (quick = defaults; --set key=value, tuples as a,b,c)")
    cfg.add_column("key", no_wrap=True)
    cfg.add_column("type", no_wrap=True)
    for col in ("quick", *(p for p in info["presets"] if p != "quick")):
        cfg.add_column(col, overflow="fold")
    cfg.add_column("allowed", overflow="fold")
    for f in info["config"]:
        cfg.add_row(
            f["key"], _esc(_short_type(f["type"])), _esc(_breakable(f["default"])),
            *(_esc(_breakable(f["presets"].get(p, ""))) for p in info["presets"] if p != "quick"),
            _esc(f["allowed"]),
        )  # fmt: skip
    con.print(cfg)
    from rich.padding import Padding

    con.print("[bold]claims[/] (text at quick; thresholds are config keys)")
    for c in info["claims"]:
        kind = "" if c["kind"] == "empirical" else f" [dim]({c['kind']})[/]"
        con.print(f"  [bold]{_esc(c['key'])}[/]{kind}")
        con.print(Padding(_esc(c["text"]), (0, 0, 0, 4)))
        if c["thresholds"]:
            con.print(Padding(f"[cyan]{_esc(', '.join(c['thresholds']))}[/]", (0, 0, 0, 4)))
        if c.get("requires"):
            con.print(Padding(f"[dim]requires: {_esc(', '.join(c['requires']))}[/]", (0, 0, 0, 4)))
    if info["metrics"]:
        con.print(f"metrics (from {_esc(info['metrics_from'])}): " + _esc(", ".join(info["metrics"])))
    else:
        con.print(f"metrics: none stored yet under {_esc(root)} (run `genlab run {study} -p smoke` to list them)")


@app.command("run")
def run_cmd(
    study: Annotated[str, typer.Argument(help="Study name (see `genlab list`).")],
    preset: PresetOpt = "quick",
    sets: SetOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Run seed (>= 0).")] = 0,
    device: DeviceOpt = "cpu",
    root: RootOpt = Path("runs"),
    force: ForceOpt = False,
    track: TrackOpt = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run one study and print its verdicts."""
    from genlab.harness.config import parse_sets
    from genlab.harness.runner import RunSpec, execute
    from genlab.harness.trackers import check_trackers, export

    trackers = check_trackers(track or [])
    spec = RunSpec(study, preset, parse_sets(sets or []), seed, str(root), force, device, quiet or as_json,
                   track=tuple(trackers))  # fmt: skip
    result = execute(spec)
    export(result, root, trackers)
    if as_json:
        print(json.dumps(_result_json(result), indent=2))
    else:
        what = "already finished (use --force to rerun)" if result.skipped else f"finished in {result.wall_time:.1f} s"
        _console(stderr=True).print(f"{_esc(study)} ({_esc(preset)}, seed {seed}) {what}: {_esc(result.run_dir)}")
        _print_verdicts([result])
    _exit_on_errors([result])


def _exit_on_errors(results: list[Any]) -> None:
    """An `error` verdict is a bug in a check: everything is written, then the command exits 1 naming it."""
    errors = [(r, v) for r in results for v in r.verdicts if v.verdict == "error"]
    for r, v in errors:
        _console(stderr=True).print(f"[bold red]error verdict[/] {_esc(r.study)} seed {r.seed} {_esc(v.key)}: "
                                    f"{_esc(v.note)}")  # fmt: skip
    if errors:
        raise typer.Exit(1)


def _run_with_progress(
    specs: list[Any],
    backend: str,
    jobs: int,
    address: str | None,
    quiet: bool,
    root: Path,
    trackers: list[str],
    label: Any = None,
) -> list[Any]:
    """Run specs with a progress bar; each finished run is printed (named by ``label(result)``) and exported."""
    from rich.progress import Progress

    from genlab.harness.progress import rich_columns
    from genlab.harness.runner import prepare, run_many
    from genlab.harness.trackers import export

    specs = prepare(specs, backend, jobs)
    if quiet:
        return run_many(specs, backend, jobs, address, on_done=lambda r: export(r, root, trackers))  # type: ignore[arg-type]
    console = _console(stderr=True)
    with Progress(*rich_columns(), console=console) as bar:
        task = bar.add_task("runs", total=len(specs))

        def done(r: Any) -> None:
            export(r, root, trackers)
            state = "[red]failed[/]" if not r.ok else ("cached" if r.skipped else _fmt_seconds(r.wall_time))
            name = label(r) if label else f"{r.study} seed {r.seed}"
            bar.console.print(f"  {_esc(name)}: {state}")
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
    device: DeviceOpt = "cpu",
    root: RootOpt = Path("runs"),
    force: ForceOpt = False,
    track: TrackOpt = None,
    report: Annotated[Path | None, typer.Option("--report", help="Report path (default <root>/report.html).")] = None,
    open_report: Annotated[bool, typer.Option("--open", help="Open the report in a browser.")] = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run studies (all by default) and write the HTML report: the main job."""
    from genlab.harness.report import write_report
    from genlab.harness.runner import RunSpec
    from genlab.harness.study import all_studies, get_study
    from genlab.harness.sweep import check_run_count
    from genlab.harness.trackers import check_trackers

    trackers = check_trackers(track or [])
    names = studies or list(all_studies())
    for name in names:
        get_study(name)
    check_run_count(len(names) * seeds, f"--seeds {seeds:,} x {len(names)} stud{'y' if len(names) == 1 else 'ies'}")
    specs = [RunSpec(n, preset, {}, s, str(root), force, device, track=tuple(trackers))
             for n in names for s in range(seeds)]  # fmt: skip
    results = _run_with_progress(specs, backend, jobs, address, quiet or as_json, root, trackers)
    path = write_report(root, report, presets=(preset,))
    failed = [r for r in results if not r.ok]
    if as_json:
        print(json.dumps({"report": str(path), "runs": [_result_json(r) for r in results]}, indent=2))
    else:
        _print_summary(results)
        for r in failed:
            _console(stderr=True).print(f"[red]failed[/] {_esc(r.study)} seed {r.seed}: {_esc(r.error)}")
        _console().print(f"report: {_esc(path.resolve())}")
    if open_report:
        _open(path)
    if failed:
        raise typer.Exit(1)
    _exit_on_errors(results)


@app.command("export")
def export_cmd(
    root: Annotated[Path, typer.Argument(help="Run store to read.")] = Path("runs"),
    out: Annotated[Path, typer.Option("--out", help="Folder to write runs.<fmt> and claims.<fmt> into.")] = Path(
        "export"
    ),
    fmt: Annotated[str, typer.Option("--format", help="csv or parquet.")] = "csv",
    study: Annotated[str | None, typer.Option("--study", help="Only this study.")] = None,
    preset: Annotated[str | None, typer.Option("--preset", help="Only this preset.")] = None,
) -> None:
    """Write the run store as two tables: one row per run (config, scalar metrics) and one per claim (verdict,
    test)."""
    from genlab.harness.export import export_tables

    if not root.is_dir():
        from genlab.harness.errors import ConfigError

        raise ConfigError(f"{root}: not a run store folder")
    for path in export_tables(root, out, fmt, study, preset):  # type: ignore[arg-type]
        _console().print(_esc(path))


@app.command("sweep")
def sweep_cmd(
    study: Annotated[str, typer.Argument(help="Study name.")],
    grid: Annotated[
        list[str] | None, typer.Option("--grid", "-g", help="key=v1,v2 (repeatable; ';' splits tuples).")
    ] = None,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Seeds per grid cell (0..N-1).")] = 1,
    preset: PresetOpt = "quick",
    sets: SetOpt = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", "-m", help="Columns: a metric path (a/b/c) or claim:<key>/<number>. Default: "
                     "each claim's verdict and the study's headline metrics."),
    ] = None,
    jobs: JobsOpt = 1,
    backend: BackendOpt = "local",
    address: AddressOpt = None,
    device: DeviceOpt = "cpu",
    root: RootOpt = Path("runs"),
    force: ForceOpt = False,
    track: TrackOpt = None,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Expand a grid × seeds into runs; tabulate claim verdicts and metrics (mean ± s.e. over seeds) per cell."""
    from genlab.harness.config import parse_sets
    from genlab.harness.runner import RunSpec
    from genlab.harness.study import get_study
    from genlab.harness.sweep import cell_label, check_run_count, expand, grid_size, parse_grid, save_sweep, table
    from genlab.harness.trackers import check_trackers

    cls = get_study(study)
    trackers = check_trackers(track or [])
    fixed = parse_sets(sets or [])
    parsed = parse_grid(cls.Config, grid or [])
    check_run_count(grid_size(parsed) * seeds, f"the grid's {grid_size(parsed):,} cells x {seeds:,} seed(s)")
    cells = expand(parsed)
    specs = [RunSpec(study, preset, {**fixed, **c}, s, str(root), force, device, track=tuple(trackers))
             for c in cells for s in range(seeds)]  # fmt: skip

    def label(r: Any) -> str:
        cell = next((c for c in cells if all(r.config.get(k) == (list(v) if isinstance(v, tuple) else v)
                                            for k, v in c.items())), {})  # fmt: skip
        return f"{cell_label(cell)} seed {r.seed}"

    results = _run_with_progress(specs, backend, jobs, address, quiet or as_json, root, trackers, label)
    columns, rows = table(cls, cells, results, metric)
    save_sweep(root, study, preset, seeds, cells, results, columns, rows)
    if not any(isinstance(row[c], tuple) and row[c][2] for row in rows for c in columns) and not cls.claims:
        print(f"warning: {study} reports no scalar metric; the table is empty", file=sys.stderr)
    failed = [r for r in results if not r.ok]
    if as_json:
        print(json.dumps({"columns": columns, "rows": rows, "failed": [_result_json(r) for r in failed]}, indent=2))
    else:
        _print_sweep(f"{study} sweep ({preset}, {seeds} seed(s) per cell; numbers are mean ± s.e. over seeds)",
                     list(cells[0]) if cells and cells[0] else [], list(columns), rows)  # fmt: skip
        for r in failed:
            _console(stderr=True).print(f"[red]failed[/] {_esc(label(r))}: {_esc(r.error)}")
    if failed:
        raise typer.Exit(1)


def _print_sweep(title: str, keys: list[str], columns: list[str], rows: list[dict[str, Any]]) -> None:
    """A table when it fits the terminal; otherwise one block per grid cell (a table folded at 80 columns
    would break names and numbers mid-token)."""
    from rich.table import Table

    from genlab.harness.sweep import fmt_mean_se

    con = _console()
    names = [c.removeprefix("claim:") for c in columns]
    cells = [[str(row[k]) for k in keys] + [fmt_mean_se(row[m]) for m in columns] for row in rows]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(keys + names)]
    if sum(widths) + 3 * len(widths) + 1 <= con.width:
        t = Table(title=title)
        for col in keys + names:
            t.add_column(_esc(col), no_wrap=True)
        for c in cells:
            t.add_row(*map(_esc, c))
        con.print(t)
        return
    con.print(f"[bold]{_esc(title)}[/]")
    pad = max(len(n) for n in names) if names else 0
    for row, c in zip(rows, cells, strict=True):
        con.print(", ".join(f"{k}={_esc(row[k])}" for k in keys) or "(no grid)")
        for name, value in zip(names, c[len(keys) :], strict=True):
            con.print(f"  {_esc(name):<{pad}}  {_esc(value)}")


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
    open_report: Annotated[bool, typer.Option("--open", help="Open the report in a browser.")] = False,
) -> None:
    """Write the self-contained HTML report of the finished runs."""
    from genlab.harness.report import write_report

    if not runs_dir.is_dir():
        from genlab.harness.errors import ConfigError

        what = "is not a directory" if runs_dir.exists() else "does not exist"
        raise ConfigError(f"no run store at {runs_dir} (it {what}): run `genlab reproduce` or `genlab run STUDY` first")
    from genlab.harness.store import scan

    runs, damaged = scan(runs_dir)
    _warn_damaged(damaged)
    _check_report_preset(preset, runs)
    if recheck:
        from genlab.harness.runner import recheck_runs

        changed, skipped = recheck_runs(runs_dir)
        print(f"rechecked: {changed} verdict(s) changed; {len(skipped)} run(s) could not be rechecked", file=sys.stderr)
        for line in skipped:
            print(f"  {line}", file=sys.stderr)
    path = write_report(runs_dir, out, presets=None if preset == "all" else (preset,))
    print(path.resolve())
    if open_report:
        _open(path)


def _check_report_preset(preset: str, runs: list[Any]) -> None:
    """--preset must name a preset some study defines, one in the store, or all."""
    from genlab.harness.errors import ConfigError
    from genlab.harness.study import all_studies

    known = {p for cls in all_studies().values() for p in cls.presets} | {r.preset for r in runs}
    if preset != "all" and preset not in known:
        raise ConfigError(f"--preset {preset!r} is no preset; choose one of {', '.join(sorted(known))} or all")


def _open(path: Path) -> None:
    import webbrowser

    if not webbrowser.open(path.resolve().as_uri()):
        print(f"warning: no browser found; open {path.resolve()} yourself", file=sys.stderr)


# -- tools --------------------------------------------------------------------------------------
# Each tool's CLI module keeps its module-level imports light.
from genlab.commands.bound import app as _bound_app  # noqa: E402
from genlab.commands.oodselect import oodselect as _oodselect  # noqa: E402
from genlab.ifbench.cli import app as _ifbench_app  # noqa: E402

app.add_typer(_ifbench_app, name="ifbench")
app.add_typer(_bound_app, name="bound")
app.command("oodselect")(_oodselect)

from genlab.bnc.cli import app as _bnc_app  # noqa: E402

app.add_typer(_bnc_app, name="bnc")

from genlab.merging.cli import merge_command as _merge_command  # noqa: E402

app.command("merge")(_merge_command)


def main(argv: list[str] | None = None) -> None:
    """Run one command through genlab's one error path (:func:`genlab.commandline.run`), then exit with its code
    (returns normally on success)."""
    code = run(app, argv)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
