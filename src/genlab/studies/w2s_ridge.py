"""Study "w2s-ridge": mechanisms of weak-to-strong generalisation in ridge regression (Moniri & Hassani).

Closed-form (deterministic-equivalent) teacher and student test errors next to Monte Carlo simulation for
(1) ridge teacher → ridge student, (2) a student with a weighted ridge penalty aligned to a spiked target,
and (3) a multi-index simulation where the student combines what the teacher teaches (the easy, linear
direction) with a hard direction it found during its own pre-training.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
from genlab.measures.w2s_ridge import (
    WeightedRidgeDE,
    best_shrinkage_isotropic,
    lambda_opt_isotropic,
    mc_w2s,
    student_de,
    weighted_ridge_de,
)
from genlab.measures.weak_to_strong import weak_to_strong

# ----------------------------------------------------------------------------------------------------
# multi-index simulation (our construction; the paper's multi-index theorem is not reproduced in closed form)
# ----------------------------------------------------------------------------------------------------


def _he2(z: np.ndarray) -> np.ndarray:
    """Normalised second Hermite polynomial (z² − 1)/√2: unit variance, orthogonal to all linear functions."""
    return (z**2 - 1.0) / np.sqrt(2.0)


def _ridge_fit(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    k, d = x.shape
    return np.linalg.solve(x.T @ x / k + lam * np.eye(d), x.T @ y / k)


def multi_index_run(
    d: int, n: int, m: int, n_pre: int, c_hard: float, sigma2: float, lam: float, n_test: int, rng: np.random.Generator,
    finetune_steps: int = 200,
) -> dict[str, float]:
    """One repetition of the multi-index weak-to-strong simulation; returns test MSEs of every model.

    Target y = <u₁,x> + c·He₂(<u₂,x>) + ε (easy linear direction u₁, hard direction u₂ with information
    exponent 2, invisible to any linear model). Teacher: ridge on x with n true labels. Student: pre-trained
    on a *different* task y_pre = <u₃,x> + c·He₂(<u₂,x>) + ε with n_pre samples, from which it finds u₂ by the
    spectral method (top eigenvector of E[y_pre (xxᵀ − I)]) and a head a_pre; it then fits a linear readout on
    m teacher-labelled inputs with its pre-trained hard head frozen. Controls: the hard head re-fitted in closed
    form, and the whole head fine-tuned by gradient descent from its pre-trained value (``finetune_steps`` at
    most, stopped on held-out teacher labels).
    """
    u1, u2, u3 = np.eye(d)[0], np.eye(d)[1], np.eye(d)[2]
    noise = np.sqrt(sigma2)

    def sample(k: int, r: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        x = r.standard_normal((k, d))
        return x, x @ u1 + c_hard * _he2(x @ u2) + noise * r.standard_normal(k)

    # pre-training on the related task (sees the hard feature, not the easy one)
    xp = rng.standard_normal((n_pre, d))
    yp = xp @ u3 + c_hard * _he2(xp @ u2) + noise * rng.standard_normal(n_pre)
    M = (xp * yp[:, None]).T @ xp / n_pre - np.mean(yp) * np.eye(d)
    ev, V = np.linalg.eigh(M)
    u_hat = V[:, np.argmax(np.abs(ev))]
    h_pre = _he2(xp @ u_hat)
    a_pre = float(h_pre @ yp / (h_pre @ h_pre))

    def hard(x: np.ndarray) -> np.ndarray:
        return _he2(x @ u_hat)

    def fit_teacher(x: np.ndarray, y: np.ndarray):
        w = _ridge_fit(x, y, lam)
        return lambda z: z @ w

    def fit_student_frozen(x: np.ndarray, y: np.ndarray):
        w = _ridge_fit(x, y - a_pre * hard(x), lam)
        return lambda z: a_pre * hard(z) + z @ w

    def fit_student_refit(x: np.ndarray, y: np.ndarray):
        feats = np.column_stack([hard(x), x])
        coef = _ridge_fit(feats, y, lam)
        return lambda z: np.column_stack([hard(z), z]) @ coef

    def fit_student_finetune(x: np.ndarray, y: np.ndarray):
        """Fine-tune the whole head (a, w) from (a_pre, 0) by gradient descent on teacher labels; stop at the step
        with the lowest MSE on a held-out fifth of the teacher-labelled inputs (all the student can see)."""
        cut = len(x) * 4 // 5
        feats = np.column_stack([hard(x), x])
        f_tr, f_val = feats[:cut], feats[cut:]
        h = f_tr.T @ f_tr / cut
        ev, vec = np.linalg.eigh(h)
        target = np.linalg.solve(h + lam * np.eye(len(h)), f_tr.T @ y[:cut] / cut)  # the GD fixed point (ridge)
        start = np.r_[a_pre, np.zeros(x.shape[1])]
        shrink = 1.0 - (ev + lam) / (ev.max() + lam)  # step size 1 / (largest eigenvalue + λ)
        steps = np.arange(finetune_steps + 1)
        # θ_t = θ* + V diag(shrink^t) Vᵀ (θ_0 − θ*), every step at once: (steps, d + 1)
        path = target + (shrink[None] ** steps[:, None] * ((start - target) @ vec)[None]) @ vec.T
        val = ((f_val @ path.T - y[cut:, None]) ** 2).mean(0)
        coef = path[int(np.argmin(val))]
        finetune_stop.append(int(np.argmin(val)))
        return lambda z: np.column_stack([hard(z), z]) @ coef

    def mse(p: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean((p - y) ** 2))

    test = sample(n_test, rng)
    state = rng.bit_generator.state  # every variant sees the same teacher data and student inputs
    out = weak_to_strong(sample, fit_teacher, fit_student_frozen, mse, n, m, 0, rng, test_data=test)
    rng.bit_generator.state = state
    refit = weak_to_strong(sample, fit_teacher, fit_student_refit, mse, n, m, 0, rng, test_data=test)
    rng.bit_generator.state = state
    finetune_stop: list[int] = []
    tuned = weak_to_strong(sample, fit_teacher, fit_student_finetune, mse, n, m, 0, rng, test_data=test)
    rng.bit_generator.state = state
    sample(n, rng)  # the teacher's draw
    x_s, y_s = sample(m, rng)
    true_student = fit_student_frozen(x_s, y_s)
    return {
        "teacher": out.teacher_score,
        "student": out.student_score,
        "student_refit_head": refit.student_score,
        "student_finetuned_head": tuned.student_score,
        "finetune_stop_step": float(finetune_stop[0]),
        "finetune_gain": out.teacher_score - tuned.student_score,  # paired per repetition
        "student_true_labels": mse(true_student(test[0]), test[1]),
        "pretrained_only": mse(a_pre * hard(test[0]), test[1]),
        "overlap_u2": float(abs(u_hat @ u2)),
        "a_pre": a_pre,
    }


# ----------------------------------------------------------------------------------------------------
# claims
# ----------------------------------------------------------------------------------------------------


def _claim_de_vs_mc(m: dict[str, Any], cfg) -> Any:
    c = m["de_vs_mc"]
    held = c["max_rel_err"] <= c["tol"] and c["max_rel_err_interp"] <= c["tol_interp"]
    return evidence(
        held,
        max_rel_err=c["max_rel_err"],
        tol=c["tol"],
        max_rel_err_interp=c["max_rel_err_interp"],
        tol_interp=c["tol_interp"],
        points=c["points"],
    )


def _exact_worst(values: Any, **side: float) -> Any:
    """A deterministic DE quantity (no sampling): its worst value over a grid against the margin."""
    v = np.asarray(values, dtype=float)
    return decide.exact(float(v.max() if "below" in side else v.min()), **side)


def _under_reg_parts(s: dict[str, Any], cfg) -> tuple[list[Any], dict[str, float]]:
    """One λ_T sweep. DE (exact): the best gain relative to the teacher's MSE is below −gain_zero for every
    λ_T < λ_opt and not below it for every λ_T ≥ λ_opt. MC (Student-t over the independent repetitions): for every
    λ_T < λ_opt the student at the DE's best λ_S on the MC grid beats the teacher (gain < 0); for every λ_T ≥ λ_opt
    no student λ_S on the grid beats it by more than gain_zero of the teacher's MSE."""
    f = np.asarray(s["lam_t_factor"], dtype=float)
    rt = np.asarray(s["de_teacher"], dtype=float)
    de = np.asarray(s["de_best_gain"], dtype=float) / rt
    under, over = f < 1.0, f >= 1.0
    g = np.asarray(s["mc_gain_reps"], dtype=float)  # (reps, λ_T, λ_S)
    j_de = np.asarray(s["de_lam_s_index"], dtype=int)
    parts = [_exact_worst(de[under], below=-cfg.gain_zero), _exact_worst(de[over], above=-cfg.gain_zero)]
    parts += [decide.mean(g[:, i, j_de[i]], below=0.0) for i in np.flatnonzero(under)]
    parts += [decide.mean(g[:, i, j] / rt[i], above=-cfg.gain_zero) for i in np.flatnonzero(over)
              for j in range(g.shape[2])]
    i_under, i_opt = int(np.argmin(f)), int(np.flatnonzero(np.isclose(f, 1.0))[0])
    return parts, {
        "de_gain_most_under": float(s["de_best_gain"][i_under]),
        "de_gain_at_opt": float(s["de_best_gain"][i_opt]),
        "mc_gain_most_under": float(g[:, i_under, j_de[i_under]].mean()),
        "mc_best_mean_gain_at_opt": float(g[:, i_opt].mean(0).min()),
        "reps": int(g.shape[0]),
    }


