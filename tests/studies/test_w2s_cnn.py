"""Numerical checks of the w2s-cnn study's pieces: label correction on a small abundant case and the claims."""

from __future__ import annotations

import numpy as np

from genlab.data.patches import PatchModel
from genlab.studies.w2s_cnn import (
    W2SCNN,
    _abundant_held,
    _claim_matched,
    _claim_scarce,
    _claim_scarce_monotone,
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


def test_abundant_claim_logic():
    run = {
        "test": [0.4, 0.01, 0.05],
        "teacher_test": 0.15,
        "flipped_true": [0.5, 0.95, 0.6],
        "pseudo_acc": [0.6, 0.85, 0.9],
        "flip_rate": 0.15,
    }
    cfg = W2SCNN.Config()
    assert _abundant_held(run, cfg)[0]
    assert not _abundant_held({**run, "test": [0.4, 0.01, 0.011]}, cfg)[0]  # no degradation
    assert not _abundant_held({**run, "flipped_true": [0.5, 0.7, 0.6]}, cfg)[0]  # no label correction


def _line(shares, snr=(0.4, 0.8, 1.6, 3.2), k=12, hard=None, se=None):
    from genlab.stats import wilson_interval

    shares = np.asarray(shares, float)
    hard = np.asarray(hard if hard is not None else 0.5 - 0.4 * shares)
    return {
        "snr": list(snr), "r": [0.1] * len(snr), "benign_frac": shares,
        "benign_ci": [wilson_interval(round(f * k), k) for f in shares],
        "hard_mean": hard, "hard_se": np.asarray(se if se is not None else np.full(len(snr), 0.01)),
    }


def test_wilson_interval():
    from genlab.stats import wilson_interval

    lo, hi = wilson_interval(6, 12)
    # by hand: 0.5 + 1.96·√(1/48 + 1.96²/576) / (1 + 1.96²/12) = 0.7462
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-12 and abs(hi - 0.7462) < 1e-3
    assert wilson_interval(0, 12)[0] == 0.0 and wilson_interval(12, 12)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_scarce_claims():
    rises = {"scarce": _line([1 / 12, 4 / 12, 8 / 12, 11 / 12])}
    assert _claim_scarce(rises, CFG).held is True
    falls = {"scarce": _line([11 / 12, 8 / 12, 4 / 12, 1 / 12])}
    assert _claim_scarce(falls, CFG).held is False
    flat = {"scarce": _line([0.5, 0.5, 0.5, 0.5])}
    assert _claim_scarce(flat, CFG).held is None
    assert _claim_scarce_monotone({"scarce": _line([0, 0, 0, 0], hard=[0.5, 0.4, 0.3, 0.1])}, CFG).held is True
    assert _claim_scarce_monotone({"scarce": _line([0, 0, 0, 0], hard=[0.5, 0.1, 0.4, 0.1])}, CFG).held is False
    assert _claim_scarce_monotone({"scarce": _line([0, 0, 0, 0], hard=[0.3, 0.3, 0.3, 0.3])}, CFG).held is None
    line = _line([1 / 12, 4 / 12, 8 / 12, 11 / 12])
    same = dict(_line([4 / 12, 11 / 12], snr=(0.8, 3.2)), d=2000)
    assert _claim_matched({"scarce": dict(line, d=4000, matched=same)}, CFG).held is True
    worse = dict(_line([0.0, 2 / 12], snr=(0.8, 3.2)), d=2000)
    assert _claim_matched({"scarce": dict(line, d=4000, matched=worse)}, CFG).held is False
    off = dict(_line([0.0], snr=(5.0,)), d=2000)
    assert _claim_matched({"scarce": dict(line, d=4000, matched=off)}, CFG).held is None


def test_overtraining_towards_teacher_claim_reads_the_trajectory():
    from genlab.studies.w2s_cnn import W2SCNN, _claim_towards_teacher

    cfg = W2SCNN.config("quick")
    run = {"test": [0.3, 0.02, 0.08], "val": [0.3, 0.03, 0.09], "teacher_test": 0.15,
           "pseudo_acc": [0.5, 0.85, 0.97], "flipped_true": [0.5, 0.95, 0.2]}
    m = {"abundant": {"runs": [run, dict(run)]}}
    ev = _claim_towards_teacher(m, cfg)
    assert ev.held is True and abs(ev.numbers["mean_flipped_true_fall"] - 0.75) < 1e-12
    stays = dict(run, flipped_true=[0.5, 0.95, 0.93])  # keeps correcting the teacher: not memorising its flips
    assert _claim_towards_teacher({"abundant": {"runs": [stays, stays]}}, cfg).held is False
