"""Study "spair-u-keypoints": supervised semantic correspondence generalises poorly to keypoints it never saw,
and 3D-aware prototype losses close part of that gap (Mariotti et al., *Jamais Vu*, arXiv 2506.08220).

Mechanism study. Images are renders of parametric 3D categories (:mod:`genlab.data.shapes3d`) seen from both
flanks; the frozen "backbone" is :class:`genlab.data.correspondence.SimBackbone`, whose features are exactly
mirror-invariant (the DINOv2 left/right confusion) and noisy. Per category 8 keypoints are *seen* (training) and
8 disjoint ones *unseen* (the SPair-U analogue). Three arms transfer keypoints by cosine nearest neighbour:

* ``raw``: the frozen features;
* ``supervised``: a projection head (:class:`genlab.nn.corr_head.CorrHead`) trained on seen keypoints with a
  sparse symmetric InfoNCE ("CLIP") loss between the pair's keypoints plus a dense keypoint-to-image InfoNCE;
* ``3d``: the same head and losses plus the paper's 3D prototype losses
  (:class:`genlab.nn.prototype3d.CategoryPrototype`: keypoint location with Kabsch, keypoint feature, and the
  two dense neighbourhood-geometry losses) on the known point maps.

Model selection (the checkpoint kept) uses PCK on *seen* keypoints of validation pairs only; unseen keypoints
never enter a loss or the selection (the training code only ever gathers the seen slots; a test perturbs the
unseen annotations and checks that training is bit-identical). Metric: PCK@alpha on test pairs of held-out
instances, per category and for mirrored (opposite flanks) vs same-side pairs.

All trained heads of a run (every seed's supervised, 3D and swap-control heads) train side by side as one stacked
model (:class:`genlab.nn.corr_head.StackedCorrHead`, one stacked prototype): each keeps its own initialisation,
batch order, loss, Adam state and best checkpoint (a test checks the stack against heads trained one by one).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from genlab.data.correspondence import (
    CorrespondenceSet,
    SimBackbone,
    SyntheticSpec,
    load_correspondence_dir,
    synthetic_correspondence,
)
from genlab.data.shapes3d import CATEGORIES
from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
from genlab.harness.decision import mean_se

ARMS = ("raw", "supervised", "3d")
TRAINED = ("supervised", "3d")
SWAPPED = "swapped"  # the control arm: the supervised head trained on the unseen slots instead of the seen ones
KP_SETS = ("seen", "unseen")
VIEWS = ("all", "mirrored", "same")

# ---------------------------------------------------------------------------------------------------------------
# settings
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainSettings:
    """How a head is trained (the same for both trained arms; ``arm`` switches the 3D losses on)."""

    steps: int = 200
    batch: int = 6  # pairs per step
    lr: float = 3e-3
    width: int = 32
    out_dim: int = 32
    dilations: tuple[int, ...] = (1, 2, 4)
    eval_every: int = 50
    alpha: float = 0.1
    w_clip: float = 1.0
    w_dense: float = 1.0
    object_points: int = 64  # sampled per image for the dense 3D losses (the paper: 1024)
    neighbours: int = 12  # neighbourhood size of the dense 3D losses (the paper: 64)
    w_loc: float = 1.0  # the paper's weights: keypoint location 1, keypoint feature 0.3, geometry 1 + 1
    w_feat: float = 0.3
    w_geo: float = 1.0
    proto_lr_mult: float = 10.0
    conv_bf16: bool = False  # the heads' 3x3 convolutions in bfloat16 (weights, gradients, Adam stay float32)


# ---------------------------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------------------------


def describe(head: Any, feats: Any, images: list[np.ndarray], device: str, chunk: int = 256
             ) -> tuple[Any, list[np.ndarray]]:
    """Descriptors of stacked heads (:class:`genlab.nn.corr_head.StackedCorrHead`), model m on ``images[m]`` of
    its own image features ``feats[m]`` (N, H, W, D): returns (M, L, H, W, d) on CPU (rows padded to the longest
    list) and per model the (N,) row of each image (-1 for images not described)."""
    import torch

    m, length = len(images), max(len(i) for i in images)
    idx = torch.as_tensor(np.stack([np.resize(i, length) for i in images]), dtype=torch.long)
    rows = []
    for i in images:
        r = np.full(feats[0].shape[0], -1, dtype=np.int64)
        r[i] = np.arange(len(i))
        rows.append(r)
    step = max(1, chunk // m)
    with torch.no_grad():
        out = torch.cat([head(torch.stack([feats[k][idx[k, s : s + step]] for k in range(m)]).to(device)).cpu()
                         for s in range(0, length, step)], dim=1)
    return out, rows


def keypoint_outcomes(desc: Any, data: CorrespondenceSet, split: str, alpha: float,
                      slots: np.ndarray | None = None, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per pair and keypoint slot of ``split``: (correct, valid), both (P, K) bool. ``valid`` = visible in both
    images and in ``slots`` ((N, K) bool per image, default every keypoint of the category). ``desc`` has one row
    per image, or per image the row ``rows`` (N,) names."""
    import torch

    from genlab.measures.correspondence import bbox_size, pck_correct, transfer_keypoints

    p = torch.as_tensor(data.pairs[split])
    src, trg = p[:, 0], p[:, 1]
    kps, mask = torch.as_tensor(data.kps), torch.as_tensor(data.mask)
    allowed = torch.as_tensor(slots if slots is not None else data.keypoint_mask("all"))[src]
    valid = (kps[src, :, 2] > 0) & (kps[trg, :, 2] > 0) & allowed
    at = torch.as_tensor(rows) if rows is not None else torch.arange(len(kps))
    pred = transfer_keypoints(desc[at[src]], desc[at[trg]], kps[src], mask[trg])
    return pck_correct(pred, kps[trg], valid, bbox_size(mask[trg]), alpha).numpy(), valid.numpy()


