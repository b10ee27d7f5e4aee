"""spair-u-keypoints: unseen keypoints never reach training, config validation, and the claim checks on
hand-made metrics (known verdicts)."""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest
import torch

from genlab.studies.spair_u import (
    SpairUKeypoints,
    TrainSettings,
    _check_3d_unseen,
    _check_gap,
    _check_mirror_invariant,
    _check_seen_equal,
    _check_seen_gain,
    build_data,
    train_head,
)

torch.set_num_threads(1)
TINY = {"image_size": 12, "train_instances": 3, "val_instances": 2, "test_instances": 2, "train_pairs": 6,
        "val_pairs": 2, "test_pairs": 2, "surface_points": 800, "feat_dim": 6, "categories": ("chair", "car")}
TS = TrainSettings(steps=3, batch=2, width=6, out_dim=6, eval_every=3, object_points=10, neighbours=4)


@pytest.fixture(scope="module")
def tiny_data():
    cfg = asdict(SpairUKeypoints.config("smoke", TINY))
    data, _ = build_data(cfg, seed=5)
    return data


@pytest.mark.parametrize("arm", ["supervised", "3d"])
def test_unseen_annotations_never_change_training(tiny_data, arm):
    """Scrambling every unseen keypoint (positions and visibility) leaves the trained head bit-identical, and the
    keypoint slots training read are exactly the seen ones."""
    head_a, log_a = train_head(tiny_data, arm, TS, seed=11)
    scrambled = tiny_data.without_unseen()
    unseen = scrambled.keypoint_mask("unseen")
    rng = np.random.default_rng(0)
    scrambled.kps[..., :2] = np.where(unseen[..., None], rng.uniform(0, 12, scrambled.kps[..., :2].shape),
                                      scrambled.kps[..., :2])
    head_b, log_b = train_head(scrambled, arm, TS, seed=11)
    for (name, a), b in zip(head_a.state_dict().items(), head_b.state_dict().values()):
        assert torch.equal(a, b), name
    assert log_a["val_seen_pck"] == log_b["val_seen_pck"]
    seen = {(c, int(k)) for c, row in zip(tiny_data.categories, tiny_data.seen) for k in np.flatnonzero(row)}
    assert {tuple(x) for x in log_a["keypoint_slots_used"]} == seen


def test_config_validation_rejects_bad_values():
    for bad in ({"alpha": 0.0 - 1}, {"categories": ("plane",)}, {"neighbours": 99, "object_points": 8},
                {"lr": math.nan}, {"w_clip": 0.0, "w_dense": 0.0}, {"seeds": 0}):
        with pytest.raises(ValueError):
            SpairUKeypoints.config("quick", bad)


class _Cfg:
    seen_gain_min, gap_keep_max, unseen_margin, seen_equal_tol = 0.05, 0.5, 0.0, 0.03


def _six(*values):
    """Six seeds: the given three and the same shifted by 0.005 (the decision rule needs >= 5 units)."""
    return [*values, *(v + 0.005 for v in values)]


def _metrics(**per_key):
    return {"pck": {k.replace("__", "/"): _six(*v) for k, v in per_key.items()}}


def test_claim_checks_on_known_numbers():
    m = _metrics(supervised__seen__all=[0.80, 0.82, 0.81], raw__seen__all=[0.65, 0.66, 0.64],
                 supervised__unseen__all=[0.60, 0.61, 0.59], raw__unseen__all=[0.70, 0.71, 0.69],
                 **{"3d__unseen__all": [0.66, 0.66, 0.65], "3d__seen__all": [0.81, 0.82, 0.81]})
    assert _check_seen_gain(m, _Cfg).held is True
    ev = _check_gap(m, _Cfg)  # unseen gain -0.1 < 0.5 * 0.16
    assert ev.held is True and ev.test.n == 6 and ev.test.direction == "below"
    assert ev.test.effect == pytest.approx(-0.1 - 0.5 * (0.81 - 0.65))
    assert _check_3d_unseen(m, _Cfg).held is True
    assert _check_seen_equal(m, _Cfg).held is True
    # three seeds never decide
    three = {"pck": {k: v[:3] for k, v in m["pck"].items()}}
    assert _check_3d_unseen(three, _Cfg).held is None
    # the supervised head keeps its whole gain on unseen keypoints: no gap
    m["pck"]["supervised/unseen/all"] = _six(0.86, 0.87, 0.85)
    assert _check_gap(m, _Cfg).held is False
    # the head does not beat raw features on seen keypoints: the gap claim has no premise
    m["pck"]["supervised/seen/all"] = _six(0.65, 0.66, 0.64)
    assert _check_gap(m, _Cfg).held is None and "precondition" in _check_gap(m, _Cfg).note
    assert _check_mirror_invariant({"mirror_invariance_max_abs": 0.0}, _Cfg).held is True
    assert _check_mirror_invariant({"mirror_invariance_max_abs": 1e-3}, _Cfg).held is False


