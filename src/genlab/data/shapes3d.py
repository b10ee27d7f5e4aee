"""Parametric 3D object categories rendered to small images with known depth (a stand-in for SPair-71k images
with MoGe point maps).

A category is a left/right-symmetric union of primitives (ellipsoids, boxes, capped cylinders) in a canonical
frame: x = the object's left (+) / right (-) axis, y = up, z = forward. An *instance* jitters the template (a
global anisotropic scale and per-part extent scales; mirror-twin parts share their jitter, so every instance stays
exactly symmetric). Each surface point keeps its **canonical coordinate** (where it sits on the un-jittered
template): that is the semantic identity a feature extractor sees and the keypoints are defined on.

A view is an orthographic camera at azimuth ``a`` (0 = looking at the object's front, +90 deg = its left side)
and elevation ``e``; ``side = sign(a)`` says which flank faces the camera. Two views with opposite sides are a
*mirrored* pair: for a symmetric object the second image is (up to the jitter) the first one flipped left/right.
Rendering z-buffers a dense point sample into an ``H x W`` grid and returns per pixel the canonical coordinate,
the camera-space 3D point (the "point map" with its depth) and the object mask. Everything is numpy and
vectorised over points.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

ELLIPSOID, BOX, CYLINDER = "ellipsoid", "box", "cylinder"
MIRROR = np.array([-1.0, 1.0, 1.0])  # the left/right reflection of the canonical frame


@dataclass(frozen=True)
class Part:
    """One primitive. ``size`` = radii (ellipsoid), half-extents (box) or (radius, half-length, 0) (cylinder,
    whose axis is ``axis``)."""

    kind: str
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    axis: tuple[float, float, float] = (0.0, 1.0, 0.0)


@dataclass(frozen=True)
class Category:
    name: str
    parts: tuple[Part, ...]
    keypoints: tuple[tuple[str, tuple[float, float, float]], ...]  # (name, approximate canonical location)

    @property
    def keypoint_names(self) -> list[str]:
        return [k for k, _ in self.keypoints]


def _pair(kind: str, center: tuple[float, float, float], size: tuple[float, float, float],
          axis: tuple[float, float, float] = (0.0, 1.0, 0.0)) -> tuple[Part, Part]:
    """A part on the object's left (x > 0) and its mirror twin."""
    x, y, z = center
    ax, ay, az = axis
    return Part(kind, (abs(x), y, z), size, (ax, ay, az)), Part(kind, (-abs(x), y, z), size, (-ax, ay, az))


def _lr(name: str, xyz: tuple[float, float, float]) -> list[tuple[str, tuple[float, float, float]]]:
    x, y, z = xyz
    return [(f"L-{name}", (abs(x), y, z)), (f"R-{name}", (-abs(x), y, z))]


def _quadruped() -> Category:
    parts = (
        Part(ELLIPSOID, (0.0, 0.58, 0.0), (0.2, 0.19, 0.5)),  # body
        Part(ELLIPSOID, (0.0, 0.78, 0.44), (0.09, 0.16, 0.1)),  # neck
        Part(ELLIPSOID, (0.0, 0.92, 0.6), (0.12, 0.11, 0.18)),  # head
        *_pair(ELLIPSOID, (0.07, 1.05, 0.54), (0.035, 0.08, 0.03)),  # ears
        *_pair(CYLINDER, (0.13, 0.21, 0.34), (0.055, 0.21, 0.0)),  # front legs
        *_pair(CYLINDER, (0.13, 0.21, -0.34), (0.055, 0.21, 0.0)),  # back legs
        Part(CYLINDER, (0.0, 0.72, -0.62), (0.03, 0.18, 0.0), (0.0, 0.6, -0.8)),  # tail
    )
    seen = [("nose", (0.0, 0.92, 0.78)), ("tail-tip", (0.0, 0.83, -0.78)), *_lr("ear-tip", (0.07, 1.13, 0.54)),
            *_lr("front-paw", (0.185, 0.02, 0.34)), *_lr("back-paw", (0.185, 0.02, -0.34))]
    unseen = [("withers", (0.0, 0.77, 0.25)), ("chin", (0.0, 0.82, 0.64)), *_lr("front-knee", (0.185, 0.24, 0.34)),
              *_lr("back-knee", (0.185, 0.24, -0.34)), *_lr("hip", (0.16, 0.62, -0.3))]
    return Category("quadruped", parts, tuple(seen + unseen))