def _pooled(correct: np.ndarray, valid: np.ndarray) -> float:
    n = int(valid.sum())
    return float(correct[valid].mean()) if n else float("nan")


def summarise(correct: np.ndarray, valid: np.ndarray, data: CorrespondenceSet, split: str) -> dict[str, Any]:
    """PCK by keypoint set x view (all / mirrored / same-side), per category, for symmetric keypoints only,
    and per pair (the mean over the pair's valid keypoints, nan when it has none) for pair-level tests."""
    src = data.pairs[split][:, 0]
    mirrored = data.mirrored[split][:, None]
    cat = data.category[src]
    has_twin = (data.twins != np.arange(data.twins.shape[1]))[cat]
    out: dict[str, Any] = {}
    for kp_set in KP_SETS:
        sel = valid & data.keypoint_mask(kp_set)[src]
        out[kp_set] = {"all": _pooled(correct, sel), "mirrored": _pooled(correct, sel & mirrored),
                       "same": _pooled(correct, sel & ~mirrored), "symmetric": _pooled(correct, sel & has_twin)}
        out[kp_set]["per_category"] = {name: _pooled(correct, sel & (cat == c)[:, None])
                                       for c, name in enumerate(data.categories)}
        n = sel.sum(1)
        per_pair = np.where(n > 0, (correct & sel).sum(1) / np.maximum(n, 1), np.nan)
        out[kp_set]["per_pair"] = {name: np.round(per_pair[cat == c], 6).tolist()
                                   for c, name in enumerate(data.categories)}
    return out


# ---------------------------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------------------------


def seen_slots(data: CorrespondenceSet) -> tuple[np.ndarray, np.ndarray]:
    """(C, Ks) slot ids of each category's seen keypoints, padded with 0, and the (C, Ks) padding mask. These
    are the only keypoint slots the training code ever reads."""
    ids = [np.flatnonzero(s) for s in data.seen]
    ks = max(len(i) for i in ids)
    slots = np.zeros((len(ids), ks), dtype=np.int64)
    real = np.zeros((len(ids), ks), dtype=bool)
    for c, i in enumerate(ids):
        slots[c, : len(i)], real[c, : len(i)] = i, True
    return slots, real


class _Member:
    """One model of a stack: a dataset, its training slots (the ``seen`` ones) and arm, and its own random stream
    (head and prototype initialisation, object-point samples, batch order), drawn in the order the plain trainer
    drew them, so a model trained in a stack starts and sees batches exactly as if trained alone."""

    def __init__(self, data: CorrespondenceSet, arm: str, ts: TrainSettings, seed: int) -> None:
        import torch

        from genlab.nn.corr_head import CorrHead
        from genlab.nn.prototype3d import CategoryPrototype

        if arm not in TRAINED:
            raise ValueError(f"arm must be one of {TRAINED}, got {arm!r}")
        self.data, self.arm = data, arm
        self.gen = torch.Generator().manual_seed(seed)
        n, h, w, d = data.feats.shape
        slots, real = seen_slots(data)
        self.slots_read = sorted({(name, int(s)) for name, row, ok in zip(data.categories, slots, real)
                                  for s, r in zip(row, ok) if r})
        # the seen keypoints only, gathered once: unseen slots are never copied into anything trained on
        kp = data.kps[np.arange(n)[:, None], slots[data.category]]
        kp[..., 2] *= real[data.category]
        self.kp = torch.as_tensor(kp)
        col = self.kp[..., 0].floor().long().clamp(0, w - 1)
        self.kp_pix = self.kp[..., 1].floor().long().clamp(0, h - 1) * w + col
        self.pairs = torch.as_tensor(data.pairs["train"])
        self.head = CorrHead(d, ts.out_dim, ts.width, ts.dilations, generator=self.gen)
        if arm == "3d":
            self.proto = CategoryPrototype(len(data.categories), slots.shape[1], ts.out_dim, self.gen)
            self._object_points(ts)

    def _object_points(self, ts: TrainSettings) -> None:
        """Farthest-point samples of every training image's object points and their geodesic neighbourhoods
        (fixed: the point maps do not change during training)."""
        import torch

        from genlab.nn.prototype3d import farthest_point_sample, geodesic_neighbours

        n_img = len(self.data.category)
        points = torch.as_tensor(self.data.points.reshape(n_img, -1, 3))
        mask = torch.as_tensor(self.data.mask.reshape(n_img, -1))
        train = torch.as_tensor(np.unique(self.data.pairs["train"]))
        n, k = ts.object_points, ts.neighbours
        self.sample = torch.zeros(n_img, n, dtype=torch.long)
        self.sample[train] = farthest_point_sample(points[train], mask[train], n, self.gen)
        self.sample_xyz = torch.gather(points, 1, self.sample.unsqueeze(-1).expand(-1, -1, 3))
        self.nbr = torch.zeros(n_img, n, k, dtype=torch.long)
        self.nbr[train] = geodesic_neighbours(self.sample_xyz[train], k)

    def draw(self, batch: int) -> Any:
        """The next batch of training pairs from this model's own stream, as images (2 * batch,)."""
        import torch

        return self.pairs[torch.randint(len(self.pairs), (batch,), generator=self.gen)].reshape(-1)


