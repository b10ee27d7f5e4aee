"""Download-free measures of memorisation and sample quality for generative models.

- :func:`nn_distances` / :func:`copy_fraction`: Euclidean distance of each sample to its nearest and second
  nearest training point; a sample is a *copy* when d1 < ratio * d2 (ratio 1/3, as in Yoon et al. and the
  memorisation literature).
- :func:`mmd_rbf`: unbiased kernel MMD^2 with a sum of RBF kernels around the median pairwise distance.
- :func:`train_feature_classifier` + :func:`frechet_distance`: an FID-like score — the Fréchet distance between
  Gaussians fitted to the penultimate-layer features of a small MLP classifier trained in-package on the same
  data (a stand-in for Inception features; numbers are not comparable to published FIDs).
- :func:`psnr` / :func:`denoising_psnr`: PSNR of one-step denoising at given noise levels, train vs held-out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn


def _t(x: np.ndarray | torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(x, dtype=torch.float32)


def nn_distances(samples: np.ndarray | torch.Tensor, ref: np.ndarray | torch.Tensor, chunk: int = 2048
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Distances (d1, d2) from each sample to its nearest and second-nearest row of ``ref`` (needs >= 2 rows;
    with one row d2 = inf). Squared distances by the one-matmul expansion, chunked over samples."""
    s, r = _t(samples), _t(ref)
    if s.ndim != 2 or r.ndim != 2 or s.shape[1] != r.shape[1]:
        raise ValueError(f"samples (B, d) and ref (n, d) must share d; got {tuple(s.shape)}, {tuple(r.shape)}")
    r_sq = (r * r).sum(1)
    d1s, d2s = [], []
    for i in range(0, len(s), chunk):
        q = s[i : i + chunk]
        d2 = ((q * q).sum(1, keepdim=True) - 2 * q @ r.T + r_sq[None]).clamp_min(0)
        k = min(2, r.shape[0])
        top = torch.topk(d2, k, dim=1, largest=False).values.sqrt()
        d1s.append(top[:, 0])
        d2s.append(top[:, 1] if k == 2 else torch.full_like(top[:, 0], float("inf")))
    return torch.cat(d1s).numpy(), torch.cat(d2s).numpy()


def copy_fraction(d1: np.ndarray, d2: np.ndarray, ratio: float = 1.0 / 3.0) -> float:
    """Fraction of samples whose nearest training point is closer than ``ratio`` times the second nearest."""
    return float(np.mean(np.asarray(d1) < ratio * np.asarray(d2)))


def mmd_rbf(x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor, scales: Sequence[float] = (0.5, 1.0, 2.0),
            bandwidth: float | None = None) -> float:
    """Unbiased MMD^2 between samples ``x`` and ``y`` with k = sum_s exp(-||a - b||^2 / (2 (s h)^2)), h the median
    pairwise distance of the pooled samples unless ``bandwidth`` is given (pass one to compare runs on one scale)."""
    a, b = _t(x), _t(y)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("mmd_rbf needs at least 2 samples on each side")
    z = torch.cat([a, b])
    d2 = torch.cdist(z, z).pow(2)
    if bandwidth is None:
        off = d2[~torch.eye(len(z), dtype=torch.bool)]
        bandwidth = float(off.median().sqrt())
    k = sum(torch.exp(-d2 / (2 * (s * bandwidth) ** 2)) for s in scales)
    n, m = len(a), len(b)
    kxx, kyy, kxy = k[:n, :n], k[n:, n:], k[:n, n:]
    exx = (kxx.sum() - kxx.diagonal().sum()) / (n * (n - 1))
    eyy = (kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1))
    return float(exx + eyy - 2 * kxy.mean())


class FeatureClassifier(nn.Module):
    """Small MLP classifier; ``features`` is its last hidden layer (the FID-like feature space)."""

    def __init__(self, dim: int, classes: int, width: int = 128):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU())
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))

    @torch.no_grad()
    def features(self, x: np.ndarray | torch.Tensor) -> np.ndarray:
        self.eval()
        return self.body(_t(x)).double().numpy()


def train_feature_classifier(x: np.ndarray, y: np.ndarray, generator: torch.Generator, steps: int = 1500,
                             width: int = 128, lr: float = 2e-3, noise: float = 0.1) -> FeatureClassifier:
    """Train a :class:`FeatureClassifier` on (x, y) with Adam and light Gaussian input noise (so the features also
    respond sensibly to slightly-off samples)."""
    y = np.asarray(y)
    if (y < 0).any():
        raise ValueError("train_feature_classifier needs class labels >= 0")
    xt, yt = _t(x), torch.as_tensor(y, dtype=torch.long)
    model = FeatureClassifier(xt.shape[1], int(yt.max()) + 1, width)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        idx = torch.randint(len(xt), (128,), generator=generator)
        xb = xt[idx] + noise * torch.randn(xt[idx].shape, generator=generator)
        loss = nn.functional.cross_entropy(model(xb), yt[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    return model


@torch.no_grad()
def classifier_accuracy(model: FeatureClassifier, x: np.ndarray, y: np.ndarray) -> float:
    return float((model(_t(x)).argmax(1).numpy() == np.asarray(y)).mean())


def frechet_distance(f1: np.ndarray, f2: np.ndarray) -> float:
    """||mu1 - mu2||^2 + Tr(S1 + S2 - 2 (S1 S2)^(1/2)) between Gaussians fitted to two feature sets."""
    f1, f2 = np.asarray(f1, np.float64), np.asarray(f2, np.float64)
    if len(f1) < 2 or len(f2) < 2:
        raise ValueError("frechet_distance needs at least 2 feature rows on each side")
    mu1, mu2 = f1.mean(0), f2.mean(0)
    s1, s2 = np.cov(f1, rowvar=False), np.cov(f2, rowvar=False)
    # Tr (S1 S2)^(1/2) = sum sqrt(eig(S1^(1/2) S2 S1^(1/2))): symmetric, so eigh is stable
    w, v = np.linalg.eigh(s1)
    r1 = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
    tr_covmean = np.sqrt(np.clip(np.linalg.eigvalsh(r1 @ s2 @ r1), 0, None)).sum()
    return float(((mu1 - mu2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * tr_covmean)


def psnr(x_hat: np.ndarray | torch.Tensor, x: np.ndarray | torch.Tensor, data_range: float = 2.0) -> np.ndarray:
    """Per-row PSNR in dB, 10 log10(range^2 / MSE) (range 2 for data in [-1, 1])."""
    a, b = _t(x_hat), _t(x)
    mse = (a - b).pow(2).flatten(1).mean(1).clamp_min(1e-12)
    return (10 * torch.log10(data_range**2 / mse)).cpu().numpy()


@torch.no_grad()
def denoising_psnr(
    denoise: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x: np.ndarray | torch.Tensor,
    ts: Sequence[float],
    generator: torch.Generator,
    data_range: float = 2.0,
) -> list[float]:
    """Mean PSNR of ``denoise(x_t, t) -> x1_hat`` with x_t = (1 - t) eps + t x, one eps draw per image and t from
    ``generator`` (re-seed it identically for train and held-out images to share the noise)."""
    xt_all = _t(x)
    out = []
    for t in ts:
        eps = torch.randn(xt_all.shape, generator=generator)
        tt = torch.full((len(xt_all),), float(t))
        xt = (1 - t) * eps + t * xt_all
        out.append(float(psnr(denoise(xt, tt), xt_all, data_range).mean()))
    return out
