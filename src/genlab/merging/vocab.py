"""Merging models whose tokenizers differ, as mergekit 0.1.5 does (``tokenizer_source`` / ``tokenizer:``).

1. The output tokenizer: the base model's (tokens at or past its ``vocab_size`` stripped), a named model's, or the
   *union*: the base tokenizer plus, in order, every token of the other models it lacks (then their added tokens
   with their settings, the first model's settings winning), plus the ``tokenizer.tokens`` entries it lacks.
2. A permutation per model: for each output token id, the row of that token in the model's embeddings, or -1.
3. Each vocabulary tensor (embeddings, output head: axis 0 is the token) of every model is rebuilt on the output
   vocabulary before the merge: a model's own row where it has the token, else a filled row — from the one model
   that has it, from the base model if it has it, else the mean of the models that have it; zeros if none does;
   a ``tokens:`` entry overrides (``force`` for every model). Rows added by ``pad_to_multiple_of`` get the mean of
   the real rows.

The tokenizer work uses ``transformers`` (the files written are the ones ``save_pretrained`` writes, as
mergekit's); it is imported only here. Deliberate difference: mergekit visits the non-base models in the order
of a Python ``set`` (it varies from run to run when two or more models bring new tokens); genlab in the order the
models are listed, and within a model the tokens in the order of their ids; mergekit takes them in the order of
``get_vocab()``, a Rust hash map's, which changes from run to run. So genlab's union gives the new tokens
reproducible ids (mergekit's differ between two runs of the same merge); the row of every token is the same.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from genlab.merging.config import MergeConfig, TokenEmbedding
from genlab.merging.errors import CheckpointError, MergeConfigError, MergeError

LOG = logging.getLogger(__name__)

# Tensors with a vocabulary axis (axis 0) in mergekit's architecture definitions (mergekit/_data/architectures).
VOCAB_TENSORS = frozenset({
    "model.embed_tokens.weight", "lm_head.weight", "transformer.wte.weight", "model.language_model.embed_tokens.weight",
    "embed_tokens.weight", "decoder.embed_tokens.weight", "encoder.embed_tokens.weight", "shared.weight",
    "gpt_neox.embed_in.weight", "embed_out.weight", "lm_head.bias", "model.tok_embeddings.weight", "output.weight",
    "transformer.word_embeddings.weight", "transformer.embd.wte.weight", "backbone.embeddings.weight",
    "transformer.embedding.word_embeddings.weight", "transformer.output_layer.weight", "lm_head.linear.weight",
    "lm_head.linear.bias", "lm_head.decoder.weight", "embeddings.word_embeddings.weight",
    "bert.embeddings.word_embeddings.weight", "roberta.embeddings.word_embeddings.weight",
    "distilbert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight", "cls.predictions.bias",
    "vocab_projector.weight", "vocab_projector.bias",
})  # fmt: skip


def is_vocab_tensor(name: str) -> bool:
    return name in VOCAB_TENSORS


@dataclass
class Vocabulary:
    """The output tokenizer and, per input model, where each output token's row is in its embeddings."""

    tokenizer: Any  # a transformers tokenizer, saved with the merge
    vocab: dict[str, int]  # output token -> id (0 .. n-1)
    size: int  # rows of the output embeddings (len(vocab), padded up to pad_to_multiple_of)
    permutations: dict[int, torch.Tensor]  # input index -> int64 [len(vocab)]: row in that model, -1 if absent
    original: dict[int, dict[str, int]]  # input index -> its tokenizer's vocabulary (for model_token sources)
    tokens: dict[str, TokenEmbedding]


def _transformers():
    try:
        import transformers
    except ImportError:
        raise MergeError("tokenizer_source / tokenizer need transformers (pip install 'genlab[hf]')") from None
    transformers.logging.set_verbosity_error()
    return transformers


def config_vocab_size(folder: Path) -> int | None:
    """The model's ``vocab_size`` from its config.json (mergekit's get_vocab_size for most architectures)."""
    try:
        value = json.loads((Path(folder) / "config.json").read_text()).get("vocab_size")
    except (OSError, ValueError, AttributeError):
        return None
    return value if type(value) is int and value > 0 else None


