"""Study "flow-matching": closed-form flow matching (Bertrand, Gagneux, Massias, Emonet; arXiv 2506.03719).

Four results at laptop scale, all on download-free data (docs/studies/flow-matching.md):

1. target stochasticity collapses early in t, earlier as d grows (largest softmax weight of the empirical optimal
   velocity u* vs t for Gaussian mixtures of d = 2 ... 1024, plus digits and moons for reference; no training);
2. a CFM network departs from u* more as n grows (most at late t) and memorises at tiny n (copy fraction);
3. the hybrid sampler (u* on [0, tau), the network after) shows when generalisation is decided;
4. EFM (quick: M = 128; full: M up to 1024) is not worse than the better baseline (quick: CFM; full: CFM or OT-CFM)
   on held-out FD and MMD by more than a margin fixed before the runs (8 paired seeds: the arms of a seed share
   their start, minibatch draws and sampling noise); following u* all the way copies training points (an identity).

Every network of one run is trained side by side as one :class:`~genlab.nn.flow.EnsembleVelocityMLP` (a leading
member dimension in every weight, one ``baddbmm`` per layer, fused Adam; members are independent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register


def _curve_tstar(ts: list[float], maxw: list[float], level: float) -> float:
    """First t where the mean max-weight reaches ``level`` (1.0 if never)."""
    for t, w in zip(ts, maxw):
        if w >= level:
            return float(t)
    return 1.0


def _check_collapse(m: Mapping[str, Any], cfg) -> Any:
    """t* falls from each GMM dimension to the next: one paired test per consecutive pair of dimensions over the
    replicate draws (independent mixtures, banks and pairs), t*(d_k) − t*(d_k+1) above 0; all must hold."""
    dims = m["collapse"]["gmm_dims"]
    reps = m["collapse"]["tstar_replicates"]  # {name: [t* per replicate]}
    parts = [decide.paired(reps[f"gmm{a}"], reps[f"gmm{b}"], above=0.0)
             for a, b in zip(dims, dims[1:])]  # fmt: skip
    return decide.all_of(*parts, **{f"tstar_d{d}": float(np.mean(reps[f"gmm{d}"])) for d in dims})


def _check_memorise(m: Mapping[str, Any], cfg) -> Any:
    """Over seeds: mean copy fraction at the smallest n above ``copy_memorised`` and at the largest n below
    ``copy_novel`` (Student-t each); both must hold."""
    ns = m["train"]["n_values"]
    cf = np.array(m["train"]["copy_fraction"], dtype=float)  # [seed][n]
    return decide.all_of(decide.mean(cf[:, 0], above=cfg.copy_memorised), decide.mean(cf[:, -1], below=cfg.copy_novel),
                         **{f"copy_n{n}": float(cf[:, i].mean()) for i, n in enumerate(ns)})  # fmt: skip


def _check_approx(m: Mapping[str, Any], cfg) -> Any:
    """Over seeds (paired): the mean error against u* at the largest n exceeds the smallest n's, and at the largest
    n the error at the last t exceeds the largest error at every earlier t; both above 0."""
    err = np.array(m["train"]["approx_error"], dtype=float)  # [seed][n][t]
    grows = decide.paired(err[:, -1].mean(1), err[:, 0].mean(1), above=0.0)
    late = decide.paired(err[:, -1, -1], err[:, -1, :-1].max(1), above=0.0)
    return decide.all_of(grows, late, err_small_n=float(err[:, 0].mean()), err_large_n=float(err[:, -1].mean()),
                         err_large_n_last_t=float(err[:, -1, -1].mean()),
                         err_large_n_first_t=float(err[:, -1, 0].mean()))  # fmt: skip


def _check_hybrid(m: Mapping[str, Any], cfg) -> Any:
    """Over seeds: the largest copy fraction for τ ≤ ``hybrid_tau_novel`` below ``copy_novel``, and the largest
    rise of the NN distance from one τ to the next, relative to its value at τ = 0, below ``nn_dist_tolerance``
    (Student-t each); both must hold."""
    h = m["hybrid"]
    nd = np.array(h["nn_dist"], dtype=float)  # [seed][tau]
    early = [max(c for tau, c in zip(h["taus"], cp) if tau <= cfg.hybrid_tau_novel + 1e-9) for cp in h["copy_fraction"]]
    rise = (np.diff(nd, axis=1).max(1) / nd[:, 0]) if nd.shape[1] > 1 else np.zeros(len(nd))
    return decide.all_of(decide.mean(early, below=cfg.copy_novel), decide.mean(rise, below=cfg.nn_dist_tolerance),
                         tau_half_copy=float(np.mean(h["tau_half"])), nn_tau0=float(nd[:, 0].mean()),
                         max_relative_nn_rise=rise.tolist())  # fmt: skip


def _check_ustar_copies(m: Mapping[str, Any], cfg) -> Any:
    copies = [c[-1] for c in m["hybrid"]["copy_fraction"]]
    return evidence(min(copies) >= cfg.copy_ustar, copy_at_tau1=float(np.mean(copies)))


def _check_efm(m: Mapping[str, Any], cfg) -> Any:
    """Non-inferiority on paired per-seed relative differences: for every EFM bank and both held-out metrics (FD,
    MMD), (EFM − base) / base below ``efm_margin``, base = the better of CFM / OT-CFM on that metric (by its mean);
    Student-t over seeds, all must hold. Withheld unless the networks can memorise (CFM copy fraction at the
    smallest n above ``copy_memorised``): where no network can fit u*, the target cannot matter."""
    c = m["compare"]
    numbers: dict[str, Any] = {}
    parts = []
    for metric in ("fd", "mmd"):
        vals = {k: np.array(v[metric], dtype=float) for k, v in c["methods"].items()}
        if np.all(np.isnan(vals["cfm"])):
            continue  # no feature classifier (unlabelled data): no FD
        base = min((k for k in ("cfm", "otcfm") if k in vals), key=lambda k: np.nanmean(vals[k]))
        for k, v in vals.items():
            numbers[f"{metric}_{k}"] = float(np.nanmean(v))
            if k.startswith("efm"):
                ev = decide.mean((v - vals[base]) / vals[base], below=cfg.efm_margin)
                numbers[f"{metric}_{k}_rel_to_{base}"] = ev.test.effect
                parts.append(ev)
    ev = decide.all_of(*parts, **numbers)
    cf = np.array(m["train"]["copy_fraction"], dtype=float)[:, 0]  # CFM at the smallest n, per seed
    pre = decide.mean(cf, above=cfg.copy_memorised)
    ev = ev.with_numbers(cfm_copy_smallest_n=float(cf.mean()),
                         cfm_copy_at_compare=float(np.mean(c["methods"]["cfm"]["copy"])))  # fmt: skip
    return ev if pre.held is True else ev.withheld(
        f"the CFM networks are not shown to memorise even at the smallest n ({pre.test.summary()} vs "
        f"copy_memorised): where no network can fit u*, the regression target cannot matter")


@register
class FlowMatching(Study):
    name = "flow-matching"
    paper = Paper(
        "On the Closed-Form of Flow Matching: Generalization Does Not Arise from Target Stochasticity",
        "arXiv:2506.03719",
        "Bertrand, Gagneux, Massias, Emonet",
    )
    summary = ("The flow-matching target is nearly deterministic early in high dimension; training on the closed "
               "form (EFM) does not hurt, and generalisation comes from the network failing to fit it.")
    accelerated = True  # the ensemble trains on ctx.device; sampling and evaluation run on the CPU

    @dataclass
    class Config:
        dataset: Literal["digits8", "digits16", "mnist1d", "folder"] = "digits8"  # folder needs image_folder
        image_folder: str = ""
        n_test: int = 500
        n_values: tuple[int, ...] = (10, 100)  # 0 = the whole training split
        n_compare: int = 100  # EFM vs CFM (vs OT-CFM): between memorising (n = 10) and generalising (n = 1000)
        efm_banks: tuple[int, ...] = (128,)
        baselines: tuple[str, ...] = ("cfm",)  # add "otcfm" for the OT-CFM baseline
        paired: bool = True  # the arms at n_compare of one seed share initial weights and minibatch draws
        seeds: int = 8
        width: int = 256
        depth: int = 3
        steps: int = 4000
        batch: int = 32
        lr: float = 3e-3  # cosine-decayed to 0
        n_samples: int = 2000  # samples per network at n_compare (FD, MMD, copy fraction, NN distance)
        few_samples: int = 400  # samples per network at other n (copy fraction) and per τ of the hybrid sampler
        euler_steps: int = 40
        taus: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
        error_ts: tuple[float, ...] = (0.05, 0.15, 0.3, 0.5, 0.7, 0.85, 0.95, 0.99)
        error_points: int = 256
        gmm_dims: tuple[int, ...] = (2, 16, 64, 256, 1024)
        collapse_bank: int = 1000
        collapse_pairs: int = 256
        collapse_level: float = 0.9
        collapse_replicates: int = 5  # independent GMM draws per dimension: the units of the collapse claim
        # claim thresholds (fixed from the paper's figures before the runs)
        copy_memorised: float = 0.5  # copy fraction that counts as memorising
        copy_novel: float = 0.05  # copy fraction that counts as novel samples
        copy_ustar: float = 0.95  # copy fraction expected when u* is followed all the way
        hybrid_tau_novel: float = 0.2  # u* up to this τ must still leave samples novel
        efm_margin: float = 0.1  # EFM may be worse than the better baseline by at most this fraction of it
        nn_dist_tolerance: float = 0.05  # relative slack of "non-increasing" for the NN distance over τ
        classifier_steps: int = 1500
        threads: int = 1  # torch threads (2 threads spin-wait badly on a loaded machine)

        def validate(self) -> None:
            if self.seeds < 1 or self.steps < 1 or min(self.n_samples, self.few_samples) < 2 \
                    or self.collapse_replicates < 1:
                raise ValueError("seeds, steps, collapse_replicates must be >= 1 and n_samples, few_samples >= 2")
            if not self.n_values or any(n < 0 for n in self.n_values):
                raise ValueError("n_values must be a non-empty tuple of sizes >= 1 (0 = all)")
            if any(m < 2 for m in self.efm_banks):
                raise ValueError("efm_banks entries must be >= 2 (M = 1 is plain CFM)")
            if "cfm" not in self.baselines or not set(self.baselines) <= {"cfm", "otcfm"}:
                raise ValueError("baselines must include cfm and may add otcfm")
            if self.dataset == "folder" and not self.image_folder:
                raise ValueError("dataset=folder needs image_folder=/path/to/images")
            if any(not 0 <= t <= 1 for t in self.taus) or any(not 0 < t < 1 for t in self.error_ts):
                raise ValueError("taus must lie in [0, 1] and error_ts in (0, 1)")
            fractions = (
                "collapse_level", "copy_memorised", "copy_novel", "copy_ustar", "hybrid_tau_novel", "efm_margin",
            )  # fmt: skip
            if any(not 0 <= getattr(self, f) <= 1 for f in fractions):
                raise ValueError(f"{', '.join(fractions)} must lie in [0, 1]")

    presets = {
        "smoke": {"n_values": (10, 100), "n_compare": 100, "efm_banks": (16,), "seeds": 1, "steps": 30,
                  "width": 32, "n_samples": 64, "few_samples": 64, "euler_steps": 8, "taus": (0.0, 0.5, 1.0),
                  "error_ts": (0.1, 0.9), "error_points": 32, "gmm_dims": (2, 64), "collapse_bank": 200,
                  "collapse_pairs": 32, "classifier_steps": 50, "n_test": 200, "collapse_replicates": 2,
                  "batch": 64, "baselines": ("cfm", "otcfm")},
        "quick": {},
        "full": {"dataset": "digits16", "n_values": (10, 30, 100, 300, 1000, 0), "efm_banks": (16, 128, 512, 1024),
                 "baselines": ("cfm", "otcfm"), "seeds": 8, "width": 512, "depth": 4, "steps": 50_000, "batch": 128,
                 "lr": 1e-3,
                 "few_samples": 1000, "euler_steps": 100, "error_points": 1024, "collapse_bank": 5000,
                 "collapse_pairs": 1024, "classifier_steps": 5000, "n_compare": 0},
    }

    claims = [
        Claim(
            "collapse-earlier-in-high-d",
            "target stochasticity collapses earlier in t as the dimension grows (t* of max-weight >= {collapse_level} "
            "falls from each GMM dimension in {gmm_dims} to the next; paired over {collapse_replicates} draws)",
            _check_collapse),
        Claim(
            "memorises-only-tiny-n",
            "a CFM network memorises at tiny n (copy fraction > {copy_memorised} at the smallest n) but not at "
            "the largest (< {copy_novel}); means over seeds", _check_memorise),
        Claim(
            "departs-from-ustar-late-t",
            "the network departs from u* more as n grows, most at late t (error at the largest n exceeds the "
            "smallest n's and peaks at the last t)", _check_approx),
        Claim(
            "hybrid-sampler",
            "hybrid sampler: using u* up to tau <= {hybrid_tau_novel} leaves samples novel (copy < {copy_novel}); "
            "NN distance non-increasing in tau (no rise above {nn_dist_tolerance} of its tau = 0 value)",
            _check_hybrid),
        Claim(
            "ustar-copies",
            "following u* all the way (tau = 1) reproduces training points (copy fraction >= {copy_ustar})",
            _check_ustar_copies, kind="identity"),
        Claim(
            "efm-not-better",
            "at n = {n_compare}, EFM (every M in {efm_banks}) is not worse than the better of the baselines "
            "{baselines} on held-out Fréchet distance and MMD by more than {efm_margin} of it (paired over seeds; "
            "decided only where the networks memorise at the smallest n)", _check_efm),
    ]

    # ------------------------------------------------------------------------------------------------------
    def run(self, cfg: FlowMatching.Config, ctx: RunContext) -> dict[str, Any]:
        from threadpoolctl import threadpool_limits

        from genlab.harness.torch_setup import setup_torch

        setup_torch(cfg.threads)
        with threadpool_limits(cfg.threads):  # numpy's BLAS too (eigh / cov of the Fréchet distance)
            return self._run(cfg, ctx)

    def _run(self, cfg: FlowMatching.Config, ctx: RunContext) -> dict[str, Any]:
        metrics: dict[str, Any] = {"collapse": _collapse_vs_dimension(cfg, ctx)}
        fit = _train_members(cfg, ctx)
        if fit.clf is not None:
            from genlab.measures.generative import classifier_accuracy

            metrics["classifier_test_acc"] = classifier_accuracy(fit.clf, fit.data.x_test, fit.data.y_test)
        samples_show: dict[str, list] = {}
        metrics["train"] = _memorisation_vs_n(fit, cfg, ctx, samples_show)
        metrics["hybrid"] = _hybrid_sampler(fit, cfg, ctx)
        metrics["compare"] = _compare_methods(fit, cfg, ctx, samples_show)
        metrics["sampler"] = _adaptive_vs_euler(fit, cfg, ctx)
        metrics["samples"] = samples_show
        metrics["shape"] = list(fit.data.shape)
        return metrics

    # ------------------------------------------------------------------------------------------------------
    def figures(self, metrics: Mapping[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        c, tr, hy, cm = metrics["collapse"], metrics["train"], metrics["hybrid"], metrics["compare"]
        fig, ax = plt.subplots(1, 4, figsize=(17, 3.8))
        for name, w in c["max_weight"].items():
            style = "-" if name.startswith("gmm") else "--"
            ax[0].plot(c["ts"], w, style, label=f"{name} (t*={c['tstar'][name]:.2f})")
        ax[0].set(xlabel="t", ylabel="mean max softmax weight of u*", title="(1) target collapse vs dimension")
        ax[0].legend(fontsize=6)
        err = np.array(tr["approx_error"])
        for j, n in enumerate(tr["n_values"]):
            mu, sd = err[:, j].mean(0), err[:, j].std(0)
            ax[1].errorbar(tr["error_ts"], mu, sd, label=f"n={n}", capsize=2)
        ax[1].set(xlabel="t", ylabel="||u_θ − u*||² / d", yscale="log", title="(2) CFM net vs closed form")
        cp = np.array(tr["copy_fraction"])
        ax1b = ax[1].inset_axes([0.12, 0.55, 0.35, 0.38])
        ax1b.errorbar(tr["n_values"], cp.mean(0), cp.std(0), marker="o", capsize=2, color="k")
        ax1b.set_xscale("log")
        ax1b.set_title("copy fraction vs n", fontsize=7)
        ax1b.tick_params(labelsize=6)
        ax[1].legend(fontsize=7, loc="lower right")
        nd, hc = np.array(hy["nn_dist"]), np.array(hy["copy_fraction"])
        ax[2].errorbar(hy["taus"], nd.mean(0), nd.std(0), marker="o", capsize=2, label="NN distance to train")
        ax2 = ax[2].twinx()
        ax2.errorbar(hy["taus"], hc.mean(0), hc.std(0), marker="s", color="C3", capsize=2, label="copy fraction")
        ax2.set_ylabel("copy fraction", color="C3")
        ax[2].axhline(tr["test_to_train_nn_dist"], ls=":", color="gray", label="held-out → train NN dist")
        ax[2].set(xlabel="τ (u* on [0, τ), network after)", ylabel="NN distance",
                  title=f"(3) hybrid sampler, n={hy['n']}")
        ax[2].legend(fontsize=7, loc="lower left")
        names = list(cm["methods"])
        pos = np.arange(len(names))
        for off, metric, col in ((-0.2, "fd", "C0"), (0.2, "mmd", "C1")):
            vals = np.array([cm["methods"][k][metric] for k in names], dtype=float)
            # a seed whose samples diverged (score > 100x the median of its method, or not finite) is left out
            vals[~np.isfinite(vals) | (vals > 100 * np.nanmedian(vals, axis=1, keepdims=True))] = np.nan
            scale = np.nanmax(np.nanmean(vals, 1)) or 1.0
            ax[3].bar(pos + off, np.nanmean(vals, 1) / scale, 0.4, yerr=np.nanstd(vals, 1) / scale, color=col,
                      capsize=2, label=f"{metric} (÷{scale:.3g})")
        ax[3].set_xticks(pos, names, fontsize=8)
        ax[3].set(ylabel="held-out score (lower is better)", title=f"(4) {' vs '.join(names)}, n={cm['n']}")
        ax[3].legend(fontsize=7)
        fig.tight_layout()
        paths = [ctx.save_figure(
            fig,
            "flow-matching",
            dpi=90,
            caption=(
                "Target collapse vs t and dimension (max posterior weight), CFM copy fraction vs n, "
                "network error against the closed-form velocity over t, hybrid-sampler novelty vs τ, and "
                "EFM vs CFM/OT-CFM on held-out Fréchet distance and MMD (diverged seeds left out of the bars)"
            ),
        )]

        shape = metrics.get("shape", [])
        if len(shape) == 3 and shape[0] == 1:
            rows = list(metrics["samples"])
            fig, axs = plt.subplots(len(rows), 1, figsize=(8, 0.6 * len(rows) + 0.3))
            for a, k in zip(np.atleast_1d(axs), rows):
                imgs = np.array(metrics["samples"][k]).reshape(-1, shape[1], shape[2])[:16]
                a.imshow(np.concatenate(list(imgs), axis=1), cmap="gray", vmin=-1, vmax=1)
                a.set_ylabel(k, rotation=0, ha="right", fontsize=7)
                a.set_xticks([])
                a.set_yticks([])
            fig.tight_layout()
            p = ctx.save_figure(
                fig, "flow-matching-samples", dpi=90,
                caption="Samples of each method and training-set size next to their nearest training images",
            )
            paths.append(p)
        return paths


# ----------------------------------------------------------------------------------------------------------
# the stages of a run
# ----------------------------------------------------------------------------------------------------------
def _collapse_vs_dimension(cfg: FlowMatching.Config, ctx: RunContext) -> dict[str, Any]:
    """Stage 1 (no training): how early in t the conditional target collapses onto one training point."""
    import torch

    from genlab.data.images import load_dataset
    from genlab.measures.flow_matching import target_collapse

    ts = [round(x, 3) for x in np.linspace(0.0, 0.95, 20)]
    collapse: dict[str, Any] = {"ts": ts, "gmm_dims": list(cfg.gmm_dims), "max_weight": {}, "cos_frac": {},
                                "tstar": {}, "tstar_replicates": {}}
    for name in [f"gmm{d}" for d in cfg.gmm_dims] + ["moons", "digits8", "digits16"]:
        # replicate 0 is the curve shown; GMMs get independent replicates (new mixture, bank and pairs): the units
        # of the collapse claim
        reps = cfg.collapse_replicates if name.startswith("gmm") else 1
        for r in range(reps):
            stream = ("collapse", name) if r == 0 else ("collapse", name, r)
            ds = load_dataset(name, seed=ctx.seed_for(*stream) % 2**31, n_test=200)
            x = torch.from_numpy(ds.x_train)
            g = ctx.torch_generator(*stream)
            bank = x[torch.randperm(len(x), generator=g)[: cfg.collapse_bank]]
            x1 = bank[torch.randint(len(bank), (cfg.collapse_pairs,), generator=g)]
            res = target_collapse(x1, bank, ts, g)
            tstar = _curve_tstar(ts, res["max_weight"], cfg.collapse_level)
            collapse["tstar_replicates"].setdefault(name, []).append(tstar)
            if r == 0:
                collapse["max_weight"][name] = res["max_weight"]
                collapse["cos_frac"][name] = res["cos_frac"]
                collapse["tstar"][name] = tstar
    ctx.log("collapse t*: " + ", ".join(f"{k}={v:.2f}" for k, v in collapse["tstar"].items()))
    return collapse


@dataclass
class _Fitted:
    """The trained ensemble and everything the evaluation stages share."""

    data: Any
    x_test: Any  # torch.Tensor
    n_values: list[int]
    n_cmp: int
    subsets: dict[tuple[int, int], Any]  # (n, seed) -> training subset
    index: dict[tuple[str, int, int], int]  # (method, n, seed) -> ensemble member
    model: Any  # EnsembleVelocityMLP
    clf: Any  # the feature classifier of the FID-like score, None without labels
    f_test: Any
    mmd_bandwidth: float
    samples: list[Any]  # each member's Euler samples from its seed's x0 (n_samples at n_cmp, else few_samples)

    def quality(self, xs: Any, train: Any) -> dict[str, float]:
        """Copy fraction and NN distance of the raw samples; FD and MMD of the samples clipped to the data's
        value range, as images are before an FID (a rare diverging sample would otherwise dominate both)."""
        from genlab.measures.generative import copy_fraction, frechet_distance, mmd_rbf, nn_distances

        d1, d2 = nn_distances(xs, train)
        img = xs.clamp(float(self.data.x_train.min()), float(self.data.x_train.max()))
        out = {"nn_dist": float(d1.mean()), "copy": copy_fraction(d1, d2),
               "mmd": mmd_rbf(img, self.x_test, bandwidth=self.mmd_bandwidth)}
        if self.clf is not None:
            out["fd"] = frechet_distance(self.clf.features(img.numpy()), self.f_test)
        return out


def _train_members(cfg: FlowMatching.Config, ctx: RunContext) -> _Fitted:
    """Draw the training subsets and train every (method, n, seed) flow side by side in one ensemble."""
    import torch

    from genlab.data.images import load_dataset, subset
    from genlab.measures.generative import train_feature_classifier
    from genlab.nn.flow import EnsembleVelocityMLP, euler_sample
    from genlab.training.flow_matching import FlowMember, train_flow_ensemble

    data = load_dataset(cfg.dataset, seed=ctx.seed_for("data") % 2**31, n_test=cfg.n_test,
                        image_folder=cfg.image_folder)
    x_test = torch.from_numpy(data.x_test)
    n_all = len(data.x_train)
    n_values = [n if 0 < n < n_all else n_all for n in cfg.n_values]
    n_cmp = cfg.n_compare if 0 < cfg.n_compare < n_all else n_all
    members: list[FlowMember] = []
    key: list[tuple[str, int, int]] = []  # (method, n, seed)
    subsets: dict[tuple[int, int], torch.Tensor] = {}
    for s in range(cfg.seeds):
        for n in sorted(set([*n_values, n_cmp])):
            subsets[(n, s)] = torch.from_numpy(subset(data, n, ctx.rng("subset", s, n)).x_train)
        arms = [("cfm", n) for n in n_values] + ([("cfm", n_cmp)] if n_cmp not in n_values else [])
        arms += [("otcfm", n_cmp)] if "otcfm" in cfg.baselines else []
        for method, n in arms:
            pair = s if cfg.paired and n == n_cmp else None
            members.append(FlowMember(subsets[(n, s)], method, pair=pair))
            key.append((method, n, s))
        for m_bank in cfg.efm_banks:
            members.append(FlowMember(subsets[(n_cmp, s)], "efm", m_bank, pair=s if cfg.paired else None))
            key.append((f"efm{m_bank}", n_cmp, s))
    ctx.log(f"training {len(members)} flow models side by side ({cfg.steps} steps, d={data.dim})")

    g = ctx.torch_generator("train")
    model = EnsembleVelocityMLP(len(members), data.dim, cfg.width, cfg.depth, generator=g)
    if cfg.paired:  # the arms at n_compare of one seed start from the same weights (CFM's): a paired comparison
        lead = torch.tensor([key.index(("cfm", n_cmp, s)) if n == n_cmp else i for i, (_, n, s) in enumerate(key)])
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p[lead])
    model.to(ctx.device)

    def log(step: int, losses: list[float]) -> None:
        ctx.record(step=step, **{f"loss/{m}/n{n}/s{s}": v for (m, n, s), v in zip(key, losses)})

    with ctx.timer("training"):
        train_flow_ensemble(model, members, cfg.steps, g, batch=cfg.batch, lr=cfg.lr,
                            log_every=max(cfg.steps // 20, 1), on_log=log, fused=True,
                            progress=lambda steps: ctx.progress(steps, desc="training steps"))
    model.cpu()  # sampling and the closed-form comparisons below are small: they run on the CPU
    # x0 depends only on the seed (common to its arms); one member at a time: with 2 000 rows each integration is
    # compute-bound, and batched (E, 2 000, width) activations only add allocation (system) time
    with ctx.timer("sampling"):
        samples = [euler_sample(model.member(i), torch.randn(cfg.n_samples if n == n_cmp else cfg.few_samples,
                                                             data.dim, generator=ctx.torch_generator("x0", s)),
                                cfg.euler_steps) for i, (_, n, s) in enumerate(key)]  # fmt: skip
    # the feature classifier of the FID-like score, trained on the whole training split
    clf = train_feature_classifier(data.x_train, data.y_train, ctx.torch_generator("clf"),
                                   steps=cfg.classifier_steps) if (data.y_train >= 0).all() else None
    z = torch.cat([x_test[:200], torch.from_numpy(data.x_train[:200])])
    return _Fitted(
        data=data,
        x_test=x_test,
        n_values=n_values,
        n_cmp=n_cmp,
        subsets=subsets,
        index={k: i for i, k in enumerate(key)},
        model=model,
        clf=clf,
        f_test=clf.features(data.x_test) if clf is not None else None,
        mmd_bandwidth=float(torch.cdist(z, z).median()),  # one shared bandwidth for every model
        samples=samples,
    )


def _memorisation_vs_n(
    fit: _Fitted, cfg: FlowMatching.Config, ctx: RunContext, samples_show: dict[str, list]
) -> dict[str, Any]:
    """Stage 2: copy fraction, distance to u*, and denoising PSNR of the CFM network as n grows."""
    import torch

    from genlab.measures.generative import denoising_psnr, nn_distances

    psnr_ts = (0.3, 0.5, 0.7)
    tr: dict[str, Any] = {"n_values": fit.n_values, "error_ts": list(cfg.error_ts), "copy_fraction": [],
                          "nn_dist": [], "mmd": [], "approx_error": [], "psnr_train": [], "psnr_test": [],
                          "psnr_ts": list(psnr_ts)}
    for s in range(cfg.seeds):
        row_c, row_d, row_m, row_e, row_pt, row_pv = [], [], [], [], [], []
        for n in fit.n_values:
            i = fit.index[("cfm", n, s)]
            xn = fit.subsets[(n, s)]
            q = fit.quality(fit.samples[i], xn)
            row_c.append(q["copy"])
            row_d.append(q["nn_dist"])
            row_m.append(q["mmd"])
            row_e.append(_distance_to_ustar(fit.model.member(i), xn, cfg, ctx.torch_generator("err", s, n)))
            vel = fit.model.member(i)

            def denoise(xt: torch.Tensor, tt: torch.Tensor, vel=vel) -> torch.Tensor:
                return xt + (1 - tt[:, None]) * vel(xt, tt)

            k = min(len(xn), 300)
            row_pt.append(denoising_psnr(denoise, xn[:k], psnr_ts, ctx.torch_generator("psnr", s)))
            row_pv.append(denoising_psnr(denoise, fit.x_test[:300], psnr_ts, ctx.torch_generator("psnr", s)))
            if s == 0:
                samples_show[f"cfm_n{n}"] = fit.samples[i][:16].tolist()
        for name, row in zip(("copy_fraction", "nn_dist", "mmd", "approx_error", "psnr_train", "psnr_test"),
                             (row_c, row_d, row_m, row_e, row_pt, row_pv)):
            tr[name].append(row)
    d1, _ = nn_distances(fit.x_test, torch.from_numpy(fit.data.x_train))
    tr["test_to_train_nn_dist"] = float(d1.mean())
    ctx.log("copy fraction by n (seed 0): "
            + ", ".join(f"{n}:{c:.2f}" for n, c in zip(fit.n_values, tr["copy_fraction"][0])))
    return tr


def _distance_to_ustar(net: Any, xn: Any, cfg: FlowMatching.Config, g: Any) -> list[float]:
    """Mean squared distance between the network's velocity and the closed-form u* at each t in error_ts."""
    import torch

    from genlab.nn.flow import closed_form_velocity

    x1 = xn[torch.randint(len(xn), (cfg.error_points,), generator=g)]
    x0 = torch.randn(x1.shape, generator=g)
    ustar = closed_form_velocity(xn)
    errs = []
    for t in cfg.error_ts:
        tt = torch.full((len(x1),), float(t))
        xt = (1 - t) * x0 + t * x1
        errs.append(float((net(xt, tt) - ustar(xt, tt)).pow(2).mean()))
    return errs


