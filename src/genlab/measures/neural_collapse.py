"""Neural collapse metrics NC1–NC4 (Papyan, Han & Donoho, PNAS 2020) and the NCC clustering measure.

On features ``φ_i ∈ R^d`` (usually the penultimate layer) with labels ``y_i ∈ {0..C-1}``, class means ``μ_c``,
global mean ``μ_G`` (of all samples) and centred means ``μ̃_c = μ_c − μ_G``:

- NC1 (within-class variability collapse): ``Tr(Σ_W Σ_B^†) / C`` with ``Σ_W = mean_i (φ_i − μ_{y_i})(·)ᵀ`` and
  ``Σ_B = mean_c μ̃_c μ̃_cᵀ``.
- NC2 (simplex ETF): ``equinorm`` = std_c ‖μ̃_c‖ / mean_c ‖μ̃_c‖; ``equiangular`` = std of the off-diagonal
  cosines cos(μ̃_c, μ̃_c'); ``max_angle`` = mean_{c≠c'} |cos(μ̃_c, μ̃_c') + 1/(C−1)|. All 0 for a simplex ETF.
- NC3 (self-duality): ``‖W/‖W‖_F − M̃/‖M̃‖_F‖_F²`` with the classifier ``W`` (C×d) and ``M̃`` (C×d) the centred means.
- NC4 (nearest-class-centre decisions): the fraction of samples whose classifier argmax differs from the
  nearest class mean.
- NCC (Han et al., arXiv 2509.17738): ``mean_{c≠c'} (V_c + V_c') / (2 ‖μ_c − μ_c'‖²)``,
  ``V_c = mean_{i∈c} ‖φ_i − μ_c‖²``. Lower means more collapse. Differentiable (usable as a regulariser).

Classes without samples are left out. All functions are vectorised and accept numpy arrays or tensors.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from genlab.measures.flatness import _batches, capture_layer

__all__ = [
    "class_means",
    "collect_features",
    "nc1",
    "nc2",
    "nc3",
    "nc4",
    "ncc",
    "neural_collapse",
    "neural_collapse_metrics",
]


def _prep(features, labels, num_classes: int | None):
    f = torch.as_tensor(features)
    if not f.is_floating_point():
        f = f.double()
    y = torch.as_tensor(labels, device=f.device).long()
    if f.ndim != 2:
        raise ValueError(f"features must be (n, d), got shape {tuple(f.shape)}")
    if y.shape != (f.shape[0],):
        raise ValueError(f"labels must be (n,) = ({f.shape[0]},), got {tuple(y.shape)}")
    if f.shape[0] == 0:
        raise ValueError("no samples")
    if y.min() < 0:
        raise ValueError("labels must be non-negative class indices")
    c = int(y.max()) + 1 if num_classes is None else num_classes
    if int(y.max()) >= c:
        raise ValueError(f"label {int(y.max())} >= num_classes={c}")
    return f, y, c


def class_means(features, labels, num_classes: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Class means (C, d) and class counts (C,) via one index_add (absent classes get mean 0, count 0)."""
    f, y, c = _prep(features, labels, num_classes)
    sums = torch.zeros(c, f.shape[1], dtype=f.dtype, device=f.device).index_add_(0, y, f)
    counts = torch.bincount(y, minlength=c).to(f.dtype)
    return sums / counts.clamp_min(1)[:, None], counts


def _stats(features, labels, num_classes):
    f, y, c = _prep(features, labels, num_classes)
    mu, counts = class_means(f, y, c)
    present = counts > 0
    return f, y, mu, counts, present


def nc1(features, labels, num_classes: int | None = None, rtol: float = 1e-8) -> float:
    """NC1 = Tr(Σ_W Σ_B^†) / C (C = number of classes present). Σ_B^† keeps eigenvalues above rtol·max."""
    f, y, mu, _, present = _stats(features, labels, num_classes)
    f, mu = f.double(), mu.double()
    centred = f - mu[y]
    sigma_w = centred.T @ centred / f.shape[0]
    mt = mu[present] - f.mean(0)
    c = mt.shape[0]
    sigma_b = mt.T @ mt / c
    evals, evecs = torch.linalg.eigh(sigma_b)
    keep = evals > rtol * evals.max().clamp_min(1e-300)
    inv = (evecs[:, keep] / evals[keep]) @ evecs[:, keep].T
    return float(torch.trace(sigma_w @ inv) / c)


def _centred_means(features, labels, num_classes):
    f, _, mu, _, present = _stats(features, labels, num_classes)
    return mu[present] - f.mean(0), present


