"""Numerical checks of the w2s-cnn study's pieces: label correction on a small abundant case and the claims."""

from __future__ import annotations

import numpy as np
import pytest

from genlab.data.patches import PatchModel
from genlab.studies.w2s_cnn import (
    W2SCNN,
    _claim_abundant,
    _claim_matched,
    _claim_scarce,
    _claim_scarce_monotone,
    _claim_towards_teacher,
    _error_slopes,
    w2s_cnn_run,
)

CFG = W2SCNN.config("quick")


def test_small_abundant_run_corrects_the_teachers_labels():
    pm = PatchModel(d=60, mu_norm=4.0, nu_norm=4.0)
    rng = np.random.default_rng(0)
    test = pm.sample(1500, rng)
    res = w2s_cnn_run(
        pm,
        100,
        600,
        test,
        rng,
        0,
        filters=6,
        sigma0=0.01,
        lr=0.1,
        steps=60,
        teacher_lr=0.1,
        teacher_steps=100,
        snapshot_every=20,
    )
    assert res["steps"] == [0, 20, 40, 60]
    assert 0.4 <= res["teacher_hard"] <= 0.6
    assert res["flip_rate"] == np.float64(res["flip_rate"]) and 0.08 <= res["flip_rate"] <= 0.22
    best = int(np.argmin(res["test"]))
    assert res["test"][best] < res["teacher_test"] - 0.05  # the student beats its teacher
    assert res["flipped_true"][best] > 0.8  # ...by predicting the true label on most flipped points
    assert res["pseudo_acc"][best] < 1 - res["flip_rate"] + 0.05  # ...so it does not fit the pseudo-labels


RUN = {
    "test": [0.4, 0.01, 0.05],
    "val": [0.4, 0.012, 0.05],
    "teacher_test": 0.15,
    "flipped_true": [0.5, 0.95, 0.6],
    "pseudo_acc": [0.6, 0.85, 0.9],
    "flip_rate": 0.15,
}


def _seeds(run, k=6):
    """k seeds of ``run`` with small seed-to-seed differences (the decision rule needs >= 5 units)."""
    return {"abundant": {"runs": [dict(run, teacher_test=run["teacher_test"] + 0.002 * i,
                                       flipped_true=[f - 0.003 * i for f in run["flipped_true"]],
                                       test=[t + 0.001 * i for t in run["test"]]) for i in range(k)]}}


def test_abundant_claim_is_four_tests_over_seeds():
    cfg = W2SCNN.Config()
    ev = _claim_abundant(_seeds(RUN), cfg)
    assert ev.held is True and ev.test.n == 6
    assert ev.numbers["mean_best_test"] == pytest.approx(0.01 + 0.0025)
    assert _claim_abundant(_seeds({**RUN, "test": [0.4, 0.01, 0.011]}), cfg).held is False  # no degradation
    assert _claim_abundant(_seeds({**RUN, "flipped_true": [0.5, 0.7, 0.6]}), cfg).held is False  # no correction
    assert _claim_abundant(_seeds(RUN, k=3), cfg).held is None  # three seeds never decide


def test_overtraining_towards_teacher_claim_reads_the_trajectory():
    run = {**RUN, "test": [0.3, 0.02, 0.08], "val": [0.3, 0.03, 0.09], "pseudo_acc": [0.5, 0.85, 0.97],
           "flipped_true": [0.5, 0.95, 0.2]}
    ev = _claim_towards_teacher(_seeds(run), CFG)
    assert ev.held is True and abs(ev.numbers["mean_flipped_true_fall"] - 0.75) < 1e-12
    stays = dict(run, flipped_true=[0.5, 0.95, 0.93])  # keeps correcting the teacher: not memorising its flips
    assert _claim_towards_teacher(_seeds(stays), CFG).held is False


def _cells(hard, snr=(0.4, 0.8, 1.6, 3.2), n=(10, 20, 40, 80)):
    """Cells x seeds hard-only errors (one row per cell)."""
    return {"snr": list(snr), "r": [0.1] * len(snr), "n": list(n), "hard": np.asarray(hard, dtype=float)}


def _benign_rows(counts, k=12):
    """Rows with ``c`` benign seeds (error 0.05) out of ``k``, the rest harmful (0.5)."""
    return [[0.05] * c + [0.5] * (k - c) for c in counts]


def test_scarce_claims():
    rises = {"scarce": _cells(_benign_rows([1, 4, 8, 11]))}
    ev = _claim_scarce(rises, CFG)
    assert ev.held is True and ev.test.method == "sign-flip" and ev.test.effect == pytest.approx(10 / 12)
    assert _claim_scarce({"scarce": _cells(_benign_rows([11, 8, 4, 1]))}, CFG).held is False
    assert _claim_scarce({"scarce": _cells(_benign_rows([6, 6, 6, 6]))}, CFG).held is None
    k = 8
    falls = np.array([[0.5, 0.4, 0.3, 0.1]] * k).T + np.linspace(0, 0.02, k)
    assert _claim_scarce_monotone({"scarce": _cells(falls)}, CFG).held is True
    assert _claim_scarce_monotone({"scarce": _cells(falls[::-1])}, CFG).held is False
    flat = np.array([[0.3, 0.32, 0.28, 0.3]] * k).T + np.random.default_rng(0).normal(0, 0.05, (4, k))
    assert _claim_scarce_monotone({"scarce": _cells(flat)}, CFG).held is None
    line = _cells(_benign_rows([1, 4, 8, 11]))
    same = dict(_cells(_benign_rows([4, 11]), snr=(0.8, 3.2), n=(10, 40)), d=2000)
    assert _claim_matched({"scarce": dict(line, d=4000, matched=same)}, CFG).held is True
    worse = dict(_cells(_benign_rows([4, 0]), snr=(0.8, 3.2), n=(10, 40)), d=2000)
    assert _claim_matched({"scarce": dict(line, d=4000, matched=worse)}, CFG).held is False
    off = dict(_cells(_benign_rows([0]), snr=(5.0,), n=(10,)), d=2000)
    assert _claim_matched({"scarce": dict(line, d=4000, matched=off)}, CFG).held is None


def test_error_slopes_are_least_squares_on_log2_n():
    hard = np.array([[0.5, 0.4], [0.4, 0.4], [0.3, 0.4]])  # two seeds over n = 10, 20, 40
    assert _error_slopes(hard, [10, 20, 40]) == pytest.approx([-0.1, 0.0])
