"""Synthetic semantic-correspondence data: symmetric categories, mirror-invariant simulated backbone, renders
with point maps, pair splits, and the on-disk format round trip."""

import numpy as np
import pytest

from genlab.data.correspondence import (
    SimBackbone,
    SyntheticSpec,
    load_correspondence_dir,
    save_correspondence_dir,
    synthetic_correspondence,
)
from genlab.data.shapes3d import CATEGORIES, MIRROR, N_SEEN, keypoint_canonical, keypoint_twins, make_instance, render


def test_backbone_is_exactly_mirror_invariant_and_not_constant():
    bb = SimBackbone.create(16, np.random.default_rng(0))
    u = np.random.default_rng(1).normal(size=(500, 3))
    a, b = bb.clean(u), bb.clean(u * MIRROR)
    assert np.array_equal(a, b)  # bit for bit: the left/right confusion of the stand-in is exact
    # ... but not a function of |u| alone: moving along y or z changes the feature
    assert np.abs(bb.clean(u + np.array([0, 0.3, 0])) - a).mean() > 0.1
    assert np.abs(bb.clean(u * [1, -1, 1]) - a).mean() > 0.1


@pytest.mark.parametrize("name", sorted(CATEGORIES))
def test_keypoints_are_symmetric_and_split_into_seen_and_unseen(name):
    cat = CATEGORIES[name]
    assert len(cat.keypoints) == 2 * N_SEEN
    names = cat.keypoint_names
    assert not set(names[:N_SEEN]) & set(names[N_SEEN:])
    twins = keypoint_twins(cat)
    assert np.array_equal(twins[twins], np.arange(len(twins)))  # an involution
    kp, _ = keypoint_canonical(cat)
    assert np.allclose(kp[twins], kp * MIRROR, atol=1e-12)  # twins sit at mirrored canonical points
    # seen and unseen twins stay within their own set
    assert np.all((twins < N_SEEN) == (np.arange(len(twins)) < N_SEEN))


def test_render_mirrored_views_of_a_symmetric_instance_are_flips():
    """With zero jitter an instance is exactly symmetric: a view from azimuth -a is the view from +a flipped
    left/right, and its canonical coordinates are mirrored."""
    rng = np.random.default_rng(3)
    inst = make_instance(CATEGORIES["chair"], 20000, 0.0, rng)
    a = render(inst, np.deg2rad(60), np.deg2rad(20), 24)
    b = render(inst, np.deg2rad(-60), np.deg2rad(20), 24)
    assert a.side == 1 and b.side == -1
    flipped = b.mask[:, ::-1]
    assert (a.mask ^ flipped).mean() < 0.03  # up to sampling of the surface points
    both = a.mask & flipped
    assert np.median(np.abs(a.canonical[both][:, 0] + b.canonical[:, ::-1][both][:, 0])) < 0.05
    # the point map's depth is the camera z, and the object sits in front of the camera in both views
    assert np.isfinite(a.points[a.mask]).all() and a.points[a.mask][:, 2].std() > 0


def test_synthetic_set_shapes_splits_and_pairs():
    spec = SyntheticSpec(categories=("quadruped", "car"), size=16, instances=(3, 2, 2), views=2, pairs=(5, 4, 6),
                         n_points=1500, feat_dim=8)
    rng = np.random.default_rng(0)
    data = synthetic_correspondence(spec, SimBackbone.create(8, rng), rng)
    n = 2 * (3 + 2 + 2) * 2
    assert data.feats.shape == (n, 16, 16, 8) and data.points.shape == (n, 16, 16, 3)
    assert data.kps.shape == (n, 16, 3)
    assert data.pairs["test"].shape == (2 * 6, 2)
    assert data.mirrored["test"].sum() == 2 * 3  # half of the test pairs are mirrored, per category
    for split in ("train", "val", "test"):
        p = data.pairs[split]
        assert np.all(data.category[p[:, 0]] == data.category[p[:, 1]])
    assert np.array_equal(data.seen[:, :N_SEEN], np.ones((2, N_SEEN), bool)) and not data.seen[:, N_SEEN:].any()
    hidden = data.without_unseen()
    assert not (hidden.kps[..., 2] * hidden.keypoint_mask("unseen")).any()
    seen = data.keypoint_mask("seen")
    assert np.array_equal(hidden.kps[..., 2] * seen, data.kps[..., 2] * seen)


def test_directory_round_trip(tmp_path):
    spec = SyntheticSpec(categories=("chair",), size=12, instances=(2, 2, 2), views=2, pairs=(3, 2, 2),
                         n_points=800, feat_dim=4)
    rng = np.random.default_rng(1)
    data = synthetic_correspondence(spec, SimBackbone.create(4, rng), rng)
    back = load_correspondence_dir(save_correspondence_dir(data, tmp_path / "d"))
    # only images used by pairs are loaded, in id order; compare through the pair indices
    for split in ("train", "val", "test"):
        a, b = data.pairs[split], back.pairs[split]
        assert np.array_equal(data.kps[a], back.kps[b])
        assert np.allclose(data.feats[a], back.feats[b], atol=2e-3 * np.abs(data.feats).max())
        assert np.array_equal(data.mirrored[split], back.mirrored[split])
    assert np.array_equal(back.seen, data.seen) and np.array_equal(back.twins, data.twins)
