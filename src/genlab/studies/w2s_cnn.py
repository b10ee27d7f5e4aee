"""Study "w2s-cnn": weak-to-strong generalisation from a linear CNN teacher to a two-layer ReLU CNN student
(Oh, Song & Yun, arXiv 2510.24812).

The teacher is at chance on hard-only inputs (it cannot represent the hard signal); the ReLU student, trained by
full-batch GD on the teacher's labels, can learn the hard signal from the both-signal samples. Two regimes:
data-abundant (early label correction, later degradation) and data-scarce (benign vs harmful overfitting,
swept over n and the hard-signal strength). The data model is our reconstruction (see genlab.data.patches).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genlab.data.patches import EASY, HARD, PatchData, PatchModel
from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
from genlab.harness.torch_setup import module_device
from genlab.measures.weak_to_strong import weak_to_strong

DATA_MODEL_VERSION = "recon-v1: easy [μ_y, μ_y, ξ], hard [ν_y, −ν_y, ξ], both [μ_y, ν_y, ξ]"


class _TorchPredictor:
    """Wraps a trained torch model as a numpy predictor on PatchData, keeping its GD history."""

    def __init__(self, model, history=None) -> None:
        self.model, self.history = model, history

    def __call__(self, data: PatchData) -> np.ndarray:
        import torch

        dev = module_device(self.model)
        with torch.no_grad():
            return self.model(torch.from_numpy(data.x).to(dev)).cpu().numpy()

    def at(self, snapshot: dict) -> _TorchPredictor:
        self.model.load_state_dict(snapshot)
        return self


def _error(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(pred != y))


def w2s_cnn_run(
    pm: PatchModel,
    n_teacher: int,
    n_student: int,
    test: PatchData,
    rng: np.random.Generator,
    torch_seed: int,
    *,
    filters: int,
    sigma0: float,
    lr: float,
    steps: int,
    teacher_lr: float,
    teacher_steps: int,
    snapshot_every: int,
    linear_student: bool = False,
    val: PatchData | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """One weak-to-strong run; returns final and per-snapshot metrics of teacher and student.

    Curves (per snapshot): test error, hard-only test error, accuracy on the pseudo-labels (train), and the
    fraction of wrongly pseudo-labelled training points the student predicts with their *true* label; with ``val``
    (a held-out sample with true labels, disjoint from ``test``) also its error, to pick a step without the test set.
    """
    import torch

    from genlab.nn.patch_cnn import LinearCNN, ReLUCNN
    from genlab.training.gd import train_gd

    def sample(k: int, r: np.random.Generator) -> tuple[PatchData, np.ndarray]:
        data = pm.sample(k, r)
        return data, data.y

    def fit_teacher(data: PatchData, y: np.ndarray) -> _TorchPredictor:
        model = LinearCNN(pm.d).to(device)
        train_gd(model, torch.from_numpy(data.x).to(device), torch.from_numpy(y).to(device), teacher_lr, teacher_steps)
        return _TorchPredictor(model)

    def fit_student(data: PatchData, pseudo: np.ndarray) -> _TorchPredictor:
        gen = torch.Generator().manual_seed(torch_seed)
        model = (LinearCNN(pm.d) if linear_student else ReLUCNN(pm.d, filters, sigma0, gen)).to(device)
        x, y = torch.from_numpy(data.x).to(device), torch.from_numpy(pseudo.astype(np.int64)).to(device)
        hist = train_gd(model, x, y, lr, steps, snapshot_every=snapshot_every)
        return _TorchPredictor(model, hist)

    out = weak_to_strong(sample, fit_teacher, fit_student, _error, n_teacher, n_student, 0, rng,
                         label=lambda z: np.where(z >= 0, 1, -1), test_data=(test, test.y))
    sign = lambda z: np.where(z >= 0, 1, -1)  # noqa: E731
    hard = test.kind == HARD
    t_pred = sign(out.teacher(test))
    x_s, y_s, pseudo = out.extras["x_student"], out.extras["y_student_true"], out.extras["pseudo_labels"]
    flipped = pseudo != y_s
    curves: dict[str, list[float]] = {"test": [], "hard": [], "pseudo_acc": [], "flipped_true": []}
    if val is not None:
        curves["val"] = []
    hist = out.student.history
    for snap in hist.snapshots:
        st = out.student.at(snap)
        p_te, p_tr = sign(st(test)), sign(st(x_s))
        curves["test"].append(_error(p_te, test.y))
        curves["hard"].append(_error(p_te[hard], test.y[hard]))
        curves["pseudo_acc"].append(float(np.mean(p_tr == pseudo)))
        curves["flipped_true"].append(float(np.mean(p_tr[flipped] == y_s[flipped])) if flipped.any() else 1.0)
        if val is not None:
            curves["val"].append(_error(sign(st(val)), val.y))
    return {
        "teacher_test": out.teacher_score,
        "teacher_hard": _error(t_pred[hard], test.y[hard]),
        "teacher_easy": _error(t_pred[test.kind == EASY], test.y[test.kind == EASY]),
        "flip_rate": out.pseudo_label_score,
        "steps": hist.steps,
        "loss": hist.loss,
        **curves,
    }


# ----------------------------------------------------------------------------------------------------
# claims
# ----------------------------------------------------------------------------------------------------


def _claim_teacher(m: dict[str, Any], cfg) -> Any:
    """An identity of the data model: a linear CNN sees ν_y − ν_y = 0 on hard-only inputs, so it is at chance there
    for every weight (and errs on half of the hard-only share of the test set)."""
    t = m["teacher"]
    held = abs(t["hard_mean"] - 0.5) <= cfg.chance_band and abs(t["test_mean"] - m["p_hard"] / 2) <= cfg.error_tol
    return evidence(held, hard_only_error=t["hard_mean"], test_error=t["test_mean"], p_hard_half=m["p_hard"] / 2)


def _abundant_units(run: dict[str, Any]) -> dict[str, float]:
    """One seed's numbers at the validation-selected step (the test set only reports) and at the last step."""
    test = np.asarray(run["test"])
    i = int(np.argmin(run.get("val", test)))  # picked on held-out data (runs stored before n_val: on test)
    return {
        "best_test": float(test[i]),
        "teacher_test": float(run["teacher_test"]),
        "flipped_true_at_best": float(run["flipped_true"][i]),
        "pseudo_fit_gap": abs(float(run["pseudo_acc"][i]) - (1 - float(run["flip_rate"]))),
        "final_test": float(test[-1]),
        "pseudo_acc_rise": float(run["pseudo_acc"][-1] - run["pseudo_acc"][i]),
        "flipped_true_fall": float(run["flipped_true"][i] - run["flipped_true"][-1]),
        "distance_to_teacher_best": abs(float(test[i]) - float(run["teacher_test"])),
        "distance_to_teacher_final": abs(float(test[-1]) - float(run["teacher_test"])),
    }


