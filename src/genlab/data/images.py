"""Offline image-like data for generative-model studies.

Everything here is produced locally: scikit-learn's bundled digits (8x8, optionally bilinearly up-sampled to
16x16), ``mnist1d`` from its procedural generator (never its download path), 2-D toys, Gaussian mixtures of any
dimension, and a loader for a local folder of image files (the ``full`` presets' real-data hook).

Conventions: arrays are float32, images flattened to ``(n, C*H*W)`` and scaled to [-1, 1] unless stated, labels
int64 (``-1`` when a source has none). :class:`ImageData` carries the image shape so models can un-flatten.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff")


@dataclass(frozen=True)
class ImageData:
    """A train/held-out split. ``shape`` is the per-sample shape (C, H, W) for images, (L,) for 1-D signals or
    (d,) for vectors; ``x_*`` are flattened to ``(n, prod(shape))``."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    shape: tuple[int, ...]
    name: str = ""

    @property
    def dim(self) -> int:
        return int(np.prod(self.shape))


def _to_unit_range(x: np.ndarray) -> np.ndarray:
    return (2.0 * x - 1.0).astype(np.float32)


def _split(x: np.ndarray, y: np.ndarray, n_test: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    if not 0 < n_test < len(x):
        raise ValueError(f"n_test must be in (0, {len(x)}), got {n_test}")
    perm = rng.permutation(len(x))
    te, tr = perm[:n_test], perm[n_test:]
    return x[tr], y[tr], x[te], y[te]


def upsample_images(x: np.ndarray, size: int) -> np.ndarray:
    """Bilinear (align_corners=False) resize of square images ``(n, H, W)`` or ``(n, C, H, W)`` to ``size``."""
    import torch
    import torch.nn.functional as F

    squeeze = x.ndim == 3
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    if squeeze:
        t = t[:, None]
    if t.ndim != 4:
        raise ValueError(f"expected (n, H, W) or (n, C, H, W) images, got shape {x.shape}")
    out = F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)
    return (out[:, 0] if squeeze else out).numpy()


def digits_data(size: int = 8, n_test: int = 500, seed: int = 0) -> ImageData:
    """scikit-learn digits (1797 images) in [-1, 1], shape (1, size, size); ``size`` 8 (native) or larger
    (bilinear up-sampling). A seeded random ``n_test`` images are held out."""
    from genlab.data.digits import load_digits_arrays

    if size < 8:
        raise ValueError(f"size must be >= 8 (native digits are 8x8), got {size}")
    x, y = load_digits_arrays(flat=False)
    if size != 8:
        x = upsample_images(x, size)
    x = _to_unit_range(x).reshape(len(x), -1)
    xtr, ytr, xte, yte = _split(x, y, n_test, np.random.default_rng(seed))
    return ImageData(xtr, ytr, xte, yte, (1, size, size), f"digits{size}")


def mnist1d_data(seed: int = 0, num_samples: int = 5000) -> ImageData:
    """``mnist1d`` signals (length 40) from the procedural generator with its default arguments and ``seed``,
    standardised by the training set's global mean/std (values then lie roughly in [-3, 3]). Shape (40,).
    Generating 5000 samples takes a few seconds."""
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.seed = int(seed)
    args.num_samples = int(num_samples)
    d = make_dataset(args)
    xtr, xte = d["x"].astype(np.float32), d["x_test"].astype(np.float32)
    mu, sd = float(xtr.mean()), float(xtr.std())
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    return ImageData(xtr, d["y"].astype(np.int64), xte, d["y_test"].astype(np.int64), (xtr.shape[1],), "mnist1d")


def toy2d(name: str, n: int, rng: np.random.Generator, noise: float = 0.05) -> np.ndarray:
    """2-D toy point clouds, float32 ``(n, 2)``: ``moons`` (scikit-learn, roughly standardised), ``8gaussians``
    (eight Gaussians of std 0.2 centred on a circle of radius 2) or ``circles`` (two rings, radii 1.5 and 0.75)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if name == "moons":
        from sklearn.datasets import make_moons

        x, _ = make_moons(n, noise=noise, random_state=int(rng.integers(2**31)))
        x = (x - np.array([0.5, 0.25])) / np.array([0.87, 0.5])
    elif name == "8gaussians":
        ang = rng.integers(0, 8, n) * (np.pi / 4)
        centers = 2.0 * np.stack([np.cos(ang), np.sin(ang)], 1)
        x = centers + 0.2 * rng.standard_normal((n, 2))
    elif name == "circles":
        from sklearn.datasets import make_circles

        x, _ = make_circles(n, noise=noise, factor=0.5, random_state=int(rng.integers(2**31)))
        x = 1.5 * x
    else:
        raise ValueError(f"unknown toy {name!r}; choose moons, 8gaussians or circles")
    return x.astype(np.float32)


def gaussian_mixture(
    n: int, dim: int, rng: np.random.Generator, components: int = 8, spread: float = 1.0, std: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples from a ``components``-Gaussian mixture in ``dim`` dimensions: means ~ N(0, spread^2 I),
    isotropic std ``std``. Returns (x float32, component labels int64). The means are drawn first from ``rng``,
    so one rng gives one mixture."""
    if n < 1 or dim < 1 or components < 1:
        raise ValueError(f"n, dim and components must be >= 1, got {n}, {dim}, {components}")
    means = spread * rng.standard_normal((components, dim))
    y = rng.integers(0, components, n)
    x = means[y] + std * rng.standard_normal((n, dim))
    return x.astype(np.float32), y.astype(np.int64)


