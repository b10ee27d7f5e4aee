"""A mini-CLIP: a small CNN image tower and a tiny causal-transformer text tower mapped into one joint space.

The text tower reads token *embeddings* (not only ids), so a prompt learner can put learned context vectors in
place of template words (CoOp); features are pooled at the ``<eos>`` position as in CLIP. The image tower takes an
optional additive pixel prompt (a learned input pattern, the visual-prompting analogue for a CNN). Both towers
return L2-normalised features; ``logit_scale`` is CLIP's learned temperature (clamped at 100 like CLIP).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


class ImageTower(nn.Module):
    """Two conv blocks (3x3 conv, ReLU, 2x2 max-pool), then a linear map to the joint space."""

    def __init__(self, size: int, dim: int, width: int = 16) -> None:
        super().__init__()
        if size % 4:
            raise ValueError(f"image size must be a multiple of 4, got {size}")
        self.convs = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.proj = nn.Linear(2 * width * (size // 4) ** 2, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.convs(x).flatten(1))


class TextTower(nn.Module):
    """Token + position embeddings, ``layers`` pre-norm causal transformer blocks, final norm, ``<eos>`` pooling."""

    def __init__(self, vocab_size: int, max_len: int, width: int, dim: int, layers: int = 1, heads: int = 2) -> None:
        super().__init__()
        self.token = nn.Embedding(vocab_size, width)
        self.position = nn.Parameter(torch.randn(max_len, width) * 0.02)
        block = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.proj = nn.Linear(width, dim, bias=False)
        self.register_buffer("causal", torch.triu(torch.full((max_len, max_len), float("-inf")), 1), persistent=False)

    def forward_embeddings(self, embeds: torch.Tensor, eos: torch.Tensor) -> torch.Tensor:
        n = embeds.shape[1]
        h = self.blocks(embeds + self.position[:n], mask=self.causal[:n, :n], is_causal=True)
        pooled = self.norm(h)[torch.arange(len(eos), device=h.device), eos]
        return self.proj(pooled)


class MiniCLIP(nn.Module):
    def __init__(
        self, vocab_size: int, max_len: int, image_size: int, dim: int = 32, width: int = 32, cnn_width: int = 16
    ) -> None:
        super().__init__()
        self.image_size = image_size
        self.image = ImageTower(image_size, dim, cnn_width)
        self.text = TextTower(vocab_size, max_len, width, dim)
        self.log_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    @property
    def logit_scale(self) -> torch.Tensor:
        return self.log_scale.exp().clamp(max=100.0)

    def encode_image(self, x: torch.Tensor, prompt: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` (n, 1, H, W) in model input units; ``prompt`` (1, H, W) is added to every image."""
        if prompt is not None:
            x = x + prompt
        return F.normalize(self.image(x), dim=-1)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        return self.text.token(ids)

    def encode_embeddings(self, embeds: torch.Tensor, eos: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.text.forward_embeddings(embeds, eos), dim=-1)

    def encode_text(self, ids: torch.Tensor, eos: torch.Tensor) -> torch.Tensor:
        return self.encode_embeddings(self.embed_tokens(ids), eos)


def clip_loss(img: torch.Tensor, txt: torch.Tensor, scale: torch.Tensor, same: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE with several positives: ``same[i, j]`` marks pairs whose captions are identical (in a
    batch of templated captions duplicates are common and must not be pushed apart); targets are uniform over
    the positives of each row/column."""
    logits = scale * img @ txt.T
    target = same.float() / same.float().sum(1, keepdim=True)
    loss_i = -(target * logits.log_softmax(1)).sum(1).mean()
    loss_t = -(target.T * logits.T.log_softmax(1)).sum(1).mean()  # `same` is symmetric
    return 0.5 * (loss_i + loss_t)