def _seed_table(m: dict[str, Any]) -> dict[str, np.ndarray]:
    rows = [_abundant_units(r) for r in m["abundant"]["runs"]]
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _all_of(parts: dict[str, Any], **numbers: Any) -> Any:
    """``decide.all_of`` over named parts, each part's test summary kept among the numbers."""
    return decide.all_of(*parts.values(), **numbers, **{f"test_{k}": ev.test.summary() for k, ev in parts.items()})


def _claim_abundant(m: dict[str, Any], cfg) -> Any:
    """Four tests over the abundant seeds (each seed trains its own teacher and student), all of which must hold."""
    u = _seed_table(m)
    return _all_of({
        "beats_teacher": decide.paired(u["teacher_test"], u["best_test"], above=cfg.student_gain),
        "flipped_true": decide.mean(u["flipped_true_at_best"], above=cfg.flipped_true_min),
        "pseudo_fit_gap": decide.mean(u["pseudo_fit_gap"], below=cfg.pseudo_fit_tol),
        "degrades": decide.paired(u["final_test"], u["best_test"], above=cfg.overtrain_rise),
    }, **{f"mean_{k}": float(u[k].mean()) for k in ("best_test", "teacher_test", "flipped_true_at_best",
                                                     "pseudo_fit_gap", "final_test")})


