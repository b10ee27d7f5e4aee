"""Generalization bounds for rank-sparse networks (Ledent, Alves, Lei, arXiv:2510.21945): Schatten-p quasi-norm
bounds with p optimised per layer, against parameter counting and norm-based bounds, for ReLU MLPs of growing
width trained with weight decay on low-rank synthetic data and on digits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
from genlab.harness.config import Range
from genlab.harness.torch_setup import module_device
from genlab.measures import norm_bounds as nb

NORM_BOUNDS = ("spectral", "frobenius", "pac_bayes", "path_norm")
SHOWN = ("schatten", "schatten_aug", "param_count", *NORM_BOUNDS)


def _teacher_data(rng: np.random.Generator, n: int, dim: int, rank: int, hidden: int = 64):
    """x ~ N(0, I_dim); y = 1[f*(x) > median] with f* a random two-layer ReLU net whose first layer has rank r."""
    v = rng.normal(size=(rank, dim)) / np.sqrt(dim)
    u = rng.normal(size=(hidden, rank))
    a = rng.normal(size=hidden)
    x = rng.normal(size=(n, dim))
    score = np.maximum(x @ v.T @ u.T, 0.0) @ a
    return x.astype(np.float32), (score > np.median(score)).astype(np.int64)


def _mlp(din: int, width: int, depth: int, dout: int, init_scale: float):
    """A bias-free ReLU MLP (the bounds are stated for bias-free nets) with its default init scaled down."""
    import torch
    from torch import nn

    dims = [din] + [width] * (depth - 1) + [dout]
    layers: list[nn.Module] = []
    for a, b in zip(dims[:-1], dims[1:]):
        lin = nn.Linear(a, b, bias=False)
        with torch.no_grad():
            lin.weight.mul_(init_scale)
        layers += [lin, nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _train(models, xs, ys, cfg, seeds: list[int], spectral_projection: bool = False) -> None:
    """Train same-shape MLPs, one per seed (each its own data, initialisation and minibatch order ``seeds[i]``),
    as one batched model: the weights stacked along a leading seed axis, ``torch.bmm``, and the sum of the seeds'
    mean losses, so every seed's gradient and AdamW step (weight decay included) are those of training it alone.

    With ``spectral_projection`` every weight matrix is divided by its largest singular value after each step
    whenever that exceeds 1 (the paper's Fig. D.3 regime: all spectral norms ≤ 1), and the loss sees the logits
    times ``cfg.spectral_logit_scale``: a fixed temperature, so the 1-Lipschitz net can reach a small loss; the
    classifier and every bound (functions of B ∏ s_i / γ and norm ratios) are those of the unscaled net."""
    import torch
    from torch import nn

    dev = module_device(models[0])
    lins = [[m for m in model.modules() if isinstance(m, nn.Linear)] for model in models]
    weights = [torch.stack([ls[i].weight.detach() for ls in lins]).clone().requires_grad_()
               for i in range(len(lins[0]))]
    opt = torch.optim.AdamW(weights, lr=cfg.lr, weight_decay=cfg.weight_decay)
    gens = [torch.Generator().manual_seed(s) for s in seeds]  # minibatches on CPU generators, on any device
    pgen = torch.Generator().manual_seed(seeds[0])  # power-iteration starts (a separate stream)
    xt, yt = torch.as_tensor(np.stack(xs), device=dev), torch.as_tensor(np.stack(ys), device=dev)
    rows = torch.arange(len(models), device=dev)[:, None]
    scale = cfg.spectral_logit_scale if spectral_projection else 1.0
    vecs: dict[int, Any] = {}  # power-iteration vectors, warm-started from step to step
    for _ in range(cfg.steps):
        idx = torch.stack([torch.randint(0, yt.shape[1], (cfg.batch,), generator=g) for g in gens]).to(dev)
        opt.zero_grad()
        logits = scale * _forward(weights, xt[rows, idx])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), yt[rows, idx].flatten()) * len(models)
        loss.backward()
        opt.step()
        if spectral_projection:
            _project_spectral(weights, vecs, cfg.power_iters, pgen)
    if spectral_projection:  # the final weights: exact top singular values, so every norm is <= 1 exactly
        _project_spectral(weights, vecs, 0, pgen)
    with torch.no_grad():
        for i, w in enumerate(weights):
            for s_, ls in enumerate(lins):
                ls[i].weight.copy_(w[s_])


def _forward(weights, x):
    """The stacked bias-free ReLU MLP: x (seeds, batch, d_in) -> logits (seeds, batch, classes)."""
    import torch

    for i, w in enumerate(weights):
        x = torch.bmm(x, w.mT)
        if i < len(weights) - 1:
            x = torch.relu(x)
    return x


def _project_spectral(weights, vecs: dict[int, Any], iters: int, gen) -> list[list[float]]:
    """Divide each stacked weight (seeds, out, in), seed by seed, by its spectral norm where that exceeds 1;
    returns the norms before (per layer, per seed).

    ``iters`` > 0: the norm by that many power iterations from the layer's vectors of the previous call (a lower
    bound that converges as the weights settle: the per-step projection). ``iters`` = 0: the exact norm (SVD)."""
    import torch

    sigmas = []
    with torch.no_grad():
        for i, w in enumerate(weights):
            if iters == 0:
                sigma = torch.linalg.matrix_norm(w, ord=2)
            else:
                v = vecs.get(i)
                if v is None:
                    v = torch.randn(w.shape[0], w.shape[2], 1, generator=gen).to(w)
                for _ in range(iters):
                    v = torch.nn.functional.normalize(w.mT @ (w @ v), dim=1)
                vecs[i] = v
                sigma = torch.linalg.vector_norm(w @ v, dim=(1, 2))
            w.div_(sigma.clamp_min(1.0)[:, None, None])
            sigmas.append(sigma.tolist())
    return sigmas


def _rescaled_copy(model, c: float):
    """Layer 1 times c, layer 2 times 1/c: the same function (ReLU is positively homogeneous)."""
    import copy

    import torch
    from torch import nn

    twin = copy.deepcopy(model)
    lins = [m for m in twin.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        lins[0].weight.mul_(c)
        lins[1].weight.div_(c)
    return twin


def _rank_projected_copy(model, rank: int):
    """Every weight matrix replaced by its best rank-``rank`` approximation (truncated SVD)."""
    import copy

    import torch
    from torch import nn

    twin = copy.deepcopy(model)
    with torch.no_grad():
        for lin in (m for m in twin.modules() if isinstance(m, nn.Linear)):
            u, sv, vt = torch.linalg.svd(lin.weight, full_matrices=False)
            k = min(rank, len(sv))
            lin.weight.copy_((u[:, :k] * sv[:k]) @ vt[:k])
    return twin


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


@register
class RankSparseBounds(Study):
    name = "rank-sparse-bounds"
    paper = Paper("Generalization Bounds for Rank-sparse Neural Networks", "arXiv:2510.21945", "Ledent, Alves, Lei")
    summary = (
        "Schatten-p bounds with per-layer p stay far below parameter counting and spectral/Frobenius/path-norm "
        "bounds as width grows, reduce to the low-rank parameter count at p -> 0 and ignore layer rescaling."
    )
    accelerated = True  # networks train on ctx.device; the bounds are computed on the CPU in float64

    @dataclass
    class Config:
        widths: tuple[int, ...] = (32, 64, 128, 256)
        depth: int = 4  # number of weight matrices
        datasets: tuple[str, ...] = ("synthetic", "digits")
        n_train: int = 1000  # synthetic
        n_test: int = 4000
        dim: int = 50
        teacher_rank: int = 3
        steps: int = 600
        batch: int = 128
        lr: float = 3e-3
        weight_decay: float = 0.1
        init_scale: float = 0.2  # small initialisation + weight decay: the low-rank ("rich") regime
        margin_slack: float = 0.01  # γ = the largest margin losing at most this fraction beyond the train errors
        seeds: int = 5  # independent units of every empirical claim (fresh teacher / split, init and order)
        delta: float = 0.05  # confidence of the bounds with logs and union-bound factors
        spectral_arm: bool = True  # also train the smallest and largest width with all spectral norms <= 1
        # added 2026-12-05 (issue 35 follow-up); the scale after the failing quick run and a seed-0 probe (see docs).
        # The projected arm's loss sees this x logits (= inputs x this, for a bias-free ReLU net):
        spectral_logit_scale: Annotated[float, Range(1e-3, 1e6)] = 100.0
        # power iterations per step for the projection (warm-started; exact SVD at the end):
        power_iters: Annotated[int, Range(1, 1000)] = 2
        # the projected nets' test error may exceed the unprojected twins' by at most this (competence precondition):
        competence_tol: Annotated[float, Range(0.0, 1.0)] = 0.05
        # added 2026-12-04 (fidelity review); thresholds fixed before the first run with them
        random_labels: bool = True  # also train the largest width on permuted labels (per dataset and seed)
        project_rank: int = 10  # rank-r truncation of every weight matrix of the largest-width nets
        spearman_min: float = 0.5  # the bound must rank the models' generalisation gaps at least this well
        projection_tol: float = 0.02  # the projection may cost at most this much test accuracy

        def validate(self) -> None:
            if self.depth < 2:
                raise ValueError("depth must be >= 2 (the rescaling check needs two layers)")
            if min(self.widths) < 2:
                raise ValueError("widths must be >= 2")
            if set(self.datasets) - {"synthetic", "digits"}:
                raise ValueError("datasets must be among synthetic, digits")
            if self.project_rank < 1:
                raise ValueError("project_rank must be >= 1")

    presets = {
        "smoke": {
            "widths": (16, 32),
            "steps": 30,
            "n_train": 300,
            "n_test": 500,
            "seeds": 1,
            "datasets": ("synthetic", "digits"),
        },
        "quick": {},
        "full": {"widths": (64, 128, 256, 512, 1024), "n_train": 2000, "steps": 5000, "seeds": 3, "depth": 5},
    }

    def run(self, cfg: RankSparseBounds.Config, ctx: RunContext) -> dict[str, Any]:
        import torch

        from genlab.harness.torch_setup import setup_torch

        setup_torch(1)
        out: dict[str, Any] = {"runs": [], "p0_max_rel_gap": 0.0, "rescale_max_rel_change": 0.0}
        seeds = range(cfg.seeds)
        # every net is trained for all seeds at once (one batched model); the arms: the width sweep, the
        # spectral-projection arm at the smallest and largest width, the largest width on permuted labels
        arms = [("trained", w) for w in cfg.widths]
        arms += [("spectral", w) for w in sorted({min(cfg.widths), max(cfg.widths)}) if cfg.spectral_arm]
        arms += [("random", max(cfg.widths))] if cfg.random_labels else []
        jobs = [(ds, kind, width) for ds in cfg.datasets for kind, width in arms]
        splits: dict[str, list[tuple[np.ndarray, ...]]] = {}
        for ds, kind, width in ctx.progress(jobs, desc="nets (all seeds at once)"):
            if ds not in splits:
                splits[ds] = [self._data(ds, seed, cfg, ctx) for seed in seeds]
            xtr = [sp[0] for sp in splits[ds]]
            ytr = [sp[1] if kind != "random" else ctx.rng("random-labels", ds, seed).permutation(sp[1])
                   for seed, sp in zip(seeds, splits[ds])]
            n_cls = int(max(max(sp[1].max(), sp[3].max()) for sp in splits[ds]) + 1)
            models = []
            for seed in seeds:
                torch.manual_seed(ctx.seed_for("init", ds, width, seed))
                models.append(_mlp(xtr[0].shape[1], width, cfg.depth, n_cls, cfg.init_scale).to(ctx.device))
            # the arms at a width share initialisations and minibatch orders (per seed)
            _train(models, xtr, ytr, cfg, [ctx.seed_for("order", ds, width, seed) for seed in seeds],
                   spectral_projection=kind == "spectral")
            for seed, model, (x_tr, _, x_te, y_te), y_tr in zip(seeds, models, splits[ds], ytr):
                model = model.cpu()  # the bounds are computed in float64 on the CPU
                out["runs"].append(self._measure(model, x_tr, y_tr, x_te, y_te, ds, width, seed, cfg, out, ctx,
                                                 kind=kind))
                if kind == "trained" and width == max(cfg.widths):
                    twin = _rank_projected_copy(model, cfg.project_rank)
                    out["runs"].append(self._measure(twin, x_tr, y_tr, x_te, y_te, ds, width, seed, cfg, out, ctx,
                                                     kind="projected"))
        out["summary"] = _summary(out["runs"], cfg.datasets)
        return out

    @staticmethod
    def _data(ds: str, seed: int, cfg, ctx) -> tuple[np.ndarray, ...]:
        """(x_train, y_train, x_test, y_test) of one seed: a fresh teacher, or a fresh digits split."""
        if ds == "synthetic":
            x, y = _teacher_data(ctx.rng("teacher", seed), cfg.n_train + cfg.n_test, cfg.dim, cfg.teacher_rank)
            return x[: cfg.n_train], y[: cfg.n_train], x[cfg.n_train :], y[cfg.n_train :]
        from genlab.data.digits import digits_split

        sp = digits_split(0.3, seed=ctx.seed_for("split", seed))
        return sp.x_train, sp.y_train, sp.x_test, sp.y_test

    def _measure(self, model, xtr, ytr, xte, yte, ds, width, seed, cfg, out, ctx, kind: str = "trained"
                 ) -> dict[str, Any]:
        import torch

        model = model.double().eval()
        xtr_t, xte_t = torch.as_tensor(xtr, dtype=torch.float64), torch.as_tensor(xte, dtype=torch.float64)
        with torch.no_grad():
            out_tr = model(xtr_t).numpy()
            test_err = float(np.mean(model(xte_t).argmax(1).numpy() != yte))
        train_err = float(np.mean(out_tr.argmax(1) != ytr))
        # γ: the largest margin losing at most `margin_slack` of the training points beyond the errors
        # (under-trained smoke nets: the 1% quantile of the positive margins).
        margins = nb.margins_of(out_tr, ytr)
        gamma = float(np.quantile(margins, min(train_err + cfg.margin_slack, 1.0), method="lower"))
        if gamma <= 0:
            gamma = float(np.quantile(margins[margins > 0], 0.01))
        res = nb.network_bounds(model, xtr_t, ytr, gamma=gamma, delta=cfg.delta)
        if kind != "projected":  # the identity checks, on every trained net (true and random labels)
            # p -> 0: every layer's Thm 3.6 term at tiny p against rank * (w_out + w_in).
            log_scale = np.log(float(xtr_t.norm(dim=1).max())) + sum(np.log(s.spectral) for s in res.layers)
            log_scale -= np.log(res.gamma)
            for st in res.layers:
                t = float(np.exp(nb.schatten_term(st.sv, sum(st.shape), log_scale, 1e-9)[0]))
                out["p0_max_rel_gap"] = max(out["p0_max_rel_gap"], abs(t / (st.rank * sum(st.shape)) - 1))
            # Rescaling invariance (layer 1 x 4, layer 2 / 4): same function, same margins, same γ.
            twin = nb.network_bounds(_rescaled_copy(model, 4.0), xtr_t, ytr, gamma=gamma)
            change = max(abs(twin.bounds[k] / v - 1) for k, v in res.bounds.items())
            out["rescale_max_rel_change"] = max(out["rescale_max_rel_change"], change)
        hidden = res.layers[1:-1] or res.layers
        row = {
            "kind": kind,
            "data": ds,
            "width": width,
            "seed": seed,
            "train_err": train_err,
            "test_err": test_err,
            "gamma": res.gamma,
            "params": res.params,
            "low_rank_params": res.low_rank_params,
            "eff_rank": float(np.mean([s.eff_rank for s in hidden])),
            "stable_rank": float(np.mean([s.stable_rank for s in hidden])),
            "p_opt": [s.p_opt for s in res.layers],
            "p_opt_aug": [s.p_opt_aug for s in res.layers],
            **{f"bound_{k}": v for k, v in res.bounds.items()},
            **{f"accounted_{k}": v for k, v in res.accounted.items()},
            "max_spectral": float(max(st.spectral for st in res.layers)),
        }
        ctx.record(**row)
        ctx.log(
            f"{ds} w={width} {kind}: train_err={train_err:.3f} test_err={test_err:.3f} eff_rank={row['eff_rank']:.1f} "
            f"schatten={res.bounds['schatten']:.3g} params={res.bounds['param_count']:.3g} "
            f"spectral={res.bounds['spectral']:.3g}"
        )
        return row

    def figures(self, metrics: dict[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        summ = metrics["summary"]
        fig, axes = plt.subplots(1, len(summ) + 1, figsize=(4.3 * (len(summ) + 1), 3.7))
        for ax, (ds, s) in zip(axes, summ.items()):
            for i, k in enumerate(SHOWN):
                style = "-" if k.startswith("schatten") else "--"
                ax.loglog(s["width"], s[k], style, marker="o", ms=3, color=f"C{i}", label=k)
            ax.set_xlabel("width")
            ax.set_ylabel("bound (dominant term, no constants/logs)")
            ax.set_title(f"{ds}")
            ax.legend(fontsize=6)
        ax = axes[-1]
        ax2 = ax.twinx()
        for i, (ds, s) in enumerate(summ.items()):
            ax.plot(s["width"], s["eff_rank"], "o-", color=f"C{i}", label=f"{ds}: eff. rank (hidden)")
            ax2.plot(s["width"], s["test_err"], "x:", color=f"C{i}", label=f"{ds}: test error")
        ax.set_xscale("log")
        ax.set_xlabel("width")
        ax.set_ylabel("effective rank")
        ax2.set_ylabel("test error (dotted)")
        ax.legend(fontsize=6, loc="upper left")
        ax.set_title("effective rank and test error")
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "rank-sparse-bounds", dpi=90,
            caption=(
                "Schatten-quasi-norm bound against parameter counting and norm bounds vs width on "
                "each dataset, with effective rank and test error"
            ),
        )
        return [path]

    claims = [
        Claim(
            "schatten-below-param-count",
            "at the largest width the Schatten bound (Thm 3.6, p optimised per layer, with the union bound over the "
            "p grid and the confidence term) is below parameter counting on every dataset (per seed log ratio, mean "
            "< 0)",
            lambda m, cfg: _largest(m, ("param_count",)),
        ),
        Claim(
            "schatten-below-norm-bounds",
            "at the largest width the Schatten bound is below every norm bound (spectral, Frobenius, PAC-Bayes, "
            "path norm; each with its stated log factors) on every dataset (per seed log ratio, mean < 0)",
            lambda m, cfg: _largest(m, NORM_BOUNDS),
        ),
        Claim(
            "schatten-grows-slower",
            "the Schatten bound grows more slowly with width than parameter counting on every dataset (per seed: "
            "log growth from the smallest to the largest width, Schatten minus parameter counting, mean < 0)",
            lambda m, cfg: _growth(m, "trained"),
        ),
        Claim(
            "spectral-regime",
            "in the paper's regime (every spectral norm projected to <= 1 after each step, Fig. D.3) the Schatten "
            "bound is below parameter counting at the largest width and grows more slowly with width, on every "
            "dataset (per seed, mean over seeds); decided only where the projected nets are competent (test error "
            "within {competence_tol} of the unprojected nets' at each width, paired over seeds)",
            lambda m, cfg: _claim_spectral(m, cfg),
        ),
        Claim(
            "p0-equals-rank-count",
            "p -> 0: each layer's Schatten term equals the low-rank parameter count rank*(w_in + w_out) "
            "(relative gap < 1e-6 on every trained layer)",
            lambda m, cfg: evidence(m["p0_max_rel_gap"] < 1e-6, max_rel_gap=m["p0_max_rel_gap"]),
            kind="identity",
        ),
        Claim(
            "rescale-invariance",
            "every bound is invariant to rescaling layer 1 by 4 and layer 2 by 1/4 (relative change < 1e-8)",
            lambda m, cfg: evidence(m["rescale_max_rel_change"] < 1e-8, max_rel_change=m["rescale_max_rel_change"]),
            kind="identity",
        ),
        Claim(
            "bound-rises-with-random-labels",
            "the largest net trained on permuted labels has both the larger generalisation gap and the larger "
            "Schatten bound than the same net on true labels, on every dataset",
            lambda m, cfg: _claim_random_labels(m, cfg),
        ),
        Claim(
            "bound-ranks-generalisation-gaps",
            "across every trained net (widths x seeds, true and random labels) the Schatten bound's Spearman rank "
            "correlation with the measured generalisation gap is >= {spearman_min} on every dataset",
            lambda m, cfg: _claim_ranks_gaps(m, cfg),
        ),
        Claim(
            "rank-projection-low-rank-regime",
            "projecting the largest net's weights to rank {project_rank} costs <= {projection_tol} test accuracy, "
            "moves its hidden layers' optimal p below 1 and lowers the Schatten bound, on every dataset",
            lambda m, cfg: _claim_projection(m, cfg),
        ),
    ]


def _summary(runs: list[dict[str, Any]], datasets) -> dict[str, dict[str, list[float]]]:
    """Means over the given trained (true-label, unprojected) runs (all seeds, or one) per dataset and width."""
    out: dict[str, dict[str, list[float]]] = {}
    for ds in datasets:
        rows = [r for r in runs if r["data"] == ds and r.get("kind", "trained") == "trained"]
        widths = sorted({r["width"] for r in rows})
        s: dict[str, list[float]] = {"width": [float(w) for w in widths]}
        for k in (*SHOWN, "schatten_p0", "schatten_p2"):
            s[k] = [float(np.mean([r[f"bound_{k}"] for r in rows if r["width"] == w])) for w in widths]
        for k in ("test_err", "train_err", "eff_rank", "stable_rank", "gamma"):
            s[k] = [float(np.mean([r[k] for r in rows if r["width"] == w])) for w in widths]
        out[ds] = s
    return out


def _rows(m, kind: str, ds: str, seed: int | None = None) -> list[dict[str, Any]]:
    return [r for r in m["runs"] if r.get("kind", "trained") == kind and r["data"] == ds
            and (seed is None or r["seed"] == seed)]


def _at_width(m, kind: str, ds: str, seed: int, largest: bool = True) -> dict[str, Any]:
    rows = _rows(m, kind, ds, seed)
    return (max if largest else min)(rows, key=lambda r: r["width"])


def _at_largest(m, kind: str, ds: str, seed: int) -> dict[str, Any]:
    return _at_width(m, kind, ds, seed)


def _gap(r: dict[str, Any]) -> float:
    return r["test_err"] - r["train_err"]


def _seeds_and_data(m, kind: str = "trained") -> tuple[list[int], list[str]]:
    rows = [r for r in m["runs"] if r.get("kind", "trained") == kind]
    return sorted({r["seed"] for r in rows}), sorted({r["data"] for r in rows})


def _bound(r: dict[str, Any], key: str) -> float:
    """The bound with its logs and union-bound factors (runs stored before they were added: the bare shape)."""
    return r[f"accounted_{key}"] if f"accounted_{key}" in r else r[f"bound_{key}"]


def _largest(m, others, kind: str = "trained"):
    """Per dataset and comparison bound: the seeds' log(Schatten / other) at the largest width, mean < 0 (t over
    seeds); every dataset and bound must hold."""
    seeds, data = _seeds_and_data(m, kind)
    tests, nums = [], {}
    for ds in data:
        top = [_at_largest(m, kind, ds, s) for s in seeds]
        nums[f"{ds}_schatten"] = float(np.mean([_bound(r, "schatten") for r in top]))
        nums[f"{ds}_schatten_shape"] = float(np.mean([r["bound_schatten"] for r in top]))
        for k in others:
            logs = [float(np.log(_bound(r, "schatten") / _bound(r, k))) for r in top]
            tests.append(decide.mean(logs, below=0.0))
            nums[f"{ds}_{k}"] = float(np.mean([_bound(r, k) for r in top]))
    if not tests:
        return evidence(None, note=f"no {kind} runs")
    return decide.all_of(*tests, **nums)


def _growth(m, kind: str):
    """Per dataset: the seeds' log growth factor (smallest → largest width) of Schatten minus parameter
    counting's, mean < 0."""
    seeds, data = _seeds_and_data(m, kind)
    tests, nums = [], {}
    for ds in data:
        diffs, sg, pg = [], [], []
        for s in seeds:
            lo, hi = _at_width(m, kind, ds, s, largest=False), _at_width(m, kind, ds, s)
            sg.append(np.log(_bound(hi, "schatten") / _bound(lo, "schatten")))
            pg.append(np.log(_bound(hi, "param_count") / _bound(lo, "param_count")))
            diffs.append(sg[-1] - pg[-1])
        tests.append(decide.mean(diffs, below=0.0))
        nums[f"{ds}_schatten_growth"] = float(np.exp(np.mean(sg)))
        nums[f"{ds}_param_growth"] = float(np.exp(np.mean(pg)))
    if not tests:
        return evidence(None, note=f"no {kind} runs")
    return decide.all_of(*tests, **nums)


