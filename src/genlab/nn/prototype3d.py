"""The 3D-aware category prototype of *Jamais Vu* (Mariotti et al., arXiv 2506.08220), reconstructed from the
paper and checked against the official code (VICO-UoE/JamaisVu: ``model_utils/category_prototype.py``,
``utils/utils_losses.py``); our own implementation.

Per category a learnable prototype holds K 3D keypoint positions (initialised at ~0), K keypoint features and a
shared temperature. With a point map (3D per pixel, from monocular depth in the paper; known here):

* **keypoint location**: the image's visible keypoints, lifted to 3D, are aligned to the prototype keypoints by a
  similarity transform (Kabsch with scale, no gradient); the smooth-L1 distance of the aligned points to the
  prototype trains the prototype positions;
* **keypoint feature**: each visible keypoint's feature is classified to its prototype slot (cosine similarity
  times exp(temperature), cross-entropy, weight 0.3);
* **dense geometry** (weights 1 and 1): object points get soft canonical coordinates (softmax over their
  similarity to the prototype features, times the detached prototype positions); their local neighbourhoods,
  taken in the observed cloud (greedy geodesic growth) and in canonical space (nearest neighbours), must agree
  with the observed 3D neighbourhoods up to a per-neighbourhood similarity transform.

:func:`kabsch` is the batched weighted Umeyama/Kabsch solver (``torch.linalg.svd``; the sign correction keeps
det R = +1, never a reflection). Nothing here is a training loop.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def kabsch(src: torch.Tensor, trg: torch.Tensor, weight: torch.Tensor | None = None, scale: bool = True,
           min_scale: float | None = None, eps: float = 1e-9) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The similarity transform ``y = s * x @ R.T + t`` that best maps ``src`` onto ``trg`` in weighted least
    squares. src, trg: (..., n, 3); weight (..., n) (e.g. a visibility mask). Returns s (...), R (..., 3, 3) with
    det R = +1, t (..., 3). ``scale=False`` fixes s = 1; ``min_scale`` clips s from below (the paper's code uses
    1, which stops a collapsing target from pulling everything to a point)."""
    if weight is None:
        weight = torch.ones(src.shape[:-1], dtype=src.dtype, device=src.device)
    w = weight.unsqueeze(-1)
    total = w.sum(-2, keepdim=True).clamp(min=eps)
    mu_s, mu_t = (w * src).sum(-2, keepdim=True) / total, (w * trg).sum(-2, keepdim=True) / total
    xs, xt = (src - mu_s) * w, trg - mu_t
    cov = xt.transpose(-1, -2) @ xs  # sum_i w_i y_i x_i^T, (..., 3, 3)
    u, sig, vh = torch.linalg.svd(cov)
    d = torch.sign(torch.linalg.det(u @ vh))
    d = torch.where(d == 0, torch.ones_like(d), d)
    diag = torch.ones_like(sig)
    diag[..., -1] = d
    rot = u @ torch.diag_embed(diag) @ vh
    if scale:
        var = (xs * (src - mu_s)).sum((-1, -2))
        s = (sig * diag).sum(-1) / var.clamp(min=eps)
        if min_scale is not None:
            s = s.clamp(min=min_scale)
    else:
        s = torch.ones(src.shape[:-2], dtype=src.dtype, device=src.device)
    t = mu_t.squeeze(-2) - s.unsqueeze(-1) * (mu_s @ rot.transpose(-1, -2)).squeeze(-2)
    return s, rot, t