def _claim_under_reg(m: dict[str, Any], cfg) -> Any:
    parts, nums = _under_reg_parts(m["sweep"], cfg)
    return decide.all_of(*parts, **nums)


def _claim_under_reg_robust(m: dict[str, Any], cfg) -> Any:
    """The same tests with an under-parameterised teacher (n/d = 2) and with a power-law covariance."""
    if "sweep_underparam" not in m:
        return evidence(None, note="run before the 2026-12-04 variants")
    parts, out = [], {}
    for name in ("sweep_underparam", "sweep_powerlaw"):
        p, nums = _under_reg_parts(m[name], cfg)
        parts += p
        out |= {f"{name.removeprefix('sweep_')}_{k}": v for k, v in nums.items()}
    return decide.all_of(*parts, **out)


def _claim_weighted(m: dict[str, Any], cfg) -> Any:
    """Identity (issue 32's review): with Γ_S small exactly on β's support the aligned penalty is a better prior by
    construction. DE (exact) and MC (t over repetitions, student at the DE's best λ_S on the MC grid)."""
    w = m["weighted"]
    rt = w["de_teacher"]
    g = np.asarray(w["mc_gain_weighted_reps"], dtype=float)
    return decide.all_of(
        decide.exact(w["de_best_gain_weighted"] / rt, below=-cfg.gain_margin),
        decide.mean(g, below=0.0),
        decide.exact(w["de_best_gain_plain"] / rt, above=-cfg.gain_zero),
        de_gain_weighted=w["de_best_gain_weighted"],
        mc_gain_weighted=float(g.mean()),
        de_gain_plain=w["de_best_gain_plain"],
        teacher_mse=rt,
    )