class _Trainer:
    """Trains M heads side by side as one stacked model (:class:`genlab.nn.corr_head.StackedCorrHead`, and one
    stacked prototype for the ``3d`` members): each step every model draws its own batch, the loss is the sum of
    the M per-model losses (so each model's gradient is its own loss's), and one Adam over the stacked parameters
    is M Adams (Adam is elementwise). Each model keeps its own best validation checkpoint."""

    def __init__(self, members: list[_Member], ts: TrainSettings, device: str) -> None:
        import torch

        from genlab.nn.corr_head import StackedCorrHead
        from genlab.nn.prototype3d import CategoryPrototype

        self.members, self.ts, self.device = members, ts, device
        if len({m.kp.shape for m in members}) != 1:
            raise ValueError("a stack needs one data shape and one number of training slots")
        datasets: dict[int, int] = {}  # models of one seed share that seed's image arrays
        self.src = [datasets.setdefault(id(m.data.feats), len(datasets)) for m in members]
        first = [next(m.data for m, s in zip(members, self.src) if s == i) for i in range(len(datasets))]
        n, h, w, _ = first[0].feats.shape
        self.hw = h * w
        self.feats = [torch.as_tensor(d.feats) for d in first]
        self.mask = torch.stack([torch.as_tensor(d.mask.reshape(n, -1)) for d in first]).to(device)
        self.points = torch.stack([torch.as_tensor(d.points.reshape(n, -1, 3)) for d in first]).to(device)
        self.cat = torch.stack([torch.as_tensor(d.category) for d in first]).to(device)
        self.kp = torch.stack([m.kp for m in members]).to(device)
        self.kp_pix = torch.stack([m.kp_pix for m in members]).to(device)
        self.head = StackedCorrHead([m.head for m in members], torch.bfloat16 if ts.conv_bf16 else None).to(device)
        groups = [{"params": list(self.head.parameters()), "lr": ts.lr}]
        self.in3d = [i for i, m in enumerate(members) if m.arm == "3d"]
        if self.in3d:
            m3 = [members[i] for i in self.in3d]
            self.proto = CategoryPrototype.stack([m.proto for m in m3]).to(device)
            self.sample = torch.stack([m.sample for m in m3]).to(device)
            self.sample_xyz = torch.stack([m.sample_xyz for m in m3]).to(device)
            self.nbr = torch.stack([m.nbr for m in m3]).to(device)
            # the prototype starts at ~0 and must travel to object scale: at our ~100x shorter schedule it needs a
            # larger step to form before training ends (checked on the prototype's own loss curves)
            groups.append({"params": list(self.proto.parameters()), "lr": ts.lr * ts.proto_lr_mult})
        self.opt = torch.optim.Adam(groups)

    def loss(self, images: Any) -> Any:
        """Per-model losses (M,) for images (M, 2P) ([pair0-src, pair0-trg, pair1-src, ...] per model)."""
        import torch

        from genlab.nn.corr_head import keypoint_clip_loss, keypoint_dense_loss

        ts, (m, n2) = self.ts, images.shape
        model, src = torch.arange(m, device=images.device)[:, None], torch.as_tensor(self.src)[:, None]
        feats = torch.stack([self.feats[s][i] for s, i in zip(self.src, images.cpu())]).to(self.device)
        desc = self.head(feats).reshape(m, n2, self.hw, -1)
        pix = self.kp_pix[model, images]
        kp_feat = torch.gather(desc, 2, pix.unsqueeze(-1).expand(-1, -1, -1, desc.shape[-1]))
        vis = self.kp[model, images, :, 2] > 0
        p = n2 // 2
        f, pp, vv = kp_feat.view(m, p, 2, *kp_feat.shape[2:]), pix.view(m, p, 2, -1), vis.view(m, p, 2, -1)
        dd, mask = desc.view(m, p, 2, self.hw, -1), self.mask[src.to(self.device), images].view(m, p, 2, -1)
        both = vv[:, :, 0] & vv[:, :, 1]
        scale = self.head.logit_scale
        loss = ts.w_clip * keypoint_clip_loss(f[:, :, 0], f[:, :, 1], both, scale)
        dense = (keypoint_dense_loss(f[:, :, 0], dd[:, :, 1], pp[:, :, 1], both, mask[:, :, 1], scale)
                 + keypoint_dense_loss(f[:, :, 1], dd[:, :, 0], pp[:, :, 0], both, mask[:, :, 0], scale))
        loss = loss + ts.w_dense * 0.5 * dense
        if self.in3d:
            i3 = torch.as_tensor(self.in3d, device=self.device)
            loss = loss.index_add(0, i3, self._prototype_loss(images[i3], src[i3.cpu()].to(self.device),
                                                              desc[i3], kp_feat[i3], pix[i3], vis[i3]))
        return loss

    def _prototype_loss(self, images: Any, src: Any, desc: Any, kp_feat: Any, pix: Any, vis: Any) -> Any:
        import torch

        ts, model = self.ts, torch.arange(len(images), device=images.device)[:, None]
        cat, points = self.cat[src, images], self.points[src, images]
        kp3d = torch.gather(points, 2, pix.unsqueeze(-1).expand(-1, -1, -1, 3))
        loc = self.proto.location_loss(kp3d, vis, cat)
        feat = self.proto.feature_loss(kp_feat, vis, cat)
        sample = self.sample[model, images]
        obj_feat = torch.gather(desc, 2, sample.unsqueeze(-1).expand(-1, -1, -1, desc.shape[-1]))
        geo = self.proto.geometry_loss(obj_feat, self.sample_xyz[model, images], self.nbr[model, images], cat,
                                       ts.neighbours)
        return ts.w_loc * loc + ts.w_feat * feat + ts.w_geo * geo

    def validation_pck(self) -> list[float]:
        """Per model, PCK on the *seen* keypoints of its validation pairs: the only model-selection signal."""
        self.head.eval()
        desc, rows = describe(self.head, [self.feats[s] for s in self.src],
                              [np.unique(m.data.pairs["val"]) for m in self.members], self.device)
        self.head.train()
        return [_pooled(*keypoint_outcomes(desc[k], m.data, "val", self.ts.alpha, m.data.keypoint_mask("seen"),
                                           rows[k])) for k, m in enumerate(self.members)]

    def fit(self) -> tuple[Any, list[dict[str, Any]]]:
        import torch

        m = len(self.members)
        best, best_step, curves = [-1.0] * m, [0] * m, [[] for _ in range(m)]
        best_state = {k: v.detach().clone() for k, v in self.head.state_dict().items()}
        for step in range(self.ts.steps + 1):
            if step % self.ts.eval_every == 0 or step == self.ts.steps:
                for k, val in enumerate(self.validation_pck()):
                    curves[k].append((step, val))
                    if val > best[k]:
                        best[k], best_step[k] = val, step
                        for name, value in self.head.state_dict().items():
                            best_state[name][k] = value[k]
            if step == self.ts.steps:
                break
            images = torch.stack([mem.draw(self.ts.batch) for mem in self.members]).to(self.device)
            loss = self.loss(images).sum()  # model k's parameters get exactly the gradient of its own loss
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        self.head.load_state_dict(best_state)
        self.head.eval()
        return self.head, [{"best_step": best_step[k], "val_seen_pck": best[k], "val_curve": curves[k],
                            "keypoint_slots_used": [list(x) for x in mem.slots_read]}
                           for k, mem in enumerate(self.members)]