def _chair() -> Category:
    parts = (
        Part(BOX, (0.0, 0.45, 0.0), (0.25, 0.035, 0.25)),  # seat
        Part(BOX, (0.0, 0.8, -0.22), (0.25, 0.32, 0.03)),  # back rest
        *_pair(CYLINDER, (0.21, 0.21, 0.21), (0.03, 0.21, 0.0)),  # front legs
        *_pair(CYLINDER, (0.21, 0.21, -0.21), (0.03, 0.21, 0.0)),  # back legs
        *_pair(BOX, (0.25, 0.6, 0.0), (0.02, 0.02, 0.2)),  # arm rests
    )
    seen = [*_lr("front-foot", (0.21, 0.0, 0.24)), *_lr("back-foot", (0.21, 0.0, -0.24)),
            *_lr("seat-front-corner", (0.25, 0.485, 0.25)), *_lr("back-top-corner", (0.25, 1.12, -0.2))]
    unseen = [("seat-front-middle", (0.0, 0.45, 0.285)), ("back-top-middle", (0.0, 1.12, -0.19)),
              *_lr("arm-front", (0.27, 0.62, 0.2)), *_lr("front-leg-middle", (0.24, 0.2, 0.21)),
              *_lr("back-rest-middle", (0.27, 0.8, -0.22))]
    return Category("chair", parts, tuple(seen + unseen))


def _car() -> Category:
    parts = (
        Part(BOX, (0.0, 0.36, 0.0), (0.4, 0.15, 0.9)),  # body
        Part(BOX, (0.0, 0.63, -0.1), (0.34, 0.12, 0.45)),  # cabin
        *_pair(CYLINDER, (0.4, 0.18, 0.58), (0.18, 0.07, 0.0), (1.0, 0.0, 0.0)),  # front wheels
        *_pair(CYLINDER, (0.4, 0.18, -0.58), (0.18, 0.07, 0.0), (1.0, 0.0, 0.0)),  # rear wheels
        *_pair(BOX, (0.42, 0.56, 0.3), (0.04, 0.03, 0.03)),  # side mirrors
    )
    seen = [*_lr("headlight", (0.3, 0.42, 0.9)), *_lr("taillight", (0.3, 0.42, -0.9)),
            *_lr("front-wheel", (0.47, 0.18, 0.58)), *_lr("rear-wheel", (0.47, 0.18, -0.58))]
    unseen = [("front-bumper", (0.0, 0.28, 0.9)), ("rear-bumper", (0.0, 0.28, -0.9)),
              *_lr("mirror", (0.46, 0.56, 0.3)), *_lr("roof-rear-corner", (0.34, 0.75, -0.55)),
              *_lr("door-center", (0.4, 0.36, 0.0))]
    return Category("car", parts, tuple(seen + unseen))


CATEGORIES: dict[str, Category] = {c.name: c for c in (_quadruped(), _chair(), _car())}
N_SEEN = 8  # the first 8 keypoints of every category are the "seen" (training) ones, the last 8 "unseen"


def category(name: str) -> Category:
    if name not in CATEGORIES:
        raise ValueError(f"unknown category {name!r}; known: {', '.join(CATEGORIES)}")
    return CATEGORIES[name]


def keypoint_twins(cat: Category) -> np.ndarray:
    """Index of each keypoint's mirror twin (itself for keypoints on the symmetry plane)."""
    names = cat.keypoint_names
    swap = {"L-": "R-", "R-": "L-"}
    return np.array([names.index(swap[n[:2]] + n[2:]) if n[:2] in swap else i for i, n in enumerate(names)])


# -- surface sampling -----------------------------------------------------------------------------------------


