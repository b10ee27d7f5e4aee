"""``genlab ifbench ...``: evaluate responses, list constraints, check one text, install NLTK data.

The commands are parsed with :mod:`argparse` and import only what they use: ``eval`` must finish in well under
a second, so it never imports typer, rich, pydantic, torch or scipy, and imports numpy only when a language check
or a bootstrap needs it. ``python -m genlab.ifbench.cli ...`` runs them directly; :data:`app` (built on first
access) is the typer group that ``genlab`` registers, which hands its arguments to :func:`main`.

Bad input is one line on stderr and exit code 2, and then nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

COMMANDS = ("eval", "list", "check", "setup")
FORMAT_HELP = "auto (from the content) | jsonl | parquet (also Arrow and dataset folders) | lm-eval | inspect"


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (``error: ... (see 'genlab ifbench eval --help')``), as every
    other genlab command's, instead of the usage block."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(f"{' '.join(message.split())} (see '{self.prog} --help')")


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


def _load_inputs(a: argparse.Namespace) -> tuple[list, dict[str, dict[str, str]]]:
    """(prompt items, {label: responses}) from the command line; raises DataError / UsageError."""
    from genlab.ifbench.data import load_prompts, load_responses

    if a.prompts is None and a.responses is None and a.compare is None:
        from genlab.ifbench.examples import default_eval_set

        print("No files given: scoring the embedded example set (one prompt per constraint) with its "
              "hand-written passing and failing responses.")
        return default_eval_set()
    if a.responses is not None and a.compare is not None:
        raise UsageError("give --responses R or --compare A B, not both")
    if a.responses is None and a.compare is None:
        raise UsageError("give --responses R or --compare A B")
    prompt_file = a.prompts
    if prompt_file is None:  # lm-eval samples and inspect logs carry the prompts with the responses
        prompt_file = a.responses if a.responses is not None else a.compare[0]
    items = load_prompts(prompt_file, lenient=a.lenient, fmt=a.format)
    files = [a.responses] if a.responses is not None else list(a.compare)
    resp_sets = {}
    for i, f in enumerate(files):
        label = str(f)
        if label in resp_sets:
            label = f"{f} (#{i + 1})"
        resp_sets[label] = load_responses(f, fmt=a.format, response_field=a.response_field,
                                          prompt_field=a.prompt_field)  # fmt: skip
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


def _eval(a: argparse.Namespace) -> int:
    from genlab.ifbench import nlp

    if not 0 <= a.bootstrap <= MAX_BOOTSTRAP:
        raise UsageError(f"--bootstrap must be in [0, {MAX_BOOTSTRAP:,}] resamples, got {a.bootstrap:,}")
    if a.out is not None and a.out.exists() and not a.out.is_dir():
        raise UsageError(f"--out {a.out}: a file, not a folder (give a folder for the result files)")
    if a.workers is not None and a.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {a.workers}")
    if a.require_nltk_data:
        missing = nlp.missing_resources()
        if missing:
            raise UsageError(f"--require-nltk-data: NLTK data missing: {', '.join(missing)} (searched "
                             f"{', '.join(str(p) for p in nlp.nltk_search_path()[:4])}, ...); "
                             "install it with `genlab ifbench setup`")
        nlp.require_real_data(True)
    items, resp_sets = _load_inputs(a)
    from genlab.ifbench.evaluator import compare, evaluate

    n_unknown = sum(len(it.unknown) for it in items)
    if n_unknown:
        print(f"warning: skipping {n_unknown} instruction(s) with unknown ids (--lenient)", file=sys.stderr)
    cells = a.bootstrap * len(items)
    if cells > MAX_BOOTSTRAP_CELLS:
        raise UsageError(f"--bootstrap {a.bootstrap:,} on {len(items):,} prompts is {cells:,} resampled prompts; "
                         f"at most {MAX_BOOTSTRAP_CELLS:,} (memory): use fewer resamples")
    results, summaries = {}, {}
    for label, resp in resp_sets.items():
        res = evaluate(items, resp, semantics=a.semantics, thinking=a.thinking, workers=a.workers)
        _check_missing(label, res, len(resp), a.strict)
        results[label], summaries[label] = res, res.summary(bootstrap=a.bootstrap)
    cmp = None
    if a.compare is not None:
        ra, rb = results.values()
        cmp = compare(ra, rb, n=max(a.bootstrap, 2000))
    _report(a, results, summaries, cmp)
    return 0


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
        raise UsageError(f"{text} (--strict)")
    print(f"warning: {text} (--strict makes this an error)", file=sys.stderr)


def _report(a: argparse.Namespace, results: dict, summaries: dict, cmp: dict | None) -> None:
    """Print the summaries; with --out, write every result file into a staging folder inside --out first and move
    them in only when all are written, so a full or read-only disk leaves no partial (0-byte) result file."""
    import os
    import shutil
    import tempfile

    if a.out is None:
        _emit(a, results, summaries, cmp, None)
        return
    out = Path(a.out)
    created = not out.exists()
    stage = None
    try:
        out.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(dir=out, prefix=".staging-"))
        written = _emit(a, results, summaries, cmp, stage)
        for f in written:
            os.replace(stage / f, out / f)
    except OSError as e:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise UsageError(f"--out {out}: cannot write the results ({e.strerror or e})") from None
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)


def _emit(a: argparse.Namespace, results: dict, summaries: dict, cmp: dict | None, stage: Path | None) -> list[str]:
    """Print the summaries and (when ``stage`` is given) write the result files there; returns their names."""
    from genlab.ifbench.outputs import dumps, write_outputs

    written: list[str] = []

    prefixes = _output_prefixes(list(results))
    for (label, res), prefix in zip(results.items(), prefixes):
        summ = summaries[label]
        if a.json:
            print(dumps({"name": label, **summ}))
        else:
            _print_summary(summ, label)
            if a.per_id:
                for k, v in summ["per_id_loose"].items():
                    print(f"    {k:<48} n={v['n']:<4} strict {_fmt(summ['per_id_strict'][k]['accuracy'])}"
                          f"  loose {_fmt(v['accuracy'])}")
        if stage is not None:
            paths = write_outputs(res, stage, prefix=prefix, summary=summ)
            written += [p.name for p in paths.values()]
            if not a.json:
                print("wrote " + ", ".join(str(Path(a.out) / p.name) for p in paths.values()))
    if cmp is None:
        return written
    if a.json:
        print(dumps({"compare": cmp}))
    else:
        fa, fb = a.compare
        print(f"== B - A  (A={fa}, B={fb}), paired bootstrap")
        for k, v in cmp.items():
            if k.startswith(("strict", "loose")):
                print(f"  {k:<28} {_fmt(v['delta'])}  95% CI [{_fmt(v['ci95'][0])}, {_fmt(v['ci95'][1])}]"
                      f"  P(B>A)={v['p_b_better']:.3f}")
        print(f"  prompts passing (loose) only in A: {cmp['prompt_flips_loose']['a_only']}, only in B: "
              f"{cmp['prompt_flips_loose']['b_only']}")
    if stage is not None:
        (stage / "compare.json").write_text(dumps({"a": str(a.compare[0]), "b": str(a.compare[1]), **cmp},
                                                  indent=2), encoding="utf-8")
        written.append("compare.json")
    return written


# ------------------------------------------------------------------------------------------------ list / check


def _list(a: argparse.Namespace) -> int:
    from genlab.ifbench import registry

    if a.family is not None and a.family not in registry.FAMILIES:
        raise UsageError(f"--family must be one of {', '.join(registry.FAMILIES)}, got {a.family!r}")
    rows = [registry.get(i) for i in registry.ids(a.family)]
    if a.json:
        print(json.dumps([{"id": c.id, "family": c.family, "summary": c.summary, "kwargs": c.schema(),
                           "fixed_differs": c.fixed_note} for c in rows], indent=1))
        return 0
    for c in rows:
        args = ", ".join(p.name + ("" if p.required else "?") for p in c.params)
        flag = "  [fixed differs]" if c.fixed_note else ""
        print(f"{c.id:<48} {c.family:<8} ({args}) {c.summary}{flag}")
    print(f"{len(rows)} constraints")
    return 0


def _check(a: argparse.Namespace) -> int:
    from genlab.ifbench.readers import DataError, read_text
    from genlab.ifbench.registry import KwargsError, UnknownInstructionError, get

    text = a.text
    if text is None:
        if a.text_file is None:
            raise UsageError("give --text or --text-file")
        if str(a.text_file) == "-":
            text = sys.stdin.read()
        elif Path(a.text_file).is_dir():
            raise UsageError(f"--text-file {a.text_file}: a folder, not a file")
        elif not Path(a.text_file).exists():
            raise UsageError(f"--text-file {a.text_file}: file not found")
        else:
            try:
                text = read_text(Path(a.text_file))
            except DataError as e:
                raise UsageError(str(e)) from None
    try:
        kw = json.loads(a.kwargs)
    except json.JSONDecodeError as e:
        raise UsageError(f"--kwargs is not valid JSON: {e}") from None
    except RecursionError:
        raise UsageError("--kwargs: JSON nested too deeply to read") from None
    if kw is not None and not isinstance(kw, dict):
        raise UsageError(f"--kwargs must be a JSON object, got {type(kw).__name__}")
    try:
        v = get(a.id).check(text, kw, semantics=a.semantics)
    except (UnknownInstructionError, KwargsError) as e:
        raise UsageError(f"--kwargs/--id: {e}") from None
    print(f"{'PASS' if v.ok else 'FAIL'}: {v.reason}")
    return 0 if v.ok else 1


# ------------------------------------------------------------------------------------------------ setup


def _setup(a: argparse.Namespace) -> int:
    from genlab.ifbench import nlp

    target = Path(a.dir) if a.dir else Path.home() / "nltk_data"
    if a.source is not None:
        import tarfile
        import zipfile

        try:
            done = nlp.install_data(a.source, target)
        except (ValueError, OSError, tarfile.TarError, zipfile.BadZipFile) as e:  # e.g. an archive holding ../
            raise UsageError(f"--from {a.source}: {' '.join(str(e).split())}") from None
        for pkg, where in done.items():
            print(f"{pkg}: installed from {a.source} -> {where}")
        if a.dir:
            print(f"(add {target} to NLTK_DATA unless it is on NLTK's search path)")
    elif not a.show:
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
            return 1
    if not a.show:
        from genlab.ifbench.langid import build_cache

        # built now so that the first evaluation does not build them
        for name, path in (("langdetect", build_cache()), ("tagger", nlp.build_tagger_cache())):
            if path is not None:
                print(f"cache {name}: {path}")
    print(json.dumps(nlp.backend_info(), indent=1))
    return 0


# ------------------------------------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="genlab ifbench",
                                 description="IFEval / IFBench / IFTrain constraint checkers and evaluator.")
    sub = ap.add_subparsers(dest="command", required=True, metavar="{eval,list,check,setup}", parser_class=_Parser)
    e = sub.add_parser("eval", help="score responses strictly and loosely, as the IFEval/IFBench reference does")
    e.add_argument("--prompts", "-p", type=Path, help="prompt file (IFEval/IFBench rows, multi-turn, open-instruct "
                   "ground truth, TRL prompt rows; lm-eval samples and inspect logs carry their own); default: the "
                   "embedded example set")
    e.add_argument("--responses", "-r", type=Path, help="responses: rows with prompt + response, lm-eval samples, "
                   "an inspect log, Parquet/Arrow or a dataset folder")
    e.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"),
                   help="two response files scored on the same prompts (paired bootstrap B-A)")
    e.add_argument("--format", default="auto", choices=["auto", "jsonl", "parquet", "lm-eval", "inspect"],
                   help=FORMAT_HELP)
    e.add_argument("--response-field", help="the responses' field (default: the first of response, completion, "
                   "output, generation, model_output, answer; else the last assistant turn of messages)")
    e.add_argument("--prompt-field", help="the responses' prompt field (default: prompt, else the last user turn)")
    e.add_argument("--out", "-o", type=Path, help="write result files and an HTML report here")
    e.add_argument("--semantics", default="reference", choices=["reference", "fixed"])
    e.add_argument("--lenient", action="store_true", help="skip unknown instruction ids (warned, counted)")
    e.add_argument("--thinking", action="store_true", help="strip a reasoning model's <think> section first")
    e.add_argument("--workers", type=int, help="worker processes (default: 1 below 5000 prompts)")
    e.add_argument("--bootstrap", type=int, default=0,
                   help="bootstrap resamples for 95%% intervals (default 0: off; e.g. 1000)")
    e.add_argument("--require-nltk-data", action="store_true",
                   help="fail (exit 2) instead of falling back to the offline rules when NLTK data is missing")
    e.add_argument("--strict", action="store_true",
                   help="a prompt without a response is an error (exit 2), not a warning and a failed prompt")
    e.add_argument("--per-id", action="store_true", help="print the per-constraint table")
    e.add_argument("--json", action="store_true", help="print the summary as JSON")
    e.set_defaults(func=_eval)
    li = sub.add_parser("list", help="list the registered constraints with their kwargs")
    li.add_argument("--family", help="ifeval | ifbench | iftrain")
    li.add_argument("--json", action="store_true", help="id, family, kwargs schema and notes as JSON")
    li.set_defaults(func=_list)
    c = sub.add_parser("check", help="check one text against one constraint (exit 0 pass, 1 fail)")
    c.add_argument("--id", required=True, help="instruction id, e.g. punctuation:no_comma")
    c.add_argument("--kwargs", default="{}", help="kwargs as a JSON object")
    c.add_argument("--text", help="the response text")
    c.add_argument("--text-file", help="read the response from a file ('-': stdin)")
    c.add_argument("--semantics", default="reference", choices=["reference", "fixed"])
    c.set_defaults(func=_check)
    s = sub.add_parser("setup", help="install the NLTK data the reference checkers use (on request only)")
    s.add_argument("--dir", help="target folder (default: ~/nltk_data)")
    s.add_argument("--from", dest="source", help="install from a local folder or .zip/.tar.gz (no network)")
    s.add_argument("--show", action="store_true", help="only show where the data is found; download nothing")
    s.set_defaults(func=_setup)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 a failed check, 2 bad input)."""
    from genlab.ifbench.core import MissingDataError, UnknownInstructionError
    from genlab.ifbench.readers import DataError

    try:
        a = build_parser().parse_args(argv)
        return a.func(a)
    except (UsageError, DataError, MissingDataError, UnknownInstructionError) as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `genlab ifbench list | head`: the reader left; stop quietly
        return _broken_pipe()
    except RecursionError:
        print("error: the input nests JSON too deeply to read", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory (the input or an option asks for more than this machine has)", file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"error: {where}{e.strerror or e}", file=sys.stderr)
        return 2


def _broken_pipe() -> int:
    """Point stdout at /dev/null so that the interpreter's final flush does not raise again; exit as a Unix tool
    killed by SIGPIPE does."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


def _typer_app() -> Any:
    """The typer group ``genlab`` mounts as ``genlab ifbench``: each command passes its arguments to :func:`main`
    (typer is imported only here, when the full ``genlab`` CLI is built)."""
    import typer

    group = typer.Typer(help="IFEval / IFBench / IFTrain constraint checkers and evaluator.", no_args_is_help=True)
    settings = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
    helps = {"eval": "Score responses strictly and loosely, as the IFEval/IFBench reference does.",
             "list": "List the registered constraints with their kwargs.",
             "check": "Check one text against one constraint (exit 0 pass, 1 fail).",
             "setup": "Install the NLTK data the reference checkers use (--from FOLDER_OR_ARCHIVE: offline)."}
    def forward(name: str) -> Any:
        def command(ctx):  # the arguments typer did not parse go to argparse
            code = main([name, *ctx.args])
            if code:
                raise typer.Exit(code)

        command.__annotations__ = {"ctx": typer.Context}  # a real class: typer reads the annotation
        return command

    for name in COMMANDS:
        group.command(name, help=helps[name], context_settings=settings, add_help_option=False)(forward(name))
    return group


def __getattr__(name: str) -> Any:
    if name == "app":
        app = _typer_app()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