def _claim_regime(m: dict[str, Any], cfg) -> Any:
    """m < d: the ridgeless student beats the most under-regularised teacher and loses to the optimal one, DE
    (exact) and MC (t over repetitions), at every m/d < 1 of the grid."""
    r = m["regime"]
    ratios = np.asarray(r["m_over_d"], dtype=float)
    small = np.flatnonzero(ratios < 1.0)
    if small.size == 0:
        return evidence(None, note="no m/d < 1 in m_over_d_regime")
    under = np.asarray(r["mc_ridgeless_gain_reps_under"], dtype=float)  # (reps, ratios)
    opt = np.asarray(r["mc_ridgeless_gain_reps_opt"], dtype=float)
    parts = [_exact_worst(np.asarray(r["de_ridgeless_gain_under"])[small], below=0.0),
             _exact_worst(np.asarray(r["de_ridgeless_gain_opt"])[small], above=0.0)]
    parts += [decide.mean(under[:, k], below=0.0) for k in small]
    parts += [decide.mean(opt[:, k], above=0.0) for k in small]
    return decide.all_of(
        *parts,
        m_over_d=ratios[small],
        de_gain_under=np.asarray(r["de_ridgeless_gain_under"])[small],
        de_gain_opt=np.asarray(r["de_ridgeless_gain_opt"])[small],
        mc_gain_under=under[:, small].mean(0),
        mc_gain_opt=opt[:, small].mean(0),
    )


def _claim_copies_teacher(m: dict[str, Any], cfg) -> Any:
    """Identity: for m > d the ridgeless student interpolates noiseless teacher labels with full-rank inputs, so it
    recovers ŵ_T exactly (DE and every MC repetition, up to rounding)."""
    r = m["regime"]
    ratios = np.asarray(r["m_over_d"], dtype=float)
    big = np.flatnonzero(ratios > 1.0)
    if big.size == 0:
        return evidence(None, note="no m/d > 1 in m_over_d_regime")
    de = np.abs(np.concatenate([np.asarray(r[f"de_ridgeless_gain_{t}"])[big] for t in ("under", "opt")]))
    mc = np.abs(np.concatenate([np.asarray(r[f"mc_ridgeless_gain_reps_{t}"])[:, big] for t in ("under", "opt")]))
    return evidence(bool(de.max() < 1e-6 and mc.max() < 1e-6), m_over_d=ratios[big], de_max_abs_gain=de.max(),
                    mc_max_abs_gain=mc.max())


def _mi_reps(m: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=float) for k, v in m["multi_index"]["reps"].items()}


def _claim_multi_index(m: dict[str, Any], cfg) -> Any:
    """Identity (the frozen head carries the hard component by construction): paired t over repetitions."""
    r, mean = _mi_reps(m), m["multi_index"]["mean"]
    kept = (r["teacher"] - r["student_refit_head"]) / (r["teacher"] - r["student"])  # share of the gain kept
    return decide.all_of(
        decide.paired(r["teacher"], r["student"], above=0.0),
        decide.paired(r["pretrained_only"], r["student"], above=0.0),
        decide.mean(kept, within=(-cfg.refit_share, cfg.refit_share)),
        teacher=mean["teacher"],
        student=mean["student"],
        student_refit_head=mean["student_refit_head"],
        pretrained_only=mean["pretrained_only"],
        student_true_labels=mean["student_true_labels"],
        refit_share_kept=float(kept.mean()),
    )


def _claim_finetuned_head(m: dict[str, Any], cfg) -> Any:
    """Per repetition: the fine-tuned student's gain over the teacher minus refit_share × the frozen student's gain;
    its mean must be > 0 (Student-t over the independent repetitions)."""
    r, mean = _mi_reps(m), m["multi_index"]["mean"]
    frozen = r["teacher"] - r["student"]
    return decide.mean(
        r["finetune_gain"] - cfg.refit_share * frozen,
        above=0.0,
        note="fine-tuning stops on held-out teacher labels (no true labels)",
        gain=mean["finetune_gain"],
        frozen_head_gain=float(frozen.mean()),
        teacher=mean["teacher"],
        student_finetuned_head=mean["student_finetuned_head"],
        mean_stop_step=mean["finetune_stop_step"],
    )