def train_heads(tasks: list[tuple[CorrespondenceSet, str, int]], ts: TrainSettings, device: str = "cpu"
                ) -> tuple[Any, list[dict[str, Any]]]:
    """Train one head per (data, arm, seed) task (``supervised`` or ``3d``) side by side as one stacked model;
    returns it (each model at its best validation checkpoint) and one log per task."""
    return _Trainer([_Member(data, arm, ts, seed) for data, arm, seed in tasks], ts, device).fit()


def train_head(data: CorrespondenceSet, arm: str, ts: TrainSettings, seed: int, device: str = "cpu"
               ) -> tuple[Any, dict[str, Any]]:
    """Train the ``supervised`` or ``3d`` arm's head alone; returns it as a plain
    :class:`genlab.nn.corr_head.CorrHead` (best validation checkpoint) and its log."""
    head, logs = train_heads([(data, arm, seed)], ts, device)
    return head.unstack()[0].eval(), logs[0]


# ---------------------------------------------------------------------------------------------------------------
# one seed, end to end
# ---------------------------------------------------------------------------------------------------------------


def _spec(cfg: dict[str, Any]) -> SyntheticSpec:
    return SyntheticSpec(
        categories=tuple(cfg["categories"]), size=cfg["image_size"],
        instances=(cfg["train_instances"], cfg["val_instances"], cfg["test_instances"]), views=cfg["views"],
        pairs=(cfg["train_pairs"], cfg["val_pairs"], cfg["test_pairs"]), n_points=cfg["surface_points"],
        jitter=cfg["jitter"], feat_dim=cfg["feat_dim"], n_freqs=cfg["n_freqs"], bandwidth=cfg["bandwidth"],
        instance_noise=cfg["instance_noise"], pixel_noise=cfg["pixel_noise"],
    )


def build_data(cfg: dict[str, Any], seed: int) -> tuple[CorrespondenceSet, SimBackbone | None]:
    """The real features under ``data_dir`` when given, else a synthetic set drawn from ``seed``."""
    if cfg["data_dir"]:
        return load_correspondence_dir(cfg["data_dir"]), None
    spec = _spec(cfg)
    rng = np.random.default_rng(seed)
    backbone = SimBackbone.create(spec.feat_dim, rng, spec.n_freqs, spec.bandwidth, spec.instance_noise,
                                  spec.pixel_noise)
    return synthetic_correspondence(spec, backbone, rng), backbone


