"""Kabsch with scale, the 3D prototype losses and the correspondence head."""

import math

import torch

from genlab.nn.corr_head import CorrHead, keypoint_clip_loss
from genlab.nn.prototype3d import CategoryPrototype, apply_similarity, farthest_point_sample, kabsch


def _rotation(gen: torch.Generator) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=gen, dtype=torch.float64))
    return q * torch.sign(torch.linalg.det(q))


def test_kabsch_recovers_a_known_similarity_transform():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 20, 3, generator=gen, dtype=torch.float64)
    rot = torch.stack([_rotation(gen) for _ in range(4)])
    s = torch.tensor([0.5, 1.0, 2.0, 3.7], dtype=torch.float64)
    t = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    y = apply_similarity(s, rot, t, x)
    s2, r2, t2 = kabsch(x, y)
    assert torch.allclose(s2, s, atol=1e-5) and torch.allclose(r2, rot, atol=1e-5)
    assert torch.allclose(t2, t, atol=1e-5)
    assert torch.allclose(torch.linalg.det(r2), torch.ones(4, dtype=torch.float64), atol=1e-9)


def test_kabsch_never_returns_a_reflection_and_honours_weights():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(30, 3, generator=gen, dtype=torch.float64)
    _, r, _ = kabsch(x, x * torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64))  # best fit would be a mirror
    assert abs(float(torch.linalg.det(r)) - 1.0) < 1e-9
    # outliers with zero weight do not move the fit
    rot = _rotation(gen)
    y = x @ rot.T
    y[:5] += 10.0
    w = torch.ones(30, dtype=torch.float64)
    w[:5] = 0
    s, r, t = kabsch(x, y, w)
    assert torch.allclose(r, rot, atol=1e-6) and abs(float(s) - 1) < 1e-6 and float(t.abs().max()) < 1e-6


def test_location_loss_vanishes_at_the_aligned_prototype_and_trains_it():
    gen = torch.Generator().manual_seed(2)
    proto = CategoryPrototype(1, 6, 4, gen)
    target = torch.randn(6, 3, generator=gen)
    with torch.no_grad():
        proto.kps[0] = target
    rot = _rotation(gen).float()
    # the same keypoints moved by a similarity; shrunk, since the alignment's scale is clipped at >= 1 (paper's code)
    kp3d = (0.5 * target @ rot.T + 1.0).unsqueeze(0)
    vis = torch.ones(1, 6, dtype=torch.bool)
    assert proto.location_loss(kp3d, vis, torch.tensor([0])).item() < 1e-5
    # a larger observation cannot be shrunk onto the prototype: the clip leaves a loss
    assert proto.location_loss(4 * kp3d, vis, torch.tensor([0])).item() > 0.1
    # from ~0 the prototype is pulled towards the observed shape
    fresh = CategoryPrototype(1, 6, 4, gen)
    opt = torch.optim.Adam(fresh.parameters(), lr=0.05)
    first = None
    for _ in range(150):
        loss = fresh.location_loss(kp3d, vis, torch.tensor([0]))
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.2 * first


def test_feature_loss_is_log_k_for_uninformative_features_and_geometry_loss_is_finite():
    proto = CategoryPrototype(2, 5, 8, torch.Generator().manual_seed(3))
    with torch.no_grad():
        proto.log_temp.fill_(0.0)
    feats = torch.zeros(3, 5, 8)
    feats[..., 0] = 1.0
    with torch.no_grad():
        proto.feats[:, :, 0] = 0.0  # every prototype feature orthogonal to the input: uniform logits
    loss = proto.feature_loss(feats, torch.ones(3, 5, dtype=torch.bool), torch.tensor([0, 1, 0]))
    assert abs(loss.item() - math.log(5)) < 1e-5
    gen = torch.Generator().manual_seed(4)
    pts = torch.randn(2, 16, 3, generator=gen)
    nbr = torch.cdist(pts, pts).topk(4, largest=False).indices
    geo = proto.geometry_loss(torch.randn(2, 16, 8, generator=gen, requires_grad=True), pts, nbr,
                              torch.tensor([0, 1]), 4)
    assert torch.isfinite(geo) and geo.item() >= 0


def test_farthest_point_sample_stays_in_the_mask_and_spreads():
    pts = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [0.1, 0, 0], [5, 0, 0], [9, 9, 9]]])
    mask = torch.tensor([[True, True, True, True, False]])
    idx = farthest_point_sample(pts, mask, 3, torch.Generator().manual_seed(0))
    assert set(idx[0].tolist()) <= {0, 1, 2, 3} and 3 in idx[0].tolist() and len(set(idx[0].tolist())) == 3


def test_corr_head_outputs_unit_descriptors_and_clip_loss_prefers_matches():
    head = CorrHead(6, out_dim=5, width=8, generator=torch.Generator().manual_seed(0))
    out = head(torch.randn(2, 7, 9, 6))
    assert out.shape == (2, 7, 9, 5)
    assert torch.allclose(out.norm(dim=-1), torch.ones(2, 7, 9), atol=1e-5)
    f = torch.nn.functional.normalize(torch.randn(2, 4, 5, generator=torch.Generator().manual_seed(1)), dim=-1)
    valid = torch.ones(2, 4, dtype=torch.bool)
    scale = torch.tensor(math.log(10.0))
    matched = keypoint_clip_loss(f, f, valid, scale)
    shuffled = keypoint_clip_loss(f, f[:, [1, 2, 3, 0]], valid, scale)
    assert float(matched) < float(shuffled)


def test_corr_head_init_depends_only_on_its_generator():
    torch.manual_seed(0)
    a = CorrHead(4, 3, 5, generator=torch.Generator().manual_seed(9))
    torch.manual_seed(1)
    b = CorrHead(4, 3, 5, generator=torch.Generator().manual_seed(9))
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name
