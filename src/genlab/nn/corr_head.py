"""A projection head on frozen per-pixel backbone features for semantic correspondence (the role of the GeoAware-SC
aggregation network that *Jamais Vu* trains): a 1x1 input projection, residual blocks of dilated 3x3 convolutions
that add image context (plus one globally pooled context vector), and a 1x1 read-out to unit-norm descriptors. Two
coordinate channels (CoordConv) stand in for the positional information a ViT's patch features carry. Plus the
supervised keypoint loss of GeoAware-SC: a symmetric InfoNCE ("CLIP") loss between the two images' keypoint
features, and a dense keypoint-to-image InfoNCE.

:class:`StackedCorrHead` runs M independent heads as one module (a leading model dimension in every weight, grouped
convolutions), and the losses take an optional leading model dimension and return one loss per model, so several
heads (seeds, arms) train side by side at the cost of one call per layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


class CorrHead(nn.Module):
    def __init__(self, in_dim: int, out_dim: int = 32, width: int = 48, dilations: tuple[int, ...] = (1, 2, 4),
                 coords: bool = True, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.coords = coords
        self.inp = nn.Conv2d(in_dim + 2 * coords, width, 1)
        self.blocks = nn.ModuleList(nn.Conv2d(width, width, 3, padding=d, dilation=d) for d in dilations)
        self.context = nn.Linear(width, width)  # global context: which way the object faces, its extent
        self.out = nn.Conv2d(width, out_dim, 1)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        if generator is not None:  # deterministic init from the caller's stream (weights *and* biases: the
            # default init draws from torch's global RNG, which would make training depend on what ran before)
            for layer in (self.inp, *self.blocks, self.context, self.out):
                bound = 1 / math.sqrt(layer.weight[0].numel())
                with torch.no_grad():
                    for p in (layer.weight, layer.bias):
                        p.copy_(torch.rand(p.shape, generator=generator) * 2 * bound - bound)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        """feats (B, H, W, D) -> unit-norm descriptors (B, H, W, out_dim)."""
        x = feats.permute(0, 3, 1, 2)
        if self.coords:
            b, _, h, w = x.shape
            ys = torch.linspace(-1, 1, h, device=x.device, dtype=x.dtype).view(1, 1, h, 1).expand(b, 1, h, w)
            xs = torch.linspace(-1, 1, w, device=x.device, dtype=x.dtype).view(1, 1, 1, w).expand(b, 1, h, w)
            x = torch.cat([x, xs, ys], dim=1)
        h = F.relu(self.inp(x))
        for i, conv in enumerate(self.blocks):
            h = h + F.relu(conv(h))
            if i == 0:  # a pooled summary of coordinate-aware features is not mirror-invariant: it can tell sides
                h = h + F.relu(self.context(h.mean(dim=(2, 3))))[:, :, None, None]
        return F.normalize(self.out(h), dim=1).permute(0, 2, 3, 1)


class StackedCorrHead(nn.Module):
    """M independent :class:`CorrHead` s as one module: every weight has a leading model dimension and the
    convolutions run as one grouped convolution (``groups=M``), so M heads cost one call per layer. Built from
    (and unstacked back into) plain heads, so each keeps its own initialisation; the forward is the plain one per
    model. ``feats`` (M, B, H, W, D) -> unit-norm descriptors (M, B, H, W, out_dim)."""

    def __init__(self, heads: list[CorrHead], conv_dtype: torch.dtype | None = None) -> None:
        super().__init__()
        first = heads[0]
        self.conv_dtype = conv_dtype  # e.g. torch.bfloat16: the 3x3 convolutions in that precision (weights and
        # gradients stay float32); None = the input's dtype
        self.coords, self.models = first.coords, len(heads)
        self.dilations = tuple(conv.dilation[0] for conv in first.blocks)
        self.in_dim = first.inp.in_channels - 2 * first.coords
        self.width, self.out_dim = first.inp.out_channels, first.out.out_channels

        def stack(get: Callable[[CorrHead], torch.Tensor]) -> nn.Parameter:
            return nn.Parameter(torch.stack([get(h).detach() for h in heads]).clone())

        self.inp_w, self.inp_b = stack(lambda h: h.inp.weight), stack(lambda h: h.inp.bias)
        self.block_w = nn.ParameterList(stack(lambda h, i=i: h.blocks[i].weight) for i in range(len(self.dilations)))
        self.block_b = nn.ParameterList(stack(lambda h, i=i: h.blocks[i].bias) for i in range(len(self.dilations)))
        self.ctx_w, self.ctx_b = stack(lambda h: h.context.weight), stack(lambda h: h.context.bias)
        self.out_w, self.out_b = stack(lambda h: h.out.weight), stack(lambda h: h.out.bias)
        self.logit_scale = stack(lambda h: h.logit_scale)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        m, b, h, w, d = feats.shape
        w_in = self.inp_w.flatten(2)  # (M, width, D [+ 2])
        # activations live as (B, H, W, M * width): channels-last, so the grouped 3x3 convolutions (groups=M) read
        # them without a copy; the 1x1 layers are per-model matrix products (einsum)
        z = torch.einsum("mbhwd,mod->bhwmo", feats, w_in[..., :d])
        if self.coords:
            ys = torch.linspace(-1, 1, h, device=feats.device, dtype=feats.dtype).view(h, 1).expand(h, w)
            xs = torch.linspace(-1, 1, w, device=feats.device, dtype=feats.dtype).view(1, w).expand(h, w)
            z = z + torch.einsum("hwc,moc->hwmo", torch.stack([xs, ys], dim=-1), w_in[..., d:])
        z = F.relu(z + self.inp_b).reshape(b, h, w, m * self.width)
        for i, dil in enumerate(self.dilations):
            dt = self.conv_dtype or z.dtype
            conv = F.conv2d(z.permute(0, 3, 1, 2).to(dt), self.block_w[i].flatten(0, 1).to(dt),
                            self.block_b[i].flatten().to(dt), padding=dil, dilation=dil, groups=m)
            z = z + F.relu(conv.permute(0, 2, 3, 1).to(z.dtype))
            if i == 0:  # the pooled context vector, per model
                pooled = z.mean(dim=(1, 2)).view(b, m, self.width)
                ctx = torch.einsum("bmi,moi->bmo", pooled, self.ctx_w) + self.ctx_b
                z = z + F.relu(ctx).reshape(b, 1, 1, m * self.width)
        out = torch.einsum("bhwmc,moc->mbhwo", z.view(b, h, w, m, self.width), self.out_w.flatten(2))
        return F.normalize(out + self.out_b[:, None, None, None, :], dim=-1)

    def unstack(self) -> list[CorrHead]:
        """The M plain heads (copies of the current weights)."""
        heads = []
        for k in range(self.models):
            head = CorrHead(self.in_dim, self.out_dim, self.width, self.dilations, self.coords)
            with torch.no_grad():
                head.inp.weight.copy_(self.inp_w[k])
                head.inp.bias.copy_(self.inp_b[k])
                for conv, cw, cb in zip(head.blocks, self.block_w, self.block_b, strict=True):
                    conv.weight.copy_(cw[k])
                    conv.bias.copy_(cb[k])
                head.context.weight.copy_(self.ctx_w[k])
                head.context.bias.copy_(self.ctx_b[k])
                head.out.weight.copy_(self.out_w[k])
                head.out.bias.copy_(self.out_b[k])
                head.logit_scale.copy_(self.logit_scale[k])
            heads.append(head.to(self.inp_w.device))
        return heads


def _scale(logit_scale: torch.Tensor) -> torch.Tensor:
    """exp(logit scale), shaped to broadcast over (..., P, K, N) logits (``logit_scale`` () or per model (...))."""
    return logit_scale.exp()[..., None, None, None]


def keypoint_clip_loss(f1: torch.Tensor, f2: torch.Tensor, valid: torch.Tensor, logit_scale: torch.Tensor
                       ) -> torch.Tensor:
    """Symmetric InfoNCE between keypoint features of image 1 and image 2 of each pair: f1, f2 (..., P, K, d) unit
    vectors, valid (..., P, K) = visible in both. Each valid keypoint must pick its partner among the pair's valid
    keypoints. Mean over valid keypoints, one loss per leading index (``...``: e.g. stacked models, each with its
    own ``logit_scale`` (...))."""
    logits = _scale(logit_scale) * f1 @ f2.transpose(-1, -2)  # (..., P, K, K)
    pair_ok = valid.unsqueeze(-2) & valid.unsqueeze(-1)
    logits = logits.masked_fill(~pair_ok, -1e4)
    k = f1.shape[-2]
    target = torch.arange(k, device=f1.device).expand(valid.shape).reshape(-1)
    ce12 = F.cross_entropy(logits.reshape(-1, k), target, reduction="none").view(valid.shape)
    ce21 = F.cross_entropy(logits.transpose(-1, -2).reshape(-1, k), target, reduction="none").view(valid.shape)
    w = valid.to(ce12.dtype)
    return ((ce12 + ce21) / 2 * w).sum((-1, -2)) / w.sum((-1, -2)).clamp(min=1.0)


def keypoint_dense_loss(query: torch.Tensor, trg_desc: torch.Tensor, trg_pix: torch.Tensor, valid: torch.Tensor,
                        trg_mask: torch.Tensor, logit_scale: torch.Tensor) -> torch.Tensor:
    """Dense InfoNCE: each valid source keypoint feature (..., P, K, d) must pick its true target pixel ``trg_pix``
    (..., P, K) among all object pixels of the target (descriptors (..., P, HW, d), mask (..., P, HW)). This trains
    localisation against the whole image, the job of the dense / flow objectives of supervised SC heads. One loss
    per leading index."""
    logits = _scale(logit_scale) * query @ trg_desc.transpose(-1, -2)  # (..., P, K, HW)
    logits = logits.masked_fill(~trg_mask.unsqueeze(-2), -1e4)
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), trg_pix.reshape(-1), reduction="none")
    w = valid.to(ce.dtype)
    return (ce.view(valid.shape) * w).sum((-1, -2)) / w.sum((-1, -2)).clamp(min=1.0)
