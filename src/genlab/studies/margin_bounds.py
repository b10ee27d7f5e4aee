"""Tight margin bounds for halfspaces (Larsen & Schalburg, arXiv:2502.13692): the lower bound's hard distribution
simulated, with the worst max-margin halfspace's exact generalisation gap fitted against the theorem's rate over n, γ
and τ; the new bound's ratio to the lower bound (algebra); and the bounds evaluated on linear SVMs and perceptrons
(synthetic data and digits) next to their held-out error, with an explicit-constant certificate."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from genlab.data import margin_lower_bound as mlb
from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
from genlab.harness.config import Range
from genlab.harness.decision import t_halfwidth
from genlab.measures import margin_bounds as mb

BOUNDS = ("tight", "gkl20", "classic_soft", "certified")
# the lower-bound sweeps: over n and γ at τ = 0 (log term) and over τ (τ term) on the D tuned to each grid point
# (construction checks), and over the same n, γ and τ grids on one fixed power-law D (the empirical test)
TUNED_AXES = ("n", "gamma", "tau")
FIXED_AXES = ("n_fixed", "gamma_fixed", "tau_fixed")
AXES = TUNED_AXES + FIXED_AXES


def _ratio_grid(n_values: np.ndarray, points: int) -> dict[str, Any]:
    """sup/inf over (γ²n ∈ [e, n], L ∈ [1/n, 1/2]) of (UB − L)/(LB − L) for Thm 2 and GKL'20 (c = 1 in both)."""
    out: dict[str, list[float]] = {"tight_sup": [], "tight_inf": [], "gkl_sup": [], "tight_path": [], "gkl_path": []}
    for n in n_values:
        g, L = np.meshgrid(np.sqrt(np.geomspace(np.e, n, points) / n), np.geomspace(1 / n, 0.5, points))
        gap_lb = mb.lower_bound(g, L, n) - L
        r_t = (mb.tight_upper(g, L, n) - L) / gap_lb
        r_g = (mb.gkl20_upper(g, L, n) - L) / gap_lb
        out["tight_sup"].append(float(np.nanmax(r_t)))
        out["tight_inf"].append(float(np.nanmin(r_t)))
        out["gkl_sup"].append(float(np.nanmax(r_g)))
        g0, L0 = np.sqrt(100.0 / n), 1.0 / n  # the path L = 1/n at γ²n = 100
        lb0 = mb.lower_bound(g0, L0, n) - L0
        out["tight_path"].append(float((mb.tight_upper(g0, L0, n) - L0) / lb0))
        out["gkl_path"].append(float((mb.gkl20_upper(g0, L0, n) - L0) / lb0))
    return {"n": [float(n) for n in n_values], **out}


def _synthetic(rng: np.random.Generator, n: int, d: int, signal: float, flip: float):
    """Two classes ±signal·u plus isotropic noise of norm ≈ 1, labels flipped w.p. ``flip``."""
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    x = rng.normal(size=(n, d)) / np.sqrt(d)
    x[:, 0] += signal * y
    y = np.where(rng.random(n) < flip, -y, y)
    return x, y


def _lb_grid(axis: str, cfg) -> list[tuple[float, int, float, float]]:
    """(x, n, γ, τ) per grid point of one lower-bound sweep."""
    if axis in ("n", "n_fixed"):
        return [(float(n), int(n), cfg.lb_gamma, 0.0) for n in cfg.lb_n]
    if axis in ("gamma", "gamma_fixed"):
        return [(float(g), cfg.lb_n_gamma, float(g), 0.0) for g in cfg.lb_gammas]
    return [(float(t), cfg.lb_n_tau, cfg.lb_gamma, float(t)) for t in cfg.lb_taus]


