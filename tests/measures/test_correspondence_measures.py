"""PCK@alpha and nearest-neighbour keypoint transfer against known answers and a brute-force count."""

import numpy as np
import torch

from genlab.measures.correspondence import bbox_size, pck, pck_correct, transfer_keypoints


def test_bbox_size_is_the_larger_extent():
    m = torch.zeros(2, 10, 10, dtype=torch.bool)
    m[0, 2:5, 1:9] = True  # 3 rows x 8 cols
    assert bbox_size(m).tolist() == [8.0, 0.0]


def test_pck_is_one_for_identical_keypoints_and_matches_brute_force():
    rng = np.random.default_rng(0)
    p, k = 7, 5
    trg = torch.as_tensor(np.concatenate([rng.uniform(0, 20, (p, k, 2)), np.ones((p, k, 1))], -1), dtype=torch.float32)
    valid = torch.as_tensor(rng.random((p, k)) < 0.8)
    bbox = torch.as_tensor(rng.uniform(5, 20, p), dtype=torch.float32)
    same = pck_correct(trg[..., :2], trg, valid, bbox, 0.1)
    assert pck(same, valid) == 1.0
    pred = trg[..., :2] + torch.as_tensor(rng.normal(0, 1.5, (p, k, 2)), dtype=torch.float32)
    got = pck_correct(pred, trg, valid, bbox, 0.1)
    hits = total = 0
    for i in range(p):
        for j in range(k):
            if valid[i, j]:
                total += 1
                d = ((pred[i, j, 0] - trg[i, j, 0]) ** 2 + (pred[i, j, 1] - trg[i, j, 1]) ** 2) ** 0.5
                hits += int(d <= 0.1 * bbox[i])
    assert 0 < hits < total  # the test exercises both outcomes
    assert pck(got, valid) == hits / total
    assert not got[~valid].any()
    assert np.isnan(pck(got, torch.zeros_like(valid)))


def test_transfer_finds_the_matching_pixel_inside_the_target_mask():
    h = w = 6
    d = h * w
    src = torch.eye(d).reshape(1, h, w, d)  # one-hot per pixel
    perm = torch.randperm(d, generator=torch.Generator().manual_seed(0))
    trg = src.reshape(1, d, d)[:, perm].reshape(1, h, w, d)  # target pixel i carries source feature perm[i]
    kps = torch.tensor([[[1.5, 2.5, 1.0], [4.5, 0.5, 1.0]]])  # (col, row) pixel centres
    pred = transfer_keypoints(src, trg, kps, torch.ones(1, h, w, dtype=torch.bool))
    for j, (c, r) in enumerate([(1, 2), (4, 0)]):
        where = int((perm == r * w + c).nonzero())
        assert pred[0, j].tolist() == [where % w + 0.5, where // w + 0.5]
    # a mask that excludes the true match forces a different, in-mask answer
    mask = torch.ones(1, h, w, dtype=torch.bool)
    where = int((perm == 2 * w + 1).nonzero())
    mask[0, where // w, where % w] = False
    pred = transfer_keypoints(src, trg, kps[:, :1], mask)
    col, row = int(pred[0, 0, 0] - 0.5), int(pred[0, 0, 1] - 0.5)
    assert mask[0, row, col] and (row * w + col) != where
