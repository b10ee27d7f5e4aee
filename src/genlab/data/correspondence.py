"""Semantic-correspondence data: images as per-pixel backbone features with object masks, point maps and
keypoints, plus the image pairs to match. Two sources share one container, :class:`CorrespondenceSet`:

* :func:`synthetic_correspondence` renders the parametric categories of :mod:`genlab.data.shapes3d` and passes
  them through :class:`SimBackbone`, a frozen "backbone" whose per-pixel feature is a fixed random function of
  the canonical surface coordinate, **exactly invariant to the left/right mirror** (the known DINOv2
  left/right confusion) and noisy;
* :func:`load_correspondence_dir` reads precomputed real features (e.g. DINOv2 / SD features of SPair-71k with
  MoGe point maps) from a local directory in the format written by :func:`save_correspondence_dir`:

.. code-block:: text

    root/
      meta.json            {"format": "genlab-correspondence-v1", "categories": [...],
                            "keypoints": {cat: {"names": [...], "seen": [ids], "unseen": [ids], "twins": [ids]?}}}
      images/<id>.npz      feat (H, W, D) float16|float32 per-pixel features (any grid, e.g. 60x60 patches),
                           mask (H, W) bool object mask, points (H, W, 3) float camera-space point map,
                           kps (K_cat, 3) float (col, row, visible) in grid pixel units (centre of pixel c is c+0.5)
      pairs/<split>.csv    header "src,trg,category,mirrored"; src / trg are image ids, mirrored is 0 / 1
                           (optional column: 0 when unknown); splits "train", "val" and "test"

Keypoints are padded to the largest per-category count ``K`` (absent ones have visible = 0); ``seen`` and
``unseen`` are per-category boolean masks over those K slots. Nothing here downloads anything.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genlab.data.shapes3d import N_SEEN, category, keypoint_twins, make_instance, render, sample_camera

FORMAT = "genlab-correspondence-v1"
SPLITS = ("train", "val", "test")


@dataclass
class CorrespondenceSet:
    """Images (``feats`` (N, H, W, D) float32, ``mask`` (N, H, W), ``points`` (N, H, W, 3), ``kps`` (N, K, 3) as
    (col, row, visible), ``category`` (N,) index into ``categories``) and pairs per split (``pairs[s]`` (P, 2)
    image indices, ``mirrored[s]`` (P,) bool). ``seen`` / ``unseen`` / ``twins`` are (C, K) per-category
    keypoint masks and mirror-twin indices (a keypoint's own index when it has no twin or it is unknown)."""

    feats: np.ndarray
    mask: np.ndarray
    points: np.ndarray
    kps: np.ndarray
    category: np.ndarray
    categories: list[str]
    seen: np.ndarray
    unseen: np.ndarray
    twins: np.ndarray
    pairs: dict[str, np.ndarray]
    mirrored: dict[str, np.ndarray]
    ids: list[str] = field(default_factory=list)
    keypoint_names: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n, h, w, _ = self.feats.shape
        if self.mask.shape != (n, h, w) or self.points.shape != (n, h, w, 3):
            raise ValueError("feats, mask and points must share (N, H, W)")
        if self.kps.ndim != 3 or self.kps.shape[0] != n or self.kps.shape[2] != 3:
            raise ValueError(f"kps must be (N, K, 3), got {self.kps.shape}")
        c, k = len(self.categories), self.kps.shape[1]
        for name in ("seen", "unseen", "twins"):
            if getattr(self, name).shape != (c, k):
                raise ValueError(f"{name} must be (categories, K) = ({c}, {k})")
        if np.any(self.seen & self.unseen):
            raise ValueError("a keypoint cannot be both seen and unseen")
        for s, p in self.pairs.items():
            if p.ndim != 2 or p.shape[1] != 2 or (p.size and (p.min() < 0 or p.max() >= n)):
                raise ValueError(f"pairs[{s!r}] must be (P, 2) indices into the {n} images")
            if np.any(self.category[p[:, 0]] != self.category[p[:, 1]]):
                raise ValueError(f"pairs[{s!r}] mixes categories")
            self.mirrored.setdefault(s, np.zeros(len(p), dtype=bool))
        if not self.ids:
            self.ids = [f"{i:06d}" for i in range(n)]

    @property
    def size(self) -> int:
        return self.feats.shape[1]

    @property
    def dim(self) -> int:
        return self.feats.shape[3]

    def keypoint_mask(self, which: str) -> np.ndarray:
        """(N, K) bool: for each image, the keypoint slots of its category in ``which`` (seen / unseen / all)."""
        per_cat = {"seen": self.seen, "unseen": self.unseen, "all": self.seen | self.unseen}[which]
        return per_cat[self.category]

    def without_unseen(self) -> CorrespondenceSet:
        """A copy whose unseen keypoints are all marked invisible (what a training set may know)."""
        kps = self.kps.copy()
        kps[..., 2] *= ~self.keypoint_mask("unseen")
        return _replace(self, kps=kps)


def _replace(data: CorrespondenceSet, **changes: object) -> CorrespondenceSet:
    fields = {k: getattr(data, k) for k in data.__dataclass_fields__}
    fields.update(changes)
    return CorrespondenceSet(**fields)


# -- the simulated frozen backbone ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SimBackbone:
    """Per-pixel features ``f(u) = cos(|u| W + b) A / sqrt(M)`` of the canonical coordinate ``u`` where
    ``|u| = (|u_x|, u_y, u_z)``: a fixed random smooth function (random Fourier features of bandwidth
    ``bandwidth`` cycles per object unit) that is exactly invariant to the left/right mirror u_x -> -u_x.
    Each instance perturbs the read-out ``A`` by a random ``instance_noise`` fraction (appearance varies
    across instances) and each pixel gets i.i.d. Gaussian noise of relative size ``pixel_noise``; background
    pixels carry noise only."""

    dim: int
    freqs: np.ndarray  # (3, M)
    phases: np.ndarray  # (M,)
    readout: np.ndarray  # (M, dim)
    instance_noise: float
    pixel_noise: float

    @classmethod
    def create(cls, dim: int, rng: np.random.Generator, n_freqs: int = 64, bandwidth: float = 1.0,
               instance_noise: float = 0.3, pixel_noise: float = 0.5) -> SimBackbone:
        if dim < 1 or n_freqs < 1 or bandwidth <= 0 or instance_noise < 0 or pixel_noise < 0:
            raise ValueError("SimBackbone needs dim, n_freqs, bandwidth > 0 and non-negative noise levels")
        freqs = rng.normal(0.0, 2 * np.pi * bandwidth, size=(3, n_freqs))
        return cls(dim, freqs, rng.uniform(0, 2 * np.pi, n_freqs), rng.standard_normal((n_freqs, dim)),
                   float(instance_noise), float(pixel_noise))

    def basis(self, canonical: np.ndarray) -> np.ndarray:
        """The mirror-invariant random Fourier basis (..., M) of canonical coordinates (..., 3)."""
        folded = np.concatenate([np.abs(canonical[..., :1]), canonical[..., 1:]], axis=-1)
        return np.cos(folded @ self.freqs + self.phases)

    def clean(self, canonical: np.ndarray) -> np.ndarray:
        """Noise-free features (..., dim); ``clean(u) == clean(mirror(u))`` bit for bit."""
        return self.basis(canonical) @ self.readout / np.sqrt(self.readout.shape[0])

    def render_features(self, canonical: np.ndarray, mask: np.ndarray, instance_readout: np.ndarray,
                        rng: np.random.Generator) -> np.ndarray:
        """Features (..., H, W, dim) float32 of images of one instance: its read-out (see
        :meth:`instance_readout`) and fresh pixel noise from ``rng``."""
        f = np.zeros((*mask.shape, self.dim))
        f[mask] = self.basis(canonical[mask]) @ instance_readout / np.sqrt(self.readout.shape[0])
        scale = np.sqrt(np.mean(self.readout**2))  # the typical size of a clean feature coordinate
        f += self.pixel_noise * scale * rng.standard_normal(f.shape)
        return f.astype(np.float32)

    def instance_readout(self, rng: np.random.Generator) -> np.ndarray:
        return self.readout + self.instance_noise * rng.standard_normal(self.readout.shape)


# -- the synthetic dataset -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticSpec:
    """What :func:`synthetic_correspondence` renders. Instances are split into train / val / test (disjoint);
    every instance is seen in ``views`` random views (alternating flanks from a random first one; random
    azimuth within the flank and elevation). Pairs join two
    different instances of one category; val and test pairs are half mirrored (opposite sides), half not."""

    categories: tuple[str, ...] = ("quadruped", "chair", "car")
    size: int = 32
    instances: tuple[int, int, int] = (40, 10, 20)  # train, val, test per category
    views: int = 2
    pairs: tuple[int, int, int] = (400, 60, 200)  # train, val, test per category
    n_points: int = 6000
    jitter: float = 0.15
    azimuth: tuple[float, float] = (20.0, 160.0)  # |azimuth| range in degrees (0 = front view)
    elevation: tuple[float, float] = (10.0, 40.0)
    feat_dim: int = 32
    n_freqs: int = 64
    bandwidth: float = 1.0
    instance_noise: float = 0.3
    pixel_noise: float = 0.5

    def validate(self) -> None:
        for name in self.categories:
            category(name)
        if not self.categories or self.size < 8 or self.views < 1 or self.n_points < 100:
            raise ValueError("need >= 1 category, size >= 8, views >= 1 and n_points >= 100")
        if min(self.instances) < 2 or min(self.pairs) < 1:
            raise ValueError("every split needs >= 2 instances and >= 1 pair per category")
        if not 0 <= self.jitter < 1:
            raise ValueError("jitter must be in [0, 1)")
        lo, hi = self.azimuth
        if not 0 < lo < hi < 180:
            raise ValueError("azimuth range must satisfy 0 < lo < hi < 180 degrees")
        lo, hi = self.elevation
        if not -90 < lo <= hi < 90:
            raise ValueError("elevation range must lie in (-90, 90) degrees")


def synthetic_correspondence(spec: SyntheticSpec, backbone: SimBackbone, rng: np.random.Generator
                             ) -> CorrespondenceSet:
    """Render every category's instances in random views, extract simulated backbone features and draw the
    pairs. Keypoint slots 0-7 of every category are seen, 8-15 unseen (:data:`genlab.data.shapes3d.N_SEEN`)."""
    spec.validate()
    views, cat_idx, inst_idx, split_of = [], [], [], []
    feats = []
    n_inst = 0
    for c, name in enumerate(spec.categories):
        cat = category(name)
        for split, count in zip(SPLITS, spec.instances):
            for _ in range(count):
                inst = make_instance(cat, spec.n_points, spec.jitter, rng)
                readout = backbone.instance_readout(rng)
                first = 1 if rng.random() < 0.5 else -1
                for v_idx in range(spec.views):
                    side = first if v_idx % 2 == 0 else -first  # both flanks of every instance (with >= 2 views)
                    v = render(inst, *sample_camera(rng, side, spec.azimuth, spec.elevation), spec.size)
                    feats.append(backbone.render_features(v.canonical, v.mask, readout, rng))
                    views.append(v)
                    cat_idx.append(c)
                    inst_idx.append(n_inst)
                    split_of.append(split)
                n_inst += 1
    cat_arr, inst_arr, split_arr = np.array(cat_idx), np.array(inst_idx), np.array(split_of)
    sides = np.array([v.side for v in views])
    pairs, mirrored = {}, {}
    for split, count in zip(SPLITS, spec.pairs):
        p = [_draw_pairs(np.flatnonzero((cat_arr == c) & (split_arr == split)), inst_arr, sides, count,
                         balanced=split != "train", rng=rng) for c in range(len(spec.categories))]
        pairs[split] = np.concatenate(p).astype(np.int64)
        mirrored[split] = sides[pairs[split][:, 0]] != sides[pairs[split][:, 1]]
    n_kp = len(category(spec.categories[0]).keypoints)
    seen = np.zeros((len(spec.categories), n_kp), dtype=bool)
    seen[:, :N_SEEN] = True
    return CorrespondenceSet(
        feats=np.stack(feats), mask=np.stack([v.mask for v in views]),
        points=np.stack([v.points for v in views]).astype(np.float32),
        kps=np.stack([v.kps for v in views]).astype(np.float32), category=cat_arr,
        categories=list(spec.categories), seen=seen, unseen=~seen,
        twins=np.stack([keypoint_twins(category(n)) for n in spec.categories]),
        pairs=pairs, mirrored=mirrored,
        keypoint_names={n: category(n).keypoint_names for n in spec.categories},
    )


def _draw_pairs(images: np.ndarray, instance: np.ndarray, side: np.ndarray, count: int, balanced: bool,
                rng: np.random.Generator) -> np.ndarray:
    """``count`` pairs of images of different instances; when ``balanced``, the first half mirrored (opposite
    sides) and the second half same-side."""
    out = []
    want = [True] * (count // 2) + [False] * (count - count // 2) if balanced else [None] * count
    for mirror in want:
        for _ in range(1000):
            a, b = rng.choice(images, size=2, replace=False)
            if instance[a] != instance[b] and (mirror is None or (side[a] != side[b]) == mirror):
                out.append((a, b))
                break
        else:
            raise ValueError("could not draw a pair: too few instances or views in a split")
    return np.array(out, dtype=np.int64).reshape(-1, 2)


# -- real features from disk ----------------------------------------------------------------------------------


def save_correspondence_dir(data: CorrespondenceSet, root: str | Path) -> Path:
    """Write ``data`` in the documented directory format (float16 features keep the files small)."""
    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "pairs").mkdir(exist_ok=True)
    meta = {"format": FORMAT, "categories": data.categories, "keypoints": {}}
    for c, name in enumerate(data.categories):
        meta["keypoints"][name] = {
            "names": data.keypoint_names.get(name, [str(k) for k in range(data.kps.shape[1])]),
            "seen": np.flatnonzero(data.seen[c]).tolist(), "unseen": np.flatnonzero(data.unseen[c]).tolist(),
            "twins": data.twins[c].tolist(),
        }
    (root / "meta.json").write_text(json.dumps(meta, indent=1))
    for i, ident in enumerate(data.ids):
        k = len(meta["keypoints"][data.categories[data.category[i]]]["names"])
        np.savez(root / "images" / f"{ident}.npz", feat=data.feats[i].astype(np.float16), mask=data.mask[i],
                 points=data.points[i], kps=data.kps[i, :k])
    for split, p in data.pairs.items():
        with open(root / "pairs" / f"{split}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["src", "trg", "category", "mirrored"])
            for (a, b), m in zip(p, data.mirrored[split]):
                w.writerow([data.ids[a], data.ids[b], data.categories[data.category[a]], int(m)])
    return root


def load_correspondence_dir(root: str | Path, splits: Sequence[str] = SPLITS) -> CorrespondenceSet:
    """Read precomputed features, masks, point maps, keypoints and pairs from ``root`` (format above). Only
    images that some pair of ``splits`` uses are loaded."""
    root = Path(root)
    meta_path = root / "meta.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{meta_path} not found: expected a {FORMAT} directory "
                                "(see genlab.data.correspondence)")
    meta = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{meta_path}: format must be {FORMAT!r}, got {meta.get('format')!r}")
    cats = list(meta["categories"])
    rows = {s: _read_pairs(root / "pairs" / f"{s}.csv", cats) for s in splits}
    ids = sorted({i for r in rows.values() for a, b, _, _ in r for i in (a, b)})
    if not ids:
        raise ValueError(f"{root}: no pairs in splits {list(splits)}")
    index = {ident: n for n, ident in enumerate(ids)}
    k_max = max(len(meta["keypoints"][c]["names"]) for c in cats)
    images = [_read_image(root / "images" / f"{ident}.npz", k_max) for ident in ids]
    cat_of = {}
    for r in rows.values():
        for a, b, c, _ in r:
            cat_of[a] = cat_of[b] = cats.index(c)
    seen, unseen, twins = _keypoint_tables(meta, cats, k_max)
    return CorrespondenceSet(
        feats=np.stack([im["feat"] for im in images]).astype(np.float32),
        mask=np.stack([im["mask"] for im in images]).astype(bool),
        points=np.stack([im["points"] for im in images]).astype(np.float32),
        kps=np.stack([im["kps"] for im in images]).astype(np.float32),
        category=np.array([cat_of[i] for i in ids]), categories=cats, seen=seen, unseen=unseen, twins=twins,
        pairs={s: np.array([(index[a], index[b]) for a, b, _, _ in r], dtype=np.int64).reshape(-1, 2)
               for s, r in rows.items()},
        mirrored={s: np.array([m for *_, m in r], dtype=bool) for s, r in rows.items()},
        ids=ids, keypoint_names={c: list(meta["keypoints"][c]["names"]) for c in cats},
    )


def _read_pairs(path: Path, cats: list[str]) -> list[tuple[str, str, str, bool]]:
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    out = []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"src", "trg", "category"} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: missing columns {sorted(missing)}")
        for row in reader:
            if row["category"] not in cats:
                raise ValueError(f"{path}: category {row['category']!r} is not in meta.json")
            out.append((row["src"], row["trg"], row["category"], row.get("mirrored", "0") in ("1", "true", "True")))
    return out