@register
class W2SRidge(Study):
    name = "w2s-ridge"
    paper = Paper(
        "On the Mechanisms of Weak-to-Strong Generalization: A Theoretical Perspective",
        "arXiv:2505.18346",
        "Moniri, Hassani",
    )
    summary = (
        "A ridge student on a ridge teacher's labels beats it exactly when the teacher is under-regularised (or "
        "the student's penalty is better aligned); closed forms vs Monte Carlo."
    )

    @dataclass
    class Config:
        d: int = 200
        sigma2: float = 1.0
        n_over_d: float = 0.5  # teacher sample size n = n_over_d · d
        m_over_d: float = 4.0  # student sample size of the (λ_T, λ_S) sweep (m ≫ d)
        m_over_d_regime: tuple[float, ...] = (0.25, 0.5, 0.75, 1.5, 2.0, 4.0)
        lam_t_factors: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)  # multiples of λ_opt
        n_lam_s: int = 13  # MC λ_S grid: 0 and a log grid on [1e-3, 30]
        reps: int = 50
        heat_res: int = 31
        spike_k: int = 10  # weighted ridge: β on k coordinates, student Γ = spike_gamma there
        spike_gamma: float = 0.05
        aniso_reps: int = 30
        mi_d: int = 60
        mi_n: int = 600
        mi_m: int = 1500
        mi_pre: int = 3000
        mi_c: float = 1.0
        mi_reps: int = 10
        mi_finetune_steps: int = 200  # gradient steps at most when the student fine-tunes its whole head
        tol: float = 0.05
        tol_interp: float = 0.10
        # claim thresholds (fixed before the runs)
        gain_zero: float = 1e-3  # a DE gain within ±gain_zero × teacher MSE counts as no gain
        gain_margin: float = 0.01  # the weighted student's DE gain must exceed this share of the teacher MSE
        refit_share: float = 0.25  # re-fitting the hard head must leave less than this share of the gain
        # 2026-12-04 (fidelity review): the λ_T sweep again with an under-parameterised teacher and power-law Σ
        n_over_d_under: float = 2.0
        power_law: float = 1.0  # Σ eigenvalues ∝ i^-power_law, scaled to trace d

        def validate(self) -> None:
            if self.d < 10:
                raise ValueError("d must be >= 10")
            if self.sigma2 <= 0:
                raise ValueError("sigma2 must be > 0")
            if 1.0 in self.m_over_d_regime:
                raise ValueError("m_over_d_regime must avoid exactly 1 (ridgeless interpolation threshold)")
            if 1.0 not in self.lam_t_factors or min(self.lam_t_factors) >= 1.0:
                raise ValueError("lam_t_factors must contain 1.0 (λ_opt) and at least one factor < 1")
            if not 0 < self.spike_k < self.d or not 0 < self.spike_gamma <= 1:
                raise ValueError("need 0 < spike_k < d and 0 < spike_gamma <= 1")
            if self.reps < 2 or self.mi_reps < 2 or self.aniso_reps < 2:
                raise ValueError("reps, aniso_reps and mi_reps must be >= 2")

    presets = {
        "smoke": {
            "d": 40,
            "reps": 3,
            "aniso_reps": 3,
            "heat_res": 7,
            "n_lam_s": 5,
            "m_over_d_regime": (0.5, 2.0),
            "lam_t_factors": (0.01, 1.0, 3.0),
            "spike_k": 4,
            "mi_d": 20,
            "mi_n": 60,
            "mi_m": 200,
            "mi_pre": 400,
            "mi_reps": 2,
        },
        "quick": {},
        "full": {"d": 600, "reps": 200, "aniso_reps": 100, "heat_res": 61, "n_lam_s": 25, "mi_d": 200, "mi_n": 400,
                 "mi_m": 8000, "mi_pre": 20000, "mi_reps": 30},
    }

    claims = [
        Claim(
            "de-matches-mc",
            "closed-form (DE) test MSE matches Monte Carlo within {tol} (relative; {tol_interp} near the "
            "interpolation threshold)",
            _claim_de_vs_mc,
            kind="identity",
        ),
        Claim(
            "under-regularised-teacher",
            "Σ = I, m ≫ d: the best student beats the teacher for every λ_T < λ_opt and never for λ_T ≥ λ_opt "
            "(DE gains beyond ±{gain_zero} of the teacher's MSE; MC: t over repetitions, gain < 0 below λ_opt at "
            "the DE's best λ_S, no λ_S on the grid gaining more than {gain_zero} of the teacher's MSE from λ_opt up)",
            _claim_under_reg,
        ),
        Claim(
            "under-regularisation-robust",
            "the same sign flip at λ_opt (DE) and the same Monte Carlo tests, with an "
            "under-parameterised teacher (n/d = {n_over_d_under}) and with a power-law Σ (eigenvalues ∝ "
            "i^-{power_law})",
            _claim_under_reg_robust,
        ),
        Claim(
            "weighted-student",
            "at the teacher's optimal λ, a student with a penalty aligned to the target (weighted ridge) beats the "
            "teacher (DE by > {gain_margin} of its MSE; MC gain < 0) while a plain ridge student cannot (by "
            "construction: the penalty is aligned with β's support)",
            _claim_weighted,
            kind="identity",
        ),
        Claim(
            "ridgeless-regime",
            "regime: a ridgeless student with m < d beats an under-regularised teacher and loses to an optimal one "
            "(DE and MC, every m/d < 1 of the grid)",
            _claim_regime,
        ),
        Claim(
            "ridgeless-copies-teacher",
            "regime: with m > d a ridgeless student reproduces the teacher exactly (interpolation of noiseless "
            "labels with full-rank inputs)",
            _claim_copies_teacher,
            kind="identity",
        ),
        Claim(
            "multi-index-gain",
            "multi-index: the student (pre-trained hard direction + teacher-taught easy direction) beats the "
            "teacher and the pre-trained model alone (paired t), and keeps less than {refit_share} of its gain "
            "(TOST) if its hard head is re-fitted on teacher labels",
            _claim_multi_index,
            kind="identity",  # the frozen head carries the hard component the teacher's labels lack: see the docs
        ),
        Claim(
            "multi-index-finetuned-head",
            "multi-index: a student that fine-tunes its pre-trained hard head with its readout on teacher labels "
            "(gradient descent, stopped on held-out teacher labels) keeps more than {refit_share} of the "
            "frozen-head student's gain over the teacher (t over repetitions, paired per repetition)",
            _claim_finetuned_head,
        ),
    ]

    # ------------------------------------------------------------------------------------------------
    def run(self, cfg: W2SRidge.Config, ctx: RunContext) -> dict[str, Any]:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            return self._run(cfg, ctx)

    def _run(self, cfg: W2SRidge.Config, ctx: RunContext) -> dict[str, Any]:
        s = _setup(cfg, ctx)
        heat, lam_opt_de = _de_landscape(s, cfg, ctx)
        sweep, p_sweep = _teacher_sweep(s, cfg, ctx)
        under, _ = _teacher_sweep(_variant(s, cfg, n=round(cfg.n_over_d_under * s.d)), cfg, ctx, "sweep-underparam")
        power = np.arange(1, s.d + 1, dtype=float) ** -cfg.power_law
        power, _ = _teacher_sweep(_variant(s, cfg, eigs=power * s.d / power.sum()), cfg, ctx, "sweep-powerlaw")
        regime, p_regime = _student_size_regime(s, cfg, ctx)
        weighted, p_weighted = _weighted_student(s, cfg, ctx)
        aniso, p_aniso = _anisotropic_check(s, cfg, ctx)
        de_vs_mc = _de_vs_mc(p_sweep + p_regime + p_weighted + p_aniso, cfg, ctx)
        return {
            "d": s.d,
            "n": s.n,
            "m": s.m,
            "lam_opt": s.lam_opt,
            "lam_opt_de_grid": lam_opt_de,
            "heat": heat,
            "sweep": sweep,
            "sweep_underparam": under,
            "sweep_powerlaw": power,
            "regime": regime,
            "weighted": weighted,
            "aniso": aniso,
            "de_vs_mc": de_vs_mc,
            "multi_index": _multi_index(cfg, ctx),
        }

    # ------------------------------------------------------------------------------------------------
    def figures(self, metrics: dict[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()
        from matplotlib.colors import TwoSlopeNorm

        m = metrics
        lam_opt = m["lam_opt"]
        fig, ax = plt.subplots(2, 3, figsize=(15, 8.6))

        # (a) heat map of DE student − teacher
        h = m["heat"]
        g = np.asarray(h["de_gain"], dtype=float)
        lim = float(np.max(np.abs(g)))
        a = ax[0, 0]
        pc = a.pcolormesh(h["lam_t"], h["lam_s"], g.T, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), shading="auto")
        a.contour(h["lam_t"], h["lam_s"], g.T, levels=[0.0], colors="k", linewidths=1)
        a.axvline(lam_opt, color="k", ls="--", lw=1)
        a.set(xscale="log", yscale="log", xlabel="teacher λ_T", ylabel="student λ_S",
              title=f"(a) DE: student − teacher test MSE (m/d={m['m'] / m['d']:.0f})")
        fig.colorbar(pc, ax=a)
        a.text(lam_opt, h["lam_s"][-1], " λ_opt", va="top", fontsize=8)

        # (b) best gain vs λ_T, DE + MC
        s = m["sweep"]
        a = ax[0, 1]
        a.axhline(0, color="gray", lw=0.8)
        a.plot(s["lam_t"], s["de_best_gain"], "-", label="DE: best student − teacher")
        a.errorbar(s["lam_t"], s["mc_best_gain"], yerr=s["mc_best_gain_se"], fmt="o", ms=4,
                   label="MC (best λ_S on grid)")
        a.axvline(lam_opt, color="k", ls="--", lw=1)
        a.set(xscale="log", xlabel="teacher λ_T", ylabel="gain (negative = student wins)", title="(b) W2S gain vs λ_T")
        a.legend(fontsize=8)

        # (c) curves in λ_S for a few λ_T: DE lines and MC dots
        a = ax[0, 2]
        lam_s = np.asarray(s["lam_s"], dtype=float)
        xs = np.where(lam_s > 0, lam_s, lam_s[1] / 3)
        for i, f in enumerate(s["lam_t_factor"]):
            if f not in (min(s["lam_t_factor"]), 1.0, max(s["lam_t_factor"])):
                continue
            (ln,) = a.plot(xs, s["de_student"][i], "-", label=f"student, λ_T={f:g}·λ_opt")
            a.plot(xs, s["mc_student"][i], "o", ms=3, color=ln.get_color())
            a.axhline(s["de_teacher"][i], color=ln.get_color(), ls=":", lw=1)
        a.set(xscale="log", xlabel="student λ_S (leftmost = 0)", ylabel="test MSE",
              title="(c) DE (lines) vs MC (dots); dotted = teacher")
        a.legend(fontsize=7)

        # (d) regime dependence
        r = m["regime"]
        a = ax[1, 0]
        a.axhline(0, color="gray", lw=0.8)
        for tk, lab in (("under", "under-reg. teacher"), ("opt", "optimal teacher")):
            (ln,) = a.plot(r["m_over_d"], r[f"de_ridgeless_gain_{tk}"], "-", label=f"{lab}: ridgeless student (DE)")
            a.errorbar(r["m_over_d"], r[f"mc_ridgeless_gain_{tk}"], yerr=r[f"mc_ridgeless_gain_se_{tk}"], fmt="o",
                       ms=4, color=ln.get_color())
            a.plot(r["m_over_d"], r[f"de_best_gain_{tk}"], "--", color=ln.get_color(), label=f"{lab}: best λ_S (DE)")
        a.axvline(1.0, color="k", ls=":", lw=1)
        a.set(xlabel="student samples m/d", ylabel="student − teacher test MSE",
              title="(d) regime: over- (m<d) vs under-parameterised student")
        a.legend(fontsize=7)

        # (e) weighted ridge
        w = m["weighted"]
        a = ax[1, 1]
        lw = np.asarray(w["lam_s"], dtype=float)
        xw = np.where(lw > 0, lw, lw[1] / 3)
        (l1,) = a.plot(xw, w["de_student_plain"], "-", label="plain ridge student (DE)")
        a.plot(xw, w["mc_student_plain"], "o", ms=3, color=l1.get_color())
        (l2,) = a.plot(xw, w["de_student_weighted"], "-", label="aligned weighted student (DE)")
        a.plot(xw, w["mc_student_weighted"], "o", ms=3, color=l2.get_color())
        a.axhline(w["de_teacher"], color="k", ls=":", label="teacher at λ_opt")
        a.set(xscale="log", xlabel="student λ_S (leftmost = 0)", ylabel="test MSE",
              title="(e) weighted ridge, spiked β")
        a.legend(fontsize=7)

        # (f) multi-index
        mi = m["multi_index"]
        a = ax[1, 2]
        names = ["teacher", "student", "student_refit_head", "student_finetuned_head", "pretrained_only",
                 "student_true_labels"]
        a.bar(range(len(names)), [mi["mean"][k] for k in names], yerr=[mi["se"][k] for k in names], color="C0")
        a.axhline(mi["noise_floor"], color="k", ls=":", lw=1, label="noise floor σ²")
        a.set_xticks(range(len(names)), ["teacher", "student", "head\nrefit", "head\nfine-tuned", "pre-trained\nonly",
                                          "true\nlabels"], fontsize=7)
        a.set(ylabel="test MSE", title="(f) multi-index simulation")
        a.legend(fontsize=7)

        fig.suptitle("w2s-ridge: ridge teacher → ridge student (DE = our deterministic equivalent, MC = simulation)")
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "w2s-ridge", dpi=72,
            caption=(
                "Ridge teacher → ridge student: DE vs Monte Carlo test MSE, student gain vs teacher "
                "and student regularisation, weighted student and multi-index gain"
            ),
        )
        return [path]


