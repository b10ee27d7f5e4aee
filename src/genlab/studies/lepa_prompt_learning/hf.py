"""A real CLIP (transformers' ``CLIPModel``, loaded from a local directory only) as a prompt-learning backend for
the lepa-prompt-learning study: the same five operations as the mini-CLIP backend.

Context vectors enter CoOp-style: class prompts are tokenised as ``"X X ... X <class name>."`` and the token
embeddings of the M placeholders are replaced by the learned vectors; everything after the token embedding is the
model's own text forward (causal mask, ``<eos>`` pooling, projection), so a context equal to the embeddings of some
words gives exactly the features of the prompt with those words. The visual prompt is an additive pattern in the
model's normalised pixel space. Nothing is downloaded: ``local_files_only=True`` everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from genlab.data.styled_digits import CLASS_NAMES, ZERO_SHOT_TEMPLATES

OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
PLACEHOLDER = "X"


class _ContextEmbedding(nn.Module):
    """Token embedding that writes per-row context vectors over positions 1..M (the placeholders)."""

    def __init__(self, base: nn.Embedding, ctx_rows: torch.Tensor) -> None:
        super().__init__()
        self.base, self.ctx_rows = base, ctx_rows

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        e = self.base(ids)
        m = self.ctx_rows.shape[1]
        return torch.cat([e[:, :1], self.ctx_rows.to(e.dtype), e[:, 1 + m :]], 1)


def _features(out: object) -> torch.Tensor:
    """``get_*_features`` returns a tensor in transformers 4.x and an output object with ``pooler_output`` in 5.x."""
    return out if torch.is_tensor(out) else out.pooler_output  # type: ignore[union-attr]


class HFClipBackend:
    def __init__(self, path: str | Path, device: str = "cpu") -> None:
        from transformers import AutoTokenizer, CLIPModel

        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"clip_path {str(path)!r} is not a directory with a saved CLIPModel")
        self.device = device
        self.model = CLIPModel.from_pretrained(path, local_files_only=True).to(device).eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        vision = self.model.config.vision_config
        self.size = int(vision.image_size)
        self.channels = int(getattr(vision, "num_channels", 3))
        mean, std = _pixel_stats(path)
        self.mean = torch.tensor(mean, device=device).view(1, -1, 1, 1)
        self.std = torch.tensor(std, device=device).view(1, -1, 1, 1)
        self.logit_scale = float(self.model.logit_scale.exp().clamp(max=100.0))
        self.prompt_shape = (self.channels, self.size, self.size)
        self._template_cache: dict[tuple[int, ...], torch.Tensor] = {}

    # -- text ---------------------------------------------------------------------------------------------------
    def _ids(self, texts: Sequence[str]) -> torch.Tensor:
        return self.tokenizer(list(texts), padding=True, return_tensors="pt")["input_ids"].to(self.device)

    def ctx_init(self, n_ctx: int, generator: torch.Generator) -> torch.Tensor:
        """The embeddings of "a photo of a" when that is ``n_ctx`` tokens (CoOp's initialisation), else N(0, 0.02)."""
        from genlab.studies.lepa_prompt_learning.train import CTX_INIT

        ids = self._ids([CTX_INIT])[0, 1:-1]
        emb = self.model.text_model.embeddings.token_embedding
        if len(ids) == n_ctx:
            return emb(ids).detach().clone()
        return (0.02 * torch.randn(n_ctx, emb.embedding_dim, generator=generator)).to(self.device)

    def _prompt_ids(self, n_ctx: int, classes: Sequence[int]) -> torch.Tensor:
        texts = [" ".join([PLACEHOLDER] * n_ctx) + f" {CLASS_NAMES[c]}." for c in classes]
        ids = self._ids(texts)
        placeholder = self._ids([PLACEHOLDER])[0, 1]
        if not bool((ids[:, 1 : 1 + n_ctx] == placeholder).all()):
            raise ValueError(f"the tokenizer does not map each {PLACEHOLDER!r} to one token; cannot place the context")
        return ids

    @contextmanager
    def _context(self, ctx_rows: torch.Tensor) -> Iterator[None]:
        emb = self.model.text_model.embeddings
        original = emb.token_embedding
        emb.token_embedding = _ContextEmbedding(original, ctx_rows)
        try:
            yield
        finally:
            emb.token_embedding = original

    def prompted_text(self, ctx: torch.Tensor, classes: Sequence[int]) -> torch.Tensor:
        """``ctx`` (M, d) -> (C, D); a stack (A, M, d) -> (A, C, D)."""
        single = ctx.ndim == 2
        ctx = ctx[None] if single else ctx
        a, m, n = ctx.shape[0], ctx.shape[1], len(classes)
        ids = self._prompt_ids(m, classes).repeat(a, 1)
        rows = ctx[:, None].expand(a, n, m, -1).reshape(a * n, m, -1)
        with self._context(rows):
            feats = _features(self.model.get_text_features(input_ids=ids))
        feats = F.normalize(feats.float(), dim=-1).reshape(a, n, -1)
        return feats[0] if single else feats

    def template_text(self, classes: Sequence[int]) -> torch.Tensor:
        key = tuple(int(c) for c in classes)
        if key not in self._template_cache:
            with torch.no_grad():
                texts = [t.format(c=CLASS_NAMES[c]) + "." for c in key for t in ZERO_SHOT_TEMPLATES]
                feats = F.normalize(_features(self.model.get_text_features(input_ids=self._ids(texts))).float(), dim=-1)
                feats = feats.reshape(len(key), len(ZERO_SHOT_TEMPLATES), -1).mean(1)
                self._template_cache[key] = F.normalize(feats, dim=-1)
        return self._template_cache[key]

    # -- images -------------------------------------------------------------------------------------------------
    def inputs(self, images: np.ndarray) -> torch.Tensor:
        """Grey [0, 1] images (n, H, W) -> normalised pixel values (n, C, size, size)."""
        t = torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))[:, None].to(self.device)
        t = F.interpolate(t, size=(self.size, self.size), mode="bilinear", align_corners=False).clamp(0, 1)
        return (t.expand(-1, self.channels, -1, -1) - self.mean) / self.std

    def image_features(self, x: torch.Tensor, prompt: torch.Tensor | None = None) -> torch.Tensor:
        """(n, D) without a prompt or with one prompt (C, H, W); (A, n, D) for a stack of prompts."""
        stacked = prompt is not None and prompt.ndim == x.ndim
        if prompt is None:
            pix = x
        elif stacked:
            pix = (x[None] + prompt[:, None]).flatten(0, 1)
        else:
            pix = x + prompt
        feats = F.normalize(_features(self.model.get_image_features(pixel_values=pix)).float(), dim=-1)
        return feats.reshape(prompt.shape[0], len(x), -1) if stacked else feats


def _pixel_stats(path: Path) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Image mean/std from the model directory's preprocessor config, else OpenAI CLIP's constants."""
    import json

    cfg = path / "preprocessor_config.json"
    if cfg.exists():
        data = json.loads(cfg.read_text())
        if "image_mean" in data and "image_std" in data:
            return tuple(data["image_mean"]), tuple(data["image_std"])
    return OPENAI_MEAN, OPENAI_STD