def test_per_category_claim_tests_each_category_over_seeds():
    from genlab.studies.spair_u import _check_per_category

    m = _metrics(**{"3d__unseen__cat__car": [0.6, 0.62, 0.61], "supervised__unseen__cat__car": [0.5, 0.52, 0.5],
                    "3d__unseen__cat__chair": [0.6, 0.62, 0.61], "supervised__unseen__cat__chair": [0.5, 0.5, 0.5]})
    m["categories"] = ["car", "chair"]
    assert _check_per_category(m, _Cfg).held is True
    m["pck"]["supervised/unseen/cat/chair"] = _six(0.7, 0.7, 0.71)  # chair reversed: the intersection fails
    ev = _check_per_category(m, _Cfg)
    assert ev.held is False and ev.numbers["categories_won"] == "1/2"


def test_swap_control_claim_reads_the_swapped_head_in_original_slot_names():
    from genlab.studies.spair_u import _check_swap_control

    m = _metrics(supervised__seen__all=[0.80, 0.82, 0.81], supervised__unseen__all=[0.60, 0.61, 0.59],
                 swapped__seen__all=[0.62, 0.60, 0.61], swapped__unseen__all=[0.79, 0.80, 0.81])
    ev = _check_swap_control(m, _Cfg)
    assert ev.held is True and ev.numbers["swapped_on_unseen"] == pytest.approx(0.8025)
    m["pck"]["swapped/unseen/all"] = _six(0.55, 0.56, 0.57)  # training on the unseen slots does not help them
    assert _check_swap_control(m, _Cfg).held is False
    del m["pck"]["swapped/unseen/all"]
    assert _check_swap_control(m, _Cfg).held is None


def test_swapped_arm_trains_on_the_unseen_slots(tiny_data):
    from dataclasses import replace

    swapped = replace(tiny_data, seen=tiny_data.unseen, unseen=tiny_data.seen)
    _, log = train_head(swapped, "supervised", TS, seed=0)
    read = {tuple(k) for k in log["keypoint_slots_used"]}
    unseen = {(name, int(k)) for c, name in enumerate(tiny_data.categories)
              for k in np.flatnonzero(tiny_data.unseen[c])}
    assert read == unseen


def _plain_loss(member, head, proto, images, ts):
    """The per-model loss computed the plain way: one :class:`CorrHead` (``nn.Conv2d``), no model dimension."""
    from genlab.nn.corr_head import keypoint_clip_loss, keypoint_dense_loss

    data = member.data
    n, h, w, _ = data.feats.shape
    desc = head(torch.as_tensor(data.feats)[images]).reshape(len(images), h * w, -1)
    pix = member.kp_pix[images]
    kp_feat = torch.gather(desc, 1, pix.unsqueeze(-1).expand(-1, -1, desc.shape[-1]))
    vis = member.kp[images, :, 2] > 0
    mask = torch.as_tensor(data.mask.reshape(n, -1))[images]
    p = len(images) // 2
    f, pp, vv = kp_feat.view(p, 2, *kp_feat.shape[1:]), pix.view(p, 2, -1), vis.view(p, 2, -1)
    dd, mm = desc.view(p, 2, h * w, -1), mask.view(p, 2, -1)
    both = vv[:, 0] & vv[:, 1]
    loss = ts.w_clip * keypoint_clip_loss(f[:, 0], f[:, 1], both, head.logit_scale)
    loss = loss + ts.w_dense * 0.5 * (keypoint_dense_loss(f[:, 0], dd[:, 1], pp[:, 1], both, mm[:, 1], head.logit_scale)
                                      + keypoint_dense_loss(f[:, 1], dd[:, 0], pp[:, 0], both, mm[:, 0],
                                                            head.logit_scale))
    if proto is not None:
        cat = torch.as_tensor(data.category)[images]
        points = torch.as_tensor(data.points.reshape(n, -1, 3))[images]
        kp3d = torch.gather(points, 1, pix.unsqueeze(-1).expand(-1, -1, 3))
        obj = torch.gather(desc, 1, member.sample[images].unsqueeze(-1).expand(-1, -1, desc.shape[-1]))
        geo = proto.geometry_loss(obj, member.sample_xyz[images], member.nbr[images], cat, ts.neighbours)
        feat = proto.feature_loss(kp_feat, vis, cat)
        loss = loss + ts.w_loc * proto.location_loss(kp3d, vis, cat) + ts.w_feat * feat + ts.w_geo * geo
    return loss