# ----------------------------------------------------------------------------------------------------
# the stages of a run; each DE/MC stage also returns its (DE, MC mean, near-interpolation) points
# ----------------------------------------------------------------------------------------------------
Points = list[tuple[float, float, bool]]


@dataclass
class _Setup:
    """What every stage shares: Σ = I in d dimensions, a unit target, the teacher's sample size and λ_opt."""

    d: int
    s2: float
    n: int
    m: int
    eigs: np.ndarray
    beta: np.ndarray
    rng_beta: np.random.Generator  # also draws the spiked target later: one stream, as before the split
    lam_opt: float
    lam_t: np.ndarray
    lam_s_mc: np.ndarray
    lam_s_fine: np.ndarray

    def student_curve(self, teacher: WeightedRidgeDE, m: int, lams: np.ndarray) -> np.ndarray:
        return np.array([student_de(self.eigs, self.beta, self.s2, teacher, m, ls).test_mse for ls in lams])


def _setup(cfg: W2SRidge.Config, ctx: RunContext) -> _Setup:
    d = cfg.d
    n = max(2, round(cfg.n_over_d * d))
    rng_beta = ctx.rng("beta")
    beta = rng_beta.standard_normal(d)
    beta /= np.linalg.norm(beta)
    lam_opt = lambda_opt_isotropic(cfg.sigma2, d, n, 1.0)
    return _Setup(
        d=d,
        s2=cfg.sigma2,
        n=n,
        m=max(2, round(cfg.m_over_d * d)),
        eigs=np.ones(d),
        beta=beta,
        rng_beta=rng_beta,
        lam_opt=lam_opt,
        lam_t=lam_opt * np.asarray(cfg.lam_t_factors, dtype=float),
        lam_s_mc=np.concatenate([[0.0], np.logspace(-3, np.log10(30.0), cfg.n_lam_s - 1)]),
        lam_s_fine=np.concatenate([[0.0], np.logspace(-4, 2, 241)]),
    )