def _slope(x, y) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _lb_axis(axis: str, cfg, ctx) -> dict[str, Any]:
    """Simulate the hard distribution along one axis: the adversary's exact gap per (grid point, sample), the
    theorem's rate term for that axis, per-sample log-log slopes and the constant gap / rate."""
    grid = _lb_grid(axis, cfg)
    fixed = axis in FIXED_AXES
    masses = mlb.power_law(cfg.lb_fixed_support, cfg.lb_fixed_exponent) if fixed else None
    insts = [mlb.instance(n, g, t, cfg.lb_slack) for _, n, g, t in grid]  # (the fixed D ignores them but K)
    gaps = np.empty((cfg.lb_seeds, len(grid)))
    worst = {"norm_err": 0.0, "kept_margin_minus_gamma": np.inf, "wrong_margin": -np.inf, "ls_minus_tau": -np.inf}
    k_used = np.empty_like(gaps)
    for j, inst in enumerate(insts):
        for s in range(cfg.lb_seeds):
            rng = ctx.rng("lower-bound", axis, j, s)
            r = mlb.fixed_gap(masses, inst.n, inst.gamma, rng, inst.tau) if fixed else mlb.sample_gap(inst, rng)
            gaps[s, j], k_used[s, j] = r["gap"], r["k"]
            worst["norm_err"] = max(worst["norm_err"], abs(r["norm"] - 1.0))
            if np.isfinite(r["min_margin_kept"]):
                kept = r["min_margin_kept"] - inst.gamma
                worst["kept_margin_minus_gamma"] = min(worst["kept_margin_minus_gamma"], kept)
            if np.isfinite(r["max_margin_wrong"]):
                worst["wrong_margin"] = max(worst["wrong_margin"], r["max_margin_wrong"])
            worst["ls_minus_tau"] = max(worst["ls_minus_tau"], r["l_s"] - inst.tau)
    terms = [mlb.lb_rate(n, g, t) for _, n, g, t in grid]
    # the term this axis tests: the active one on a tuned D; on the fixed D's τ axis both terms (their sum)
    rate = np.array([tt if axis == "tau" else tt + tl if axis == "tau_fixed" else tl for tt, tl in terms])
    x = np.array([p[0] for p in grid])
    slopes = [_slope(x, row) if np.all(row > 0) else float("nan") for row in gaps]
    consts = [float(np.exp(np.mean(np.log(row / rate)))) if np.all(row > 0) else float("nan") for row in gaps]
    return {
        "x": x.tolist(),
        "n": [p[1] for p in grid],
        "gamma": [p[2] for p in grid],
        "tau": [p[3] for p in grid],
        "support": [cfg.lb_fixed_support if fixed else i.u for i in insts],
        "k_max": [i.k_max for i in insts],
        "k_used": k_used.mean(axis=0).tolist(),
        "regime": ["log" if fixed else i.regime for i in insts],
        "gap_mean": gaps.mean(axis=0).tolist(),
        "gap_se": (gaps.std(axis=0, ddof=1) / np.sqrt(cfg.lb_seeds)).tolist(),
        "rate": rate.tolist(),
        "slopes": slopes,
        "theory_slope": _slope(x, rate),
        "constants": consts,
        "checks": {k: float(v) for k, v in worst.items()},
    }


def _slope_numbers(ax: dict[str, Any]) -> dict[str, Any]:
    slopes = np.asarray(ax["slopes"], dtype=float)
    return dict(
        slope=float(np.nanmean(slopes)),
        theory_slope=ax["theory_slope"],
        diff=float(np.nanmean(slopes)) - ax["theory_slope"],
        constant=float(np.nanmean(ax["constants"])),
        ratio_first=ax["gap_mean"][0] / ax["rate"][0],  # gap / rate at both ends: how far the constant drifts
        ratio_last=ax["gap_mean"][-1] / ax["rate"][-1],
        samples=int(np.isfinite(slopes).sum()),
    )


def _tuned_slope_claim(axis: str):
    """On the D tuned to each grid point the rate is built in (u from the rate's own Lambert-W equation): a
    construction check (identity) that the mean slope lies within ``slope_tol`` of the theorem's."""

    def check(m, cfg):
        ax = m["lower_bound"][axis]
        numbers = _slope_numbers(ax)
        want = "tau" if axis == "tau" else "log"
        if any(r != want for r in ax["regime"]):
            return evidence(None, note=f"some grid points are not in the {want} regime", **numbers)
        return evidence(abs(numbers["diff"]) < cfg.slope_tol, **numbers)

    return check


def _fixed_slope_claim(axis: str):
    """On one fixed D: the per-sample slope minus the theorem's, within ±slope_tol (TOST over the samples)."""

    def check(m, cfg):
        ax = m["lower_bound"][axis]
        d = np.asarray(ax["slopes"], dtype=float) - ax["theory_slope"]
        return decide.mean(d, within=(-cfg.slope_tol, cfg.slope_tol), **_slope_numbers(ax))

    return check