def _unit_rows(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@lru_cache(maxsize=256)
def _axis_frame(axis: tuple[float, float, float]) -> np.ndarray:
    """Rows (u, v, axis): an orthonormal frame whose third row is the (normalised) cylinder axis."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    ref = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    u = np.cross(a, ref)
    u /= np.linalg.norm(u)
    return np.stack([u, np.cross(a, u), a])


def _part_area(p: Part) -> float:
    s = np.asarray(p.size)
    if p.kind == ELLIPSOID:  # Knud Thomsen's approximation
        q = 1.6075
        a, b, c = s**q
        return float(4 * np.pi * ((a * b + a * c + b * c) / 3) ** (1 / q))
    if p.kind == BOX:
        return float(8 * (s[0] * s[1] + s[0] * s[2] + s[1] * s[2]))
    r, h = s[0], s[1]
    return float(2 * np.pi * r * 2 * h + 2 * np.pi * r * r)


def _sample_part(p: Part, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points on the part's surface in canonical coordinates (area-uniform for boxes and cylinders;
    ellipsoids by normal-vector scaling, close enough for the rounded parts used here)."""
    c, s = np.asarray(p.center), np.asarray(p.size)
    if p.kind == ELLIPSOID:
        return c + _unit_rows(rng.standard_normal((n, 3))) * s
    if p.kind == BOX:
        face_area = np.array([s[1] * s[2], s[1] * s[2], s[0] * s[2], s[0] * s[2], s[0] * s[1], s[0] * s[1]])
        face = rng.choice(6, size=n, p=face_area / face_area.sum())
        pts = rng.uniform(-1, 1, size=(n, 3))
        axis, sign = face // 2, np.where(face % 2 == 0, 1.0, -1.0)
        pts[np.arange(n), axis] = sign
        return c + pts * s
    r, h = s[0], s[1]
    frame = _axis_frame(tuple(p.axis))
    on_cap = rng.random(n) < (r * r) / (r * r + 2 * r * h)  # caps: 2*pi*r^2 of 2*pi*r*(r + 2h)
    theta = rng.uniform(0, 2 * np.pi, n)
    rad = np.where(on_cap, r * np.sqrt(rng.random(n)), r)
    along = np.where(on_cap, np.where(rng.random(n) < 0.5, h, -h), rng.uniform(-h, h, n))
    local = np.stack([rad * np.cos(theta), rad * np.sin(theta), along], axis=1)
    return c + local @ frame


def sample_surface(cat: Category, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` canonical surface points of the template (area-weighted over parts) and their part index."""
    areas = np.array([_part_area(p) for p in cat.parts])
    counts = rng.multinomial(n, areas / areas.sum())
    pts = [_sample_part(p, k, rng) for p, k in zip(cat.parts, counts)]
    part = np.repeat(np.arange(len(cat.parts)), counts)
    return np.concatenate(pts).astype(np.float64), part


def keypoint_canonical(cat: Category) -> tuple[np.ndarray, np.ndarray]:
    """Keypoints snapped to the template surface (a fixed dense sample), with their part indices. Mirror
    twins are snapped to exactly mirrored points, so the keypoint set is symmetric to the last bit."""
    pts, part = _snapped_keypoints(cat)
    return pts.copy(), part.copy()


@lru_cache(maxsize=16)
def _snapped_keypoints(cat: Category, n_ref: int = 40_000) -> tuple[np.ndarray, np.ndarray]:
    pts, part = sample_surface(cat, n_ref, np.random.default_rng(20250610))
    target = np.array([xyz for _, xyz in cat.keypoints])
    target_left = target * np.where(target[:, :1] < 0, MIRROR, 1.0)  # snap on the left half, mirror back
    idx = np.argmin(((target_left[:, None] - pts[None]) ** 2).sum(-1), axis=1)
    snapped = pts[idx].copy()
    snapped[:, 0] = np.abs(snapped[:, 0]) * np.sign(target[:, 0])
    part_idx = part[idx].copy()
    twins = _part_twins(cat)
    right = target[:, 0] < 0
    part_idx[right] = twins[part_idx[right]]
    return snapped, part_idx


def _part_twins(cat: Category) -> np.ndarray:
    centers = np.array([p.center for p in cat.parts])
    mirrored = centers * MIRROR
    return np.argmin(((mirrored[:, None] - centers[None]) ** 2).sum(-1), axis=1)


# -- instances ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    """A jittered instance: ``points`` (posed) with ``canonical`` coordinates; ``kp_points`` its keypoints."""

    category: str
    canonical: np.ndarray  # (n, 3) template coordinates of the surface sample
    points: np.ndarray  # (n, 3) the same points on this instance
    kp_points: np.ndarray  # (K, 3) keypoints on this instance


def _jitter_maps(cat: Category, jitter: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-part extent scales (shared by mirror twins) and a global anisotropic scale."""
    twins = _part_twins(cat)
    scale = rng.uniform(1 - jitter, 1 + jitter, size=(len(cat.parts), 3))
    scale = np.where((twins < np.arange(len(twins)))[:, None], scale[twins], scale)
    glob = rng.uniform(1 - jitter, 1 + jitter, size=3)
    return scale, glob


def _deform(u: np.ndarray, part: np.ndarray, cat: Category, scale: np.ndarray, glob: np.ndarray) -> np.ndarray:
    """Posed point = global scale * (part centre + part scale * (u - part centre)): mirror-equivariant."""
    centers = np.array([p.center for p in cat.parts])
    c = centers[part]
    return glob * (c + scale[part] * (u - c))


def make_instance(cat: Category, n_points: int, jitter: float, rng: np.random.Generator) -> Instance:
    canonical, part = sample_surface(cat, n_points, rng)
    scale, glob = _jitter_maps(cat, jitter, rng)
    kp_u, kp_part = keypoint_canonical(cat)
    return Instance(cat.name, canonical, _deform(canonical, part, cat, scale, glob),
                    _deform(kp_u, kp_part, cat, scale, glob))


# -- cameras and rendering --------------------------------------------------------------------------------------


def camera_rotation(azimuth: float, elevation: float) -> np.ndarray:
    """Rows (right, down, forward) of an orthographic camera looking at the origin from azimuth / elevation in
    radians (azimuth 0 = in front of the object, +pi/2 = on its left side). Camera coordinates ``X @ R.T``
    follow the OpenCV convention (x image-right, y image-down, z depth, larger = farther; right-handed), the
    frame monocular point-map estimators such as MoGe use."""
    d = np.array([np.sin(azimuth) * np.cos(elevation), np.sin(elevation), np.cos(azimuth) * np.cos(elevation)])
    forward = -d
    right = np.cross(forward, np.array([0.0, 1.0, 0.0]))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return np.stack([right, -up, forward])


@dataclass(frozen=True)
class View:
    """One rendered image. Per pixel: ``canonical`` (H, W, 3), ``points`` (H, W, 3) camera-space point map
    (x right, y down, z depth; object units), ``mask`` (H, W). Keypoints: ``kps`` (K, 3) = (col, row, visible) in
    pixel coordinates. ``side`` = +1 when the object's left flank faces the camera, -1 for its right."""

    canonical: np.ndarray
    points: np.ndarray
    mask: np.ndarray
    kps: np.ndarray
    side: int
    azimuth: float
    elevation: float


def render(inst: Instance, azimuth: float, elevation: float, size: int, margin: float = 0.1,
           occlusion_px: float = 2.0) -> View:
    """Orthographic z-buffer render of an instance into a ``size x size`` grid (object fitted to the image
    with ``margin`` on each side). A keypoint is visible when no surface lies more than ``occlusion_px`` pixel
    widths (in depth) in front of it at its pixel: a slanted surface spans about a pixel of depth per pixel."""
    rot = camera_rotation(azimuth, elevation)
    cam = inst.points @ rot.T
    kp_cam = inst.kp_points @ rot.T
    lo, hi = cam[:, :2].min(0), cam[:, :2].max(0)
    scale = (1 - 2 * margin) * size / max(hi - lo)
    mid = (lo + hi) / 2

    def to_pixel(xy: np.ndarray) -> np.ndarray:  # (col, row), row 0 at the top (camera y points down)
        return (xy - mid) * scale + size / 2

    pix = np.clip(np.floor(to_pixel(cam[:, :2])).astype(int), 0, size - 1)
    flat = pix[:, 1] * size + pix[:, 0]
    order = np.lexsort((cam[:, 2], flat))  # by pixel, then nearest first
    first = order[np.r_[True, flat[order][1:] != flat[order][:-1]]]
    canonical = np.zeros((size * size, 3))
    points = np.zeros((size * size, 3))
    mask = np.zeros(size * size, dtype=bool)
    canonical[flat[first]], points[flat[first]], mask[flat[first]] = inst.canonical[first], cam[first], True
    kp_xy = to_pixel(kp_cam[:, :2])
    kp_pix = np.clip(np.floor(kp_xy).astype(int), 0, size - 1)
    kp_flat = kp_pix[:, 1] * size + kp_pix[:, 0]
    visible = mask[kp_flat] & (kp_cam[:, 2] <= points[kp_flat, 2] + occlusion_px / scale)
    kps = np.column_stack([kp_pix + 0.5, visible.astype(float)])  # pixel centres
    side = 1 if np.sin(azimuth) > 0 else -1
    return View(canonical.reshape(size, size, 3), points.reshape(size, size, 3), mask.reshape(size, size), kps,
                side, float(azimuth), float(elevation))


def sample_camera(rng: np.random.Generator, side: int, az_range: tuple[float, float],
                  el_range: tuple[float, float]) -> tuple[float, float]:
    """Azimuth (radians) on the given side, |azimuth| uniform in ``az_range`` degrees; elevation in ``el_range``."""
    az = np.deg2rad(rng.uniform(*az_range)) * side
    return float(az), float(np.deg2rad(rng.uniform(*el_range)))
