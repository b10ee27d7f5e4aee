"""Digit domains for unsupervised domain generalisation (UDG), offline, from scikit-learn's 8x8 digits.

Each image of the 1797 digits belongs to exactly one domain (a seeded, class-stratified partition), so no digit
image appears in two domains. Images are bilinearly up-sampled to ``size`` x ``size`` and rendered with 3 channels:

- ``original``: the grey digit, bright on dark, in all three channels;
- ``inverted``: ``1 - x`` (dark on bright);
- ``tinted``: a random foreground colour on a random background colour (per image), ``x * fg + (1 - x) * bg``;
- ``edge``: the Sobel gradient magnitude of the grey digit, normalised to [0, 1] per image, in all channels.

The augmentations of :func:`augment` (shifts, pixel noise, inversion, per-channel gain/bias, Fourier amplitude mix)
cover ``inverted`` and ``tinted`` but never produce an edge map, so ``edge`` is the domain the augmentations do
*not* cover (in the ms-udg study it is a source only: as a target even supervised ERM stays near 0.3).
:func:`fourier_amplitude_mix` keeps each image's phase spectrum exactly and swaps
(interpolates) its low-frequency amplitude with another image's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DOMAINS = ("original", "inverted", "tinted", "edge")
AUG_PARAMS = 11  # dx, dy, invert, gain (3), bias (3), noise std, Fourier mix weight


@dataclass(frozen=True)
class DomainData:
    """``x`` (n, 3, size, size) float32 in [0, 1], ``y`` digit labels, ``domain`` index into :data:`DOMAINS`."""

    x: np.ndarray
    y: np.ndarray
    domain: np.ndarray

    def of(self, names: tuple[str, ...] | list[str]) -> np.ndarray:
        """Indices of the images in the named domains."""
        ids = [DOMAINS.index(n) for n in names]
        return np.flatnonzero(np.isin(self.domain, ids))


def _upsample(x: np.ndarray, size: int) -> np.ndarray:
    import torch

    t = torch.as_tensor(x[:, None])
    if size != x.shape[-1]:
        t = torch.nn.functional.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)
    return t[:, 0].clamp(0, 1).numpy()


def sobel_edges(x: np.ndarray) -> np.ndarray:
    """Sobel gradient magnitude of grey images (n, h, w), each normalised to max 1 (all-zero images stay 0)."""
    from scipy import ndimage

    gx = ndimage.sobel(x, axis=2, mode="constant")
    gy = ndimage.sobel(x, axis=1, mode="constant")
    mag = np.hypot(gx, gy)
    peak = mag.reshape(len(x), -1).max(1)[:, None, None]
    return (mag / np.where(peak > 0, peak, 1.0)).astype(np.float32)


def render(grey: np.ndarray, domain: str, rng: np.random.Generator) -> np.ndarray:
    """Render grey images (n, s, s) in [0, 1] into one domain: (n, 3, s, s) float32."""
    n = len(grey)
    g = grey[:, None].astype(np.float32)
    if domain == "original":
        out = np.repeat(g, 3, 1)
    elif domain == "inverted":
        out = np.repeat(1.0 - g, 3, 1)
    elif domain == "tinted":
        fg = rng.uniform(0.5, 1.0, (n, 3, 1, 1)).astype(np.float32)
        bg = rng.uniform(0.0, 0.5, (n, 3, 1, 1)).astype(np.float32)
        swap = rng.random((n, 1, 1, 1)) < 0.5  # half dark-on-light
        fg, bg = np.where(swap, bg, fg), np.where(swap, fg, bg)
        out = g * fg + (1.0 - g) * bg
    elif domain == "edge":
        out = np.repeat(sobel_edges(grey)[:, None], 3, 1)
    else:
        raise ValueError(f"unknown domain {domain!r}; one of {', '.join(DOMAINS)}")
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def make_domains(size: int = 12, seed: int = 0) -> DomainData:
    """All four domains over a seeded class-stratified partition of the digits (deterministic given ``seed``)."""
    from genlab.data.digits import load_digits_arrays

    x, y = load_digits_arrays(flat=False)
    rng = np.random.default_rng(seed)
    dom = np.zeros(len(y), np.int64)
    for c in range(10):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        for k, part in enumerate(np.array_split(idx, len(DOMAINS))):
            dom[part] = k
    grey = _upsample(x, size)
    out = np.zeros((len(y), 3, size, size), np.float32)
    for k, name in enumerate(DOMAINS):
        sel = dom == k
        out[sel] = render(grey[sel], name, rng)
    return DomainData(out, y, dom)


# -- augmentations (torch, batched) --------------------------------------------------------------------------------


def fourier_amplitude_mix(x, other, lam, radius: float = 0.25):
    """Replace a fraction ``lam`` (per image) of the low-frequency amplitude of ``x`` by ``other``'s; keep the phase.

    ``radius`` is the half-width of the low-frequency square, as a fraction of the image size.
    """
    import torch

    fx, fo = torch.fft.fft2(x), torch.fft.fft2(other)
    amp, pha, amp_o = fx.abs(), fx.angle(), fo.abs()
    h, w = x.shape[-2:]
    fy = torch.fft.fftfreq(h).abs()[:, None]
    fxq = torch.fft.fftfreq(w).abs()[None, :]
    low = ((fy <= radius) & (fxq <= radius)).to(x.dtype)
    lam = lam.reshape(-1, *([1] * (x.dim() - 1)))
    mixed = amp * (1 - lam * low) + amp_o * (lam * low)
    return torch.fft.ifft2(torch.polar(mixed, pha)).real


def augment(x, gen, strength: float = 1.0):
    """A random view of a batch (n, 3, s, s) and its augmentation parameters (n, :data:`AUG_PARAMS`).

    Shift (±s/8 pixels, zero padding), Fourier amplitude mix with a shuffled batch, random inversion, per-channel
    gain and bias (colour), Gaussian pixel noise; clipped to [0, 1].
    """
    import torch

    n, c, s, _ = x.shape
    m = max(1, s // 8)
    pad = torch.nn.functional.pad(x, (m, m, m, m))
    dx = torch.randint(0, 2 * m + 1, (n,), generator=gen)
    dy = torch.randint(0, 2 * m + 1, (n,), generator=gen)
    rows = (dy[:, None] + torch.arange(s)[None, :])[:, None, :, None].expand(n, c, s, s + 2 * m)
    v = pad.gather(2, rows)
    cols = (dx[:, None] + torch.arange(s)[None, :])[:, None, None, :].expand(n, c, s, s)
    v = v.gather(3, cols)
    lam = torch.rand(n, generator=gen) * strength
    v = fourier_amplitude_mix(v, v[torch.randperm(n, generator=gen)], lam).clamp(0, 1)
    inv = (torch.rand(n, generator=gen) < 0.5).to(x.dtype)
    v = torch.where(inv[:, None, None, None] > 0, 1 - v, v)
    gain = 1 + strength * (torch.rand(n, 3, generator=gen) - 0.5)
    bias = strength * 0.5 * (torch.rand(n, 3, generator=gen) - 0.5)
    v = v * gain[:, :, None, None] + bias[:, :, None, None]
    sd = 0.1 * strength * torch.rand(n, generator=gen)
    v = v + sd[:, None, None, None] * torch.randn(v.shape, generator=gen)
    params = torch.cat([((dx - m) / m)[:, None], ((dy - m) / m)[:, None], inv[:, None], gain, bias,
                        sd[:, None] * 10, lam[:, None]], 1).to(x.dtype)  # fmt: skip
    return v.clamp(0, 1), params
