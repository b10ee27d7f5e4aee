"""Tests for genlab.data.images: shapes, ranges, subsets, up-sampling and the image-folder loader."""

from __future__ import annotations

import numpy as np
import pytest

from genlab.data.images import (
    digits_data,
    gaussian_mixture,
    load_dataset,
    load_image_folder,
    subset,
    toy2d,
    upsample_images,
)


def test_digits_shapes_range_and_split_are_disjoint():
    d = digits_data(8, n_test=300, seed=1)
    assert d.x_train.shape == (1497, 64) and d.x_test.shape == (300, 64) and d.shape == (1, 8, 8)
    assert d.x_train.min() == -1.0 and d.x_train.max() == 1.0
    # no test image appears in train (digits has a handful of duplicates; count exact row matches)
    tr = {r.tobytes() for r in d.x_train}
    assert sum(r.tobytes() in tr for r in d.x_test) <= 5
    d2 = digits_data(8, n_test=300, seed=1)
    np.testing.assert_array_equal(d.x_test, d2.x_test)


def test_upsampling_preserves_constant_images_and_mean():
    x = np.full((2, 8, 8), 0.25, np.float32)
    up = upsample_images(x, 16)
    assert up.shape == (2, 16, 16)
    np.testing.assert_allclose(up, 0.25, atol=1e-6)
    d16 = digits_data(16, n_test=100)
    assert d16.x_train.shape[1] == 256 and d16.shape == (1, 16, 16)
    d8 = digits_data(8, n_test=100)
    # bilinear x2 keeps the image mean up to the border effect
    assert abs(d16.x_train.mean() - d8.x_train.mean()) < 0.02


def test_subset_is_class_balanced_and_deterministic():
    d = digits_data(8, n_test=200)
    s = subset(d, 10, np.random.default_rng(0))
    assert len(s.x_train) == 10 and sorted(s.y_train.tolist()) == list(range(10))
    s2 = subset(d, 10, np.random.default_rng(0))
    np.testing.assert_array_equal(s.x_train, s2.x_train)
    assert subset(d, "all", np.random.default_rng(0)) is d
    assert len(subset(d, 10**6, np.random.default_rng(0)).x_train) == len(d.x_train)
    with pytest.raises(ValueError):
        subset(d, 0, np.random.default_rng(0))


def test_gaussian_mixture_and_toys():
    rng = np.random.default_rng(0)
    x, y = gaussian_mixture(4000, 16, rng, components=4, spread=3.0, std=0.1)
    assert x.shape == (4000, 16) and set(np.unique(y)) == {0, 1, 2, 3}
    # within-component std is 0.1
    assert abs(x[y == 0].std(0).mean() - 0.1) < 0.02
    for name in ("moons", "8gaussians", "circles"):
        p = toy2d(name, 500, rng)
        assert p.shape == (500, 2) and np.isfinite(p).all()
    r = np.linalg.norm(toy2d("8gaussians", 2000, rng), axis=1)
    assert abs(np.median(r) - 2.0) < 0.1
    with pytest.raises(ValueError):
        toy2d("spirals", 10, rng)
    assert load_dataset("gmm32", n_test=100).x_test.shape == (100, 32)


def test_image_folder_loader_reads_pngs_with_classes(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for cls in ("cat", "dog"):
        (tmp_path / cls).mkdir()
        for i in range(5):
            val = 0 if cls == "cat" else 255
            a = np.full((6, 6), val, np.uint8)
            a[0, 0] = rng.integers(0, 256)
            Image.fromarray(a).save(tmp_path / cls / f"{i}.png")
    d = load_image_folder(tmp_path, n_test=2, seed=0)
    assert d.shape == (1, 6, 6) and len(d.x_train) == 8 and len(d.x_test) == 2
    x = np.concatenate([d.x_train, d.x_test])
    y = np.concatenate([d.y_train, d.y_test])
    # cats (label 0) are black = -1 except one pixel, dogs (label 1) white = +1
    np.testing.assert_allclose(x[y == 0][:, 1:], -1.0)
    np.testing.assert_allclose(x[y == 1][:, 1:], 1.0)
    up = load_image_folder(tmp_path, size=12, n_test=0.2)
    assert up.shape == (1, 12, 12)
    rgb = load_image_folder(tmp_path, grayscale=False, n_test=2)
    assert rgb.shape == (3, 6, 6)


def test_image_folder_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_image_folder(tmp_path / "missing")
    with pytest.raises(ValueError, match="need at least 2"):
        load_image_folder(tmp_path)
    with pytest.raises(ValueError, match="image_folder"):
        load_dataset("folder")


def test_mnist1d_procedural_is_seeded_and_standardised():
    from genlab.data.images import mnist1d_data

    a = mnist1d_data(seed=3, num_samples=300)
    b = mnist1d_data(seed=3, num_samples=300)
    assert a.x_train.shape == (240, 40) and a.x_test.shape == (60, 40) and a.shape == (40,)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert abs(a.x_train.mean()) < 1e-5 and abs(a.x_train.std() - 1) < 1e-4
    assert not np.array_equal(a.x_train, mnist1d_data(seed=4, num_samples=300).x_train)