def _claim_towards_teacher(m: dict[str, Any], cfg) -> Any:
    """From the validation-selected step to the last: the student fits more of the teacher's labels, predicts fewer
    flipped points with their true label, and ends closer to the teacher's test error than it was."""
    u = _seed_table(m)
    return _all_of({
        "pseudo_fit_rises": decide.mean(u["pseudo_acc_rise"], above=cfg.towards_teacher),
        "flipped_true_falls": decide.mean(u["flipped_true_fall"], above=cfg.towards_teacher),
        "closer_to_teacher": decide.paired(u["distance_to_teacher_best"], u["distance_to_teacher_final"], above=0.0),
    }, **{f"mean_{k}": float(u[k].mean()) for k in ("pseudo_acc_rise", "flipped_true_fall",
                                                     "distance_to_teacher_best", "distance_to_teacher_final")})


def _claim_linear_control(m: dict[str, Any], cfg) -> Any:
    """An identity of the data model: a linear student sees ν − ν = 0 on hard-only inputs, whatever it learns."""
    c = m["linear_control"]
    return evidence(min(c["hard"]) >= 0.5 - cfg.chance_band, min_hard_error=min(c["hard"]),
                    teacher_hard=m["teacher"]["hard_mean"])


def _benign(cells: dict[str, Any], cfg) -> np.ndarray:
    """(cells, seeds) 1.0 where the seed ends benign (hard-only error <= benign_error)."""
    return (np.asarray(cells["hard"], dtype=float) <= cfg.benign_error).astype(float)


def _claim_scarce(m: dict[str, Any], cfg) -> Any:
    """Along the SNR line: per seed (each seed draws its own cells), ends benign at the largest SNR minus at the
    smallest; the mean difference > 0 by an exact sign-flip test."""
    s = m["scarce"]
    b = _benign(s, cfg)
    lo, hi = int(np.argmin(s["snr"])), int(np.argmax(s["snr"]))
    return decide.paired(b[hi], b[lo], above=0.0, method="sign-flip", snr=np.round(s["snr"], 3),
                         r=np.round(s["r"], 3), benign_share=b.mean(1),
                         hard_error=np.round(np.asarray(s["hard"], dtype=float).mean(1), 3))


def _error_slopes(hard: np.ndarray, ns: list[int]) -> np.ndarray:
    """Per seed, the least-squares slope of the hard-only error on log2 n (one value per seed)."""
    x = np.log2(np.asarray(ns, dtype=float))
    x = x - x.mean()
    return (x @ (hard - hard.mean(0))) / (x @ x)


def _claim_scarce_monotone(m: dict[str, Any], cfg) -> Any:
    """Along the SNR line the hard-only error falls with n: the per-seed slope of the error on log2 n is negative on
    average (t-test over seeds)."""
    s = m["scarce"]
    hard = np.asarray(s["hard"], dtype=float)
    return decide.mean(_error_slopes(hard, s["n"]), below=0.0, hard_error=np.round(hard.mean(1), 3))


def _claim_matched(m: dict[str, Any], cfg) -> Any:
    """At equal SNR but another d (n scaled with d), each matched cell's benign share equals the line's at that SNR
    within matched_tol: paired over seed indices (TOST; the cells are independent draws, so pairing by index only
    forms differences of independent units), all cells."""
    s, mt = m["scarce"], m["scarce"]["matched"]
    line, match = _benign(s, cfg), _benign(mt, cfg)
    tests, pairs = {}, []
    for c, snr in enumerate(mt["snr"]):
        j = int(np.argmin(np.abs(np.asarray(s["snr"]) - snr)))
        if abs(s["snr"][j] - snr) > 1e-6 * max(snr, 1e-12):
            return evidence(None, note=f"no line cell has the SNR {snr:.3g} of a matched cell")
        tests[f"snr_{snr:.3g}"] = decide.paired(match[c], line[j], within=(-cfg.matched_tol, cfg.matched_tol))
        pairs.append([float(snr), float(line[j].mean()), float(match[c].mean())])
    return _all_of(tests, d_line=s["d"], d_matched=mt["d"], snr_line_share_matched_share=pairs)