def _hybrid_sampler(fit: _Fitted, cfg: FlowMatching.Config, ctx: RunContext) -> dict[str, Any]:
    """Stage 3: follow u* up to τ, then the network, on the n_compare CFM model (all τ in one sweep)."""
    import torch

    from genlab.measures.generative import copy_fraction, nn_distances
    from genlab.nn.flow import closed_form_velocity, hybrid_sample_sweep

    hy: dict[str, Any] = {"taus": list(cfg.taus), "n": fit.n_cmp, "nn_dist": [], "copy_fraction": [],
                          "tau_half": []}
    for s in range(cfg.seeds):
        xn = fit.subsets[(fit.n_cmp, s)]
        net = fit.model.member(fit.index[("cfm", fit.n_cmp, s)])
        x0 = torch.randn(cfg.few_samples, fit.data.dim, generator=ctx.torch_generator("x0", s))
        nd, cp = [], []
        for xs in hybrid_sample_sweep(closed_form_velocity(xn), net, x0, cfg.taus, cfg.euler_steps):
            a, b = nn_distances(xs, xn)
            nd.append(float(a.mean()))
            cp.append(copy_fraction(a, b))
        hy["nn_dist"].append(nd)
        hy["copy_fraction"].append(cp)
        hy["tau_half"].append(next((t for t, c in zip(cfg.taus, cp) if c >= 0.5), 1.0))
    return hy