def _strip_unused(tokenizer, folder: Path, vocab_size: int | None):
    """Drop tokens whose id is at or past the model's vocab_size (BPE fast tokenizers), as mergekit does for
    the base model."""
    limit = vocab_size or len(tokenizer.get_vocab())
    unused = {t for t, i in tokenizer.get_vocab().items() if i >= limit}
    if not unused:
        return tokenizer
    if not tokenizer.is_fast:
        raise CheckpointError(f"{folder}: tokens past vocab_size {limit} and no fast tokenizer to strip them")
    spec = json.loads(tokenizer._tokenizer.to_str())
    if spec["model"]["type"] != "BPE":
        raise CheckpointError(f"{folder}: tokens past vocab_size {limit} in a {spec['model']['type']} tokenizer; "
                              "only BPE can be stripped")  # fmt: skip
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["id"] < limit]
    spec["model"]["vocab"] = {t: i for t, i in spec["model"]["vocab"].items() if t not in unused}

    def keep(merge) -> bool:
        if isinstance(merge, str) and merge.count(" ") == 1:
            parts = merge.split(" ")
        elif isinstance(merge, list):
            parts = merge
        else:
            raise CheckpointError(f"{folder}: unexpected BPE merge {merge!r}")
        return not any(p in unused for p in parts)

    spec["model"]["merges"] = [m for m in spec["model"]["merges"] if keep(m)]
    import tokenizers

    tokenizer._tokenizer = tokenizers.Tokenizer.from_str(json.dumps(spec))
    return tokenizer


