"""``genlab merge CONFIG.yaml --out DIR``: merge checkpoints described by a mergekit-style YAML file.

Registered on the top-level CLI with ``app.command("merge")(merge_command)``. Module-level imports stay light
(typer, pathlib); torch loads only when the command runs. Every input problem (unknown key, bad value, missing
file, missing tensor, shape mismatch, unreadable data) is one line on stderr and exit code 2, and nothing is
written.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer


def parse_size(text: str) -> int:
    """mergekit's size syntax: a plain number of bytes, or with a K / M / B suffix (10³, 10⁶, 10⁹)."""
    t = str(text).strip()
    scale = {"k": 1_000, "m": 1_000_000, "b": 1_000_000_000}.get(t[-1:].lower(), 1)
    digits = t[:-1] if scale > 1 else t
    if not digits.isdigit() or int(digits) <= 0:
        raise ValueError(
            f"--out-shard-size must be a positive number of bytes such as 5B, 500M or 100000, got {text!r}"
        )
    return int(digits) * scale


def merge_command(
    config: Annotated[Path, typer.Argument(help="mergekit-style YAML: merge_method, base_model, models, ...")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (created atomically).")],
    random_seed: Annotated[
        int, typer.Option("--random-seed", help="Seed of the random methods (DARE, DELLA); as mergekit's.")
    ] = 0,
    out_shard_size: Annotated[
        str, typer.Option("--out-shard-size", help="Largest output shard in bytes (K/M/B suffixes).")
    ] = "5B",
    copy_tokenizer: Annotated[
        bool, typer.Option("--copy-tokenizer/--no-copy-tokenizer", help="Copy the base model's tokenizer files.")
    ] = True,
    write_model_card: Annotated[
        bool,
        typer.Option("--write-model-card/--no-write-model-card", help="Write README.md describing the merge."),
    ] = True,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty output folder.")] = False,
    mmap: Annotated[
        bool,
        typer.Option(
            "--mmap/--no-mmap",
            help="Read inputs through safetensors' safe_open (default; faster at model scale) or, with --no-mmap, "
            "each tensor's bytes straight into a buffer.",
        ),
    ] = True,
    trim: Annotated[
        str,
        typer.Option(
            "--trim",
            help="TIES's top-density ranking: 'mergekit' (the entries mergekit's argsort keeps, bit-identical) or "
            "'threshold' (ties at the k-th magnitude kept by lowest index: the same on every platform).",
        ),
    ] = "mergekit",
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary to stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Merge models (task arithmetic, TIES, DARE, linear, curriculum) from a mergekit YAML configuration."""
    from genlab.merging.errors import MergeError

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = _run(
                config, out, random_seed, parse_size(out_shard_size), copy_tokenizer, force, mmap, quiet, trim,
                write_model_card,
            )  # fmt: skip
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
    except (MergeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(summary.as_dict(), indent=2))
    elif not quiet:
        order = f"; merge order {', '.join(summary.order)}" if summary.order else ""
        print(
            f"merged {summary.tensors} tensors ({summary.bytes / 1e9:.3f} GB, {summary.shards} shard(s)) with "
            f"{summary.method} in {summary.seconds:.1f} s into {summary.out}{order}",
            file=sys.stderr,
        )


def _run(
    config: Path,
    out: Path,
    seed: int,
    shard_bytes: int,
    copy_tokenizer: bool,
    force: bool,
    mmap: bool,
    quiet: bool,
    trim: str,
    card: bool = True,
):
    from genlab.harness.progress import PlainProgress, rich_columns
    from genlab.merging.config import load_config
    from genlab.merging.io import merge_to_folder

    cfg = load_config(config)
    args = (cfg, out, seed, shard_bytes, copy_tokenizer, force, mmap)
    if quiet:
        return merge_to_folder(*args, trim=trim, write_model_card=card)
    if not sys.stderr.isatty():
        plain = PlainProgress("merged", "tensors")
        return merge_to_folder(*args, on_tensor=lambda _name, done, total: plain(done, total), trim=trim,
                               write_model_card=card)
    from rich.progress import Progress

    with Progress(*rich_columns("tensors"), transient=True) as bar:
        task = bar.add_task("merging", total=None)

        def advance(_name: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return merge_to_folder(*args, on_tensor=advance, trim=trim, write_model_card=card)