def _compare_methods(
    fit: _Fitted, cfg: FlowMatching.Config, ctx: RunContext, samples_show: dict[str, list]
) -> dict[str, Any]:
    """Stage 4: EFM vs CFM vs OT-CFM on held-out Fréchet distance and MMD at n_compare."""
    import torch

    from genlab.measures.generative import frechet_distance, mmd_rbf

    names = list(cfg.baselines) + [f"efm{m}" for m in cfg.efm_banks]
    out: dict[str, Any] = {"n": fit.n_cmp, "methods": {k: {"fd": [], "mmd": [], "nn_dist": [], "copy": []}
                                                     for k in names}}
    for s in range(cfg.seeds):
        for k in names:
            xs = fit.samples[fit.index[(k, fit.n_cmp, s)]]
            q = fit.quality(xs, fit.subsets[(fit.n_cmp, s)])
            for mk in ("mmd", "nn_dist", "copy"):
                out["methods"][k][mk].append(q[mk])
            out["methods"][k]["fd"].append(q.get("fd", float("nan")))
            if s == 0:
                samples_show[k] = xs[:16].tolist()
    # reference: training images themselves scored against the test set (a floor for the FD / MMD)
    ref = torch.from_numpy(fit.data.x_train[: cfg.n_samples])
    out["reference_train_images"] = {
        "mmd": mmd_rbf(ref, fit.x_test, bandwidth=fit.mmd_bandwidth),
        "fd": frechet_distance(fit.clf.features(ref.numpy()), fit.f_test) if fit.clf is not None else float("nan"),
    }
    return out


def _adaptive_vs_euler(fit: _Fitted, cfg: FlowMatching.Config, ctx: RunContext) -> dict[str, Any]:
    """Adaptive against Euler sampling on one model: function evaluations and agreement."""
    import torch

    from genlab.nn.flow import adaptive_sample, euler_sample

    net = fit.model.member(fit.index[("cfm", fit.n_cmp, 0)])
    x0 = torch.randn(cfg.n_samples, fit.data.dim, generator=ctx.torch_generator("x0", 0))
    xa, nfe = adaptive_sample(net, x0, rtol=1e-3, atol=1e-3)
    xe = euler_sample(net, x0, cfg.euler_steps)
    return {"adaptive_nfe": nfe, "euler_steps": cfg.euler_steps,
            "euler_vs_adaptive_rms": float((xa - xe).pow(2).mean().sqrt())}