def _settings(cfg: dict[str, Any]) -> TrainSettings:
    names = TrainSettings.__dataclass_fields__
    return TrainSettings(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items() if k in names})


def run_seeds(cfg: dict[str, Any], seeds: list[int], device: str = "cpu") -> list[dict[str, Any]]:
    """Per seed its data and the three arms' test outcomes (plus the swap control); the trained heads of all
    seeds and arms train side by side as one stacked model, each from its own seed's stream."""
    import torch

    torch.set_num_threads(1)
    ts = _settings(cfg)
    # real features (data_dir) are one set for every seed: load them once
    built = [build_data(cfg, seed) for seed in (seeds[:1] if cfg["data_dir"] else seeds)] * (
        len(seeds) if cfg["data_dir"] else 1)
    tasks, where = [], []  # where: (seed index, arm name in the outputs)
    for i, ((data, _), seed) in enumerate(zip(built, seeds, strict=True)):
        for arm in TRAINED:
            tasks.append((data, arm, seed + 1))
            where.append((i, arm))
        if cfg["swap_control"]:  # the supervised head trained (and selected) on the *unseen* slots
            tasks.append((replace(data, seen=data.unseen, unseen=data.seen), "supervised", seed + 1))
            where.append((i, SWAPPED))
    # one stack per number of training slots (real data may have more unseen than seen keypoints)
    logs: list[Any] = [None] * len(tasks)
    desc: list[Any] = [None] * len(tasks)
    rows: list[Any] = [None] * len(tasks)
    for width in sorted({seen_slots(d)[0].shape[1] for d, _, _ in tasks}):
        group = [k for k, (d, _, _) in enumerate(tasks) if seen_slots(d)[0].shape[1] == width]
        head, group_logs = train_heads([tasks[k] for k in group], ts, device)
        group_desc, group_rows = describe(head, [torch.as_tensor(tasks[k][0].feats) for k in group],
                                          [np.unique(tasks[k][0].pairs["test"]) for k in group], device)
        for j, k in enumerate(group):
            logs[k], desc[k], rows[k] = group_logs[j], group_desc[j], group_rows[j]
    out: list[dict[str, Any]] = []
    for (data, backbone), seed in zip(built, seeds, strict=True):
        raw = torch.as_tensor(data.feats)
        one: dict[str, Any] = {"arms": {"raw": summarise(*keypoint_outcomes(raw, data, "test", ts.alpha), data,
                                                          "test")}, "train": {}}
        one["test_pairs"] = int(len(data.pairs["test"]))
        one["slots"] = {kind: [[name, int(k)] for c, name in enumerate(data.categories)
                               for k in np.flatnonzero(table[c])]
                        for kind, table in (("seen", data.seen), ("unseen", data.unseen))}
        one["mirrored_fraction"] = float(data.mirrored["test"].mean())
        if backbone is not None:
            u = np.random.default_rng(seed).normal(size=(4096, 3))
            one["mirror_invariance_max_abs"] = float(np.abs(backbone.clean(u) - backbone.clean(u * [-1, 1, 1])).max())
        out.append(one)
    for k, ((data, _, _), (i, arm)) in enumerate(zip(tasks, where, strict=True)):
        summary = summarise(*keypoint_outcomes(desc[k], data, "test", ts.alpha, rows=rows[k]), data, "test")
        if arm == SWAPPED:  # reported under the original slot names ("seen" = the slots it did not train on)
            summary = {"seen": summary["unseen"], "unseen": summary["seen"]}
        else:
            out[i]["train"][arm] = logs[k]
        out[i]["arms"][arm] = summary
    return out


# ---------------------------------------------------------------------------------------------------------------
# aggregation over seeds
# ---------------------------------------------------------------------------------------------------------------


def aggregate(per_seed: list[dict[str, Any]], categories: list[str]) -> dict[str, Any]:
    """Per-seed PCK tables as lists over seeds (the seeds are the claims' units) and their mean / s.e. (figures)."""
    pck: dict[str, Any] = {}
    for arm in (*ARMS, SWAPPED) if SWAPPED in per_seed[0]["arms"] else ARMS:
        for kp_set in KP_SETS:
            for view in (*VIEWS, "symmetric"):
                pck[f"{arm}/{kp_set}/{view}"] = [s["arms"][arm][kp_set][view] for s in per_seed]
            for cat in categories:
                pck[f"{arm}/{kp_set}/cat/{cat}"] = [s["arms"][arm][kp_set]["per_category"][cat] for s in per_seed]
    return {"pck": pck, "summary": {k: dict(zip(("mean", "se", "n"), mean_se(v), strict=True)) for k, v in pck.items()}}


# ---------------------------------------------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------------------------------------------


def _seeds(m: dict[str, Any], key: str) -> np.ndarray:
    return np.asarray(m["pck"][key], dtype=float)


def _mean(m: dict[str, Any], key: str) -> float:
    return float(np.nanmean(_seeds(m, key)))


def _check_seen_gain(m: dict[str, Any], cfg: Any) -> Any:
    return decide.paired(_seeds(m, "supervised/seen/all"), _seeds(m, "raw/seen/all"), above=cfg.seen_gain_min,
                         supervised=_mean(m, "supervised/seen/all"), raw=_mean(m, "raw/seen/all"))