def test_stacked_training_matches_separately_trained_plain_models(tiny_data):
    """Five models (two seeds' data; supervised, 3D and swapped arms) trained as one stack for 4 steps end with the
    parameters of the same five models trained one by one as plain heads (own init, batches and Adam), and every
    step's per-model losses agree; so stacking changes the cost, not the models."""
    from dataclasses import replace

    from genlab.studies.spair_u import _Member, _Trainer

    cfg = asdict(SpairUKeypoints.config("smoke", TINY))
    other, _ = build_data(cfg, seed=6)
    swapped = replace(tiny_data, seen=tiny_data.unseen, unseen=tiny_data.seen)
    tasks = [(tiny_data, "supervised", 1), (tiny_data, "3d", 1), (swapped, "supervised", 1), (other, "supervised", 7),
             (other, "3d", 7)]
    ts, steps = replace(TS, lr=1e-2), 4
    trainer = _Trainer([_Member(d, arm, ts, seed) for d, arm, seed in tasks], ts, "cpu")
    plain = [_Member(d, arm, ts, seed) for d, arm, seed in tasks]
    opts = []
    for m in plain:
        groups = [{"params": list(m.head.parameters()), "lr": ts.lr}]
        if m.arm == "3d":
            groups.append({"params": list(m.proto.parameters()), "lr": ts.lr * ts.proto_lr_mult})
        opts.append(torch.optim.Adam(groups))
    for _ in range(steps):
        images = torch.stack([m.draw(ts.batch) for m in trainer.members])
        stacked = trainer.loss(images)
        trainer.opt.zero_grad()
        stacked.sum().backward()
        trainer.opt.step()
        for k, (m, opt) in enumerate(zip(plain, opts, strict=True)):
            loss = _plain_loss(m, m.head, m.proto if m.arm == "3d" else None, m.draw(ts.batch), ts)
            assert loss.item() == pytest.approx(stacked[k].item(), rel=1e-4, abs=1e-5)
            opt.zero_grad()
            loss.backward()
            opt.step()
    for k, (trained, m) in enumerate(zip(trainer.head.unstack(), plain, strict=True)):
        for (name, a), b in zip(trained.state_dict().items(), m.head.state_dict().values(), strict=True):
            assert torch.allclose(a, b, atol=2e-5), (k, name, float((a - b).abs().max()))
        start = _Member(*tasks[k][:2], ts, tasks[k][2]).head.state_dict().values()
        moved = max(float((a - b).abs().max()) for a, b in zip(trained.state_dict().values(), start, strict=True))
        assert moved > 1e-3  # training moved the weights, so the agreement is not the trivial one
    protos = [m.proto for m in plain if m.arm == "3d"]
    for name in ("kps", "feats", "log_temp"):
        assert torch.allclose(getattr(trainer.proto, name), torch.stack([getattr(p, name) for p in protos]), atol=2e-5)


def test_stacked_head_is_the_plain_heads_and_bf16_convolutions_stay_close():
    from genlab.nn.corr_head import CorrHead, StackedCorrHead

    heads = [CorrHead(5, 4, 6, (1, 2), generator=torch.Generator().manual_seed(s)) for s in range(3)]
    x = torch.randn(3, 2, 9, 7, 5, generator=torch.Generator().manual_seed(0))
    ref = torch.stack([h(x[k]) for k, h in enumerate(heads)])
    assert torch.allclose(StackedCorrHead(heads)(x), ref, atol=1e-6)
    for a, b in zip(StackedCorrHead(heads).unstack(), heads, strict=True):
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    low = StackedCorrHead(heads, torch.bfloat16)(x)
    assert low.dtype == torch.float32 and 0 < (low - ref).detach().abs().max().item() < 0.05


def test_real_feature_directory_runs_all_seeds_on_one_set_and_splits_stacks_by_slot_count(tiny_data, tmp_path,
                                                                                           monkeypatch):
    """With ``data_dir`` every seed reads the one stored set (raw-feature PCK identical across seeds, trained heads
    not); an unseen set with fewer slots than the seen one gives the swap control its own stack."""
    from dataclasses import replace

    from genlab.data.correspondence import save_correspondence_dir
    from genlab.studies import spair_u
    from genlab.studies.spair_u import run_seeds

    train = spair_u.train_heads

    unseen = tiny_data.unseen.copy()
    for c in range(len(unseen)):  # one unseen slot fewer in every category: the swapped heads train on 7, not 8
        unseen[c, np.flatnonzero(unseen[c])[0]] = False
    root = save_correspondence_dir(replace(tiny_data, unseen=unseen), tmp_path / "real")
    cfg = asdict(SpairUKeypoints.config("smoke", {**TINY, "data_dir": str(root), "steps": 2, "eval_every": 2}))
    stacks = []
    monkeypatch.setattr(spair_u, "train_heads", lambda tasks, *a: stacks.append(len(tasks)) or train(tasks, *a))
    out = run_seeds(cfg, [3, 4])
    assert sorted(stacks) == [2, 4]  # 2 seeds x (supervised, 3d) on 8 slots; the 2 swapped heads on 7
    assert out[0]["arms"]["raw"] == out[1]["arms"]["raw"]
    assert "mirror_invariance_max_abs" not in out[0]
    for one in out:
        assert set(one["arms"]) == {"raw", "supervised", "3d", "swapped"}
        assert 0.0 <= one["arms"]["swapped"]["unseen"]["all"] <= 1.0
    assert out[0]["arms"]["3d"] != out[1]["arms"]["3d"] or out[0]["train"]["3d"] != out[1]["train"]["3d"]
