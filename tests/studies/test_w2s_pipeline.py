"""The weak-to-strong pipeline on tiny cases with known answers, and the ridge study's multi-index pieces."""

from __future__ import annotations

import numpy as np
import pytest

from genlab.measures.weak_to_strong import weak_to_strong
from genlab.studies.w2s_ridge import _he2, multi_index_run


def _linear_sampler(w: np.ndarray, noise: float):
    def sample(k: int, rng: np.random.Generator):
        x = rng.standard_normal((k, w.size))
        return x, x @ w + noise * rng.standard_normal(k)

    return sample


def _ridge(lam: float):
    def fit(x, y):
        k, d = x.shape
        w = np.linalg.lstsq(x.T @ x / k + lam * np.eye(d), x.T @ y / k, rcond=None)[0]
        return lambda z: z @ w

    return fit


def _mse(p, y):
    return float(np.mean((p - y) ** 2))


def test_noiseless_teacher_gives_exact_student():
    w = np.array([1.0, -2.0, 0.5])
    out = weak_to_strong(_linear_sampler(w, 0.0), _ridge(0.0), _ridge(0.0), _mse, 20, 30, 100, np.random.default_rng(0))
    assert out.teacher_score < 1e-20 and out.student_score < 1e-20 and out.pseudo_label_score < 1e-20


def test_ridgeless_student_with_more_samples_than_dims_copies_the_teacher():
    w = np.random.default_rng(1).standard_normal(8)
    out = weak_to_strong(_linear_sampler(w, 1.0), _ridge(0.5), _ridge(0.0), _mse, 12, 40, 500, np.random.default_rng(2))
    assert out.student_score == pytest.approx(out.teacher_score, rel=1e-9)
    assert out.gain == pytest.approx(0.0, abs=1e-9)
    # the pseudo-labels are as wrong as the teacher (excess risk + noise) on the student's inputs
    assert out.pseudo_label_score == pytest.approx(out.teacher_score, rel=0.3)


def test_shrinking_student_beats_an_overfit_teacher():
    # OLS teacher with n barely above d has a huge norm; a shrinking student recovers most of the excess risk
    d = 20
    w = np.random.default_rng(3).standard_normal(d) / np.sqrt(d)
    gains = [
        weak_to_strong(_linear_sampler(w, 1.0), _ridge(0.0), _ridge(1.0), _mse, d + 3, 4000, 2000,
                       np.random.default_rng(s)).gain
        for s in range(5)
    ]
    assert max(gains) < 0


def test_classification_labels_and_pseudo_label_error():
    rng = np.random.default_rng(4)

    def sample(k, r):
        x = r.standard_normal((k, 2))
        return x, np.sign(x[:, 0])

    def fit_teacher(x, y):  # a fixed teacher tilted by 45°: wrong on a quarter of the plane
        return lambda z: z[:, 0] + z[:, 1]

    def err(p, y):
        return float(np.mean(p != y))

    out = weak_to_strong(sample, fit_teacher, lambda x, y: (lambda z: np.sign(z[:, 0])), err, 10, 20000, 20000, rng,
                         label=np.sign)
    assert out.teacher_score == pytest.approx(0.25, abs=0.01)
    assert out.pseudo_label_score == pytest.approx(0.25, abs=0.01)
    assert out.student_score == 0.0


def test_pipeline_rejects_bad_sizes():
    with pytest.raises(ValueError):
        weak_to_strong(_linear_sampler(np.ones(2), 0.0), _ridge(0.0), _ridge(0.0), _mse, 0, 5, 5,
                       np.random.default_rng(0))


def test_hermite_feature_is_invisible_to_linear_models():
    z = np.random.default_rng(5).standard_normal(400_000)
    h = _he2(z)
    assert np.mean(h * z) == pytest.approx(0.0, abs=0.01)
    assert np.var(h) == pytest.approx(1.0, abs=0.02)


def test_multi_index_student_beats_teacher_and_refit_loses_the_hard_part():
    r = multi_index_run(d=30, n=300, m=1500, n_pre=3000, c_hard=1.0, sigma2=0.5, lam=1e-2, n_test=4000,
                        rng=np.random.default_rng(6))
    assert r["overlap_u2"] > 0.9  # pre-training found the hard direction
    # the teacher's excess error is about the hard variance c² = 1; the student removes most of it
    assert r["teacher"] - r["student"] > 0.6
    assert abs(r["student_refit_head"] - r["teacher"]) < 0.2
    assert r["student_true_labels"] <= r["student"] + 0.05


def test_multi_index_finetuned_head_follows_the_teacher_labels():
    """Fine-tuning the pre-trained hard head on teacher labels drifts it to the teacher's (hard-blind) fit: with a
    long budget almost none of the frozen student's gain is left; with no steps it is the pre-trained model."""
    args = dict(d=30, n=300, m=1500, n_pre=3000, c_hard=1.0, sigma2=0.5, lam=1e-2, n_test=4000)
    long = multi_index_run(**args, rng=np.random.default_rng(6), finetune_steps=200)
    frozen_gain = long["teacher"] - long["student"]
    assert 0 <= long["finetune_gain"] < 0.1 * frozen_gain
    assert long["finetune_stop_step"] > 20  # held-out teacher labels keep asking for more steps
    none = multi_index_run(**args, rng=np.random.default_rng(6), finetune_steps=0)
    assert none["finetune_stop_step"] == 0
    assert none["student_finetuned_head"] == pytest.approx(none["pretrained_only"], abs=1e-9)  # untouched head