def _read_image(path: Path, k_max: int) -> dict[str, np.ndarray]:
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    with np.load(path) as z:
        missing = {"feat", "mask", "points", "kps"} - set(z.files)
        if missing:
            raise ValueError(f"{path}: missing arrays {sorted(missing)}")
        im = {k: z[k] for k in ("feat", "mask", "points", "kps")}
    h, w, _ = im["feat"].shape
    if im["mask"].shape != (h, w) or im["points"].shape != (h, w, 3) or im["kps"].shape[1:] != (3,):
        raise ValueError(f"{path}: expected feat (H, W, D), mask (H, W), points (H, W, 3), kps (K, 3)")
    kps = np.zeros((k_max, 3), dtype=np.float32)
    kps[: len(im["kps"])] = im["kps"]
    im["kps"] = kps
    return im


def _keypoint_tables(meta: dict, cats: list[str], k_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    seen = np.zeros((len(cats), k_max), dtype=bool)
    unseen = np.zeros_like(seen)
    twins = np.tile(np.arange(k_max), (len(cats), 1))
    for c, name in enumerate(cats):
        kp = meta["keypoints"][name]
        seen[c, kp["seen"]] = True
        unseen[c, kp["unseen"]] = True
        if "twins" in kp:
            twins[c, : len(kp["twins"])] = kp["twins"]
    return seen, unseen, twins
