"""``genlab ifbench eval|list|check|setup``: evaluate responses, list constraints, check one text, install NLTK data.

They are typer commands on :data:`app`, the group that ``genlab`` mounts as ``genlab ifbench`` (with ``generate``,
``run`` and ``make-train`` from :mod:`genlab.ifbench.generate_cli`, added at the end of this module), and they run
through genlab's one error path (:func:`genlab.commandline.run`): bad input is one line on stderr and exit code 2, and
then nothing is written; a reader that leaves (``| head``) stops the command quietly (exit code 141).
``python -m genlab.ifbench.cli ...`` is the same command line.

Module-level imports are typer only: ``eval`` must finish in well under a second, so each command imports what it
uses (numpy only when a language check or a bootstrap needs it; never rich, torch or scipy).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import typer

from genlab.ifbench.generate_cli import add_generation_commands, add_train_command

app = typer.Typer(name="ifbench", help="IFEval / IFBench / IFTrain constraint checkers and evaluator.",
                  no_args_is_help=True)  # fmt: skip

FORMAT_HELP = "How to read the files: auto detects it from the content; parquet also reads Arrow and dataset folders"
Format = Literal["auto", "jsonl", "parquet", "lm-eval", "inspect"]
Semantics = Literal["reference", "fixed"]
Family = Literal["ifeval", "ifbench", "iftrain"]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
SemanticsOpt = Annotated[
    Semantics, typer.Option("--semantics", help="reference: what the official checkers return; fixed: corrected rules")
]


class UsageError(typer.BadParameter.__base__):  # type: ignore[name-defined,misc]
    """Options that do not fit together or the input: one line naming the option, exit code 2 (click's
    UsageError, from whichever click this typer uses)."""


MAX_BOOTSTRAP = 100_000  # resamples
MAX_BOOTSTRAP_CELLS = 250_000_000  # resamples x prompts: the resample index matrix stays under ~2 GB


def _fmt(x: float | None) -> str:
    return "   n/a" if x is None else f"{100 * x:6.2f}"


def _print_summary(s: dict, title: str = "") -> None:
    if title:
        print(f"== {title}")
    print(f"prompts {s['n_prompts']}  instructions {s['n_instructions']}  semantics {s['semantics']}  "
          f"text processing {s['text_processing']['mode']}  missing responses {len(s['missing_responses'])}  "
          f"unknown ids skipped {s['skipped_unknown_ids']}")
    print("              prompt-level   instruction-level")
    for mode in ("strict", "loose"):
        d = s[mode]
        ci = d.get("ci95") or {}
        pl, il = ci.get("prompt_level"), ci.get("instruction_level")
        ptxt = f"{_fmt(d['prompt_level'])}" + (f" [{_fmt(pl[0])},{_fmt(pl[1])}]" if pl else "")
        itxt = f"{_fmt(d['instruction_level'])}" + (f" [{_fmt(il[0])},{_fmt(il[1])}]" if il else "")
        print(f"  {mode:<6}  {ptxt:<28} {itxt}")
    if s["missing_responses"]:
        miss = s["missing_responses"]
        print(f"missing responses for keys: {miss[:10]}{' ...' if len(miss) > 10 else ''}")


# ------------------------------------------------------------------------------------------------ eval


@app.command("eval")
def eval_cmd(
    prompts: Annotated[Path | None, typer.Option("--prompts", "-p", help=(
        "Prompt file (IFEval/IFBench rows, multi-turn, open-instruct ground truth, TRL prompt rows; lm-eval samples "
        "and inspect logs carry their own); default: the embedded example set"))] = None,
    responses: Annotated[Path | None, typer.Option("--responses", "-r", help=(
        "Responses: rows with prompt + response, lm-eval samples, an inspect log, Parquet/Arrow or a dataset "
        "folder"))] = None,
    compare: Annotated[tuple[Path, Path] | None, typer.Option("--compare", metavar="A B", help=(
        "Two response files scored on the same prompts (paired bootstrap B-A)"))] = None,
    fmt: Annotated[Format, typer.Option("--format", help=FORMAT_HELP)] = "auto",
    response_field: Annotated[str | None, typer.Option("--response-field", help=(
        "The responses' field (default: the first of response, completion, output, generation, model_output, "
        "answer; else the last assistant turn of messages)"))] = None,
    prompt_field: Annotated[str | None, typer.Option("--prompt-field", help=(
        "The responses' prompt field (default: prompt, else the last user turn)"))] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write result files and an HTML report here")] = None,
    semantics: SemanticsOpt = "reference",
    lenient: Annotated[bool, typer.Option("--lenient", help="Skip unknown instruction ids (warned, counted)")] = False,
    thinking: Annotated[bool, typer.Option("--thinking", help=(
        "Strip a reasoning model's <think> section first"))] = False,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help=(
        "Worker processes (default: 1 below 5000 prompts)"))] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help=(
        "Bootstrap resamples for 95% intervals (0: off; e.g. 1000)"))] = 0,
    require_nltk_data: Annotated[bool, typer.Option("--require-nltk-data", help=(
        "Fail (exit 2) instead of falling back to the offline rules when NLTK data is missing"))] = False,
    strict: Annotated[bool, typer.Option("--strict", help=(
        "A prompt without a response is an error (exit 2), not a warning and a failed prompt"))] = False,
    per_id: Annotated[bool, typer.Option("--per-id", help="Print the per-constraint table")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Score responses strictly and loosely, as the IFEval/IFBench reference does."""
    from genlab.ifbench import nlp

    if not 0 <= bootstrap <= MAX_BOOTSTRAP:
        raise UsageError(f"--bootstrap must be in [0, {MAX_BOOTSTRAP:,}] resamples, got {bootstrap:,}")
    if out is not None and out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: a file, not a folder (give a folder for the result files)")
    if require_nltk_data:
        missing = nlp.missing_resources()
        if missing:
            from genlab.ifbench.core import MissingDataError

            raise MissingDataError(f"--require-nltk-data: NLTK data missing: {', '.join(missing)} (searched "
                                   f"{', '.join(str(p) for p in nlp.nltk_search_path()[:4])}, ...); "
                                   "install it with `genlab ifbench setup`")
        nlp.require_real_data(True)
    items, resp_sets = _load_inputs(prompts, responses, compare, fmt, lenient, response_field, prompt_field)
    from genlab.ifbench.evaluator import compare as compare_results
    from genlab.ifbench.evaluator import evaluate

    n_unknown = sum(len(it.unknown) for it in items)
    if n_unknown:
        print(f"warning: skipping {n_unknown} instruction(s) with unknown ids (--lenient)", file=sys.stderr)
    cells = bootstrap * len(items)
    if cells > MAX_BOOTSTRAP_CELLS:
        raise UsageError(f"--bootstrap {bootstrap:,} on {len(items):,} prompts is {cells:,} resampled prompts; "
                         f"at most {MAX_BOOTSTRAP_CELLS:,} (memory): use fewer resamples")
    results, summaries = {}, {}
    for label, resp in resp_sets.items():
        res = evaluate(items, resp, semantics=semantics, thinking=thinking, workers=workers)
        _check_missing(label, res, len(resp), strict)
        results[label], summaries[label] = res, res.summary(bootstrap=bootstrap)
    cmp = None
    if compare is not None:
        ra, rb = results.values()
        cmp = compare_results(ra, rb, n=max(bootstrap, 2000))
    show = _Show(as_json, per_id, out, compare)
    if out is None:
        _emit(show, results, summaries, cmp, None)
    else:
        _write_staged(out, lambda stage: _emit(show, results, summaries, cmp, stage))


