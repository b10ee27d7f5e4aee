"""``genlab ifbench generate`` and ``genlab ifbench run`` (generate, then evaluate), added to the ifbench CLI.

Module-level imports stay light: the backends and the evaluator are imported inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

BackendName = Annotated[
    str, typer.Option("--backend", help="openai (any OpenAI-compatible server) | hf (local model).")
]
ModelOpt = Annotated[str, typer.Option("--model", help="Model name on the server, or a local model directory (hf).")]
BaseUrlOpt = Annotated[
    str, typer.Option("--base-url", help="Server API root, e.g. http://127.0.0.1:8000/v1 (openai backend).")
]
KeyEnvOpt = Annotated[str, typer.Option("--api-key-env", help="Environment variable holding the API key.")]
ConcOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight (openai backend).")]
MaxTokOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Maximum new tokens per response.")]
TempOpt = Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature (0 = greedy).")]
CacheOpt = Annotated[
    Path | None, typer.Option("--cache", help="Resumable cache (default: <out>.cache.jsonl next to the output).")
]


def _backend(backend: str, model: str, base_url: str, api_key_env: str, concurrency: int, max_tokens: int, temp: float):
    from genlab.ifbench.generate import OpenAIChatBackend, TransformersBackend

    if backend == "openai":
        return OpenAIChatBackend(
            base_url, model, api_key_env=api_key_env or None, concurrency=concurrency, max_tokens=max_tokens,
            temperature=temp,
        )  # fmt: skip
    if backend == "hf":
        if not Path(model).is_dir():  # checked now, not after the prompts are read and the cache opened
            raise typer.BadParameter(f"no model directory at {model} (the hf backend needs a local model folder)",
                                     param_hint="--model")
        return TransformersBackend(model, max_new_tokens=max_tokens, temperature=temp)
    raise typer.BadParameter(f"unknown backend {backend!r}; choose openai or hf", param_hint="--backend")


def _generate(prompts: Path, out: Path, cache: Path | None, backend_obj, quiet: bool) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from genlab.ifbench.data import load_prompts
    from genlab.ifbench.generate import ResponseCache, generate_responses

    items = load_prompts(prompts, lenient=True)
    store = ResponseCache(cache or out.with_name(out.name + ".cache.jsonl"))
    if quiet:
        generate_responses(items, backend_obj, store, out)
        return
    columns = (TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("gen", total=len(items))
        generate_responses(items, backend_obj, store, out, progress=lambda d, t: bar.update(task, completed=d))
    typer.echo(f"wrote {len(items)} responses to {out}", err=True)


def add_generation_commands(app: typer.Typer) -> None:
    """Register ``generate`` and ``run`` on the ifbench Typer app."""

    @app.command("generate")
    def generate_cmd(
        prompts: Annotated[Path, typer.Option("--prompts", exists=True, dir_okay=False, help="Prompt JSONL.")],
        out: Annotated[Path, typer.Option("--out", help="Responses JSONL to write.")],
        backend: BackendName = "openai",
        model: ModelOpt = "default",
        base_url: BaseUrlOpt = "http://127.0.0.1:8000/v1",
        api_key_env: KeyEnvOpt = "OPENAI_API_KEY",
        concurrency: ConcOpt = 8,
        max_tokens: MaxTokOpt = 2048,
        temperature: TempOpt = 0.0,
        cache: CacheOpt = None,
        quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    ) -> None:
        """Generate responses to a prompt file with a model server or a local model (resumable)."""
        b = _backend(backend, model, base_url, api_key_env, concurrency, max_tokens, temperature)
        _generate(prompts, out, cache, b, quiet)

    @app.command("run")
    def run_cmd(
        prompts: Annotated[Path, typer.Option("--prompts", exists=True, dir_okay=False, help="Prompt JSONL.")],
        out: Annotated[Path, typer.Option("--out", help="Output directory (responses and evaluation).")],
        backend: BackendName = "openai",
        model: ModelOpt = "default",
        base_url: BaseUrlOpt = "http://127.0.0.1:8000/v1",
        api_key_env: KeyEnvOpt = "OPENAI_API_KEY",
        concurrency: ConcOpt = 8,
        max_tokens: MaxTokOpt = 2048,
        temperature: TempOpt = 0.0,
        semantics: Annotated[str, typer.Option("--semantics", help="reference | fixed.")] = "reference",
        quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    ) -> None:
        """Generate responses, then evaluate them: responses.jsonl, eval results, summary and report in --out."""
        b = _backend(backend, model, base_url, api_key_env, concurrency, max_tokens, temperature)
        out.mkdir(parents=True, exist_ok=True)
        responses = out / "responses.jsonl"
        _generate(prompts, responses, out / "generation.cache.jsonl", b, quiet)
        from genlab.ifbench.data import load_prompts, load_responses
        from genlab.ifbench.evaluator import evaluate
        from genlab.ifbench.outputs import write_outputs

        result = evaluate(load_prompts(prompts), load_responses(responses), semantics=semantics)
        paths = write_outputs(result, out)
        summary = result.summary(bootstrap=0)
        for mode in ("strict", "loose"):
            d = summary[mode]
            typer.echo(f"{mode:<6} prompt-level {100 * d['prompt_level']:6.2f}  "
                       f"instruction-level {100 * d['instruction_level']:6.2f}")  # fmt: skip
        typer.echo(f"report: {paths['html']}")


def add_train_command(app: typer.Typer) -> None:
    """Register ``make-train`` on the ifbench Typer app."""

    @app.command("make-train")
    def make_train_cmd(
        out: Annotated[Path, typer.Option("--out", help="Output directory.")],
        base: Annotated[
            Path | None, typer.Option("--base", exists=True, dir_okay=False, help="Base prompts (.txt lines or JSONL).")
        ] = None,
        n: Annotated[int, typer.Option("--n", min=1, help="Number of training prompts.")] = 1000,
        max_constraints: Annotated[
            int, typer.Option("--max-constraints", min=1, help="Most constraints per prompt.")
        ] = 5,
        min_constraints: Annotated[int, typer.Option("--min-constraints", min=1, help="Fewest constraints.")] = 1,
        seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    ) -> None:
        """Compose IFEval ∪ IFTrain constraints onto base prompts (never IFBench test ids): RLVR training data."""
        from genlab.ifbench.train_prompts import load_base_prompts, make_train, write_train

        if min_constraints > max_constraints:
            raise typer.BadParameter(f"{min_constraints} is more than --max-constraints {max_constraints}",
                                     param_hint="--min-constraints")
        try:
            bases = load_base_prompts(base) if base else None
        except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, rows without a prompt
            msg = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else " ".join(str(exc).split())[:200]
            raise typer.BadParameter(f"{base}: {msg}", param_hint="--base") from None
        rows = make_train(bases, n, max_constraints=max_constraints, min_constraints=min_constraints, seed=seed)
        paths = write_train(rows, out)
        typer.echo(f"wrote {len(rows)} prompts: {paths['open_instruct']} (open-instruct), {paths['ifeval']} (IFEval), "
                   f"{paths['trl']} (TRL prompt + ground_truth)")
