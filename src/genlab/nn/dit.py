"""A small diffusion transformer (DiT, Peebles & Xie 2023) with optional local attention windows.

- patch embedding (a strided convolution; 2-D images (C, H, W) or 1-D signals (L,) on a 1 x L grid),
- learned or fixed 2-D sin-cos position embeddings,
- adaLN-Zero blocks: the conditioning c = emb(t) regresses shift / scale / gate for the attention and MLP
  branches, gates initialised to zero so every block starts as the identity,
- a per-layer boolean attention mask (True = may attend). :func:`window_mask` restricts each token to the
  k x k (Chebyshev) neighbourhood of its grid position, as in An et al. (arXiv 2410.21273); a global layer holds
  an all-True mask, so masked and unmasked models have identical parameters and code paths,
- :func:`attention_distance`: the mean spatial distance between a query token and the tokens it attends to.

``DiT.forward(x, t)`` takes flat inputs (B, prod(shape)) and t (B,) and returns the same shape, so it plugs into
the flow-matching trainer of :mod:`genlab.training.flow_matching` and the samplers of :mod:`genlab.nn.flow`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from genlab.nn.flow import EnsembleLinear, TimeEmbedding, VelocityFn


def grid_positions(grid: tuple[int, int]) -> torch.Tensor:
    """(T, 2) integer (row, col) positions of the tokens of a row-major ``grid``."""
    h, w = grid
    r, c = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return torch.stack([r.flatten(), c.flatten()], 1)


def window_mask(grid: tuple[int, int], k: int) -> torch.Tensor:
    """(T, T) bool: token i may attend to token j iff ||r_i - r_j||_inf <= k // 2 (k >= 1, odd k is the usual
    choice). Every token sees itself; with k >= 2 * max(grid) - 1 the mask is all True."""
    if k < 1:
        raise ValueError(f"window size k must be >= 1, got {k}")
    p = grid_positions(grid)
    cheb = (p[:, None, :] - p[None, :, :]).abs().max(-1).values
    return cheb <= k // 2


def random_mask_like(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A (T, T) bool mask with the same number of True entries in every row as ``mask`` and the diagonal kept,
    the other entries of each row at uniformly random positions: a density-matched, non-local control."""
    t = mask.shape[0]
    eye = torch.eye(t, dtype=torch.bool)
    scores = torch.rand(t, t, generator=generator).masked_fill(eye, -1.0)  # self first, then a random order
    order = scores.argsort(dim=1)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(t).expand(t, t).contiguous())
    return rank < mask.sum(1, keepdim=True)


def token_distances(grid: tuple[int, int]) -> torch.Tensor:
    """(T, T) Euclidean distances between token grid positions (in patch units)."""
    p = grid_positions(grid).float()
    return torch.cdist(p, p)


def attention_distance(attn: torch.Tensor, dist: torch.Tensor) -> torch.Tensor:
    """Mean attended distance sum_j a_ij d_ij, averaged over batch, heads and queries: ``attn`` (B, H, T, T)
    rows summing to 1, ``dist`` (T, T). Returns a 0-d tensor."""
    return (attn * dist).sum(-1).mean()


def sincos_2d(grid: tuple[int, int], dim: int) -> torch.Tensor:
    """Fixed 2-D sin-cos position embedding (T, dim), half the channels for rows and half for columns."""
    if dim % 4:
        raise ValueError(f"sin-cos embedding needs dim divisible by 4, got {dim}")
    p = grid_positions(grid).float()
    q = dim // 4
    omega = 1.0 / 10000 ** (torch.arange(q) / q)
    out = [f(p[:, a, None] * omega[None]) for a in (0, 1) for f in (torch.sin, torch.cos)]
    return torch.cat(out, 1)


def _lin(members: int, d_in: int, d_out: int, zero: bool = False) -> EnsembleLinear:
    lin = EnsembleLinear(members, d_in, d_out)
    if zero:
        nn.init.zeros_(lin.weight)
        nn.init.zeros_(lin.bias)
    return lin


def _elin(lin: EnsembleLinear, x: torch.Tensor) -> torch.Tensor:
    """Apply an ensemble linear map to x (E, ..., in)."""
    shape = x.shape
    return lin(x.reshape(shape[0], -1, shape[-1])).reshape(*shape[:-1], -1)