def _claim_spectral(m, cfg):
    """The spectral-projection arm: below parameter counting at the largest width, and slower growth; decided only
    where the projected nets are competent (per dataset and width, paired over seeds: their test error minus the
    unprojected twin's is below ``competence_tol``), else withheld: the bounds of an untrained net say nothing."""
    seeds, data = _seeds_and_data(m, "spectral")
    if not seeds:
        return evidence(None, note="spectral_arm is off")
    below, growth = _largest(m, ("param_count",), "spectral"), _growth(m, "spectral")
    max_sn = max(r["max_spectral"] for r in m["runs"] if r.get("kind") == "spectral")
    fits, test_err = [], {}
    for ds in data:
        for largest in (False, True):
            proj = [_at_width(m, "spectral", ds, s, largest) for s in seeds]
            twin = [_at_width(m, "trained", ds, s, largest) for s in seeds]
            fits.append(decide.paired([r["test_err"] for r in proj], [r["test_err"] for r in twin],
                                      below=cfg.competence_tol))
            test_err[f"{ds}_w{proj[0]['width']}"] = {
                "projected": float(np.mean([r["test_err"] for r in proj])),
                "unprojected": float(np.mean([r["test_err"] for r in twin])),
            }
    ev = decide.all_of(below, growth, max_spectral_norm=max_sn, test_err=test_err)
    competent = decide.all_of(*fits)
    if competent.held is True:
        return ev.with_numbers(competence=competent.test.summary())
    return ev.withheld(f"competence not shown: the projected nets' test error minus the unprojected nets' is not "
                       f"below competence_tol={cfg.competence_tol} at every width and dataset (binding "
                       f"{competent.test.summary()})")


