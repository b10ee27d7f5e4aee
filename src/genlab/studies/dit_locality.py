"""Study "dit-locality": local attention as the inductive bias behind DiT generalisation
(An, Wang, Guo, Luo, Schwing; arXiv 2410.21273).

A small pixel-space DiT (patch embedding, adaLN-Zero blocks, learned positions) is trained as a flow-matching
(velocity) denoiser on digit subsets of size n, in three arms with identical parameters and optimiser: global
attention, a k x k window in the early half of the blocks, the same window in the late half. Measured:
attention distance per layer (global arm) vs n, the train - held-out denoising PSNR gap, the copy fraction of
generated samples. All arms, sizes and seeds are trained side by side as one ensemble DiT (members never
interact). Gaps are only compared between arms whose train PSNR agrees within ``psnr_match_db``; otherwise the
claim is inconclusive (under-trained models say nothing — see docs/studies/dit-locality.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, by_seeds, evidence, register

ARMS = ("global", "early", "late")


def _arr(m: Mapping[str, Any], key: str) -> np.ndarray:
    return np.array(m["results"][key], dtype=float)  # [seed][n][arm]


def _gap_guard(m: Mapping[str, Any], j: int, arms: tuple[int, ...]) -> tuple[bool, float]:
    """Train PSNR of the compared arms at size index j agree within the tolerance (mean over seeds)."""
    tp = _arr(m, "psnr_train")[:, j].mean(0)
    diff = float(max(tp[a] for a in arms) - min(tp[a] for a in arms))
    return diff <= m["psnr_match_db"], diff


def _check_attention(m: Mapping[str, Any], cfg) -> Any:
    d = np.array(m["attention_distance_global"])  # [seed][n][layer]
    early = d[:, :, : m["depth"] // 2].mean(-1)  # [seed][n]
    held = [bool(row[-1] < row[0]) for row in early]
    nums = {f"early_dist_n{n}": float(early[:, j].mean()) for j, n in enumerate(m["n_values"])}
    uniform = m["uniform_attention_distance"]
    nums["uniform_dist"] = uniform
    if float(np.abs(early - uniform).max()) < 0.05:
        return evidence(None, note="early-layer attention is still ~uniform at every n (under-trained)", **nums)
    return by_seeds(held, **nums)


def _memorising(m: Mapping[str, Any]) -> bool:
    """The global arm at the smallest n is in the memorisation regime: PSNR gap >= min_gap_db and copy fraction
    >= min_copy (seed means). Without it there is nothing for a window to improve on."""
    gap, cp = _arr(m, "gap"), _arr(m, "copy")
    return bool(gap[:, 0, 0].mean() >= m["min_gap_db"] and cp[:, 0, 0].mean() >= m.get("min_copy", 0.0))


NO_MEMO = ("the global model does not memorise at the smallest n (gap < min_gap_db or copy fraction < min_copy): "
           "no memorisation regime to improve on — needs more training (see docs)")


def _check_small_n(m: Mapping[str, Any], cfg) -> Any:
    gap, cp = _arr(m, "gap"), _arr(m, "copy")
    ok, diff = _gap_guard(m, 0, (0, 1))
    nums = {"gap_global": float(gap[:, 0, 0].mean()), "gap_early": float(gap[:, 0, 1].mean()),
            "copy_global": float(cp[:, 0, 0].mean()), "copy_early": float(cp[:, 0, 1].mean()),
            "train_psnr_diff_db": diff}
    if not _memorising(m):
        return evidence(None, note=NO_MEMO, **nums)
    if not ok:
        return evidence(None, note="arms reach different train PSNR: gaps not comparable", **nums)
    return by_seeds([bool(g[0, 1] < g[0, 0] and c[0, 1] <= c[0, 0]) for g, c in zip(gap, cp)], **nums)


def _check_late(m: Mapping[str, Any], cfg) -> Any:
    gap = _arr(m, "gap")
    ok, diff = _gap_guard(m, 0, (0, 1, 2))
    nums = {"gain_early": float((gap[:, 0, 0] - gap[:, 0, 1]).mean()),
            "gain_late": float((gap[:, 0, 0] - gap[:, 0, 2]).mean()), "train_psnr_diff_db": diff}
    if not _memorising(m):
        return evidence(None, note=NO_MEMO, **nums)
    if not ok:
        return evidence(None, note="arms reach different train PSNR: gaps not comparable", **nums)
    return by_seeds([bool(g[0, 0] - g[0, 1] > g[0, 0] - g[0, 2]) for g in gap], **nums)


def _check_large_n(m: Mapping[str, Any], cfg) -> Any:
    gap = _arr(m, "gap")
    gain = gap[:, :, 0] - gap[:, :, 1]  # [seed][n]
    nums = {f"gain_early_n{n}": float(gain[:, j].mean()) for j, n in enumerate(m["n_values"])}
    if not _memorising(m):
        return evidence(None, note=NO_MEMO, **nums)
    if gain[:, 0].mean() <= 0:
        return evidence(None, note="no early-window benefit at the smallest n, so nothing to shrink", **nums)
    return by_seeds([bool(g[-1] < g[0]) for g in gain], **nums)


@register
class DiTLocality(Study):
    name = "dit-locality"
    paper = Paper("On Inductive Biases That Enable Generalization of Diffusion Transformers", "arXiv:2410.21273",
                  "An, Wang, Guo, Luo, Schwing")
    summary = ("Early-layer attention of a DiT turns local as data grows; imposing local windows early narrows "
               "the train/held-out gap when data is scarce.")

    @dataclass
    class Config:
        dataset: Literal["digits8", "digits16", "mnist1d", "folder"] = "digits8"  # folder needs image_folder
        image_folder: str = ""
        n_values: tuple[int, ...] = (10, 300)  # 0 = the whole training split
        n_test: int = 300
        seeds: int = 3
        patch: int = 2
        dim: int = 32
        depth: int = 4
        heads: int = 2
        mlp_ratio: float = 2.0
        pos: str = "learned"
        window: int = 3
        steps: int = 400
        batch: int = 32
        lr: float = 2e-3  # cosine-decayed to 0
        psnr_ts: tuple[float, ...] = (0.2, 0.4, 0.6)
        eval_images: int = 200
        n_samples: int = 200
        euler_steps: int = 20
        psnr_match_db: float = 1.0
        min_gap_db: float = 1.0
        min_copy: float = 0.1

        def validate(self) -> None:
            if self.seeds < 1 or self.steps < 1 or self.depth < 2:
                raise ValueError("seeds and steps must be >= 1 and depth >= 2 (early and late halves)")
            if len(self.n_values) < 2:
                raise ValueError("n_values needs at least two sizes (small and large)")
            if self.window < 1:
                raise ValueError("window must be >= 1")
            if self.dataset == "folder" and not self.image_folder:
                raise ValueError("dataset=folder needs image_folder=/path/to/images")

    presets = {
        "smoke": {"seeds": 1, "steps": 10, "dim": 16, "depth": 2, "eval_images": 16, "n_samples": 16,
                  "euler_steps": 4, "n_test": 100},
        "quick": {},
        "full": {"n_values": (10, 30, 100, 300, 1000), "patch": 1, "dim": 64, "depth": 4, "heads": 4,
                 "steps": 12_000, "batch": 32, "lr": 1e-3, "eval_images": 300, "n_samples": 300,
                 "euler_steps": 50},
    }

    claims = [
        Claim(
            "early-attention-local-at-large-n",
            "global DiT: early-layer attention distance is smaller at the largest n than at the smallest",
            _check_attention),
        Claim(
            "early-window-lowers-gap",
            "at the smallest n, early-layer windows lower the train - held-out PSNR gap and copy fraction "
            "vs global attention (at matched train PSNR)", _check_small_n),
        Claim(
            "late-window-weaker",
            "late-layer windows lower the gap less than early-layer windows (smallest n)", _check_late),
        Claim("benefit-shrinks-with-n", "the early-window benefit shrinks at the largest n", _check_large_n),
    ]

    def run(self, cfg: DiTLocality.Config, ctx: RunContext) -> dict[str, Any]:

        import torch

        from genlab.data.images import load_dataset, subset
        from genlab.harness.torch_setup import setup_torch
        from genlab.measures.generative import copy_fraction, mmd_rbf, nn_distances, psnr
        from genlab.nn.dit import DiT, token_distances
        from genlab.nn.flow import euler_sample
        from genlab.training.flow_matching import FlowMember, train_flow_ensemble

        setup_torch(1)
        data = load_dataset(cfg.dataset, seed=ctx.seed_for("data") % 2**31, n_test=cfg.n_test,
                            image_folder=cfg.image_folder)
        n_all = len(data.x_train)
        n_values = [n if 0 < n < n_all else n_all for n in cfg.n_values]
        half = cfg.depth // 2
        layers = {"global": (), "early": tuple(range(half)), "late": tuple(range(half, cfg.depth))}
        key, members = [], []
        for s in range(cfg.seeds):
            for n in n_values:
                xs = torch.from_numpy(subset(data, n, ctx.rng("subset", s, n)).x_train)
                for arm in ARMS:
                    key.append((s, n, arm))
                    members.append(FlowMember(xs, "cfm"))
        e = len(members)
        model = DiT(data.shape, cfg.patch, cfg.dim, cfg.depth, cfg.heads, cfg.mlp_ratio, cfg.pos, members=e,
                    generator=ctx.torch_generator("init"))
        # same initial weights for the three arms of one (seed, n): masking changes no parameters
        with torch.no_grad():
            for p in model.parameters():
                if p.shape[0] == e:
                    p.copy_(p[torch.arange(e) // len(ARMS) * len(ARMS)])
        for i, (_, _, arm) in enumerate(key):
            model.set_window(cfg.window if arm != "global" else None, layers[arm], member=i)
        ctx.log(f"training {e} DiTs side by side (grid {model.grid}, {cfg.steps} steps)")

        def log(step: int, losses: list[float]) -> None:
            ctx.record(step=step, **{f"loss/s{s}/n{n}/{a}": v for (s, n, a), v in zip(key, losses)})

        with ctx.timer("training"):
            train_flow_ensemble(model, members, cfg.steps, ctx.torch_generator("train"), batch=cfg.batch,
                                lr=cfg.lr, log_every=max(cfg.steps // 20, 1), on_log=log)

        # -- denoising PSNR, train vs held-out, identical noise draws ---------------------------------------
        k = cfg.eval_images
        x_test = torch.from_numpy(data.x_test[:k])
        train_eval = torch.stack([m.x_train[torch.arange(k) % len(m.x_train)] for m in members])  # (E, k, D)
        n_rows = torch.tensor([min(len(m.x_train), k) for m in members])
        g = ctx.torch_generator("psnr")
        p_tr, p_te = np.zeros((e, len(cfg.psnr_ts))), np.zeros((e, len(cfg.psnr_ts)))
        with torch.no_grad():
            for j, t in enumerate(cfg.psnr_ts):
                eps = torch.randn(k, data.dim, generator=g)
                tt = torch.full((e, k), float(t))
                for src, out in ((train_eval, p_tr), (x_test[None].expand(e, -1, -1), p_te)):
                    xt = (1 - t) * eps + t * src
                    xhat = xt + (1 - t) * model(xt, tt)
                    ps = psnr(xhat.reshape(-1, data.dim), src.reshape(-1, data.dim)).reshape(e, k)
                    valid = torch.arange(k)[None] < n_rows[:, None] if out is p_tr else torch.ones(e, k, dtype=bool)
                    out[:, j] = ((torch.from_numpy(ps) * valid).sum(1) / valid.sum(1)).numpy()

        # -- samples: copy fraction, NN distance, MMD -------------------------------------------------------
        x0 = torch.randn(cfg.n_samples, data.dim, generator=ctx.torch_generator("x0"))
        samples = euler_sample(model, x0[None].expand(e, -1, -1).contiguous(), cfg.euler_steps)
        zz = torch.cat([x_test[:200], torch.from_numpy(data.x_train[:200])])
        bw = float(torch.cdist(zz, zz).median())
        cp, nd, mm = np.zeros(e), np.zeros(e), np.zeros(e)
        for i, m in enumerate(members):
            a, b = nn_distances(samples[i], m.x_train)
            cp[i], nd[i] = copy_fraction(a, b), float(a.mean())
            mm[i] = mmd_rbf(samples[i], x_test, bandwidth=bw)

        # -- attention distance per layer (every arm; t = 0.5, held-out images) ------------------------------
        ga = torch.Generator().manual_seed(ctx.seed_for("attn"))
        xq = torch.from_numpy(data.x_test[:64])
        xa = 0.5 * torch.randn(xq.shape, generator=ga) + 0.5 * xq
        dist = model.attention_distances(xa[None].expand(e, -1, -1), torch.full((e, len(xq)), 0.5)).numpy()

        def grid(values: np.ndarray) -> list:
            out = np.zeros((cfg.seeds, len(n_values), len(ARMS), *values.shape[1:]))
            for i, (s, n, arm) in enumerate(key):
                out[s, n_values.index(n), ARMS.index(arm)] = values[i]
            return out.tolist()

        mean_tr, mean_te = p_tr.mean(1), p_te.mean(1)
        results = {"psnr_train": grid(mean_tr), "psnr_test": grid(mean_te), "gap": grid(mean_tr - mean_te),
                   "psnr_train_by_t": grid(p_tr), "psnr_test_by_t": grid(p_te), "copy": grid(cp),
                   "nn_dist": grid(nd), "mmd": grid(mm), "attention_distance": grid(dist)}
        att = np.array(results["attention_distance"])[:, :, 0]  # global arm: [seed][n][layer]
        ctx.log("gap (seed-mean, [n][arm]): " + str(np.round(np.array(results["gap"]).mean(0), 2).tolist()))
        return {"n_values": n_values, "arms": list(ARMS), "depth": cfg.depth, "grid": list(model.grid),
                "window": cfg.window, "psnr_ts": list(cfg.psnr_ts), "psnr_match_db": cfg.psnr_match_db,
                "min_gap_db": cfg.min_gap_db, "min_copy": cfg.min_copy, "results": results,
                "attention_distance_global": att.tolist(),
                "members": e,
                "uniform_attention_distance": float(token_distances(model.grid).mean()),
                "samples": {f"n{n}/{arm}": samples[key.index((0, n, arm))][:12].tolist()
                            for n in n_values for arm in ARMS},
                "shape": list(data.shape)}

    def figures(self, metrics: Mapping[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        ns, arms, r = metrics["n_values"], metrics["arms"], metrics["results"]
        fig, ax = plt.subplots(1, 4, figsize=(17, 3.8))
        att = np.array(metrics["attention_distance_global"])  # [seed][n][layer]
        for j, n in enumerate(ns):
            for s in range(att.shape[0]):
                ax[0].plot(range(att.shape[2]), att[s, j], "-o", color=f"C{j}", alpha=0.6,
                           label=f"n={n}" if s == 0 else None)
        ax[0].set(xlabel="block", ylabel="mean attention distance (patches)", title="global DiT: attention "
                  "distance per layer (every seed)")
        ax[0].legend(fontsize=7)
        x = np.arange(len(ns))
        for key, a_, title in (("gap", ax[1], "PSNR gap train − held-out (dB)"), ("copy", ax[2], "copy fraction"),
                               ("psnr_train", ax[3], "train PSNR (dB)")):
            v = np.array(r[key])  # [seed][n][arm]
            for k, arm in enumerate(arms):
                a_.bar(x + (k - 1) * 0.27, v[:, :, k].mean(0), 0.27, yerr=v[:, :, k].std(0), capsize=2,
                       label=arm)
            a_.set_xticks(x, [f"n={n}" for n in ns])
            a_.set_title(title)
            a_.legend(fontsize=7)
        fig.suptitle(f"DiT locality: {metrics['window']}×{metrics['window']} windows on a "
                     f"{metrics['grid'][0]}×{metrics['grid'][1]} token grid, {metrics['depth']} blocks", fontsize=9)
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "dit-locality", dpi=90,
            caption=(
                "Early-layer attention distance vs n (global DiT), and the train − held-out PSNR gap "
                "and copy fraction of each attention arm at the smallest and largest n"
            ),
        )
        return [path]