def nc2(features, labels, num_classes: int | None = None) -> dict[str, float]:
    """NC2: ``equinorm``, ``equiangular`` (std of cosines) and ``max_angle`` (mean |cos + 1/(C−1)|)."""
    mt, _ = _centred_means(features, labels, num_classes)
    mt = mt.double()
    c = mt.shape[0]
    if c < 2:
        raise ValueError("NC2 needs at least two classes with samples")
    norms = mt.norm(dim=1)
    unit = mt / norms.clamp_min(1e-300)[:, None]
    cos = (unit @ unit.T)[~torch.eye(c, dtype=torch.bool, device=mt.device)]
    return {
        "equinorm": float(norms.std(unbiased=False) / norms.mean()),
        "equiangular": float(cos.std(unbiased=False)),
        "max_angle": float((cos + 1.0 / (c - 1)).abs().mean()),
    }


def nc3(features, labels, weight, num_classes: int | None = None) -> float:
    """NC3 = ‖W/‖W‖_F − M̃/‖M̃‖_F‖_F², rows of W restricted to the classes present."""
    mt, present = _centred_means(features, labels, num_classes)
    w = torch.as_tensor(weight, device=mt.device).double()
    if w.ndim != 2 or w.shape[1] != mt.shape[1] or w.shape[0] < present.shape[0]:
        raise ValueError(f"weight must be (C, d={mt.shape[1]}) with C >= {present.shape[0]}, got {tuple(w.shape)}")
    w = w[: present.shape[0]][present]
    mt = mt.double()
    return float(((w / w.norm() - mt / mt.norm()) ** 2).sum())


def nc4(features, labels, logits, num_classes: int | None = None) -> float:
    """NC4: fraction of samples where argmax(logits) differs from the nearest (Euclidean) class mean."""
    f, _, mu, _, present = _stats(features, labels, num_classes)
    lg = torch.as_tensor(logits, device=f.device)
    if lg.ndim != 2 or lg.shape[0] != f.shape[0]:
        raise ValueError(f"logits must be (n, C), got {tuple(lg.shape)}")
    d2 = torch.cdist(f.double(), mu.double()) ** 2
    d2[:, ~present] = float("inf")
    return float((lg.argmax(1) != d2.argmin(1)).double().mean())


def ncc(features, labels, num_classes: int | None = None) -> torch.Tensor:
    """NCC = mean_{c≠c'} (V_c + V_c') / (2‖μ_c − μ_c'‖²) over classes present; a differentiable 0-d tensor."""
    f, y, mu, counts, present = _stats(features, labels, num_classes)
    var = torch.zeros_like(counts).index_add_(0, y, ((f - mu[y]) ** 2).sum(1)) / counts.clamp_min(1)
    mu, var = mu[present], var[present]
    c = mu.shape[0]
    if c < 2:
        raise ValueError("NCC needs at least two classes with samples")
    sq = (mu * mu).sum(1)
    dist2 = (sq[:, None] + sq[None, :] - 2 * mu @ mu.T).clamp_min(1e-30)
    off = ~torch.eye(c, dtype=torch.bool, device=f.device)
    ratio = (var[:, None] + var[None, :]) / (2 * dist2)
    return ratio[off].mean()


def neural_collapse_metrics(
    features, labels, weight=None, logits=None, num_classes: int | None = None
) -> dict[str, float]:
    """All collapse metrics on given features: nc1, nc2_equinorm, nc2_equiangular, nc2_max_angle, ncc,
    and nc3 / nc4 when the classifier ``weight`` / ``logits`` are given."""
    f, y, c = _prep(features, labels, num_classes)
    f = f.detach().double()
    out = {"nc1": nc1(f, y, c)}
    out.update({f"nc2_{k}": v for k, v in nc2(f, y, c).items()})
    out["ncc"] = float(ncc(f, y, c))
    if weight is not None:
        out["nc3"] = nc3(f, y, torch.as_tensor(weight).detach(), c)
    if logits is not None:
        out["nc4"] = nc4(f, y, torch.as_tensor(logits).detach(), c)
    return out


@torch.no_grad()
def collect_features(
    model: nn.Module, layer: str, data: Iterable | tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run ``model`` over ``data`` and return (inputs of ``model.<layer>``, model outputs, labels), concatenated."""
    feats, outs, ys = [], [], []
    with capture_layer(model, layer) as cap:
        for x, y in _batches(data):
            outs.append(model(x))
            if cap.input.ndim != 2:
                raise ValueError(f"layer {layer!r} sees input of shape {tuple(cap.input.shape)}; need (n, d)")
            feats.append(cap.input)
            ys.append(torch.as_tensor(y))
    if not feats:
        raise ValueError("data yielded no samples")
    return torch.cat(feats), torch.cat(outs), torch.cat(ys)


def neural_collapse(
    model: nn.Module, layer: str, data: Iterable | tuple[torch.Tensor, torch.Tensor], num_classes: int | None = None
) -> dict[str, float]:
    """NC1–NC4 and NCC of a classifier: features are the inputs of ``model.<layer>`` (its last linear layer,
    whose weight is the classifier W), decisions are the model's argmax outputs."""
    feats, logits, y = collect_features(model, layer, data)
    weight = dict(model.named_modules())[layer].weight
    c = num_classes if num_classes is not None else logits.shape[1]
    return neural_collapse_metrics(feats, y, weight=weight, logits=logits, num_classes=c)