def _load_inputs(prompts: Path | None, responses: Path | None, compare: tuple[Path, Path] | None, fmt: str,
                 lenient: bool, response_field: str | None, prompt_field: str | None,
                 ) -> tuple[list, dict[str, Any]]:  # fmt: skip
    """(prompt items, {label: responses}) from the command line; raises DataError / UsageError."""
    from genlab.ifbench.data import load_prompts, load_responses

    if prompts is None and responses is None and compare is None:
        from genlab.ifbench.examples import default_eval_set

        print("No files given: scoring the embedded example set (one prompt per constraint) with its "
              "hand-written passing and failing responses.")
        return default_eval_set()
    if responses is not None and compare is not None:
        raise UsageError("give --responses R or --compare A B, not both")
    if responses is None and compare is None:
        raise UsageError("give --responses R or --compare A B")
    files = [responses] if responses is not None else list(compare or ())
    # lm-eval samples and inspect logs carry the prompts with the responses
    items = load_prompts(prompts if prompts is not None else files[0], lenient=lenient, fmt=fmt)
    resp_sets = {}
    for i, f in enumerate(files):
        label = str(f)
        if label in resp_sets:
            label = f"{f} (#{i + 1})"
        resp_sets[label] = load_responses(f, fmt=fmt, response_field=response_field, prompt_field=prompt_field)
        if resp_sets[label].rows and resp_sets[label].field != "response":  # say where they came from
            print(f"{label}: {resp_sets[label].rows} response(s) read from field '{resp_sets[label].field}'",
                  file=sys.stderr)  # fmt: skip
    return items, resp_sets


def _output_prefixes(labels: list[str]) -> list[str]:
    """File-name prefixes for the result files of each response set: none for one set; else the file stem, made
    unique ("A_", "B_" before the stem) when two files share a name, so that no output overwrites another."""
    if len(labels) == 1:
        return [""]
    stems = [Path(label.split(" (#")[0]).stem for label in labels]
    if len(set(stems)) == len(stems):
        return [f"{s}_" for s in stems]
    return [f"{chr(ord('A') + i)}_{s}_" for i, s in enumerate(stems)]