def _check_gap(m: dict[str, Any], cfg: Any) -> Any:
    """Per seed, (unseen gain) − gap_keep_max · (seen gain) < 0; withheld unless the seen gain is established."""
    seen_gain = _seeds(m, "supervised/seen/all") - _seeds(m, "raw/seen/all")
    unseen_gain = _seeds(m, "supervised/unseen/all") - _seeds(m, "raw/unseen/all")
    ev = decide.paired(unseen_gain, cfg.gap_keep_max * seen_gain, below=0.0,
                       seen_gain=float(np.nanmean(seen_gain)), unseen_gain=float(np.nanmean(unseen_gain)),
                       kept_fraction=float(np.nanmean(unseen_gain) / np.nanmean(seen_gain))
                       if np.nanmean(seen_gain) else math.nan,
                       supervised_unseen=_mean(m, "supervised/unseen/all"), raw_unseen=_mean(m, "raw/unseen/all"))
    if _check_seen_gain(m, cfg).held is not True:
        return ev.withheld("precondition: the head's gain over raw features on seen keypoints is not established")
    return ev


def _check_3d_unseen(m: dict[str, Any], cfg: Any) -> Any:
    return decide.paired(_seeds(m, "3d/unseen/all"), _seeds(m, "supervised/unseen/all"), above=cfg.unseen_margin,
                         pck_3d=_mean(m, "3d/unseen/all"), pck_supervised=_mean(m, "supervised/unseen/all"))


def _check_mirrored(m: dict[str, Any], cfg: Any) -> Any:
    gain_mirrored = _seeds(m, "3d/unseen/mirrored") - _seeds(m, "supervised/unseen/mirrored")
    gain_same = _seeds(m, "3d/unseen/same") - _seeds(m, "supervised/unseen/same")
    return decide.paired(gain_mirrored, gain_same, above=0.0, gain_mirrored=float(np.nanmean(gain_mirrored)),
                         gain_same=float(np.nanmean(gain_same)))


def _check_per_category(m: dict[str, Any], cfg: Any) -> Any:
    """Per category, 3D minus supervised unseen-keypoint PCK paired over seeds (never pooling seeds' pairs); every
    category must hold (an intersection: no multiplicity correction)."""
    tests = [decide.paired(_seeds(m, f"3d/unseen/cat/{c}"), _seeds(m, f"supervised/unseen/cat/{c}"),
                           above=cfg.unseen_margin) for c in m["categories"]]
    gains = {f"{c}_gain": float(np.nanmean(_seeds(m, f"3d/unseen/cat/{c}") - _seeds(m, f"supervised/unseen/cat/{c}")))
             for c in m["categories"]}
    return decide.all_of(*tests, categories_won=f"{sum(t.held is True for t in tests)}/{len(tests)}", **gains)


def _check_seen_equal(m: dict[str, Any], cfg: Any) -> Any:
    return decide.paired(_seeds(m, "3d/seen/all"), _seeds(m, "supervised/seen/all"),
                         within=(-cfg.seen_equal_tol, cfg.seen_equal_tol), pck_3d=_mean(m, "3d/seen/all"),
                         pck_supervised=_mean(m, "supervised/seen/all"))


def _check_swap_control(m: dict[str, Any], cfg: Any) -> Any:
    """The swap control: the supervised head trained on the unseen slots is better than the original head on those
    slots and worse on the original seen ones (paired over seeds, both must hold): the gap follows the training
    slots, not the slots' difficulty."""
    if f"{SWAPPED}/unseen/all" not in m["pck"]:
        return evidence(None, note="the swap control was not run (swap_control=false)")
    parts = {
        "better_on_its_slots": decide.paired(_seeds(m, f"{SWAPPED}/unseen/all"), _seeds(m, "supervised/unseen/all"),
                                             above=0.0),
        "worse_on_the_others": decide.paired(_seeds(m, "supervised/seen/all"), _seeds(m, f"{SWAPPED}/seen/all"),
                                             above=0.0),
    }
    return decide.all_of(*parts.values(), swapped_on_unseen=_mean(m, f"{SWAPPED}/unseen/all"),
                         swapped_on_seen=_mean(m, f"{SWAPPED}/seen/all"),
                         **{f"test_{k}": ev.test.summary() for k, ev in parts.items()})


def _check_unseen_never_trained(m: dict[str, Any], cfg: Any) -> Any:
    """The (category, keypoint slot) pairs the training code read are all seen ones."""
    used = {tuple(k) for k in m["keypoint_slots_used"]}
    leaked = sorted(used & {tuple(k) for k in m["unseen_slots"]})
    held = bool(used) and not leaked and used <= {tuple(k) for k in m["seen_slots"]}
    return evidence(held, slots_read=len(used), unseen_slots_read=len(leaked))


def _check_mirror_invariant(m: dict[str, Any], cfg: Any) -> Any:
    """Our stand-in is built to be exactly mirror-invariant (the DINOv2 left/right confusion it simulates)."""
    inv = m.get("mirror_invariance_max_abs")
    if inv is None:
        return evidence(None, note="real features from data_dir: no simulated backbone to check")
    return evidence(inv == 0.0, invariance_max_abs=inv)