def _variant(s: _Setup, cfg: W2SRidge.Config, n: int | None = None, eigs: np.ndarray | None = None) -> _Setup:
    """The base setup with another teacher sample size or covariance spectrum; λ_opt from the DE on a fine grid
    (no closed form for anisotropic Σ)."""
    n = s.n if n is None else n
    eigs = s.eigs if eigs is None else eigs
    grid = s.lam_opt * np.logspace(-3, 3, 481)
    mse = [weighted_ridge_de(eigs, s.beta, s.s2, n, lt).test_mse for lt in grid]
    lam_opt = float(grid[int(np.argmin(mse))])
    return dataclasses.replace(s, n=n, eigs=eigs, lam_opt=lam_opt,
                               lam_t=lam_opt * np.asarray(cfg.lam_t_factors, dtype=float))


def _de_landscape(s: _Setup, cfg: W2SRidge.Config, ctx: RunContext) -> tuple[dict[str, Any], float]:
    """DE only: the teacher's λ_opt on a grid (checks the closed form) and the (λ_T, λ_S) gain heat map."""
    lam_grid = s.lam_opt * np.logspace(-2, 2, 161)
    t_curve = np.array([weighted_ridge_de(s.eigs, s.beta, s.s2, s.n, lt).test_mse for lt in lam_grid])
    lam_opt_de = float(lam_grid[np.argmin(t_curve)])
    ctx.log(f"λ_opt closed form {s.lam_opt:.4g}, DE grid argmin {lam_opt_de:.4g}")
    heat_t = s.lam_opt * np.logspace(-2.5, 1.5, cfg.heat_res)
    heat_s = np.logspace(-3, 1.5, cfg.heat_res)
    heat_gain = np.empty((cfg.heat_res, cfg.heat_res))
    for i, lt in enumerate(heat_t):
        t = weighted_ridge_de(s.eigs, s.beta, s.s2, s.n, lt)
        heat_gain[i] = s.student_curve(t, s.m, heat_s) - t.test_mse
    return {"lam_t": heat_t, "lam_s": heat_s, "de_gain": heat_gain}, lam_opt_de


