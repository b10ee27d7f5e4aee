"""Keypoint-transfer metrics for semantic correspondence: nearest-neighbour matching of per-pixel features and
PCK@alpha (the fraction of transferred keypoints within ``alpha * max(bbox height, bbox width)`` of the truth,
with the target object's bounding box, the SPair-71k convention).

Shapes: features (P, H, W, d) per image of a pair side; keypoints (P, K, 3) as (col, row, visible) in pixel
units, the centre of pixel (r, c) being (c + 0.5, r + 0.5). Everything is torch and vectorised over pairs.
"""

from __future__ import annotations

import torch


def bbox_size(mask: torch.Tensor) -> torch.Tensor:
    """max(height, width) in pixels of each mask's bounding box, (P, H, W) -> (P,) (0 for an empty mask)."""
    rows, cols = mask.any(dim=2), mask.any(dim=1)

    def extent(hit: torch.Tensor) -> torch.Tensor:
        idx = torch.arange(hit.shape[1], device=hit.device).expand_as(hit)
        first = torch.where(hit, idx, hit.shape[1]).min(dim=1).values
        last = torch.where(hit, idx, -1).max(dim=1).values
        return (last - first + 1).clamp(min=0)

    return torch.maximum(extent(rows), extent(cols)).to(torch.float32)


def keypoint_pixels(kps: torch.Tensor, size: int) -> torch.Tensor:
    """Flat pixel index (P, K) of each keypoint (col, row) on a ``size x size`` grid."""
    col = kps[..., 0].floor().long().clamp(0, size - 1)
    row = kps[..., 1].floor().long().clamp(0, size - 1)
    return row * size + col


def transfer_keypoints(src_feat: torch.Tensor, trg_feat: torch.Tensor, src_kps: torch.Tensor,
                       trg_mask: torch.Tensor) -> torch.Tensor:
    """Transfer source keypoints to the target by cosine nearest neighbour among the target's object pixels.
    Returns predicted (col, row) pixel centres, (P, K, 2)."""
    p, h, w, d = src_feat.shape
    src = torch.nn.functional.normalize(src_feat.reshape(p, h * w, d), dim=-1)
    trg = torch.nn.functional.normalize(trg_feat.reshape(p, h * w, d), dim=-1)
    query = torch.gather(src, 1, keypoint_pixels(src_kps, w).unsqueeze(-1).expand(-1, -1, d))
    sim = query @ trg.transpose(1, 2)  # (P, K, HW)
    sim = sim.masked_fill(~trg_mask.reshape(p, 1, h * w), float("-inf"))
    best = sim.argmax(dim=-1)
    return torch.stack([best % w, best // w], dim=-1).to(torch.float32) + 0.5


def pck_correct(pred: torch.Tensor, trg_kps: torch.Tensor, valid: torch.Tensor, trg_bbox: torch.Tensor,
                alpha: float) -> torch.Tensor:
    """(P, K) bool: a valid keypoint whose prediction lies within ``alpha * bbox`` pixels of the truth."""
    err = torch.linalg.vector_norm(pred - trg_kps[..., :2], dim=-1)
    return valid & (err <= alpha * trg_bbox[:, None])


def pck(correct: torch.Tensor, valid: torch.Tensor) -> float:
    """PCK pooled over keypoints (the fraction of valid keypoints that are correct); nan without any."""
    n = int(valid.sum())
    return float(correct.sum()) / n if n else float("nan")
