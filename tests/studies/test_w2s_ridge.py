"""w2s-ridge claims on synthetic metrics: every empirical claim is decided by a test over independent
repetitions (reproduced, not reproduced, inconclusive with too few), and the identities hold by construction."""

from __future__ import annotations

import numpy as np

from genlab.studies.w2s_ridge import (
    W2SRidge,
    _claim_copies_teacher,
    _claim_finetuned_head,
    _claim_regime,
    _claim_under_reg,
    _claim_under_reg_robust,
)

CFG = W2SRidge.config("quick")


def _sweep(reps: int, under_gain: float, opt_gain: float, seed: int = 0) -> dict:
    """λ_T/λ_opt = 0.1, 1, 10; three λ_S; the student's gain per repetition ~ N(mean, sd²) with sd 0.01 below
    λ_opt and 3e-4 from λ_opt up (the Monte Carlo's orders of magnitude)."""
    rng = np.random.default_rng(seed)
    mean = np.array([[under_gain, under_gain / 2, 0.3], [0.0, opt_gain, 0.2], [0.0, 0.01, 0.1]])
    sd = np.array([0.01, 3e-4, 3e-4])[:, None]
    return {"lam_t_factor": [0.1, 1.0, 10.0], "de_best_gain": [-0.5, 0.0, 0.0], "de_teacher": [2.0, 1.0, 1.5],
            "de_lam_s_index": [0, 0, 0], "mc_gain_reps": mean + sd * rng.standard_normal((reps, 3, 3))}


def test_under_regularisation_claim_is_tested_over_repetitions():
    assert _claim_under_reg({"sweep": _sweep(40, -0.5, 0.0)}, CFG).held is True
    # a student λ_S that beats the optimal teacher by 5 % of its MSE: not reproduced
    assert _claim_under_reg({"sweep": _sweep(40, -0.5, -0.05)}, CFG).held is False
    # no gain below λ_opt: the Monte Carlo contradicts the claim
    assert _claim_under_reg({"sweep": _sweep(40, 0.05, 0.0)}, CFG).held is False
    # within noise: inconclusive; 3 repetitions: inconclusive
    assert _claim_under_reg({"sweep": _sweep(40, -0.002, 0.0)}, CFG).held is None
    assert _claim_under_reg({"sweep": _sweep(3, -0.5, 0.0)}, CFG).held is None
    bad_de = dict(_sweep(40, -0.5, 0.0), de_best_gain=[-0.5, -0.1, 0.0])  # the DE gains at λ_opt
    assert _claim_under_reg({"sweep": bad_de}, CFG).held is False


def test_under_regularisation_robust_reads_both_sweeps():
    good, flat = _sweep(40, -0.5, 0.0), _sweep(40, 0.05, 0.0, seed=1)
    assert _claim_under_reg_robust({"sweep_underparam": good, "sweep_powerlaw": good}, CFG).held is True
    assert _claim_under_reg_robust({"sweep_underparam": good, "sweep_powerlaw": flat}, CFG).held is False
    assert _claim_under_reg_robust({"sweep": good}, CFG).held is None


def _regime(reps: int, under: float, opt: float) -> dict:
    rng = np.random.default_rng(2)
    noise = 0.01 * rng.standard_normal((reps, 3))
    return {"regime": {"m_over_d": [0.5, 0.75, 2.0], "de_ridgeless_gain_under": [-0.2, -0.1, 0.0],
                       "de_ridgeless_gain_opt": [0.1, 0.05, 0.0],
                       "mc_ridgeless_gain_reps_under": np.array([under, under, 0.0]) * (1 + noise) * [1, 1, 0],
                       "mc_ridgeless_gain_reps_opt": np.array([opt, opt, 0.0]) * (1 + noise) * [1, 1, 0]}}


def test_ridgeless_regime_splits_the_empirical_part_from_the_identity():
    assert _claim_regime(_regime(30, -0.2, 0.1), CFG).held is True
    assert _claim_regime(_regime(30, 0.2, 0.1), CFG).held is False
    assert _claim_regime(_regime(4, -0.2, 0.1), CFG).held is None
    assert _claim_copies_teacher(_regime(30, -0.2, 0.1), CFG).held is True
    off = _regime(30, -0.2, 0.1)
    off["regime"]["mc_ridgeless_gain_reps_opt"][:, 2] = 1e-3  # m > d but the student does not copy the teacher
    assert _claim_copies_teacher(off, CFG).held is False


def _mi(reps: int, finetune_gain: float) -> dict:
    rng = np.random.default_rng(3)
    teacher = 2.2 + 0.02 * rng.standard_normal(reps)
    student = teacher - 0.8 + 0.01 * rng.standard_normal(reps)
    gain = finetune_gain + 0.004 * rng.standard_normal(reps)
    r = {"teacher": teacher, "student": student, "finetune_gain": gain, "student_finetuned_head": teacher - gain}
    mean = {k: float(np.mean(v)) for k, v in r.items()} | {"finetune_stop_step": 60.0}
    return {"multi_index": {"reps": r, "mean": mean}}


def test_finetuned_head_claim_needs_a_real_share_of_the_gain():
    assert _claim_finetuned_head(_mi(10, 0.0035), CFG).held is False  # a significant but tiny gain
    assert _claim_finetuned_head(_mi(10, 0.5), CFG).held is True
    assert _claim_finetuned_head(_mi(10, 0.2), CFG).held is None  # exactly at the share: undecided
    assert _claim_finetuned_head(_mi(3, 0.5), CFG).held is None