def _teacher_sweep(s: _Setup, cfg: W2SRidge.Config, ctx: RunContext, tag: str = "sweep"
                   ) -> tuple[dict[str, Any], Points]:
    """Sweep λ_T at m = m_over_d·d: the student's best gain over the teacher, DE and MC."""
    ctx.log(f"MC {tag}: d={s.d} n={s.n} m={s.m} reps={cfg.reps}")
    lam_t, lam_s_mc = s.lam_t, s.lam_s_mc
    t_mc, s_mc = mc_w2s(s.eigs, s.beta, s.s2, s.n, s.m, lam_t, lam_s_mc, cfg.reps, ctx.rng("mc", tag))
    de_t, de_s, de_best, de_best_lam, lam_star = [], [], [], [], []
    for lt in lam_t:
        t = weighted_ridge_de(s.eigs, s.beta, s.s2, s.n, lt)
        de_t.append(t.test_mse)
        de_s.append(s.student_curve(t, s.m, lam_s_mc))
        fine = s.student_curve(t, s.m, s.lam_s_fine)
        de_best.append(float(fine.min() - t.test_mse))
        de_best_lam.append(float(s.lam_s_fine[np.argmin(fine)]))
        lam_star.append(best_shrinkage_isotropic(t, s.beta))
    gain_mc = s_mc - t_mc[:, :, None]  # (reps, nT, nS)
    de_j = [int(np.argmin(c)) for c in de_s]  # the DE's best λ_S on the MC grid (no MC number enters)
    mean_gain = gain_mc.mean(0)
    best_j = np.argmin(mean_gain, axis=1)
    mc_best = mean_gain[np.arange(lam_t.size), best_j]
    mc_best_se = gain_mc[:, np.arange(lam_t.size), best_j].std(0, ddof=1) / np.sqrt(cfg.reps)
    points: Points = []
    for i in range(lam_t.size):
        points.append((de_t[i], float(t_mc[:, i].mean()), False))
        for j in range(lam_s_mc.size):
            points.append((float(de_s[i][j]), float(s_mc[:, i, j].mean()), False))
    sweep = {
        "lam_t": lam_t,
        "lam_t_factor": cfg.lam_t_factors,
        "lam_s": lam_s_mc,
        "de_teacher": de_t,
        "de_student": np.array(de_s),
        "mc_teacher": t_mc.mean(0),
        "mc_teacher_se": t_mc.std(0, ddof=1) / np.sqrt(cfg.reps),
        "mc_student": s_mc.mean(0),
        "de_best_gain": de_best,
        "de_best_lam_s": de_best_lam,
        "mc_best_gain": mc_best,
        "mc_best_gain_se": mc_best_se,
        "mc_best_lam_s": lam_s_mc[best_j],
        "lam_s_star_closed_form_m_inf": lam_star,
        "de_lam_s_index": de_j,
        "mc_gain_reps": gain_mc,  # per independent repetition: the claims' units
    }
    return sweep, points


def _student_size_regime(s: _Setup, cfg: W2SRidge.Config, ctx: RunContext) -> tuple[dict[str, Any], Points]:
    """Student sample size m/d against an under-regularised and an optimal teacher: ridgeless and best student."""
    regime: dict[str, Any] = {"m_over_d": list(cfg.m_over_d_regime)}
    teachers = {"under": s.lam_opt * min(cfg.lam_t_factors), "opt": s.lam_opt}
    for key in ("de_ridgeless_gain", "mc_ridgeless_gain", "mc_ridgeless_gain_se", "de_best_gain",
                "mc_ridgeless_gain_reps"):
        for tk in teachers:
            regime[f"{key}_{tk}"] = []
    tde = {k: weighted_ridge_de(s.eigs, s.beta, s.s2, s.n, v) for k, v in teachers.items()}
    lam_s_reg = np.concatenate([[0.0], np.logspace(-3, 1.5, 10)])
    points: Points = []
    for ratio in cfg.m_over_d_regime:
        mm = max(2, round(ratio * s.d))
        tm, sm = mc_w2s(s.eigs, s.beta, s.s2, s.n, mm, np.array(list(teachers.values())), lam_s_reg,
                        cfg.reps, ctx.rng("mc", "regime", mm))
        for k, (tk, t) in enumerate(tde.items()):
            de0 = student_de(s.eigs, s.beta, s.s2, t, mm, 0.0).test_mse
            regime[f"de_ridgeless_gain_{tk}"].append(de0 - t.test_mse)
            g = sm[:, k, 0] - tm[:, k]
            regime[f"mc_ridgeless_gain_{tk}"].append(float(g.mean()))
            regime[f"mc_ridgeless_gain_se_{tk}"].append(float(g.std(ddof=1) / np.sqrt(cfg.reps)))
            regime[f"mc_ridgeless_gain_reps_{tk}"].append(g)
            regime[f"de_best_gain_{tk}"].append(float(s.student_curve(t, mm, s.lam_s_fine).min() - t.test_mse))
            near = 0.7 <= ratio <= 1.5
            points.append((t.test_mse, float(tm[:, k].mean()), False))
            for j, ls in enumerate(lam_s_reg):
                de_j = student_de(s.eigs, s.beta, s.s2, t, mm, ls).test_mse
                points.append((de_j, float(sm[:, k, j].mean()), near and j == 0))
        ctx.log(f"regime m/d={ratio}: ridgeless gain under={regime['de_ridgeless_gain_under'][-1]:+.4f} "
                f"opt={regime['de_ridgeless_gain_opt'][-1]:+.4f} (DE)")
    for tk in teachers:  # (reps, ratios)
        regime[f"mc_ridgeless_gain_reps_{tk}"] = np.stack(regime[f"mc_ridgeless_gain_reps_{tk}"], axis=1)
    return regime, points