def _check_missing(label: str, res: Any, n_responses: int, strict: bool) -> None:
    """A response file that answers none (or, with --strict, not all) of the prompts is said so, never scored 0 %
    in silence: a warning, or with --strict an error (exit 2) before anything is written."""
    n, missing = len(res.prompts), sum(p.missing for p in res.prompts)
    if not missing or (missing < n and not strict):
        return
    why = ""
    if missing == n:
        why = (": the file holds no responses" if not n_responses
               else f": none of its {n_responses} responses matches a prompt (responses to another prompt file?)")
    text = f"{label}: {missing} of {n} prompts have no response{why}; a missing response counts as failed"
    if strict:
        from genlab.ifbench.readers import DataError

        raise DataError(f"{text} (--strict)")
    print(f"warning: {text} (--strict makes this an error)", file=sys.stderr)


def _write_staged(out: Path, write: Any) -> None:
    """Call ``write(stage)`` with a staging folder inside ``out`` and move the files it names into ``out`` only
    when all are written, so a full or read-only disk leaves no partial (0-byte) result file (and no ``out`` that
    this call created)."""
    import os
    import shutil
    import tempfile

    created = not out.exists()
    stage = None
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(dir=out, prefix=".staging-"))
        for name in write(stage):
            os.replace(stage / name, out / name)
    except OSError as e:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        # the error names --out, never the staging file
        raise OSError(e.errno, f"cannot write the results ({e.strerror or e})", f"--out {out}") from None
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)


class _Show(NamedTuple):
    """What ``eval`` prints and where its files go."""

    as_json: bool
    per_id: bool
    out: Path | None
    compare: tuple[Path, Path] | None


def _emit(show: _Show, results: dict, summaries: dict, cmp: dict | None, stage: Path | None) -> list[str]:
    """Print the summaries and (when ``stage`` is given) write the result files there; returns their names."""
    from genlab.ifbench.outputs import dumps, write_outputs

    written: list[str] = []
    prefixes = _output_prefixes(list(results))
    for (label, res), prefix in zip(results.items(), prefixes):
        summ = summaries[label]
        if show.as_json:
            print(dumps({"name": label, **summ}))
        else:
            _print_summary(summ, label)
            if show.per_id:
                for k, v in summ["per_id_loose"].items():
                    print(f"    {k:<48} n={v['n']:<4} strict {_fmt(summ['per_id_strict'][k]['accuracy'])}"
                          f"  loose {_fmt(v['accuracy'])}")
        if stage is not None:
            paths = write_outputs(res, stage, prefix=prefix, summary=summ)
            written += [p.name for p in paths.values()]
            if not show.as_json:
                print("wrote " + ", ".join(str(Path(show.out or stage) / p.name) for p in paths.values()))
    if cmp is None or show.compare is None:
        return written
    fa, fb = show.compare
    if show.as_json:
        print(dumps({"compare": cmp}))
    else:
        print(f"== B - A  (A={fa}, B={fb}), paired bootstrap")
        for k, v in cmp.items():
            if k.startswith(("strict", "loose")):
                print(f"  {k:<28} {_fmt(v['delta'])}  95% CI [{_fmt(v['ci95'][0])}, {_fmt(v['ci95'][1])}]"
                      f"  P(B>A)={v['p_b_better']:.3f}")
        print(f"  prompts passing (loose) only in A: {cmp['prompt_flips_loose']['a_only']}, only in B: "
              f"{cmp['prompt_flips_loose']['b_only']}")
    if stage is not None:
        (stage / "compare.json").write_text(dumps({"a": str(fa), "b": str(fb), **cmp}, indent=2), encoding="utf-8")
        written.append("compare.json")
    return written


# ------------------------------------------------------------------------------------------------ list / check


