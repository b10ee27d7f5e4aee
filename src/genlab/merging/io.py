"""Merging checkpoints on disk into a new checkpoint folder, streamed and atomic.

The output folder gets the merged weights (``model.safetensors``, or shards + index), the base model's
``config.json`` (with ``torch_dtype`` set when ``dtype`` / ``out_dtype`` is given), the base model's tokenizer and
generation files when present (the files mergekit copies), and the configuration as ``genlab_merge.yml``.
With ``tokenizer_source`` / ``tokenizer:`` the tokenizer is built (genlab.merging.vocab) and saved with
``save_pretrained`` instead, and ``vocab_size`` in config.json is the new vocabulary's (padded) size.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genlab.merging.chat import resolve_chat_template
from genlab.merging.checkpoint import SafetensorsSource, Source
from genlab.merging.config import MergeConfig, load_config
from genlab.merging.engine import MergePlan, plan_merge, run_plan
from genlab.merging.errors import CheckpointError, MergeError
from genlab.merging.writer import DEFAULT_SHARD_BYTES, BackgroundWriter, ShardedWriter, atomic_dir, plan_shards

# mergekit's list (merge.py, _copy_tokenizer): copied from the donor model when it has a tokenizer.
TOKENIZER_FILES = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer.model",
    "added_tokens.json",
    "merges.txt",
    "chat_template.jinja",
    "generation_config.json",
    "chat_template.json",
    "video_preprocessor_config.json",
)
DTYPE_NAMES = {"torch.bfloat16": "bfloat16", "torch.float16": "float16", "torch.float32": "float32"}


@dataclass(frozen=True)
class MergeSummary:
    out: Path
    method: str
    tensors: int
    bytes: int
    shards: int
    seconds: float
    order: list[str] | None = None  # cmm: the experts in merge order

    def as_dict(self) -> dict:
        return {
            "out": str(self.out),
            "method": self.method,
            "tensors": self.tensors,
            "bytes": self.bytes,
            "shards": self.shards,
            "seconds": round(self.seconds, 3),
            "order": self.order,
        }


def open_inputs(config: MergeConfig, mmap: bool = True) -> list[Source]:
    return [SafetensorsSource(m.path, label=m.ref, mmap=mmap) for m in config.inputs]


def merge_to_folder(
    config: MergeConfig | str | Path,
    out: str | Path,
    seed: int | None = 0,
    max_shard_bytes: int = DEFAULT_SHARD_BYTES,
    copy_tokenizer: bool = True,
    force: bool = False,
    mmap: bool = True,
    on_tensor: Callable[[str, int, int], None] | None = None,
    trim: str = "mergekit",
    write_model_card: bool = True,
) -> MergeSummary:
    """Merge the checkpoints a configuration names into the folder ``out`` (see the module docstring).

    Everything that can be checked from the headers is checked before the output is created; an error while
    merging removes the partial output, so ``out`` either holds a complete merge or is left as it was.
    ``on_tensor(name, done, total)`` is called after each tensor is written; ``trim``: TIES's ranking
    (``mergekit``: bit-identical; ``threshold``: no sort, see genlab.merging.sparsify.magnitude). ``mmap``: read
    the inputs through ``safetensors.safe_open`` (default: at model scale about 1.3x less wall time than reading
    into fresh buffers, measured in benchmarks/bench_merge.py) or, False, each tensor's bytes into a buffer."""
    start = time.perf_counter()
    cfg = config if isinstance(config, MergeConfig) else load_config(config)
    check_out_apart(out, [m.path for m in cfg.inputs])
    sources = open_inputs(cfg, mmap)
    vocab = None
    if cfg.tokenizer_source is not None:
        from genlab.merging.vocab import build_vocabulary

        vocab = build_vocabulary(cfg)
    plan = plan_merge(cfg, sources, vocab)
    side = _side_files(cfg, copy_tokenizer, plan.n_layers, write_model_card, vocab)
    shards = plan_shards([j.out for j in plan.jobs], max_shard_bytes)
    with atomic_dir(out, force) as tmp:
        writer = BackgroundWriter(ShardedWriter(tmp, shards))  # tensor k is written while k + 1 is merged
        try:
            for done, (name, tensor) in enumerate(run_plan(plan, sources, seed, trim), 1):
                report = None if on_tensor is None else (lambda n, done=done: on_tensor(n, done, len(plan.jobs)))
                writer.write(name, tensor, report)
            writer.finish()
        finally:
            writer.abort()
            for s in sources:
                s.close()
        for name, content in side.items():
            if isinstance(content, Path):
                shutil.copyfile(content, tmp / name)
            else:
                (tmp / name).write_text(content)
        if vocab is not None:  # mergekit saves the tokenizer it built, with the chat template set
            template = resolve_chat_template(cfg.chat_template, [m.path for m in cfg.inputs])
            if template is not None:
                vocab.tokenizer.chat_template = template
            vocab.tokenizer.save_pretrained(str(tmp))
    return MergeSummary(Path(out), cfg.method.name, len(plan.jobs), plan.nbytes, len(shards),
                        time.perf_counter() - start, _order_names(plan))  # fmt: skip


