"""A projection head on frozen per-pixel backbone features for semantic correspondence (the role of the GeoAware-SC
aggregation network that *Jamais Vu* trains): a 1x1 input projection, residual blocks of dilated 3x3 convolutions
that add image context (plus one globally pooled context vector), and a 1x1 read-out to unit-norm descriptors. Two
coordinate channels (CoordConv) stand in for the positional information a ViT's patch features carry. Plus the
supervised keypoint loss of GeoAware-SC: a symmetric InfoNCE ("CLIP") loss between the two images' keypoint
features.
"""

from __future__ import annotations

import math

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


def keypoint_clip_loss(f1: torch.Tensor, f2: torch.Tensor, valid: torch.Tensor, logit_scale: torch.Tensor
                       ) -> torch.Tensor:
    """Symmetric InfoNCE between keypoint features of image 1 and image 2 of each pair: f1, f2 (P, K, d) unit
    vectors, valid (P, K) = visible in both. Each valid keypoint must pick its partner among the pair's valid
    keypoints. Mean over valid keypoints."""
    logits = logit_scale.exp() * f1 @ f2.transpose(1, 2)  # (P, K, K)
    pair_ok = valid.unsqueeze(1) & valid.unsqueeze(2)
    logits = logits.masked_fill(~pair_ok, -1e4)
    target = torch.arange(f1.shape[1], device=f1.device).expand(valid.shape)
    ce12 = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="none")
    ce21 = F.cross_entropy(logits.transpose(1, 2).reshape(-1, logits.shape[-1]), target.reshape(-1),
                           reduction="none")
    w = valid.reshape(-1).to(ce12.dtype)
    return ((ce12 + ce21) / 2 * w).sum() / w.sum().clamp(min=1.0)


def keypoint_dense_loss(query: torch.Tensor, trg_desc: torch.Tensor, trg_pix: torch.Tensor, valid: torch.Tensor,
                        trg_mask: torch.Tensor, logit_scale: torch.Tensor) -> torch.Tensor:
    """Dense InfoNCE: each valid source keypoint feature (P, K, d) must pick its true target pixel ``trg_pix``
    (P, K) among all object pixels of the target (descriptors (P, HW, d), mask (P, HW)). This trains
    localisation against the whole image, the job of the dense / flow objectives of supervised SC heads."""
    logits = logit_scale.exp() * query @ trg_desc.transpose(1, 2)  # (P, K, HW)
    logits = logits.masked_fill(~trg_mask.unsqueeze(1), -1e4)
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), trg_pix.reshape(-1), reduction="none")
    w = valid.reshape(-1).to(ce.dtype)
    return (ce * w).sum() / w.sum().clamp(min=1.0)