@app.command("list")
def list_cmd(
    family: Annotated[Family | None, typer.Option("--family", help="ifeval | ifbench | iftrain")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Id, family, kwargs schema and notes as JSON")] = False,
) -> None:
    """List the registered constraints with their kwargs."""
    from genlab.ifbench import registry

    rows = [registry.get(i) for i in registry.ids(family)]
    if as_json:
        print(json.dumps([{"id": c.id, "family": c.family, "summary": c.summary, "kwargs": c.schema(),
                           "fixed_differs": c.fixed_note} for c in rows], indent=1))
        return
    for c in rows:
        args = ", ".join(p.name + ("" if p.required else "?") for p in c.params)
        flag = "  [fixed differs]" if c.fixed_note else ""
        print(f"{c.id:<48} {c.family:<8} ({args}) {c.summary}{flag}")
    print(f"{len(rows)} constraints")


@app.command("check")
def check_cmd(
    cid: Annotated[str, typer.Option("--id", help="Instruction id, e.g. punctuation:no_comma")],
    kwargs: Annotated[str, typer.Option("--kwargs", help="Kwargs as a JSON object")] = "{}",
    text: Annotated[str | None, typer.Option("--text", help="The response text")] = None,
    text_file: Annotated[str | None, typer.Option("--text-file", help=(
        "Read the response from a file ('-': stdin)"))] = None,
    semantics: SemanticsOpt = "reference",
) -> None:
    """Check one text against one constraint (exit 0 pass, 1 fail)."""
    from genlab.ifbench.registry import KwargsError, UnknownInstructionError, get

    if text is None:
        text = _read_text_option(text_file)
    try:
        kw = json.loads(kwargs)
    except json.JSONDecodeError as e:
        raise UsageError(f"--kwargs is not valid JSON: {e}") from None
    except RecursionError:
        raise UsageError("--kwargs: JSON nested too deeply to read") from None
    if kw is not None and not isinstance(kw, dict):
        raise UsageError(f"--kwargs must be a JSON object, got {type(kw).__name__}")
    try:
        v = get(cid).check(text, kw, semantics=semantics)
    except (UnknownInstructionError, KwargsError) as e:
        raise UsageError(f"--kwargs/--id: {e}") from None
    print(f"{'PASS' if v.ok else 'FAIL'}: {v.reason}")
    if not v.ok:
        raise typer.Exit(1)


def _read_text_option(text_file: str | None) -> str:
    """The response ``check`` reads from ``--text-file`` (``-``: stdin)."""
    if text_file is None:
        raise UsageError("give --text or --text-file")
    if text_file == "-":
        return sys.stdin.read()
    if Path(text_file).is_dir():
        raise UsageError(f"--text-file {text_file}: a folder, not a file")
    if not Path(text_file).exists():
        raise UsageError(f"--text-file {text_file}: file not found")
    from genlab.ifbench.readers import read_text

    return read_text(Path(text_file))


# ------------------------------------------------------------------------------------------------ setup


@app.command("setup")
def setup_cmd(
    folder: Annotated[str | None, typer.Option("--dir", help="Target folder (default: ~/nltk_data)")] = None,
    source: Annotated[str | None, typer.Option("--from", help=(
        "Install from a local folder or .zip/.tar.gz (no network)"))] = None,
    show: Annotated[bool, typer.Option("--show", help="Only show where the data is found; download nothing")] = False,
) -> None:
    """Install the NLTK data the reference checkers use (on request only; --from FOLDER_OR_ARCHIVE: offline)."""
    from genlab.ifbench import nlp

    target = Path(folder) if folder else Path.home() / "nltk_data"
    if source is not None:
        import tarfile
        import zipfile

        try:
            done = nlp.install_data(source, target)
        except (ValueError, OSError, tarfile.TarError, zipfile.BadZipFile) as e:  # e.g. an archive holding ../
            raise UsageError(f"--from {source}: {' '.join(str(e).split())}") from None
        for pkg, where in done.items():
            print(f"{pkg}: installed from {source} -> {where}")
        if folder:
            print(f"(add {target} to NLTK_DATA unless it is on NLTK's search path)")
    elif not show:
        import nltk

        failed = []
        for pkg in nlp.RESOURCES:
            ok = nltk.download(pkg, download_dir=str(target), quiet=True)
            print(f"{pkg}: {'ok' if ok else 'FAILED (offline? use --from FOLDER_OR_ARCHIVE)'} -> {target}")
            failed += [] if ok else [pkg]
        nlp.reset()
        if failed:
            print(f"error: {len(failed)} of {len(nlp.RESOURCES)} NLTK resources could not be downloaded "
                  f"({', '.join(failed)}); install them with --from FOLDER_OR_ARCHIVE", file=sys.stderr)
            raise typer.Exit(1)
    if not show:
        from genlab.ifbench.langid import build_cache

        # built now so that the first evaluation does not build them
        for name, path in (("langdetect", build_cache()), ("tagger", nlp.build_tagger_cache())):
            if path is not None:
                print(f"cache {name}: {path}")
    print(json.dumps(nlp.backend_info(), indent=1))


# ------------------------------------------------------------------------------------------------ entry points

add_generation_commands(app)
add_train_command(app)


def ifbench_app() -> Any:
    """``genlab`` with only the ``ifbench`` group: what ``genlab ifbench ...`` runs on."""
    from genlab.commandline import new_app

    root = new_app()
    root.add_typer(app, name="ifbench")
    return root


def main(argv: list[str] | None = None) -> int:
    """``genlab ifbench ARGV`` through genlab's one error path; returns the exit code (0 ok, 1 a failed check,
    2 bad input, 141 a reader that left)."""
    from genlab.commandline import run

    return run(ifbench_app(), ["ifbench", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
