"""A small decoder-only transformer classifier (pre-LayerNorm, causal self-attention, learned positions).

It reads a token sequence and classifies it from the last position: ``logits = head(LN(h_T))``. This is the
shape of the grokking transformers (Power et al., 2022): the input ``[a, op, b, =]`` and the answer predicted at
``=``. ``model.head`` is a linear classifier (bias-free by default) and its input are the model's features.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    """Pre-LN block: x + Attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (u.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for u in (q, k, v))
        p = self.dropout if self.training else 0.0
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        x = x + F.dropout(self.proj(att.transpose(1, 2).reshape(b, t, d)), p, self.training)
        return x + F.dropout(self.mlp(self.ln2(x)), p, self.training)

    def forward_cached(
        self, x: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """:meth:`forward` for incremental decoding (no dropout): ``x`` (b, t, d) are the next positions and
        ``past`` the keys and values (b, heads, t_past, d_head) of the positions before them, or ``None`` when ``x``
        starts the sequence. Without ``past`` the ``t`` positions attend causally; with it ``t`` must be 1 (the new
        position attends to all). Returns the block's output and the keys and values of all positions so far."""
        b, t, d = x.shape
        if past is not None and t != 1:
            raise ValueError(f"with cached keys and values, decode one position at a time (got {t})")
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (u.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for u in (q, k, v))
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x)), (k, v)


class TinyTransformer(nn.Module):
    """Decoder-only transformer that classifies a sequence of ``max_len`` tokens (or fewer) from its last position."""

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        d_model: int = 128,
        n_heads: int = 4,
        n_layers: int = 2,
        max_len: int = 8,
        d_ff: int | None = None,
        dropout: float = 0.0,
        head_bias: bool = False,
    ):
        super().__init__()
        if min(vocab_size, num_classes, d_model, n_heads, n_layers, max_len) < 1:
            raise ValueError("vocab_size, num_classes, d_model, n_heads, n_layers and max_len must be >= 1")
        self.max_len = max_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff or 4 * d_model, dropout) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes, bias=head_bias)

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        """Features at the last position (the input of ``head``), shape (n, d_model)."""
        if tokens.ndim != 2 or tokens.shape[1] > self.max_len:
            raise ValueError(f"tokens must be (n, t <= {self.max_len}), got {tuple(tokens.shape)}")
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x[:, -1])

    def forward_with_features(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.features(tokens)
        return self.head(h), h

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(tokens))
