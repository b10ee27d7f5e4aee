"""``genlab ifbench ...``: evaluate responses, list constraints, check one text, fetch NLTK data.

Module-level imports are kept to typer only: ``eval`` must finish in well under a second and never import
torch (the heavy parts are imported inside the commands).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

app = typer.Typer(help="IFEval / IFBench / IFTrain constraint checkers and evaluator.", no_args_is_help=True)


def _fmt(x: float) -> str:
    return f"{100 * x:6.2f}"


def _print_summary(s: dict, title: str = "") -> None:
    if title:
        print(f"== {title}")
    print(f"prompts {s['n_prompts']}  instructions {s['n_instructions']}  semantics {s['semantics']}  "
          f"missing responses {len(s['missing_responses'])}  unknown ids skipped {s['skipped_unknown_ids']}")
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


@app.command("eval")
def eval_cmd(
    prompts: Path | None = typer.Option(None, "--prompts", "-p", help="prompt file (IFEval/IFBench JSONL, "  # noqa: B008
                                        "multi-turn, or open-instruct ground truth); default: the embedded set"),
    responses: Path | None = typer.Option(None, "--responses", "-r", help="JSONL with prompt + response"),  # noqa: B008
    out: Path | None = typer.Option(None, "--out", "-o", help="write result files and an HTML report here"),  # noqa: B008
    semantics: str = typer.Option("reference", help="reference | fixed"),
    compare_files: tuple[Path, Path] | None = typer.Option(
        None, "--compare", help="two response files A B scored on the same prompts (paired bootstrap B-A)"),
    lenient: bool = typer.Option(False, help="skip unknown instruction ids with a warning instead of failing"),
    thinking: bool = typer.Option(False, help="strip a reasoning model's <think> section before scoring"),
    workers: int | None = typer.Option(None, help="worker processes (default: 1 below 2000 prompts)"),
    bootstrap: int = typer.Option(1000, help="bootstrap resamples for the 95% intervals (0: off)"),
    per_id: bool = typer.Option(False, "--per-id", help="print the per-constraint table"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
) -> None:
    """Score responses strictly and loosely, as the IFEval/IFBench reference does."""
    from genlab.ifbench.data import DataError, load_prompts, load_responses
    from genlab.ifbench.evaluator import compare, evaluate, write_outputs

    if semantics not in ("reference", "fixed"):
        raise typer.BadParameter("--semantics must be 'reference' or 'fixed'")
    try:
        if prompts is None and responses is None and compare_files is None:
            from genlab.ifbench.examples import default_eval_set

            items, resp_sets = default_eval_set()
            print("No files given: scoring the embedded example set (one prompt per constraint) with its "
                  "hand-written passing and failing responses.")
        else:
            if prompts is None:
                raise typer.BadParameter("--prompts is required with --responses/--compare")
            items = load_prompts(prompts, lenient=lenient)
            if compare_files is not None:
                resp_sets = {str(p): load_responses(p) for p in compare_files}
            elif responses is not None:
                resp_sets = {str(responses): load_responses(responses)}
            else:
                raise typer.BadParameter("give --responses R or --compare A B")
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(2) from None
    n_unknown = sum(len(it.unknown) for it in items)
    if n_unknown:
        print(f"warning: skipping {n_unknown} instruction(s) with unknown ids (--lenient)", file=sys.stderr)
    results = {}
    for name, resp in resp_sets.items():
        res = evaluate(items, resp, semantics=semantics, thinking=thinking, workers=workers)
        results[name] = res
        summ = res.summary(bootstrap=bootstrap)
        if as_json:
            print(json.dumps({"name": name, **summ}, default=str))
        else:
            _print_summary(summ, name)
            if per_id:
                for k, v in summ["per_id_loose"].items():
                    print(f"    {k:<48} n={v['n']:<4} strict {_fmt(summ['per_id_strict'][k]['accuracy'])}"
                          f"  loose {_fmt(v['accuracy'])}")
        if out is not None:
            prefix = "" if len(resp_sets) == 1 else Path(name).stem + "_"
            paths = write_outputs(res, out, prefix=prefix, bootstrap=bootstrap)
            if not as_json:
                print("wrote " + ", ".join(str(p) for p in paths.values()))
    if compare_files is not None:
        a, b = (results[str(p)] for p in compare_files)
        cmp = compare(a, b)
        if as_json:
            print(json.dumps({"compare": cmp}))
        else:
            print(f"== B - A  (A={compare_files[0].name}, B={compare_files[1].name}), paired bootstrap")
            for k, v in cmp.items():
                if k.startswith(("strict", "loose")):
                    print(f"  {k:<28} {_fmt(v['delta'])}  95% CI [{_fmt(v['ci95'][0])}, {_fmt(v['ci95'][1])}]"
                          f"  P(B>A)={v['p_b_better']:.3f}")
            print(f"  prompts passing (loose) only in A: {cmp['prompt_flips_loose']['a_only']}, only in B: "
                  f"{cmp['prompt_flips_loose']['b_only']}")
        if out is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / "compare.json").write_text(json.dumps(cmp, indent=2))


@app.command("list")
def list_cmd(
    family: str | None = typer.Option(None, help="ifeval | ifbench | iftrain"),
    as_json: bool = typer.Option(False, "--json", help="print id, family, kwargs schema and notes as JSON"),
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
    id: str = typer.Option(..., "--id", help="instruction id, e.g. punctuation:no_comma"),
    kwargs: str = typer.Option("{}", "--kwargs", help="kwargs as a JSON object"),
    text: str | None = typer.Option(None, "--text", help="the response text"),
    text_file: Path | None = typer.Option(None, "--text-file", help="read the response from a file ('-': stdin)"),  # noqa: B008
    semantics: str = typer.Option("reference", help="reference | fixed"),
) -> None:
    """Check one text against one constraint and print the verdict with its reason (exit 0 pass, 1 fail)."""
    from genlab.ifbench.registry import KwargsError, UnknownInstructionError, get

    if text is None:
        if text_file is None:
            raise typer.BadParameter("give --text or --text-file")
        text = sys.stdin.read() if str(text_file) == "-" else text_file.read_text(encoding="utf-8")
    try:
        kw = json.loads(kwargs)
    except json.JSONDecodeError as e:
        raise typer.BadParameter(f"--kwargs is not valid JSON: {e}") from None
    try:
        v = get(id).check(text, kw, semantics=semantics)
    except (UnknownInstructionError, KwargsError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(2) from None
    print(f"{'PASS' if v.ok else 'FAIL'}: {v.reason}")
    raise typer.Exit(0 if v.ok else 1)


@app.command("setup")
def setup_cmd(
    dir: Path | None = typer.Option(None, "--dir", help="target folder (default: ~/nltk_data)"),  # noqa: B008
    show: bool = typer.Option(False, "--show", help="only show where the data is found; download nothing"),
) -> None:
    """Fetch the NLTK data the reference checkers use (punkt_tab, stopwords, perceptron tagger), on request."""
    from genlab.ifbench import nlp

    if not show:
        import nltk

        target = str(dir or Path.home() / "nltk_data")
        for pkg in ("punkt_tab", "stopwords", "averaged_perceptron_tagger_eng"):
            ok = nltk.download(pkg, download_dir=target, quiet=True)
            print(f"{pkg}: {'ok' if ok else 'FAILED (offline?)'} -> {target}")
        nlp.reset()
    print(json.dumps(nlp.backend_info(), indent=1))


if __name__ == "__main__":
    app()
