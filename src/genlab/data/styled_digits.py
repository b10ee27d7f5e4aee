"""Digits rendered in several visual styles, with templated captions: offline image-text pairs for a mini-CLIP.

scikit-learn's bundled 8x8 digits are bilinearly up-sampled to ``size`` and rendered in one of five styles:

- ``plain``: the digit, bright on dark;
- ``inverted``: ``1 - x`` (dark on bright);
- ``outlined``: the morphological gradient (3x3 dilation minus erosion), i.e. the stroke's outline;
- ``noisy``: Gaussian pixel noise (std ``noise``), clipped to [0, 1];
- ``rotated``: rotated by a random angle of magnitude in [``min_angle``, ``max_angle``] degrees, either sign.

Captions are word sequences from templates over a small vocabulary (class names, style words, template words),
encoded as integer ids with ``<sos>``/``<eos>`` markers and right padding. All randomness comes from the caller's
numpy Generator; the rendering itself is vectorised (torch) over images.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STYLES = ("plain", "inverted", "outlined", "noisy", "rotated")
CLASS_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
# Caption templates for pre-training: {s} is a style word, {c} a class name.
CAPTION_TEMPLATES = (
    "a photo of a {c}",
    "a photo of the digit {c}",
    "a {s} photo of a {c}",
    "a {s} digit {c}",
    "a {s} image of the number {c}",
    "the number {c}",
    "a drawing of a {c}",
    "a {s} {c}",
)
# Hand-crafted prompts for zero-shot classification (style-agnostic, as a user would write them).
ZERO_SHOT_TEMPLATES = ("a photo of a {c}", "a photo of the digit {c}", "the number {c}", "a drawing of a {c}")
SPECIALS = ("<pad>", "<sos>", "<eos>")


@dataclass(frozen=True)
class Vocab:
    """Word-level vocabulary; ``encode`` gives right-padded ids and the position of ``<eos>`` (the pooled token)."""

    words: tuple[str, ...]
    max_len: int

    @classmethod
    def build(cls) -> Vocab:
        words = set()
        for t in CAPTION_TEMPLATES + ZERO_SHOT_TEMPLATES:
            words.update(w for w in t.split() if not w.startswith("{"))
        words.update(STYLES)
        words.update(CLASS_NAMES)
        longest = max(len(t.split()) for t in CAPTION_TEMPLATES + ZERO_SHOT_TEMPLATES)
        return cls(SPECIALS + tuple(sorted(words)), longest + 2)

    @property
    def size(self) -> int:
        return len(self.words)

    def index(self, word: str) -> int:
        try:
            return self.words.index(word)
        except ValueError:
            raise KeyError(f"word {word!r} is not in the vocabulary") from None

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids (n, max_len) int64, eos (n,) int64)`` for whitespace-separated texts."""
        ids = np.zeros((len(texts), self.max_len), np.int64)
        eos = np.zeros(len(texts), np.int64)
        for i, text in enumerate(texts):
            tokens = [self.index("<sos>"), *(self.index(w) for w in text.split()), self.index("<eos>")]
            if len(tokens) > self.max_len:
                raise ValueError(f"caption {text!r} is longer than {self.max_len - 2} words")
            ids[i, : len(tokens)] = tokens
            eos[i] = len(tokens) - 1
        return ids, eos


def base_digits(size: int) -> tuple[np.ndarray, np.ndarray]:
    """All 1797 digits as float32 ``(n, size, size)`` in [0, 1] (bilinear up-sampling above 8) and int64 labels."""
    from genlab.data.digits import load_digits_arrays
    from genlab.data.images import upsample_images

    if size < 8:
        raise ValueError(f"size must be >= 8 (native digits are 8x8), got {size}")
    x, y = load_digits_arrays(flat=False)
    if size != 8:
        x = np.clip(upsample_images(x, size), 0.0, 1.0)
    return x.astype(np.float32), y


def render(
    x: np.ndarray,
    style: str,
    rng: np.random.Generator,
    noise: float = 0.3,
    min_angle: float = 25.0,
    max_angle: float = 50.0,
) -> np.ndarray:
    """Render images ``(n, H, W)`` in [0, 1] in ``style``; returns float32 ``(n, H, W)`` in [0, 1]."""
    import torch
    import torch.nn.functional as F

    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; styles: {', '.join(STYLES)}")
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))[:, None]
    if style == "inverted":
        t = 1.0 - t
    elif style == "outlined":
        dilated = F.max_pool2d(t, 3, stride=1, padding=1)
        eroded = -F.max_pool2d(-t, 3, stride=1, padding=1)
        edge = dilated - eroded
        t = edge / edge.amax(dim=(2, 3), keepdim=True).clamp_min(1e-6)
    elif style == "noisy":
        t = (t + noise * torch.from_numpy(rng.standard_normal(t.shape).astype(np.float32))).clamp(0.0, 1.0)
    elif style == "rotated":
        mag = rng.uniform(min_angle, max_angle, len(x)) * np.where(rng.random(len(x)) < 0.5, -1.0, 1.0)
        theta = np.deg2rad(mag)
        cos, sin = np.cos(theta), np.sin(theta)
        mats = np.stack([np.stack([cos, -sin, 0 * cos], 1), np.stack([sin, cos, 0 * cos], 1)], 1)
        grid = F.affine_grid(torch.from_numpy(mats.astype(np.float32)), list(t.shape), align_corners=False)
        t = F.grid_sample(t, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return t[:, 0].numpy()


def render_styles(
    x: np.ndarray, styles: Sequence[str], rng: np.random.Generator, **kwargs: float
) -> tuple[np.ndarray, np.ndarray]:
    """Every image in every style: ``(images (len(styles)*n, H, W), style index (len(styles)*n,))``, style-major."""
    imgs = [render(x, s, rng, **kwargs) for s in styles]
    idx = np.repeat(np.asarray([STYLES.index(s) for s in styles], np.int64), len(x))
    return np.concatenate(imgs), idx


def captions(labels: np.ndarray, style_idx: np.ndarray, rng: np.random.Generator) -> list[str]:
    """One random caption template per image, filled with its style word and class name."""
    pick = rng.integers(0, len(CAPTION_TEMPLATES), len(labels))
    return [CAPTION_TEMPLATES[t].format(s=STYLES[s], c=CLASS_NAMES[c]) for t, s, c in zip(pick, style_idx, labels)]