def apply_similarity(s: torch.Tensor, rot: torch.Tensor, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``s * x @ R.T + t`` for x (..., n, 3)."""
    return s[..., None, None] * (x @ rot.transpose(-1, -2)) + t.unsqueeze(-2)


def _smooth_dist(a: torch.Tensor, b: torch.Tensor, beta: float = 1e-3) -> torch.Tensor:
    """Smooth-L1 of the Euclidean distance between points (..., 3), elementwise."""
    dist = torch.linalg.vector_norm(a - b, dim=-1)
    return F.smooth_l1_loss(dist, torch.zeros_like(dist), beta=beta, reduction="none")


def _sane(keep: torch.Tensor, s: torch.Tensor, rot: torch.Tensor, t: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The similarity (s, R, t) where ``keep`` (and finite), else the identity."""
    keep = keep & torch.isfinite(s) & torch.isfinite(rot).all((-1, -2)) & torch.isfinite(t).all(-1)
    eye = torch.eye(3, dtype=rot.dtype, device=rot.device)
    return (torch.where(keep, s, torch.ones_like(s)), torch.where(keep[..., None, None], rot, eye),
            torch.where(keep[..., None], t, torch.zeros_like(t)))


def _aligned_offsets_loss(free: torch.Tensor, fixed: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Neighbourhood offsets (..., B, N, k, 3): align ``fixed`` onto ``free`` by a similarity (no gradient,
    scale >= 1), normalise both by the larger neighbourhood radius, smooth-L1 of their distance, mean over
    (B, N, k) (one loss per leading index). Gradients flow into ``free`` (and into ``fixed`` through the fixed
    transform, where it has any)."""
    with torch.no_grad():
        s, rot, t = _sane(torch.ones(free.shape[:-2], dtype=torch.bool, device=free.device),
                          *kabsch(fixed, free, min_scale=1.0))
    aligned = apply_similarity(s, rot, t, fixed)
    radius = torch.maximum(torch.linalg.vector_norm(free, dim=-1).amax(-1),
                           torch.linalg.vector_norm(aligned, dim=-1).amax(-1)).detach()[..., None, None] + eps
    return _smooth_dist(free / radius, aligned / radius).flatten(-3).mean(-1)


def _offsets(x: torch.Tensor, nbr: torch.Tensor) -> torch.Tensor:
    """x (..., N, 3), nbr (..., N, k) -> offsets x[nbr] - x, (..., N, k, 3)."""
    n, k = nbr.shape[-2], nbr.shape[-1]
    gathered = torch.gather(x.unsqueeze(-3).expand(*x.shape[:-2], n, n, 3), -2,
                            nbr.unsqueeze(-1).expand(*nbr.shape[:-1], k, 3))
    return gathered - x.unsqueeze(-2)


def _per_category(param: torch.Tensor, cat: torch.Tensor, ndim: int) -> torch.Tensor:
    """``param[cat]`` for a plain prototype tensor (C, ...) of ``ndim`` dims and cat (B,); for stacked models
    (M, C, ...) and cat (M, B), each model's own rows."""
    if param.dim() == ndim:
        return param[cat]
    model = torch.arange(param.shape[0], device=cat.device).view(-1, *([1] * (cat.dim() - 1)))
    return param[model, cat]


def geodesic_neighbours(points: torch.Tensor, k: int) -> torch.Tensor:
    """(B, N, k) neighbourhoods grown greedily from each point: each step adds the point closest to the set
    chosen so far (the first is the point itself). This follows the surface instead of jumping across gaps,
    the approximation of geodesic neighbourhoods the paper's code uses."""
    b, n, _ = points.shape
    dist = torch.cdist(points, points)
    chosen = torch.zeros(b, n, n, dtype=torch.bool, device=points.device)
    idx = torch.arange(n, device=points.device).expand(b, n)
    out = [idx]
    chosen.scatter_(2, idx.unsqueeze(-1), True)
    reach = dist.clone()  # distance from each point's set to every point
    for _ in range(1, k):
        nxt = reach.masked_fill(chosen, float("inf")).argmin(-1)
        out.append(nxt)
        chosen.scatter_(2, nxt.unsqueeze(-1), True)
        reach = torch.minimum(reach, torch.gather(dist, 1, nxt.unsqueeze(-1).expand(b, n, n)))
    return torch.stack(out, dim=-1)


class CategoryPrototype(nn.Module):
    """Per-category learnable 3D keypoints (C, K, 3), keypoint features (C, K, dim) and a temperature.

    :meth:`stack` joins M prototypes into one whose parameters have a leading model dimension ((M, C, K, 3),
    (M, C, K, dim), (M,)); every loss then takes inputs with a leading M (``cat`` (M, B)) and returns M losses,
    model m's loss computed only from model m's inputs and parameters."""

    def __init__(self, n_categories: int, n_keypoints: int, dim: int, generator: torch.Generator | None = None
                 ) -> None:
        super().__init__()
        self.kps = nn.Parameter(torch.randn(n_categories, n_keypoints, 3, generator=generator) * 1e-5)
        self.feats = nn.Parameter(torch.randn(n_categories, n_keypoints, dim, generator=generator) / math.sqrt(dim))
        self.log_temp = nn.Parameter(torch.zeros(()))

    @classmethod
    def stack(cls, protos: list[CategoryPrototype]) -> CategoryPrototype:
        """M prototypes of one shape as one stacked prototype (copies of their parameters)."""
        out = cls.__new__(cls)
        nn.Module.__init__(out)
        for name in ("kps", "feats", "log_temp"):
            setattr(out, name, nn.Parameter(torch.stack([getattr(p, name).detach() for p in protos]).clone()))
        return out

    def logits(self, feats: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        """Cosine similarity of features (B, n, dim) to their category's prototype features, x exp(temp): (B, n, K)."""
        proto = F.normalize(_per_category(self.feats, cat, 3), dim=-1)
        return F.normalize(feats, dim=-1) @ proto.transpose(-1, -2) * self.log_temp.exp()[..., None, None, None]

    def location_loss(self, kp3d: torch.Tensor, visible: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        """Lifted keypoints kp3d (B, K, 3) with visibility (B, K): align each image's visible keypoints to the
        prototype (no gradient, scale >= 1), then smooth-L1 to the prototype, normalised by the larger extent.
        Images with fewer than 3 visible keypoints (no similarity) do not count; 0 when none has 3."""
        proto = _per_category(self.kps, cat, 3)
        w = visible.to(kp3d.dtype)
        ok = w.sum(-1) >= 3
        with torch.no_grad():
            s, rot, t = _sane(ok, *kabsch(kp3d, proto.detach(), w, min_scale=1.0))
        aligned = apply_similarity(s, rot, t, kp3d)
        extent = torch.maximum(torch.linalg.vector_norm(proto * w[..., None], dim=-1).amax(-1),
                               torch.linalg.vector_norm(aligned * w[..., None], dim=-1).amax(-1)).detach() + 1e-5
        d = _smooth_dist(aligned / extent[..., None, None], proto / extent[..., None, None])
        w = w * ok[..., None]
        return (d * w).sum((-1, -2)) / w.sum((-1, -2)).clamp(min=1.0)

    def feature_loss(self, kp_feats: torch.Tensor, visible: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        """Cross-entropy classifying each visible keypoint feature (B, K, dim) to its own prototype slot."""
        logits = self.logits(kp_feats, cat)  # (B, K, K)
        k = logits.shape[-1]
        target = torch.arange(k, device=logits.device).expand(visible.shape).reshape(-1)
        ce = F.cross_entropy(logits.reshape(-1, k), target, reduction="none").view(visible.shape)
        w = visible.to(ce.dtype)
        return (ce * w).sum((-1, -2)) / w.sum((-1, -2)).clamp(min=1.0)

    def canonical(self, feats: torch.Tensor, cat: torch.Tensor) -> torch.Tensor:
        """Soft canonical coordinates (B, n, 3) of point features: softmax weights over the prototype
        keypoints times their (detached) 3D positions."""
        return self.logits(feats, cat).softmax(-1) @ _per_category(self.kps, cat, 3).detach()

    def geometry_loss(self, feats: torch.Tensor, points: torch.Tensor, geo_nbr: torch.Tensor, cat: torch.Tensor,
                      k: int) -> torch.Tensor:
        """Dense losses on sampled object points: features (B, N, dim), observed 3D points (B, N, 3) and their
        precomputed geodesic neighbourhoods (B, N, >= k). Object -> prototype: canonical offsets over geodesic
        neighbourhoods must match the aligned observed offsets; prototype -> object: observed offsets over
        canonical nearest neighbours must match the aligned canonical offsets."""
        can = self.canonical(feats, cat)
        forward = _aligned_offsets_loss(_offsets(can, geo_nbr[..., :k]), _offsets(points, geo_nbr[..., :k]))
        with torch.no_grad():
            can_nbr = torch.cdist(can, can).topk(k, largest=False, dim=-1).indices
        backward = _aligned_offsets_loss(_offsets(points, can_nbr), _offsets(can, can_nbr))
        return forward + backward


def farthest_point_sample(points: torch.Tensor, mask: torch.Tensor, n: int, generator: torch.Generator
                          ) -> torch.Tensor:
    """(B, n) indices of ``n`` object points per image chosen by farthest-point sampling over the masked points
    (B, M, 3) / (B, M), from a random start. An image with fewer than ``n`` object points repeats points."""
    b = points.shape[0]
    start = torch.multinomial(mask.to(torch.float32) + 1e-12 * (~mask.any(1, keepdim=True)), 1,
                              generator=generator).squeeze(1)
    chosen = [start]
    dist = torch.linalg.vector_norm(points - points[torch.arange(b), start].unsqueeze(1), dim=-1)
    dist = dist.masked_fill(~mask, float("-inf"))
    for _ in range(1, n):
        nxt = dist.argmax(dim=1)
        chosen.append(nxt)
        step = torch.linalg.vector_norm(points - points[torch.arange(b), nxt].unsqueeze(1), dim=-1)
        dist = torch.minimum(dist, step)
    return torch.stack(chosen, dim=1)