def _claim_random_labels(m, cfg):
    """Per dataset, paired over seeds at the largest width: the random-label net's Schatten bound (log) and
    generalisation gap minus the true-label net's, both means > 0."""
    seeds, data = _seeds_and_data(m)
    if not any(_rows(m, "random", ds) for ds in data):
        return evidence(None, note="random_labels is off")
    tests, nums = [], {}
    for ds in data:
        tr = [_at_largest(m, "trained", ds, s) for s in seeds]
        rnd = [_at_largest(m, "random", ds, s) for s in seeds]
        tests.append(decide.paired(np.log([_bound(r, "schatten") for r in rnd]),
                                   np.log([_bound(r, "schatten") for r in tr]), above=0.0))
        tests.append(decide.paired([_gap(r) for r in rnd], [_gap(r) for r in tr], above=0.0))
        nums[f"{ds}_bound_true"] = float(np.mean([_bound(r, "schatten") for r in tr]))
        nums[f"{ds}_bound_random"] = float(np.mean([_bound(r, "schatten") for r in rnd]))
        nums[f"{ds}_gap_true"] = float(np.mean([_gap(r) for r in tr]))
        nums[f"{ds}_gap_random"] = float(np.mean([_gap(r) for r in rnd]))
    return decide.all_of(*tests, **nums)