class Attention(nn.Module):
    """Multi-head self-attention with a bool mask (E, T, T) per ensemble member: an explicit softmax when the
    weights are asked for, else torch's fused ``scaled_dot_product_attention`` (same result up to float rounding,
    ~2x faster on CPU with its backward)."""

    def __init__(self, members: int, dim: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        self.heads = heads
        self.qkv = _lin(members, dim, 3 * dim)
        self.proj = _lin(members, dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, weights: bool = True
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        e, b, t, d = x.shape
        q, k, v = _elin(self.qkv, x).reshape(e, b, t, 3, self.heads, d // self.heads).permute(3, 0, 1, 4, 2, 5)
        if not weights:
            h = self.heads
            full = mask[:, None, None].expand(e, b, 1, t, t).reshape(e * b, 1, t, t)
            out = nn.functional.scaled_dot_product_attention(
                q.reshape(e * b, h, t, -1), k.reshape(e * b, h, t, -1), v.reshape(e * b, h, t, -1), attn_mask=full)
            return _elin(self.proj, out.reshape(e, b, h, t, -1).transpose(2, 3).reshape(e, b, t, d)), None
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)  # (E, B, H, T, T)
        attn = torch.softmax(scores.masked_fill(~mask[:, None, None], -torch.inf), dim=-1)
        out = (attn @ v).transpose(2, 3).reshape(e, b, t, d)
        return _elin(self.proj, out), attn


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale[:, :, None]) + shift[:, :, None]


class DiTBlock(nn.Module):
    """adaLN-Zero transformer block with a registered per-member attention mask buffer (E, T, T)."""

    def __init__(self, members: int, dim: int, heads: int, mlp_ratio: float, tokens: int):
        super().__init__()
        self.dim = dim
        self.attn = Attention(members, dim, heads)
        hidden = int(dim * mlp_ratio)
        self.fc1, self.fc2 = _lin(members, dim, hidden), _lin(members, hidden, dim)
        self.ada = _lin(members, dim, 6 * dim, zero=True)
        self.register_buffer("mask", torch.ones(members, tokens, tokens, dtype=torch.bool))

    def forward(self, x: torch.Tensor, c: torch.Tensor, weights: bool = True
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        s1, sc1, g1, s2, sc2, g2 = _elin(self.ada, nn.functional.silu(c)).chunk(6, dim=-1)
        h = _modulate(nn.functional.layer_norm(x, (self.dim,), eps=1e-6), s1, sc1)
        a, attn = self.attn(h, self.mask, weights)
        x = x + g1[:, :, None] * a
        h = _modulate(nn.functional.layer_norm(x, (self.dim,), eps=1e-6), s2, sc2)
        h = _elin(self.fc2, nn.functional.gelu(_elin(self.fc1, h), approximate="tanh"))
        return x + g2[:, :, None] * h, attn


class DiT(nn.Module):
    """Pixel-space DiT for flat inputs. ``shape`` (C, H, W) or (L,); ``patch`` divides H, W (or L).
    ``window``/``window_layers``: a k x k attention window in the listed block indices (others global).

    ``members`` > 1 builds that many independent DiTs evaluated side by side (batched matmuls; the tiny CPU
    models are dispatch-bound, so this is several times faster than a loop): inputs are then (E, B, D) and t
    (E, B), and :meth:`set_window` can give each member its own windows. With ``members=1`` inputs are (B, D)."""

    def __init__(
        self,
        shape: Sequence[int],
        patch: int = 1,
        dim: int = 64,
        depth: int = 4,
        heads: int = 4,
        mlp_ratio: float = 2.0,
        pos: str = "learned",
        window: int | None = None,
        window_layers: Sequence[int] = (),
        members: int = 1,
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        shape = tuple(int(s) for s in shape)
        if len(shape) == 1:
            c, h, w, ph = 1, 1, shape[0], 1
        elif len(shape) == 3:
            (c, h, w), ph = shape, patch
        else:
            raise ValueError(f"shape must be (C, H, W) or (L,), got {shape}")
        if h % ph or w % patch:
            raise ValueError(f"patch {patch} must divide the input size {shape}")
        if pos not in ("learned", "sincos"):
            raise ValueError(f"pos must be 'learned' or 'sincos', got {pos!r}")
        if members < 1:
            raise ValueError(f"members must be >= 1, got {members}")
        self.shape, self.c, self.h, self.w, self.ph, self.pw = shape, c, h, w, ph, patch
        self.members, self.dim = members, dim
        self.grid = (h // ph, w // patch)
        tokens = self.grid[0] * self.grid[1]
        gen_state = torch.random.get_rng_state()
        if generator is not None:
            torch.manual_seed(int(torch.randint(2**62, (1,), generator=generator)))
        self.embed = _lin(members, c * ph * patch, dim)
        if pos == "learned":
            self.pos = nn.Parameter(0.02 * torch.randn(members, 1, tokens, dim))
        else:
            self.register_buffer("pos", sincos_2d(self.grid, dim)[None, None].expand(members, 1, -1, -1).clone())
        self.temb = TimeEmbedding(dim)
        self.t1, self.t2 = _lin(members, dim, dim), _lin(members, dim, dim)
        self.blocks = nn.ModuleList(DiTBlock(members, dim, heads, mlp_ratio, tokens) for _ in range(depth))
        self.final_ada = _lin(members, dim, 2 * dim, zero=True)
        self.out = _lin(members, dim, c * ph * patch, zero=True)
        if generator is not None:
            torch.random.set_rng_state(gen_state)
        self.set_window(window, window_layers)

    def set_window(self, window: int | None, layers: Sequence[int] = (), member: int | None = None) -> None:
        """Restrict attention to a ``window`` x ``window`` neighbourhood in blocks ``layers`` (None: global), for
        every member or only ``member``."""
        bad = [i for i in layers if not 0 <= i < len(self.blocks)]
        if window is not None and bad:
            raise ValueError(f"window_layers {bad} out of range for depth {len(self.blocks)}")
        self.set_mask(None if window is None else window_mask(self.grid, window), layers, member)

    def set_mask(self, mask: torch.Tensor | None, layers: Sequence[int] = (), member: int | None = None) -> None:
        """Use the (T, T) bool ``mask`` in blocks ``layers`` (None: global attention everywhere), for every member
        or only ``member``; the other blocks attend globally."""
        sel = slice(None) if member is None else slice(member, member + 1)
        for i, blk in enumerate(self.blocks):
            blk.mask[sel] = mask if mask is not None and i in set(layers) else True

    def _patchify(self, x: torch.Tensor) -> torch.Tensor:
        e, b = x.shape[:2]
        gh, gw = self.grid
        img = x.reshape(e, b, self.c, gh, self.ph, gw, self.pw)
        return img.permute(0, 1, 3, 5, 2, 4, 6).reshape(e, b, gh * gw, self.c * self.ph * self.pw)

    def _forward(self, x: torch.Tensor, t: torch.Tensor, weights: bool = True
                 ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        single = x.ndim == 2
        if single:
            if self.members != 1:
                raise ValueError("an ensemble DiT takes x of shape (E, B, D); use member(i) for one model")
            x, t = x[None], t[None]
        e, b = x.shape[:2]
        z = _elin(self.embed, self._patchify(x)) + self.pos
        cond = _elin(self.t2, nn.functional.silu(_elin(self.t1, self.temb(t.reshape(-1)).reshape(e, b, -1))))
        attns = []
        for blk in self.blocks:
            z, a = blk(z, cond, weights)
            if a is not None:
                attns.append(a[0] if single else a)
        shift, scale = _elin(self.final_ada, nn.functional.silu(cond)).chunk(2, dim=-1)
        y = _elin(self.out, _modulate(nn.functional.layer_norm(z, (self.dim,), eps=1e-6), shift, scale))
        gh, gw = self.grid
        y = y.reshape(e, b, gh, gw, self.c, self.ph, self.pw).permute(0, 1, 4, 2, 5, 3, 6).reshape(e, b, -1)
        return (y[0] if single else y), attns

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self._forward(x, t, weights=False)[0]

    def member(self, i: int) -> VelocityFn:
        """No-grad velocity function of member ``i`` on flat batches (B, D), t (B,) (evaluates every member on
        the same batch and keeps row i: simple, and cheap at these sizes)."""

        @torch.no_grad()
        def fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            e = self.members
            return self(x[None].expand(e, -1, -1), t[None].expand(e, -1))[i]

        return fn

    @torch.no_grad()
    def attention_maps(self, x: torch.Tensor, t: torch.Tensor) -> list[torch.Tensor]:
        """Per-block attention weights, (B, H, T, T) for one member or (E, B, H, T, T) for an ensemble."""
        return self._forward(x, t)[1]

    @torch.no_grad()
    def attention_distances(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Mean attended spatial distance (patch units), shape (depth,) for one member or (E, depth)."""
        dist = token_distances(self.grid).to(x.device)
        maps = self.attention_maps(x, t)
        per = [(a * dist).sum(-1).flatten(-3).mean(-1) for a in maps]
        return torch.stack(per, -1)

    def attention_mass(self, x: torch.Tensor, t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean attention weight that falls inside the (T, T) bool ``mask`` (e.g. a k x k window), per layer:
        shape (depth,) for one member or (E, depth). 1 means all attention is inside."""
        maps = self.attention_maps(x, t)
        mask = mask.to(x.device)
        return torch.stack([(a * mask).sum(-1).flatten(-3).mean(-1) for a in maps], -1)
