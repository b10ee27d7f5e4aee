"""Merging checkpoints on disk into a new checkpoint folder, streamed and atomic.

The output folder gets the merged weights (``model.safetensors``, or shards + index), the base model's
``config.json`` (with ``torch_dtype`` set when ``dtype`` / ``out_dtype`` is given), the base model's tokenizer and
generation files when present (the files mergekit copies), and the configuration as ``genlab_merge.yml``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from genlab.merging.checkpoint import SafetensorsSource, Source
from genlab.merging.config import MergeConfig, load_config
from genlab.merging.engine import MergePlan, plan_merge, run_plan
from genlab.merging.errors import CheckpointError, MergeConfigError, MergeError
from genlab.merging.writer import DEFAULT_SHARD_BYTES, ShardedWriter, atomic_dir, plan_shards

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


def open_inputs(config: MergeConfig, mmap: bool = False) -> list[Source]:
    return [SafetensorsSource(m.path, label=m.ref, mmap=mmap) for m in config.inputs]


def merge_to_folder(
    config: MergeConfig | str | Path,
    out: str | Path,
    seed: int | None = 0,
    max_shard_bytes: int = DEFAULT_SHARD_BYTES,
    copy_tokenizer: bool = True,
    force: bool = False,
    mmap: bool = False,
    on_tensor: Callable[[str, int, int], None] | None = None,
    trim: str = "mergekit",
    write_model_card: bool = True,
) -> MergeSummary:
    """Merge the checkpoints a configuration names into the folder ``out`` (see the module docstring).

    Everything that can be checked from the headers is checked before the output is created; an error while
    merging removes the partial output, so ``out`` either holds a complete merge or is left as it was.
    ``on_tensor(name, done, total)`` is called after each tensor is written; ``trim``: TIES's ranking
    (``mergekit``: bit-identical; ``threshold``: no sort, see genlab.merging.sparsify.magnitude)."""
    start = time.perf_counter()
    cfg = config if isinstance(config, MergeConfig) else load_config(config)
    check_out_apart(out, [m.path for m in cfg.inputs])
    sources = open_inputs(cfg, mmap)
    plan = plan_merge(cfg, sources)
    _check_tokenizers(cfg, plan)
    side = _side_files(cfg, copy_tokenizer, plan.n_layers, write_model_card)
    shards = plan_shards([j.out for j in plan.jobs], max_shard_bytes)
    with atomic_dir(out, force) as tmp:
        writer = ShardedWriter(tmp, shards)
        try:
            for done, (name, tensor) in enumerate(run_plan(plan, sources, seed, trim), 1):
                writer.write(name, tensor)
                if on_tensor is not None:
                    on_tensor(name, done, len(plan.jobs))
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


def _tokenizer_donor(cfg: MergeConfig) -> Path | None:
    """The folder the tokenizer comes from: ``tokenizer_source`` (base, union or a model), else the donor."""
    src = cfg.tokenizer_source
    if src is None or src in ("base", "union"):
        return _donor(cfg) if src != "union" or cfg.base is not None else cfg.inputs[0].path
    return next(m.path for m in cfg.inputs if m.ref == src)


def _check_tokenizers(cfg: MergeConfig, plan: MergePlan | None = None) -> None:
    """``tokenizer_source`` (base, union, a model) is supported when every model that has a tokenizer has the same
    one and the embeddings have exactly one row per token: then mergekit's union is that vocabulary and its
    embedding permutation the identity. genlab does not remap differing vocabularies, resize embeddings to the
    vocabulary or fill ``tokens`` (mergekit does)."""
    if cfg.tokenizer_source is None:
        return
    if cfg.tokens:
        raise MergeConfigError("tokenizer.tokens: genlab merge does not build token embeddings; remove the block")
    donor = _tokenizer_donor(cfg)
    if donor is None or not donor.is_dir() or not _has_tokenizer(donor):
        raise CheckpointError(f"tokenizer_source: {cfg.tokenizer_source}, but {donor} has no tokenizer files")
    ref = _tokenizer_bytes(donor)
    for m in cfg.inputs:
        if m.path.is_dir() and _has_tokenizer(m.path) and _tokenizer_bytes(m.path) != ref:
            raise CheckpointError(
                f"model {m.ref!r} has a different tokenizer from {donor}; genlab merge does not remap vocabularies"
            )
    n_tokens = _vocab_size(donor)
    pad = cfg.pad_to_multiple_of
    rows = n_tokens if n_tokens is None or not pad else -(-n_tokens // pad) * pad
    embeddings = [
        j for j in (plan.jobs if plan else ()) if any(k in j.name for k in ("embed_tokens", "lm_head", "wte"))
    ]
    for job in embeddings:
        if job.out.shape and (n_tokens is None or job.out.shape[0] != n_tokens or rows != n_tokens):
            have = "an unknown number of" if n_tokens is None else str(n_tokens)
            raise CheckpointError(
                f"tokenizer_source: {job.name!r} has {job.out.shape[0]} rows for {have} tokens "
                f"(padded to {rows}); mergekit would resize the embeddings to the vocabulary, genlab does not"
            )


def _vocab_size(folder: Path) -> int | None:
    """Tokens in a tokenizer.json (its model's vocabulary and the added tokens), as len(tokenizer.get_vocab())."""
    try:
        tok = json.loads((folder / "tokenizer.json").read_text())
        vocab = tok["model"]["vocab"]
        names = set(vocab) if isinstance(vocab, dict) else {v[0] for v in vocab}
        names |= {t["content"] for t in tok.get("added_tokens") or []}
        return len(names)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _tokenizer_bytes(folder: Path) -> dict[str, bytes]:
    names = ("tokenizer.json", "tokenizer.model", "added_tokens.json", "special_tokens_map.json")
    return {n: (folder / n).read_bytes() for n in names if (folder / n).exists()}


def _side_files(
    cfg: MergeConfig, copy_tokenizer: bool, n_layers: int | None = None, card: bool = True
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
        files["config.json"] = json.dumps(_out_model_config(cfg, donor, n_layers), indent=2) + "\n"
    tok = _tokenizer_donor(cfg)
    if tok is not None and tok.is_dir() and (copy_tokenizer or cfg.tokenizer_source) and _has_tokenizer(tok):
        files.update({name: tok / name for name in TOKENIZER_FILES if (tok / name).exists()})
        if cfg.chat_template:
            files.update(_chat_template_files(cfg, tok))
    return files


def _chat_template_files(cfg: MergeConfig, tok: Path) -> dict[str, str]:
    """``chat_template``: a Jinja template as given, or ``auto`` (the template most of the inputs use), written
    as ``chat_template.jinja`` (which transformers reads first) and dropped from tokenizer_config.json."""
    template = cfg.chat_template
    if template == "auto":
        found = [t for m in cfg.inputs if m.path.is_dir() and (t := _chat_template_of(m.path))]
        if not found:
            return {}
        from collections import Counter

        template = Counter(found).most_common(1)[0][0]
    elif "{" not in template:
        raise MergeConfigError(
            f"chat_template {template!r}: give a Jinja template or 'auto' (genlab has no named templates)"
        )
    tok_cfg = json.loads((tok / "tokenizer_config.json").read_text())
    tok_cfg.pop("chat_template", None)
    return {"chat_template.jinja": template, "tokenizer_config.json": json.dumps(tok_cfg, indent=2) + "\n"}


def _chat_template_of(folder: Path) -> str | None:
    if (folder / "chat_template.jinja").exists():
        return (folder / "chat_template.jinja").read_text().strip() or None
    try:
        t = json.loads((folder / "tokenizer_config.json").read_text()).get("chat_template")
    except (OSError, ValueError):
        return None
    if isinstance(t, list):  # named templates: the default one
        t = next((x.get("template") for x in t if isinstance(x, dict) and x.get("name") == "default"), None)
    return t.strip() if isinstance(t, str) and t.strip() else None


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