def _claim_ranks_gaps(m, cfg):
    """Per dataset: per seed, the Spearman correlation over that seed's nets (widths and the random-label net) of
    the Schatten bound with the measured generalisation gap; mean over seeds >= spearman_min."""
    seeds, data = _seeds_and_data(m)
    tests, nums = [], {}
    for ds in data:
        rhos, rhos_pc = [], []
        for s in seeds:
            rows = _rows(m, "trained", ds, s) + _rows(m, "random", ds, s)
            gaps = [_gap(r) for r in rows]
            rhos.append(_spearman([_bound(r, "schatten") for r in rows], gaps))
            rhos_pc.append(_spearman([_bound(r, "param_count") for r in rows], gaps))
        tests.append(decide.mean(rhos, above=cfg.spearman_min))
        nums[f"{ds}_rho_schatten"] = float(np.nanmean(rhos))
        nums[f"{ds}_rho_param_count"] = float(np.nanmean(rhos_pc))
        nums[f"{ds}_models_per_seed"] = len(_rows(m, "trained", ds, seeds[0]) + _rows(m, "random", ds, seeds[0]))
    return decide.all_of(*tests, **nums)


def _hidden_p(r: dict[str, Any]) -> float:
    """Mean optimal Schatten p over the hidden layers (all layers for a two-layer net)."""
    return float(np.mean(r["p_opt"][1:-1] or r["p_opt"]))