def _check_raw_confused(m: dict[str, Any], cfg: Any) -> Any:
    """The stand-in has the property the study needs: raw matching is worse on mirrored pairs (paired over seeds,
    both keypoint sets)."""
    if any(math.isnan(v) for k in ("raw/seen/mirrored", "raw/seen/same") for v in _seeds(m, k)):
        return evidence(None, note="no mirrored / same-side labels in this data")
    return decide.all_of(*(decide.paired(_seeds(m, f"raw/{kp}/same"), _seeds(m, f"raw/{kp}/mirrored"), above=0.0)
                           for kp in KP_SETS))


# ---------------------------------------------------------------------------------------------------------------
# the study
# ---------------------------------------------------------------------------------------------------------------


@register
class SpairUKeypoints(Study):
    name = "spair-u-keypoints"
    accelerated = True  # heads, prototypes and batches go to ctx.device
    paper = Paper("Jamais Vu: Exposing the Generalization Gap in Supervised Semantic Correspondence",
                  "arXiv:2506.08220", "Mariotti, Du, Bhalgat, Mac Aodha, Bilen")
    summary = ("Mechanism study: a correspondence head trained on seen keypoints beats raw mirror-invariant "
               "features on them but not on unseen keypoints; 3D prototype losses recover part of the gap.")

    @dataclass
    class Config:
        data_dir: str = ""  # "" = synthetic; else a genlab-correspondence-v1 directory of real features
        categories: tuple[str, ...] = ("quadruped", "chair", "car")
        image_size: int = 24
        train_instances: int = 100  # per category; val / test instances are disjoint
        val_instances: int = 10
        test_instances: int = 20
        views: int = 2
        train_pairs: int = 400  # per category
        val_pairs: int = 60
        test_pairs: int = 200  # half mirrored (opposite flanks), half same-side
        surface_points: int = 4000
        jitter: float = 0.15
        feat_dim: int = 32
        n_freqs: int = 64
        bandwidth: float = 1.0
        instance_noise: float = 0.2
        pixel_noise: float = 0.3
        steps: int = 200
        batch: int = 6
        lr: float = 3e-3
        width: int = 32
        out_dim: int = 32
        dilations: tuple[int, ...] = (1, 2, 4)
        eval_every: int = 50
        alpha: float = 0.1
        w_clip: float = 1.0
        w_dense: float = 1.0
        object_points: int = 64
        neighbours: int = 12
        w_loc: float = 1.0
        w_feat: float = 0.3
        w_geo: float = 1.0
        proto_lr_mult: float = 10.0
        conv_bf16: bool = True  # the heads' 3x3 convolutions in bfloat16 (mixed precision; see the docs page)
        seeds: int = 3
        swap_control: bool = True  # also train the supervised head on the unseen slots (the control)
        seen_gain_min: float = 0.05
        gap_keep_max: float = 0.5
        unseen_margin: float = 0.0
        seen_equal_tol: float = 0.03

        def validate(self) -> None:
            if self.data_dir and not (Path(self.data_dir) / "meta.json").exists():
                raise ValueError(f"data_dir {self.data_dir!r} has no meta.json (see genlab.data.correspondence)")
            unknown = [c for c in self.categories if c not in CATEGORIES]
            if not self.categories or unknown:
                raise ValueError(f"categories must be a non-empty subset of {list(CATEGORIES)}; unknown {unknown}")
            ints = {"image_size": 8, "train_instances": 2, "val_instances": 2, "test_instances": 2, "views": 1,
                    "train_pairs": 1, "val_pairs": 1, "test_pairs": 2, "surface_points": 100, "feat_dim": 1,
                    "n_freqs": 1, "steps": 1, "batch": 1, "width": 1, "out_dim": 1, "eval_every": 1,
                    "object_points": 4, "neighbours": 3, "seeds": 1}
            low = [f"{k} >= {v}" for k, v in ints.items() if getattr(self, k) < v]
            if low:
                raise ValueError("need " + ", ".join(low))
            if self.neighbours > self.object_points:
                raise ValueError("neighbours must be <= object_points")
            if not self.dilations or min(self.dilations) < 1:
                raise ValueError("dilations must be a non-empty tuple of positive integers")
            floats = {"jitter": (0, 1), "bandwidth": (0, math.inf), "instance_noise": (0, math.inf),
                      "pixel_noise": (0, math.inf), "lr": (0, math.inf), "alpha": (0, 1),
                      "w_clip": (0, math.inf), "w_dense": (0, math.inf), "w_loc": (0, math.inf),
                      "w_feat": (0, math.inf), "w_geo": (0, math.inf), "proto_lr_mult": (0, math.inf),
                      "seen_gain_min": (0, 1),
                      "gap_keep_max": (0, 1), "unseen_margin": (0, 1), "seen_equal_tol": (0, 1)}
            bad = [f"{k} in [{lo}, {hi}]" for k, (lo, hi) in floats.items()
                   if not (math.isfinite(getattr(self, k)) and lo <= getattr(self, k) <= hi)]
            if bad:
                raise ValueError("need finite " + ", ".join(bad))
            if self.w_clip + self.w_dense == 0:
                raise ValueError("w_clip and w_dense cannot both be 0: the supervised arm needs a loss")

    presets = {
        "smoke": {"image_size": 16, "train_instances": 4, "val_instances": 2, "test_instances": 2,
                  "train_pairs": 12, "val_pairs": 4, "test_pairs": 6, "surface_points": 1500, "steps": 4,
                  "eval_every": 2, "batch": 2, "width": 8, "out_dim": 8, "object_points": 12, "neighbours": 4,
                  "seeds": 2},
        "quick": {"steps": 600, "eval_every": 100, "seeds": 5},
        "full": {"image_size": 32, "train_instances": 400, "val_instances": 30, "test_instances": 60, "views": 4,
                 "train_pairs": 4000, "val_pairs": 200, "test_pairs": 600, "surface_points": 12000,
                 "steps": 4000, "batch": 16, "width": 64, "out_dim": 64, "dilations": (1, 2, 4, 8),
                 "eval_every": 250, "object_points": 256, "neighbours": 32, "seeds": 5},
    }

    claims = [
        Claim("supervised-beats-raw-seen",
              "on seen keypoints the supervised head beats raw features by more than {seen_gain_min} PCK@{alpha} "
              "(paired t-test over seeds)", _check_seen_gain),
        Claim("jamais-vu-gap",
              "on unseen keypoints the supervised head keeps less than {gap_keep_max} of its seen-keypoint gain "
              "over raw features (paired t-test over seeds; withheld unless that seen gain is established)",
              _check_gap, requires=("supervised-beats-raw-seen",)),
        Claim("3d-beats-supervised-unseen",
              "the 3D-prototype head beats the supervised head on unseen keypoints by more than {unseen_margin} "
              "(paired t-test over seeds)", _check_3d_unseen),
        Claim("3d-gain-largest-mirrored",
              "the 3D head's unseen-keypoint gain over the supervised head is larger on mirrored pairs than on "
              "same-side pairs (paired t-test over seeds)", _check_mirrored),
        Claim("gap-follows-training-slots",
              "control: a supervised head trained on the unseen slots instead beats the original head on them and "
              "loses to it on the original seen slots (paired t-tests over seeds, both must hold)",
              _check_swap_control),
        Claim("3d-beats-supervised-each-category",
              "the 3D head beats the supervised head on unseen keypoints by more than {unseen_margin} in every "
              "category (per category a paired t-test over seeds; all must hold)", _check_per_category),
        Claim("3d-equal-on-seen",
              "on seen keypoints the 3D head and the supervised head agree within ±{seen_equal_tol} (TOST over seeds)",
              _check_seen_equal),
        Claim("unseen-never-trained",
              "unseen keypoints never enter a loss or model selection (keypoint slots read by training)",
              _check_unseen_never_trained, kind="identity"),
        Claim("stand-in-mirror-invariant",
              "the simulated backbone's clean features are exactly invariant to the left/right mirror",
              _check_mirror_invariant, kind="identity"),
        Claim("raw-worse-on-mirrored",
              "raw-feature matching is worse on mirrored than on same-side pairs, seen and unseen keypoints "
              "(paired t-tests over seeds; a property of the stand-in the study needs, not a paper claim)",
              _check_raw_confused),
    ]

    def run(self, cfg: Config, ctx: RunContext) -> dict[str, Any]:
        settings = asdict(cfg)
        with ctx.timer("seeds"):
            per_seed = run_seeds(settings, [ctx.seed_for("seed", s) for s in range(cfg.seeds)], ctx.device)
        categories = list(per_seed[0]["arms"]["raw"]["seen"]["per_category"])
        metrics = aggregate(per_seed, categories)
        metrics.update(
            categories=categories, seeds=cfg.seeds, test_pairs=per_seed[0]["test_pairs"],
            seen_slots=per_seed[0]["slots"]["seen"], unseen_slots=per_seed[0]["slots"]["unseen"],
            keypoint_slots_used=sorted({tuple(k) for s in per_seed for arm in TRAINED
                                        for k in s["train"][arm]["keypoint_slots_used"]}),
            best_step={arm: [s["train"][arm]["best_step"] for s in per_seed] for arm in TRAINED},
            val_seen_pck={arm: [s["train"][arm]["val_seen_pck"] for s in per_seed] for arm in TRAINED},
        )
        inv = [s["mirror_invariance_max_abs"] for s in per_seed if "mirror_invariance_max_abs" in s]
        if inv:
            metrics["mirror_invariance_max_abs"] = max(inv)
        for arm in ARMS:
            ctx.log(f"{arm:>10}: seen {_fmt(metrics, arm, 'seen')}  unseen {_fmt(metrics, arm, 'unseen')}")
        return metrics

    def figures(self, metrics: dict[str, Any], ctx: RunContext) -> list[Path]:
        from genlab.studies.spair_u.plots import plot_results

        return [ctx.save_figure(plot_results(metrics), "spair-u-keypoints",
                                caption="PCK@0.1 on test pairs, mean ± s.e. over seeds: seen vs unseen keypoints, "
                                        "unseen keypoints on mirrored vs same-side pairs, and per category")]


def _fmt(m: dict[str, Any], arm: str, kp_set: str) -> str:
    s = m["summary"][f"{arm}/{kp_set}/all"]
    return f"{s['mean']:.3f} ± {s['se']:.3f}"