def subset(data: ImageData, n: int | str | None, rng: np.random.Generator) -> ImageData:
    """Keep a random training subset of size ``n`` (``None``/``"all"``/``n >= len`` keep everything). The subset
    is class-balanced when possible (round-robin over labels in random order), so n = 10 digits has one of each."""
    if n is None or n == "all":
        return data
    n = int(n)
    if n < 1:
        raise ValueError(f"subset size must be >= 1 or 'all', got {n}")
    if n >= len(data.x_train):
        return data
    y = data.y_train
    labels = rng.permutation(np.unique(y))
    pools = {c: list(rng.permutation(np.flatnonzero(y == c))) for c in labels}
    picked: list[int] = []
    while len(picked) < n:
        for c in labels:
            if pools[c] and len(picked) < n:
                picked.append(int(pools[c].pop()))
    idx = np.array(sorted(picked))
    return replace(data, x_train=data.x_train[idx], y_train=y[idx])


def load_image_folder(
    root: str | Path, size: int | None = None, grayscale: bool = True, n_test: int | float = 0.1, seed: int = 0
) -> ImageData:
    """Load a local folder of images (PNG/JPEG/...) for the ``full`` presets. Layout: either ``root/<class>/*.png``
    (class = sub-folder name, labels in sorted order) or flat ``root/*.png`` (labels -1). Images are converted to
    grayscale (or RGB), resized to ``size``x``size`` (bilinear; default: the first image's size, which must then be
    square and shared), scaled to [-1, 1] and split with ``n_test`` held out (count or fraction)."""
    from PIL import Image

    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"image folder {root} does not exist or is not a directory")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if len(files) < 2:
        raise ValueError(f"found {len(files)} image files under {root}; need at least 2 ({', '.join(IMAGE_SUFFIXES)})")
    classes = sorted({p.parent.name for p in files if p.parent != root})
    cls_idx = {c: i for i, c in enumerate(classes)}
    mode = "L" if grayscale else "RGB"
    arrays, labels = [], []
    for p in files:
        with Image.open(p) as im:
            im = im.convert(mode)
            if size is None:
                size = im.size[0]
            if im.size != (size, size):
                im = im.resize((size, size), Image.BILINEAR)
            a = np.asarray(im, dtype=np.float32) / 255.0
        arrays.append(a[None] if grayscale else a.transpose(2, 0, 1))
        labels.append(cls_idx.get(p.parent.name, -1) if p.parent != root else -1)
    x = _to_unit_range(np.stack(arrays))
    shape = tuple(int(s) for s in x.shape[1:])
    x = x.reshape(len(x), -1)
    y = np.array(labels, dtype=np.int64)
    k = int(round(n_test * len(x))) if isinstance(n_test, float) else int(n_test)
    k = min(max(k, 1), len(x) - 1)
    xtr, ytr, xte, yte = _split(x, y, k, np.random.default_rng(seed))
    return ImageData(xtr, ytr, xte, yte, shape, f"folder:{root.name}")


def load_dataset(name: str, seed: int = 0, n_test: int = 500, image_folder: str = "") -> ImageData:
    """Dispatch by name: ``digits8``, ``digits16``, ``mnist1d``, ``folder`` (needs ``image_folder``),
    ``gmm<d>`` (8-component mixture in d dimensions, 3000 train) or a 2-D toy (``moons``, ``8gaussians``,
    ``circles``; 3000 train)."""
    rng = np.random.default_rng(seed)
    if name in ("digits", "digits8"):
        return digits_data(8, n_test, seed)
    if name == "digits16":
        return digits_data(16, n_test, seed)
    if name == "mnist1d":
        return mnist1d_data(seed)
    if name == "folder":
        if not image_folder:
            raise ValueError("dataset 'folder' needs image_folder=/path/to/images")
        return load_image_folder(image_folder, n_test=n_test, seed=seed)
    if name.startswith("gmm"):
        dim = int(name[3:])
        x, y = gaussian_mixture(3000 + n_test, dim, rng)
        return ImageData(x[n_test:], y[n_test:], x[:n_test], y[:n_test], (dim,), name)
    if name in ("moons", "8gaussians", "circles"):
        x = toy2d(name, 3000 + n_test, rng)
        y = np.full(len(x), -1, np.int64)
        return ImageData(x[n_test:], y[n_test:], x[:n_test], y[:n_test], (2,), name)
    raise ValueError(f"unknown dataset {name!r}; choose digits8, digits16, mnist1d, folder, gmm<d>, moons, "
                     "8gaussians or circles")