def _claim_projection(m, cfg):
    """Per dataset over seeds: the rank-r projection of the largest net costs at most projection_tol test accuracy
    (mean), its hidden layers' optimal p is below 1 (mean), and it lowers the Schatten bound (paired, log)."""
    seeds, data = _seeds_and_data(m)
    tests, nums = [], {}
    for ds in data:
        tr = [_at_largest(m, "trained", ds, s) for s in seeds]
        pr = [_at_largest(m, "projected", ds, s) for s in seeds]
        tests.append(decide.mean([b["test_err"] - a["test_err"] for a, b in zip(tr, pr)], below=cfg.projection_tol))
        tests.append(decide.mean([_hidden_p(r) for r in pr], below=1.0))
        tests.append(decide.paired(np.log([_bound(r, "schatten") for r in tr]),
                                   np.log([_bound(r, "schatten") for r in pr]), above=0.0))
        nums[f"{ds}_test_err_cost"] = float(np.mean([b["test_err"] - a["test_err"] for a, b in zip(tr, pr)]))
        nums[f"{ds}_hidden_p_opt_trained"] = float(np.mean([_hidden_p(r) for r in tr]))
        nums[f"{ds}_hidden_p_opt_projected"] = float(np.mean([_hidden_p(r) for r in pr]))
        nums[f"{ds}_schatten_trained"] = float(np.mean([_bound(r, "schatten") for r in tr]))
        nums[f"{ds}_schatten_projected"] = float(np.mean([_bound(r, "schatten") for r in pr]))
        nums[f"{ds}_eff_rank_trained"] = float(np.mean([r["eff_rank"] for r in tr]))
    return decide.all_of(*tests, rank=cfg.project_rank, **nums)