def _weighted_student(s: _Setup, cfg: W2SRidge.Config, ctx: RunContext) -> tuple[dict[str, Any], Points]:
    """A spiked target at the teacher's λ_opt: a student with an aligned (weighted) penalty vs a plain one."""
    d, s2, n, m, lam_opt = s.d, s.s2, s.n, s.m, s.lam_opt
    beta_sp = np.zeros(d)
    beta_sp[: cfg.spike_k] = s.rng_beta.standard_normal(cfg.spike_k)
    beta_sp /= np.linalg.norm(beta_sp)
    gamma = np.ones(d)
    gamma[: cfg.spike_k] = cfg.spike_gamma
    t_sp = weighted_ridge_de(s.eigs, beta_sp, s2, n, lam_opt)
    lam_s_w = np.concatenate([[0.0], np.logspace(-3, np.log10(30.0), cfg.n_lam_s - 1)])

    def curve(lams: np.ndarray, g: np.ndarray | None) -> np.ndarray:
        return np.array([student_de(s.eigs, beta_sp, s2, t_sp, m, ls, g).test_mse for ls in lams])

    de_plain, de_w = curve(lam_s_w, None), curve(lam_s_w, gamma)
    de_w_fine, de_p_fine = curve(s.lam_s_fine, gamma), curve(s.lam_s_fine, None)
    rng_w = ctx.rng("mc", "weighted")
    state = rng_w.bit_generator.state
    tw, sw = mc_w2s(s.eigs, beta_sp, s2, n, m, np.array([lam_opt]), lam_s_w, cfg.reps, rng_w, gamma_s=gamma)
    rng_w.bit_generator.state = state  # same teachers and student inputs for the plain student
    tp, sp = mc_w2s(s.eigs, beta_sp, s2, n, m, np.array([lam_opt]), lam_s_w, cfg.reps, rng_w)
    gw = sw[:, 0, :] - tw[:, :1]
    jw_de = int(np.argmin(de_w))  # the DE's best λ_S on the MC grid
    jw = int(np.argmin(gw.mean(0)))
    gp = sp[:, 0, :] - tp[:, :1]
    jp = int(np.argmin(gp.mean(0)))
    points: Points = [(t_sp.test_mse, float(tw.mean()), False)]
    for j in range(lam_s_w.size):
        points.append((float(de_w[j]), float(sw[:, 0, j].mean()), False))
        points.append((float(de_plain[j]), float(sp[:, 0, j].mean()), False))
    weighted = {
        "lam_s": lam_s_w,
        "lam_t": lam_opt,
        "de_teacher": t_sp.test_mse,
        "mc_teacher": float(tw.mean()),
        "de_student_weighted": de_w,
        "de_student_plain": de_plain,
        "mc_student_weighted": sw[:, 0, :].mean(0),
        "mc_student_plain": sp[:, 0, :].mean(0),
        "de_best_gain_weighted": float(de_w_fine.min() - t_sp.test_mse),
        "de_best_gain_plain": float(de_p_fine.min() - t_sp.test_mse),
        "mc_best_gain_weighted": float(gw.mean(0)[jw]),
        "mc_best_gain_weighted_se": float(gw[:, jw].std(ddof=1) / np.sqrt(cfg.reps)),
        "mc_best_gain_plain": float(gp.mean(0)[jp]),
        "mc_best_gain_plain_se": float(gp[:, jp].std(ddof=1) / np.sqrt(cfg.reps)),
        "mc_gain_weighted_reps": gw[:, jw_de],
    }
    ctx.log(f"weighted: DE best gain weighted {weighted['de_best_gain_weighted']:+.4f}, "
            f"plain {weighted['de_best_gain_plain']:+.4f}")
    return weighted, points


def _anisotropic_check(s: _Setup, cfg: W2SRidge.Config, ctx: RunContext) -> tuple[list[dict[str, Any]], Points]:
    """The DE against MC on a power-law spectrum (the isotropic stages cannot catch an anisotropy error)."""
    idx = np.arange(1, s.d + 1)
    eig_pw, beta_pw = 3.0 / idx, idx**-0.75
    aniso, points = [], []
    for nn_, mm_, lt_, ls_ in ((s.n, s.m, 1e-3, 0.1), (round(1.5 * s.d), round(0.67 * s.d), 1e-2, 0.05)):
        t = weighted_ridge_de(eig_pw, beta_pw, s.s2, nn_, lt_)
        st = student_de(eig_pw, beta_pw, s.s2, t, mm_, ls_)
        tm, sm = mc_w2s(eig_pw, beta_pw, s.s2, nn_, mm_, [lt_], [ls_], cfg.aniso_reps, ctx.rng("mc", "pow", nn_))
        points += [(t.test_mse, float(tm.mean()), False), (st.test_mse, float(sm.mean()), False)]
        aniso.append({"n": nn_, "m": mm_, "lam_t": lt_, "lam_s": ls_, "de_teacher": t.test_mse,
                      "mc_teacher": float(tm.mean()), "de_student": st.test_mse, "mc_student": float(sm.mean())})
    return aniso, points


def _de_vs_mc(points: Points, cfg: W2SRidge.Config, ctx: RunContext) -> dict[str, Any]:
    """Relative error of every DE value against its MC mean; near-interpolation points are reported apart."""
    pts = np.array(points)
    rel = np.abs(pts[:, 0] - pts[:, 1]) / pts[:, 1]
    flag = pts[:, 2].astype(bool)
    out = {
        "points": int(len(pts)),
        "max_rel_err": float(rel[~flag].max()),
        "median_rel_err": float(np.median(rel[~flag])),
        "max_rel_err_interp": float(rel[flag].max()) if flag.any() else 0.0,
        "tol": cfg.tol,
        "tol_interp": cfg.tol_interp,
        "de": pts[:, 0],
        "mc": pts[:, 1],
        "interp": flag,
    }
    ctx.log(f"DE vs MC: max rel err {out['max_rel_err']:.4f} (interp {out['max_rel_err_interp']:.4f})")
    return out


def _multi_index(cfg: W2SRidge.Config, ctx: RunContext) -> dict[str, Any]:
    """The multi-index simulation, averaged over repetitions."""
    runs = [
        multi_index_run(cfg.mi_d, cfg.mi_n, cfg.mi_m, cfg.mi_pre, cfg.mi_c, cfg.sigma2, 1e-2, 5000, ctx.rng("mi", r),
                        cfg.mi_finetune_steps)
        for r in range(cfg.mi_reps)
    ]
    keys = list(runs[0])
    mi = {
        "mean": {k: float(np.mean([r[k] for r in runs])) for k in keys},
        "se": {k: float(np.std([r[k] for r in runs], ddof=1) / np.sqrt(len(runs))) for k in keys},
        "reps": {k: [r[k] for r in runs] for k in keys},
        "noise_floor": cfg.sigma2,
        "hard_variance": cfg.mi_c**2,
    }
    ctx.log("multi-index: " + ", ".join(f"{k}={v:.3f}" for k, v in mi["mean"].items()))
    return mi