@register
class W2SCNN(Study):
    name = "w2s-cnn"
    paper = Paper(
        "From Linear to Nonlinear: Provable Weak-to-Strong Generalization through Feature Learning",
        "arXiv:2510.24812",
        "Oh, Song, Yun",
    )
    summary = (
        "A two-layer ReLU CNN trained on a linear CNN's labels learns the hard signal the teacher cannot see: early "
        "label correction then degradation with abundant data; benign vs harmful overfitting with scarce data."
    )
    accelerated = True  # teacher and student CNNs and their data go to ctx.device

    @dataclass
    class Config:
        # data model (reconstructed)
        mu_norm: float = 4.0
        sigma_p: float = 1.0
        p_easy: float = 0.5
        p_hard: float = 0.3
        p_both: float = 0.2
        n_test: int = 3000
        n_val: int = 1000  # held-out, true labels: selects the student's best step (the test set never does)
        # teacher
        n_teacher: int = 200
        teacher_lr: float = 0.1
        teacher_steps: int = 200
        # student
        filters: int = 10
        sigma0: float = 0.01
        # data-abundant regime
        d_abundant: int = 200
        nu_abundant: float = 4.0
        n_abundant: int = 1500
        lr_abundant: float = 0.1
        steps_abundant: int = 300
        snapshot_every: int = 10
        # data-scarce regime: one SNR line (d, ‖ν‖ fixed; n varies), trained to fit the pseudo-labels, plus cells at
        # another d with the same SNR (n scaled with d)
        d_scarce: int = 4000  # large d keeps r = n p_b‖ν‖²/(σ_p²d) < 1 while the SNR crosses 1
        nu_scarce: float = 8.0
        n_scarce: tuple[int, ...] = (10, 20, 40, 80, 160)
        d_match: int = 2000
        n_match: tuple[int, ...] = (20, 80)  # at d_match: the SNR of n = 40 and 160 on the line
        n_test_scarce: int = 1000
        lr_scarce: float = 0.5
        steps_scarce: int = 300
        seeds: int = 5  # abundant regime (the unit of its claims: >= 5 for a decision)
        # claim thresholds (fixed before the runs)
        chance_band: float = 0.05  # |error − 0.5| that counts as chance on hard-only inputs
        error_tol: float = 0.03  # |teacher test error − p_h/2|
        student_gain: float = 0.05  # test-error margin by which the student must beat the teacher
        pseudo_fit_tol: float = 0.05  # |pseudo-label accuracy − (1 − flip rate)|
        flipped_true_min: float = 0.9  # share of flipped points predicted with their true label
        overtrain_rise: float = 0.01  # test-error rise from the best step to the last
        towards_teacher: float = 0.05  # 2026-12-04, fixed before the run: memorising the teacher's flips
        benign_error: float = 0.20  # a seed "ends benign" when its hard-only error is at most this
        matched_tol: float = 0.3  # 2026-12-04, fixed before the run: benign shares at equal SNR may differ this much
        seeds_scarce: int = 12  # each scarce cell is bimodal over seeds (signal learned or not): count them

        def validate(self) -> None:
            if self.seeds < 1 or self.seeds_scarce < 1:
                raise ValueError("seeds and seeds_scarce must be >= 1")
            if min(self.n_scarce) < 2 or self.n_abundant < 2 or self.n_teacher < 2:
                raise ValueError("sample sizes must be >= 2")
            if self.steps_abundant < self.snapshot_every or self.snapshot_every < 1:
                raise ValueError("need 1 <= snapshot_every <= steps_abundant")
            PatchModel(self.d_abundant, self.mu_norm, self.nu_abundant, self.sigma_p, self.p_easy, self.p_hard,
                       self.p_both)

    presets = {
        "smoke": {
            "n_test": 400,
            "n_val": 200,
            "n_teacher": 60,
            "teacher_steps": 50,
            "d_abundant": 60,
            "n_abundant": 200,
            "steps_abundant": 40,
            "d_scarce": 80,
            "n_scarce": (20, 40),
            "nu_scarce": 4.5,
            "d_match": 40,
            "n_match": (10,),
            "n_test_scarce": 300,
            "steps_scarce": 40,
            "seeds": 1,
            "seeds_scarce": 2,
        },
        "quick": {},
        "full": {
            "d_abundant": 400,
            "n_abundant": 3000,
            "steps_abundant": 600,
            "d_scarce": 8000,
            "n_scarce": (10, 20, 40, 80, 160, 320),
            "d_match": 4000,
            "n_match": (20, 80, 160),
            "steps_scarce": 1000,
            "seeds": 5,
            "seeds_scarce": 30,
        },
    }

    claims = [
        Claim(
            "teacher-at-chance-on-hard",
            "the linear CNN teacher is at chance on hard-only inputs (within {chance_band}) and its error is p_h/2 "
            "(within {error_tol}): holds by construction (ν_y − ν_y = 0 for every linear filter)", _claim_teacher,
            kind="identity"),
        Claim(
            "abundant-student-beats-teacher",
            "data-abundant, over seeds: at the validation-selected step the student beats the teacher by > "
            "{student_gain}, fits the pseudo-labels only to 1 − flip rate (mean gap < {pseudo_fit_tol}), predicts > "
            "{flipped_true_min} of flipped points with their true label, and degrades with overtraining (by > "
            "{overtrain_rise}); t-tests, all four must hold",
            _claim_abundant,
        ),
        Claim(
            "overtraining-moves-to-teacher",
            "data-abundant, over seeds: from the validation-selected step to the end of training the student memorises "
            "the teacher's mistakes: pseudo-label fit rises and true-label predictions on flipped points fall (each by "
            "> {towards_teacher}), and its test error ends closer to the teacher's; t-tests, all three must hold",
            _claim_towards_teacher),
        Claim(
            "linear-student-control",
            "control: a linear student never beats the teacher on hard-only inputs (error >= 0.5 - {chance_band}): "
            "holds by construction (ν − ν = 0)",
            _claim_linear_control, kind="identity"),
        Claim(
            "scarce-benign-harmful-separation",
            "data-scarce (r < 1), one SNR line (n varies at fixed d and ‖ν‖): seeds end benign (hard-only error ≤ "
            "{benign_error}) more often at the largest SNR n p_b² ‖ν‖⁴ / (σ_p⁴ d) than at the smallest (paired over "
            "seeds, sign-flip test, margin 0)", _claim_scarce),
        Claim(
            "scarce-error-falls-with-n",
            "data-scarce (r < 1): along the SNR line the hard-only error at convergence falls with n (per-seed slope "
            "on log2 n < 0, t-test over seeds)",
            _claim_scarce_monotone),
        Claim(
            "scarce-snr-decides",
            "data-scarce: cells at another d with the same SNR (n scaled with d) end benign as often as the line's "
            "(per-seed difference of benign indicators within ±{matched_tol}, TOST, every matched cell)",
            _claim_matched),
    ]

    # ------------------------------------------------------------------------------------------------
    def run(self, cfg: W2SCNN.Config, ctx: RunContext) -> dict[str, Any]:
        from genlab.harness.torch_setup import setup_torch

        setup_torch(1)

        def model(d: int, nu: float) -> PatchModel:
            return PatchModel(d, cfg.mu_norm, nu, cfg.sigma_p, cfg.p_easy, cfg.p_hard, cfg.p_both)

        common = {"filters": cfg.filters, "sigma0": cfg.sigma0, "teacher_lr": cfg.teacher_lr,
                  "teacher_steps": cfg.teacher_steps, "device": ctx.device}

        # --- data-abundant regime -----------------------------------------------------------------
        pm = model(cfg.d_abundant, cfg.nu_abundant)
        runs, controls = [], []
        for s in ctx.progress(range(cfg.seeds), desc="seeds (abundant regime)"):
            test = pm.sample(cfg.n_test, ctx.rng("test", "abundant", s))
            val = pm.sample(cfg.n_val, ctx.rng("val", "abundant", s))  # picks the "early" step; test only reports
            kw = dict(common, lr=cfg.lr_abundant, steps=cfg.steps_abundant, snapshot_every=cfg.snapshot_every)
            res = w2s_cnn_run(pm, cfg.n_teacher, cfg.n_abundant, test, ctx.rng("abundant", s),
                              ctx.seed_for("init", s), val=val, **kw)
            runs.append(res)
            lin = w2s_cnn_run(pm, cfg.n_teacher, cfg.n_abundant, test, ctx.rng("abundant", s),
                              ctx.seed_for("init", s), linear_student=True, **kw)
            controls.append(lin)
            i = int(np.argmin(res["val"]))
            ctx.log(f"abundant seed {s}: teacher {res['teacher_test']:.3f} (hard {res['teacher_hard']:.3f}); "
                    f"student best {res['test'][i]:.3f} at step {res['steps'][i]}, final {res['test'][-1]:.3f}; "
                    f"linear student final hard {lin['hard'][-1]:.3f}")
            for k, st in enumerate(res["steps"]):
                ctx.record(regime="abundant", seed=s, step=st, test=res["test"][k], hard=res["hard"][k],
                           pseudo_acc=res["pseudo_acc"][k], flipped_true=res["flipped_true"][k])

        # --- data-scarce regime: one SNR line, and cells of equal SNR at another d -------------------------
        line = self._scarce_cells(cfg, ctx, cfg.d_scarce, cfg.n_scarce, common, "line")
        matched = self._scarce_cells(cfg, ctx, cfg.d_match, cfg.n_match, common, "match")
        ctx.log(f"scarce line d={cfg.d_scarce} ‖ν‖={cfg.nu_scarce}: benign share by n "
                f"{dict(zip(line['n'], np.round(line['benign_frac'], 2)))}")
        scarce = {**line, "matched": matched}

        return {
            "data_model": DATA_MODEL_VERSION,
            "p_hard": cfg.p_hard,
            "teacher": {
                "test_mean": float(np.mean([x["teacher_test"] for x in runs])),
                "hard_mean": float(np.mean([x["teacher_hard"] for x in runs])),
                "easy_mean": float(np.mean([x["teacher_easy"] for x in runs])),
            },
            "abundant": {
                "d": cfg.d_abundant,
                "n": cfg.n_abundant,
                "nu": cfg.nu_abundant,
                "r": pm.signal_noise_ratio(cfg.n_abundant),
                "runs": runs,
            },
            "linear_control": {"hard": [c["hard"][-1] for c in controls], "test": [c["test"][-1] for c in controls]},
            "scarce": scarce,
        }

    # ------------------------------------------------------------------------------------------------
    @staticmethod
    def _scarce_cells(cfg: W2SCNN.Config, ctx: RunContext, d: int, ns: tuple[int, ...], common: dict, tag: str
                      ) -> dict[str, Any]:
        """Hard-only test error at the end of training for every (n, seed) at dimension d and ‖ν‖ = nu_scarce,
        with the share of seeds that end benign (error ≤ benign_error) and its 95 % Wilson interval."""
        from scipy.stats import binomtest

        pm = PatchModel(d, cfg.mu_norm, cfg.nu_scarce, cfg.sigma_p, cfg.p_easy, cfg.p_hard, cfg.p_both)
        hard = np.zeros((len(ns), cfg.seeds_scarce))
        t_hard = np.zeros(cfg.seeds_scarce)
        for s in range(cfg.seeds_scarce):
            test = pm.sample(cfg.n_test_scarce, ctx.rng("test", tag, s))
            for b, n in enumerate(ns):
                res = w2s_cnn_run(pm, cfg.n_teacher, n, test, ctx.rng(tag, b, s), ctx.seed_for("init", tag, b, s),
                                  lr=cfg.lr_scarce, steps=cfg.steps_scarce, snapshot_every=cfg.steps_scarce, **common)
                hard[b, s] = res["hard"][-1]
                t_hard[s] = res["teacher_hard"]
        k = cfg.seeds_scarce
        benign = (hard <= cfg.benign_error).sum(1)
        return {
            "d": d,
            "nu": cfg.nu_scarce,
            "n": list(ns),
            "snr": [pm.snr(n) for n in ns],
            "r": [pm.signal_noise_ratio(n) for n in ns],
            "hard": hard,
            "hard_mean": hard.mean(1),
            "hard_se": hard.std(1, ddof=1) / np.sqrt(k) if k > 1 else np.zeros(len(ns)),
            "benign_frac": benign / k,
            "benign_ci": [tuple(binomtest(int(b), k).proportion_ci(0.95, "wilson")) for b in benign],
            "teacher_hard_mean": float(t_hard.mean()),
            "benign_error": cfg.benign_error,
        }

    def figures(self, metrics: dict[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        m = metrics
        fig, ax = plt.subplots(1, 3, figsize=(16, 4.6))
        a = m["abundant"]
        for s, run in enumerate(a["runs"]):
            lab = s == 0
            ax[0].plot(run["steps"], run["test"], color="C0", alpha=0.8, label="student test error" if lab else None)
            ax[0].plot(run["steps"], run["hard"], color="C1", alpha=0.8,
                       label="student hard-only error" if lab else None)
            ax[0].plot(run["steps"], run["flipped_true"], color="C2", alpha=0.8,
                       label="flipped points predicted with true label" if lab else None)
            ax[0].plot(run["steps"], run["pseudo_acc"], color="C3", alpha=0.8,
                       label="train accuracy on pseudo-labels" if lab else None)
        ax[0].axhline(m["teacher"]["test_mean"], color="k", ls=":", label="teacher test error")
        ax[0].set(xlabel="GD step", ylabel="rate", ylim=(-0.02, 1.02),
                  title=f"(a) abundant: n={a['n']}, d={a['d']}, ‖ν‖={a['nu']} (r={a['r']:.0f})")
        ax[0].legend(fontsize=7)

        s = m["scarce"]
        mt = s["matched"]
        for cells, marker, colour in ((s, "o", "C0"), (mt, "s", "C3")):
            snr, hard = np.asarray(cells["snr"]), np.asarray(cells["hard"])
            label = f"d={cells['d']}, ‖ν‖={cells['nu']}"
            ax[1].errorbar(snr, cells["hard_mean"], yerr=2 * np.asarray(cells["hard_se"]), marker=marker, ms=5,
                           color=colour, capsize=3, label=f"{label}: mean ± 2 SE")
            ax[1].scatter(np.repeat(snr, hard.shape[1]), hard.ravel(), s=8, alpha=0.35, color=colour)
            frac, ci = np.asarray(cells["benign_frac"]), np.asarray(cells["benign_ci"])
            ax[2].errorbar(snr, frac, yerr=[frac - ci[:, 0], ci[:, 1] - frac], marker=marker, ms=5, color=colour,
                           capsize=3, label=f"{label}, n = {', '.join(map(str, cells['n']))}")
        ax[1].axhline(0.5, color="k", ls=":", lw=1, label="teacher (chance)")
        ax[1].axhline(s["benign_error"], color="g", ls="--", lw=1, label="benign threshold")
        ax[1].set(xscale="log", xlabel="SNR n p_b²‖ν‖⁴/(σ_p⁴d)", ylabel="hard-only test error at the end",
                  title="(b) scarce: each seed (dots) and the mean")
        ax[1].legend(fontsize=7)
        ax[2].set(xscale="log", xlabel="SNR n p_b²‖ν‖⁴/(σ_p⁴d)", ylim=(-0.03, 1.03),
                  ylabel=f"share of seeds ending benign (≤ {s['benign_error']})",
                  title="(c) scarce: benign share, 95 % Wilson intervals")
        ax[2].legend(fontsize=7)
        fig.suptitle(f"w2s-cnn — data model {m['data_model']} (reconstructed)", fontsize=9)
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "w2s-cnn", dpi=72,
            caption=(
                "Weak teacher vs strong student error on hard-only inputs over training, and benign "
                "vs harmful overfitting against the signal statistic"
            ),
        )
        return [path]