def _copy(tokenizer, transformers):
    """A fresh tokenizer equal to ``tokenizer`` (saved and reloaded), so adding tokens leaves the original alone."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp, legacy_format=False, safe_serialization=True)
        return transformers.AutoTokenizer.from_pretrained(tmp, use_fast=True)


def _union(base_tok, loaded: dict[int, Any], sizes: dict[int, int | None], transformers):
    """The base tokenizer plus the tokens of the others it lacks (plain tokens, then added tokens)."""
    plain: dict[str, None] = {}
    added: dict[str, Any] = {}
    for i, tok in loaded.items():
        limit = sizes[i] or tok.vocab_size
        ordered = sorted(tok.get_vocab().items(), key=lambda item: item[1])  # by id: reproducible
        plain.update(dict.fromkeys(t for t, idx in ordered if idx < limit))
        for idx, info in tok.added_tokens_decoder.items():
            if idx >= limit:
                continue
            if info.content in added and added[info.content] != info:
                LOG.warning("token %r is added with different settings; the first model's are kept", info.content)
            added.setdefault(info.content, info)
    out = _copy(base_tok, transformers)
    base_vocab = base_tok.get_vocab()
    for t in plain:
        if t not in added and t not in base_vocab:
            out.add_tokens(t)
    for info in added.values():
        out.add_tokens(info)
    return out


def build_vocabulary(cfg: MergeConfig) -> Vocabulary:
    """The output tokenizer and the per-model permutations (mergekit's BuildTokenizer)."""
    transformers = _transformers()
    base_i = next((i for i, m in enumerate(cfg.inputs) if m.is_base), 0)
    sizes = {i: config_vocab_size(m.path) for i, m in enumerate(cfg.inputs)}

    def load(i: int, **kw):
        path = cfg.inputs[i].path
        try:
            return transformers.AutoTokenizer.from_pretrained(str(path), **kw)
        except Exception as exc:
            if i == base_i:
                raise CheckpointError(f"cannot load the tokenizer of {cfg.inputs[i].ref!r}: {exc}") from None
            return None

    base_tok = _strip_unused(load(base_i, use_fast=True), cfg.inputs[base_i].path, sizes[base_i])
    loaded = {base_i: base_tok}
    for i in range(len(cfg.inputs)):
        if i != base_i and (tok := load(i)) is not None:
            loaded[i] = tok
        elif i != base_i:
            LOG.warning("no tokenizer for %r; taken to be the base model's", cfg.inputs[i].ref)
    src = cfg.tokenizer_source
    if src == "base":
        out = base_tok
    elif src == "union":
        out = _union(base_tok, loaded, sizes, transformers)
    else:
        idx = next(i for i, m in enumerate(cfg.inputs) if m.ref == src)
        out = load(idx)
        if out is None:
            raise CheckpointError(f"tokenizer_source: cannot load the tokenizer of {src!r}")
    present = set(out.get_vocab())
    for t in cfg.tokens:
        if t not in present:
            out.add_tokens(t)
            present.add(t)
    vocab = out.get_vocab()
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise CheckpointError("the output tokenizer's token ids are not 0 .. n-1; cannot lay out embedding rows")
    permutations = {i: _permutation(vocab, loaded.get(i, base_tok).get_vocab(), sizes[i], cfg.inputs[i].ref)
                    for i in range(len(cfg.inputs))}  # fmt: skip
    size = len(vocab)
    pad = cfg.pad_to_multiple_of
    if pad and size % pad:
        size += pad - size % pad
    return Vocabulary(out, vocab, size, permutations, {i: t.get_vocab() for i, t in loaded.items()}, dict(cfg.tokens))


def _permutation(vocab: dict[str, int], model_vocab: dict[str, int], size: int | None, ref: str) -> torch.Tensor:
    limit = size if size is not None else len(model_vocab)
    perm = torch.full((len(vocab),), -1, dtype=torch.int64)
    for t, new in vocab.items():
        old = model_vocab.get(t)
        if old is None:
            continue
        if old >= limit:  # mergekit leaves the entry out and fails when it reaches it
            raise CheckpointError(f"model {ref!r}: token {t!r} has id {old}, past its vocab_size {limit}")
        perm[new] = old
    return perm


# -- embedding rows -------------------------------------------------------------------------------------------


def permute_rows(
    voc: Vocabulary, models: Sequence[int], base: int | None, tensors: Sequence[torch.Tensor], name: str = ""
) -> list[torch.Tensor]:
    """Each model's vocabulary tensor (axis 0) rebuilt on the output vocabulary (mergekit's PermutedVocabulary).
    ``models``: input indices of ``tensors``; ``base``: the input index of the base model, if any."""
    shape = tuple(tensors[0].shape[1:])
    if any(tuple(t.shape[1:]) != shape for t in tensors):
        raise CheckpointError(f"tensor {name!r}: the dimensions beside the vocabulary differ between models")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    perms = [voc.permutations[m] for m in models]
    for m, p, t in zip(models, perms, tensors):
        if p.numel() and int(p.max()) >= t.shape[0]:
            raise CheckpointError(f"tensor {name!r} of input {m}: {t.shape[0]} rows, but the tokenizer uses "
                                  f"row {int(p.max())}")  # fmt: skip
    fill = _fill_rows(voc, models, base, tensors, perms, shape, dtype, name)
    n = len(voc.vocab)
    forced = torch.zeros(n, dtype=torch.bool)
    for t, spec in voc.tokens.items():
        if spec.force:
            forced[voc.vocab[t]] = True
    out = []
    for p, t in zip(perms, tensors):
        rows = torch.zeros((voc.size, *shape), dtype=dtype)
        own = (p >= 0) & ~forced
        ids = own.nonzero().squeeze(1)
        rows[ids] = t[p[ids]].to(dtype)
        for token_id, row in fill.items():
            if not own[token_id]:
                rows[token_id] = row
        if voc.size > n:  # padding rows: the mean of the real ones
            rows[n:] = torch.mean(rows[:n], dim=0)
        out.append(rows)
    return out


def _fill_rows(voc, models, base, tensors, perms, shape, dtype, name) -> dict[int, torch.Tensor]:
    """The row for every token some model lacks (or that a forced ``tokens`` entry sets), by token id."""
    have = torch.stack([p >= 0 for p in perms])  # [models, tokens]
    count = have.sum(0).tolist()
    base_pos = models.index(base) if base is not None and base in models else None
    names = {tid: t for t, tid in voc.vocab.items()}
    todo = {tid for tid, k in enumerate(count) if k < len(models)}  # only these and forced entries need a row
    todo |= {voc.vocab[t] for t, spec in voc.tokens.items() if spec.force}
    fill = {}
    for tid in sorted(todo):
        t = names[tid]
        spec = voc.tokens.get(t)
        if spec is None:
            k = count[tid]
            if k == 1:
                spec = TokenEmbedding("model", models[int(have[:, tid].nonzero()[0, 0])])
            elif k == 0:
                LOG.warning("token %r is in no model; its row is zero", t)
                spec = TokenEmbedding("zero")
            elif base_pos is not None and have[base_pos, tid]:
                spec = TokenEmbedding("model", base)
            else:  # the mean of the models that have it, summed in model order
                row = torch.zeros(shape, dtype=dtype)
                for p, x in zip(perms, tensors):
                    if p[tid] >= 0:
                        row = row + x[p[tid]]
                row /= k
                fill[tid] = row
                continue
        fill[tid] = _row_from(voc, spec, t, tid, models, tensors, perms, name)
    return fill


def _row_from(voc, spec: TokenEmbedding, token: str, tid: int, models, tensors, perms, name) -> torch.Tensor:
    if spec.kind == "zero":
        return tensors[0].new_zeros(tensors[0].shape[1:])
    if spec.kind == "none":
        raise MergeConfigError(f"tokenizer.tokens[{token!r}]: give a source for the token's embedding")
    if spec.model not in models:
        raise MergeConfigError(f"token {token!r} takes its {name!r} row from input {spec.model}, which does not "
                               "provide that tensor")  # fmt: skip
    k = models.index(spec.model)
    if spec.kind == "model_token":
        src = spec.token_id
        if src is None:
            original = voc.original.get(spec.model, {})
            if spec.token not in original:
                raise MergeConfigError(f"tokenizer.tokens[{token!r}]: token {spec.token!r} is not in that model")
            src = original[spec.token]
        if not 0 <= src < tensors[k].shape[0]:
            raise MergeConfigError(f"tokenizer.tokens[{token!r}]: token id {src} is out of range for {name!r}")
        return tensors[k][src]
    if perms[k][tid] < 0:
        raise MergeConfigError(f"tokenizer.tokens[{token!r}]: the source model does not have the token")
    return tensors[k][perms[k][tid]]