def _construction_claim(m):
    checks = [m["lower_bound"][a]["checks"] for a in AXES]
    return evidence(
        all(
            c["norm_err"] < 1e-9 and c["kept_margin_minus_gamma"] > 0 and c["wrong_margin"] < 0
            and c["ls_minus_tau"] <= 1e-12
            for c in checks
        ),
        max_norm_err=max(c["norm_err"] for c in checks),
        min_kept_margin_minus_gamma=min(c["kept_margin_minus_gamma"] for c in checks),
        max_wrong_margin=max(c["wrong_margin"] for c in checks),
        max_ls_minus_tau=max(c["ls_minus_tau"] for c in checks),
    )


def _learner(name: str, seed: int):
    from sklearn.linear_model import Perceptron
    from sklearn.svm import LinearSVC

    if name == "svm":
        return LinearSVC(C=1.0, max_iter=5000, random_state=seed)
    if name == "perceptron":
        return Perceptron(max_iter=50, tol=None, random_state=seed)
    raise ValueError(f"unknown learner {name!r}")


@register
class MarginBounds(Study):
    name = "margin-bounds"
    paper = Paper("Tight Generalization Bounds for Large-Margin Halfspaces", "arXiv:2502.13692", "Larsen, Schalburg")
    summary = (
        "On the lower bound's hard distribution the worst max-margin halfspace's exact gap follows the theorem's rate "
        "over n, γ and τ; Thm 2's gap to the lower bound stays within a constant while GKL'20's grows like ln n; "
        "bounds at the best margin track held-out error of SVMs/perceptrons and the certificate is never violated."
    )

    @dataclass
    class Config:
        n_train: tuple[int, ...] = (100, 200, 400, 800, 1600, 3200)  # synthetic training sizes
        n_digits: tuple[int, ...] = (100, 200, 400, 800)  # digits (even vs odd) training sizes
        n_test: Annotated[int, Range(100, 10**7)] = 20000  # synthetic held-out points
        dim: Annotated[int, Range(1, 10**5)] = 20
        signal: Annotated[float, Range(0.0, 100.0)] = 0.6
        flip: Annotated[float, Range(0.0, 0.5)] = 0.05
        learners: tuple[str, ...] = ("svm", "perceptron")
        seeds: Annotated[int, Range(1, 1000)] = 5  # independent units of the certificate claims
        delta: float = 0.05
        ratio_n: tuple[float, ...] = (1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9)
        ratio_points: int = 40
        # the lower bound's hard distribution (genlab.data.margin_lower_bound)
        lb_n: tuple[int, ...] = (2000, 4000, 8000, 16000, 32000, 64000, 128000)  # n axis (τ = 0, γ = lb_gamma)
        lb_gamma: Annotated[float, Range(0.001, 0.69)] = 0.1  # γ on the n and τ axes
        lb_gammas: tuple[float, ...] = (0.02, 0.028, 0.04, 0.057, 0.08, 0.113)  # γ axis (τ = 0, n = lb_n_gamma)
        lb_n_gamma: Annotated[int, Range(100, 10**8)] = 100000
        lb_taus: tuple[float, ...] = (0.003, 0.006, 0.012, 0.025, 0.05, 0.1)  # τ axis (n = lb_n_tau, γ = lb_gamma)
        lb_n_tau: Annotated[int, Range(100, 10**8)] = 200000
        lb_seeds: Annotated[int, Range(2, 10000)] = 20  # independent samples per grid point
        lb_fixed_exponent: Annotated[float, Range(1.01, 10.0)] = 2.0  # the fixed D: masses ∝ j^(−exponent)
        lb_fixed_support: Annotated[int, Range(100, 10**8)] = 100000
        lb_slack: Annotated[float, Range(0.1, 100.0)] = 1.0  # log regime: about slack·K points stay unseen
        slope_tol: Annotated[float, Range(0.0, 10.0)] = 0.15  # |measured − theorem's log-log slope| allowed

        def validate(self) -> None:
            if min(self.n_train) < 10 or min(self.n_digits) < 10:
                raise ValueError("training sizes must be >= 10")
            if max(self.n_digits) > 1200:
                raise ValueError("n_digits must be <= 1200 (digits has 1797 images; the rest is held out)")
            if not 0 < self.delta < 1:
                raise ValueError("delta must lie in (0, 1)")
            if set(self.learners) - {"svm", "perceptron"}:
                raise ValueError("learners must be among svm, perceptron")
            for name in ("lb_n", "lb_gammas", "lb_taus"):
                if len(getattr(self, name)) < 3:
                    raise ValueError(f"{name} needs at least 3 grid points to fit a slope")
            if not all(0 < g < 0.69 for g in self.lb_gammas) or not all(0 < t < 1 for t in self.lb_taus):
                raise ValueError("lb_gammas must lie in (0, 0.69) and lb_taus in (0, 1)")
            for n, g in [(n, self.lb_gamma) for n in (*self.lb_n, self.lb_n_tau)] + [
                (self.lb_n_gamma, g) for g in self.lb_gammas
            ]:
                if g * g * n < np.e:
                    raise ValueError(f"the lower bound needs γ²n > e (γ = {g}, n = {n})")

    presets = {
        "smoke": {
            "n_train": (100, 400),
            "n_digits": (100, 200),
            "n_test": 2000,
            "seeds": 1,
            "ratio_points": 8,
            "ratio_n": (1e3, 1e6),
            "lb_n": (2000, 4000, 8000, 16000),
            "lb_gammas": (0.04, 0.057, 0.08, 0.113),
            "lb_n_gamma": 20000,
            "lb_taus": (0.012, 0.025, 0.05, 0.1),
            "lb_n_tau": 40000,
            "lb_seeds": 5,
        },
        "quick": {},
        "full": {
            "n_train": (100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600),
            "n_test": 200000,
            "seeds": 20,
            "n_digits": (100, 200, 400, 800, 1200),
            "lb_n": (2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000, 1024000),
            "lb_gammas": (0.01, 0.014, 0.02, 0.028, 0.04, 0.057, 0.08, 0.113),
            "lb_n_gamma": 400000,
            "lb_taus": (0.0015, 0.003, 0.006, 0.012, 0.025, 0.05, 0.1, 0.2),
            "lb_n_tau": 800000,
            "lb_seeds": 200,
        },
    }

    def run(self, cfg: MarginBounds.Config, ctx: RunContext) -> dict[str, Any]:
        metrics: dict[str, Any] = {"ratio": _ratio_grid(np.asarray(cfg.ratio_n), cfg.ratio_points)}
        metrics["lower_bound"] = {axis: _lb_axis(axis, cfg, ctx) for axis in AXES}
        ctx.log(
            "lower-bound slopes (measured / theorem): "
            + ", ".join(
                f"{a} {np.nanmean(v['slopes']):.3f}/{v['theory_slope']:.3f}" for a, v in metrics["lower_bound"].items()
            )
        )
        ctx.log(
            f"tight/LB sup={max(metrics['ratio']['tight_sup']):.3f}; GKL/LB on L=1/n: "
            f"{metrics['ratio']['gkl_path'][0]:.2f} -> {metrics['ratio']['gkl_path'][-1]:.2f}"
        )
        from genlab.data.digits import load_digits_arrays

        xd, yd = load_digits_arrays()
        yd = np.where(yd % 2 == 0, 1.0, -1.0)
        runs = []
        for seed in range(cfg.seeds):
            rng = ctx.rng("synthetic", seed)
            xt, yt = _synthetic(rng, cfg.n_test, cfg.dim, cfg.signal, cfg.flip)
            for n in cfg.n_train:
                x, y = _synthetic(rng, n, cfg.dim, cfg.signal, cfg.flip)
                for lrn in cfg.learners:
                    runs.append(self._evaluate("synthetic", lrn, n, seed, x, y, xt, yt, cfg, ctx))
            perm = ctx.rng("digits", seed).permutation(len(yd))
            test = perm[max(cfg.n_digits) :]
            for n in cfg.n_digits:
                tr = perm[:n]
                for lrn in cfg.learners:
                    runs.append(self._evaluate("digits", lrn, n, seed, xd[tr], yd[tr], xd[test], yd[test], cfg, ctx))
        metrics["runs"] = runs
        metrics["curves"] = _curves(runs)
        return metrics

    def _evaluate(self, data, lrn, n, seed, x, y, xt, yt, cfg, ctx) -> dict[str, Any]:
        model = _learner(lrn, ctx.seed_for(data, lrn, n, seed)).fit(x, y)
        w, b = model.coef_.ravel(), float(np.ravel(model.intercept_)[0])
        margins = mb.normalized_margins(w, x, y, b=b)
        test_err_count = int(np.sum(np.sign(xt @ w + b) != yt))
        lo, hi = mb.clopper_pearson(test_err_count, len(yt), 0.05)
        row: dict[str, Any] = {
            "data": data,
            "learner": lrn,
            "n": n,
            "seed": seed,
            "test_err": test_err_count / len(yt),
            "test_lo": lo,
            "test_hi": hi,
            "train_err": float(np.mean(margins <= 0)),
        }
        for name in BOUNDS:
            best = mb.best_margin(margins, name, delta=cfg.delta)
            row[name] = best.value
            row[f"{name}_gamma"] = best.gamma
            row[f"{name}_frac"] = best.frac
        g, L = row["tight_gamma"], row["tight_frac"]
        lb = mb.lower_bound(g, L, n) - L
        ok = bool(np.isfinite(lb))  # undefined where the best γ has γ²n <= 1
        row["ratio_tight"] = float((row["tight"] - L) / lb) if ok else None
        row["ratio_gkl"] = float((mb.gkl20_upper(g, L, n, cfg.delta) - L) / lb) if ok else None
        ctx.record(**row)
        return row

    def figures(self, metrics: dict[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        r = metrics["ratio"]
        datasets = sorted({k.split("/")[0] for k in metrics["curves"]})
        ncols = max(len(TUNED_AXES), 1 + len(datasets))
        fig, grid = plt.subplots(3, ncols, figsize=(4.2 * ncols, 11.1), squeeze=False)
        axes = grid[0]
        for ax in axes[1 + len(datasets) :]:
            ax.set_visible(False)
        for row, axes_of_row in ((grid[1], TUNED_AXES), (grid[2], FIXED_AXES)):
            for ax in row[len(axes_of_row) :]:
                ax.set_visible(False)
            _lb_panels(row, metrics["lower_bound"], axes_of_row)
        ax = axes[0]
        ax.semilogx(r["n"], r["gkl_path"], "o-", label="GKL'20 / LB  (L=1/n, γ²n=100)")
        ax.semilogx(r["n"], r["tight_path"], "s-", label="Thm 2 / LB  (L=1/n, γ²n=100)")
        ax.semilogx(r["n"], r["tight_sup"], "k--", label="Thm 2 / LB  sup over (γ, L)")
        ax.set_xlabel("n")
        ax.set_ylabel("gap ratio (c = 1)")
        ax.set_title("upper / lower bound")
        ax.legend(fontsize=7)
        for ax, ds in zip(axes[1:], datasets):
            for lrn in sorted({k.split("/")[1] for k in metrics["curves"] if k.startswith(ds)}):
                c = metrics["curves"][f"{ds}/{lrn}"]
                ls = "-" if lrn == "svm" else ":"
                ax.loglog(c["n"], c["test_err"], "k" + ls, marker="o", ms=3, label=f"held-out err ({lrn})")
                ax.loglog(c["n"], c["certified"], "C3" + ls, label=f"certified ({lrn})")
                ax.loglog(c["n"], c["tight"], "C0" + ls, label=f"Thm 2 shape c=1 ({lrn})")
                ax.loglog(c["n"], c["gkl20"], "C1" + ls, label=f"GKL'20 shape c=1 ({lrn})")
            ax.axhline(1.0, color="grey", lw=0.5)
            ax.set_xlabel("n (training points)")
            ax.set_title(f"{ds}: bound at best γ vs held-out error")
            ax.legend(fontsize=6)
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "margin-bounds", dpi=90,
            caption=(
                "Top: upper/lower bound gap ratios of Thm 2 and GKL'20 over n, and the bounds at the best "
                "margin next to the held-out error of SVMs and perceptrons on synthetic data and "
                "digits. Middle and bottom: on the lower bound's hard distribution, the worst margin-γ halfspace's "
                "exact gap (mean, 95 % t interval over samples) against n, γ and τ, with D tuned to each point as in "
                "the theorem (middle) and on one fixed power-law D (bottom), on log-log axes, with the theorem's rate "
                "times the fitted constant"
            ),
        )
        return [path]

    claims = [
        *[
            Claim(
                f"lb-slope-{axis}",
                f"construction check: on the hard distribution tuned to each grid point, the worst margin-γ "
                f"halfspace's exact gap L_D − L_S^γ has a mean log-log slope over {label} within {{slope_tol}} of the "
                f"theorem's {term}",
                _tuned_slope_claim(axis),
                kind="identity",  # the support size is solved from the rate itself (issue 32)
            )
            for axis, label, term in (
                ("n", "n (τ = 0)", "ln(γ²n)/(γ²n)"),
                ("gamma", "γ (τ = 0)", "ln(γ²n)/(γ²n)"),
                ("tau", "τ", "sqrt(τ ln(e/τ)/(γ²n))"),
            )
        ],
        *[
            Claim(
                f"lb-slope-{axis.replace('_', '-')}",
                f"on one fixed power-law D (masses ∝ j^-{{lb_fixed_exponent}}, not tuned to the grid) the worst "
                f"margin-γ halfspace's exact gap has a log-log slope over {label} within ±{{slope_tol}} of the "
                f"theorem's {term} (equivalence test, TOST over the {{lb_seeds}} independent samples)",
                _fixed_slope_claim(axis),
            )
            for axis, label, term in (
                ("n_fixed", "n (γ = {lb_gamma}, τ = 0)", "ln(γ²n)/(γ²n)"),
                ("gamma_fixed", "γ (n = {lb_n_gamma}, τ = 0)", "ln(γ²n)/(γ²n)"),
                ("tau_fixed", "τ (n = {lb_n_tau}, γ = {lb_gamma})", "sqrt(τ ln(e/τ)/(γ²n)) + ln(γ²n)/(γ²n)"),
            )
        ],
        Claim(
            "lb-construction",
            "every halfspace the adversary builds has unit norm, margin > γ on the points it keeps, a negative "
            "margin on the points it gives up and L_S^γ ≤ τ",
            lambda m, cfg: _construction_claim(m),
            kind="identity",
        ),
        Claim(
            "thm2-ratio-bounded",
            "Thm 2's gap stays within a small constant (<= 3) of the lower bound's over the whole (n, γ, L) grid",
            lambda m, cfg: evidence(
                max(m["ratio"]["tight_sup"]) <= 3.0,
                sup_ratio=max(m["ratio"]["tight_sup"]),
                inf_ratio=min(m["ratio"]["tight_inf"]),
            ),
            kind="identity",
        ),
        Claim(
            "gkl-ratio-grows",
            "GKL'20's gap ratio to the lower bound grows with n along L = 1/n (at least x2 over the n range)",
            lambda m, cfg: evidence(
                all(np.diff(m["ratio"]["gkl_path"]) > 0)
                and m["ratio"]["gkl_path"][-1] >= 2 * m["ratio"]["gkl_path"][0],
                first=m["ratio"]["gkl_path"][0],
                last=m["ratio"]["gkl_path"][-1],
                thm2_last=m["ratio"]["tight_path"][-1],
            ),
            kind="identity",
        ),
        Claim(
            "certificate-valid",
            "the explicit-constant certificate is at or above the held-out error's lower 95% CP limit on at least "
            "1 - delta = {delta} of the trained models (Wilson interval over models)",
            lambda m, cfg: _certificate_claim(m, cfg),
        ),
        Claim(
            "certificate-tracks-error",
            "bounds track held-out error across n: per seed, the certificate's log-log slope over n is negative on "
            "every dataset/learner (mean over seeds < 0) and it is non-vacuous (mean < 1) at the largest synthetic n",
            lambda m, cfg: _tracking_claim(m),
        ),
        Claim(
            "thm2-below-gkl-on-models",
            "on trained models the Thm 2 / lower-bound ratio stays below the GKL'20 ratio at every n",
            lambda m, cfg: _model_ratio_claim(m),
            kind="identity",
        ),
    ]


def _lb_panels(axes, lb: dict[str, Any], names: tuple[str, ...]) -> None:
    log_term, tau_term = "ln(γ²n)/(γ²n)", "sqrt(τ ln(e/τ)/(γ²n))"
    labels = {"n": "n (τ = 0, tuned D)", "gamma": "γ (τ = 0, tuned D)", "tau": "τ (tuned D)",
              "n_fixed": "n (τ = 0, fixed power-law D)", "gamma_fixed": "γ (τ = 0, fixed power-law D)",
              "tau_fixed": "τ (fixed power-law D)"}
    terms = {"n": log_term, "gamma": log_term, "tau": tau_term, "n_fixed": log_term, "gamma_fixed": log_term,
             "tau_fixed": f"({tau_term} + {log_term})"}
    for ax, axis in zip(axes, names):
        d = lb[axis]
        x, g, se = np.array(d["x"]), np.array(d["gap_mean"]), np.array(d["gap_se"])
        c = float(np.nanmean(d["constants"]))
        ax.errorbar(x, g, yerr=t_halfwidth(se, len(d["slopes"])), fmt="o", ms=3, color="k",
                    label="measured gap (worst w, 95 % t interval)")
        ax.plot(x, c * np.array(d["rate"]), "C3-", label=f"{c:.2f} × {terms[axis]}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(labels[axis])
        ax.set_ylabel("L_D(w) − L_S^γ(w)")
        ax.set_title(
            f"slope {np.nanmean(d['slopes']):.3f} (theorem {d['theory_slope']:.3f})", fontsize=9
        )
        ax.legend(fontsize=7)


def _curves(runs: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Means over seeds per (dataset, learner, n)."""
    out: dict[str, dict[str, list[float]]] = {}
    keys = sorted({(r["data"], r["learner"]) for r in runs})
    for data, lrn in keys:
        rows = [r for r in runs if r["data"] == data and r["learner"] == lrn]
        ns = sorted({r["n"] for r in rows})
        cur: dict[str, list[float]] = {"n": [float(n) for n in ns]}
        for field in ("test_err", "train_err", *BOUNDS, "tight_gamma", "ratio_tight", "ratio_gkl"):
            vals = [[r[field] for r in rows if r["n"] == n and _finite(r[field])] for n in ns]
            cur[field] = [float(np.mean(v)) if v else float("nan") for v in vals]
        out[f"{data}/{lrn}"] = cur
    return out


def _certificate_claim(m, cfg):
    """Units: trained models (independent fits; the models of one seed share its held-out set)."""
    runs = m["runs"]
    valid = [r["certified"] >= r["test_lo"] for r in runs]
    return decide.proportion(
        valid, above=1 - cfg.delta, method="wilson",
        misses=len(runs) - sum(valid), models=len(runs),
        min_slack=min(r["certified"] - r["test_err"] for r in runs),
    )  # fmt: skip


def _tracking_claim(m):
    """Units: seeds. Per seed and dataset/learner the slope of log certificate on log n (mean over seeds < 0),
    and the certificate at the largest synthetic n (mean over seeds < 1); every curve must hold."""
    runs = m["runs"]
    keys = sorted({(r["data"], r["learner"]) for r in runs})
    seeds = sorted({r["seed"] for r in runs})
    tests, numbers = [], {}
    for data, lrn in keys:
        slopes, last = [], []
        for s in seeds:
            rows = sorted((r for r in runs if (r["data"], r["learner"], r["seed"]) == (data, lrn, s)),
                          key=lambda r: r["n"])
            slopes.append(float(np.polyfit(np.log([r["n"] for r in rows]), np.log([r["certified"] for r in rows]),
                                           1)[0]))
            last.append(rows[-1]["certified"])
        tests.append(decide.mean(slopes, below=0.0))
        numbers[f"slope_{data}_{lrn}"] = float(np.mean(slopes))
        if data == "synthetic":
            tests.append(decide.mean(last, below=1.0))
            numbers[f"largest_n_certificate_{lrn}"] = float(np.mean(last))
    curves = m["curves"]
    synth = [c["test_err"][-1] for k, c in curves.items() if k.startswith("synthetic")]
    return decide.all_of(*tests, largest_n_test_err=max(synth) if synth else float("nan"), **numbers)


def _model_ratio_claim(m):
    """Models whose best γ has γ²n <= 1 (lower bound undefined) are left out and counted."""
    rows = [r for r in m["runs"] if _finite(r["ratio_tight"]) and _finite(r["ratio_gkl"])]
    if not rows:
        return evidence(None, note="the lower bound is undefined at every model's best margin")
    return evidence(
        all(r["ratio_tight"] <= r["ratio_gkl"] + 1e-9 for r in rows),
        max_thm2=max(r["ratio_tight"] for r in rows),
        max_gkl=max(r["ratio_gkl"] for r in rows),
        models=len(rows),
        left_out=len(m["runs"]) - len(rows),
    )


def _finite(v: Any) -> bool:
    """A finite number (stored metrics may hold None where a ratio is undefined)."""
    return isinstance(v, (int, float)) and bool(np.isfinite(v))