def check_out_apart(out: str | Path, inputs: list[Path]) -> None:
    """Refuse an output folder that is an input, holds one or lies inside one (``--force`` would delete it)."""
    o = Path(os.path.realpath(out))
    for p in inputs:
        q = Path(os.path.realpath(p))
        if o == q or o in q.parents or (q.is_dir() and q in o.parents):
            what = "is" if o == q else ("contains" if o in q.parents else "is inside")
            raise MergeError(f"the output {out} {what} the input {p}; choose another --out")


def _order_names(plan: MergePlan) -> list[str] | None:
    if plan.config.method.name != "cmm":
        return None
    experts = plan.config.experts
    return [experts[i].ref for i in plan.order]


def _donor(cfg: MergeConfig) -> Path | None:
    """Where config and tokenizer come from: the base model, else the first model (as in mergekit)."""
    model = cfg.base or cfg.inputs[0]
    return model.path if model.path.is_dir() else None


def _has_tokenizer(folder: Path) -> bool:
    return (folder / "tokenizer_config.json").exists() and (
        (folder / "tokenizer.json").exists() or (folder / "tokenizer.model").exists()
    )


def _side_files(
    cfg: MergeConfig, copy_tokenizer: bool, n_layers: int | None = None, card: bool = True, vocab: Any = None
) -> dict[str, str | Path]:
    """Files written next to the weights: text to write, or a path to copy (read before the output exists)."""
    files: dict[str, str | Path] = {}
    if cfg.text:
        files["genlab_merge.yml"] = cfg.text
    if card:
        from genlab.merging.card import model_card

        files["README.md"] = model_card(cfg, cfg.text or "")
    donor = _donor(cfg)
    if donor is not None and (donor / "config.json").exists():
        model_cfg = _out_model_config(cfg, donor, n_layers)
        if vocab is not None and isinstance(model_cfg, dict):
            model_cfg["vocab_size"] = vocab.size
        files["config.json"] = json.dumps(model_cfg, indent=2) + "\n"
    tok = _donor(cfg)
    if vocab is None and tok is not None and copy_tokenizer and _has_tokenizer(tok):
        files.update({name: tok / name for name in TOKENIZER_FILES if (tok / name).exists()})
        if cfg.chat_template:
            files.update(_chat_template_files(cfg, tok))
    return files


def _chat_template_files(cfg: MergeConfig, tok: Path) -> dict[str, str]:
    """``chat_template`` (``auto``, a name or a Jinja template; genlab.merging.chat) over the copied tokenizer:
    written as ``chat_template.jinja`` (which transformers reads first) and dropped from tokenizer_config.json."""
    template = resolve_chat_template(cfg.chat_template, [m.path for m in cfg.inputs])
    if template is None:
        return {}
    tok_cfg = json.loads((tok / "tokenizer_config.json").read_text())
    tok_cfg.pop("chat_template", None)
    return {"chat_template.jinja": template, "tokenizer_config.json": json.dumps(tok_cfg, indent=2) + "\n"}


LAYER_COUNT_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")


def _out_model_config(cfg: MergeConfig, donor: Path, n_layers: int | None = None) -> dict:
    try:
        model_cfg = json.loads((donor / "config.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"cannot read {donor / 'config.json'}: {exc}") from None
    dtype = cfg.out_dtype or cfg.dtype
    if dtype is not None and isinstance(model_cfg, dict):
        name = DTYPE_NAMES.get(str(dtype), str(dtype).removeprefix("torch."))
        keys = [k for k in ("torch_dtype", "dtype") if k in model_cfg] or ["torch_dtype"]
        for k in keys:
            model_cfg[k] = name
    if n_layers is not None and isinstance(model_cfg, dict):  # slices: the stacked model's depth
        key = next((k for k in LAYER_COUNT_KEYS if k in model_cfg), None)
        if key is None:
            raise CheckpointError(f"{donor / 'config.json'}: no layer count ({', '.join(LAYER_COUNT_KEYS)}) to set")
        model_cfg[key] = n_layers
    return model_cfg
