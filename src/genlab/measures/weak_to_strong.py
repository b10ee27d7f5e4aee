"""A reusable weak-to-strong pipeline: train a teacher on clean data, label fresh data with it, train a
student on those pseudo-labels, and score both against the truth.

The pipeline is model-agnostic: it takes a sampler and three callables, so the same code runs ridge
regression in numpy and CNNs in torch::

    out = weak_to_strong(
        sample=lambda k, rng: make_data(k, rng),          # -> (inputs, true targets)
        fit_teacher=lambda x, y: fit_ridge(x, y, lam=0.1),   # -> predictor: inputs -> outputs
        fit_student=lambda x, y_hat: fit_ridge(x, y_hat, lam=1.0),
        score=lambda pred, y: float(np.mean((pred - y) ** 2)),
        label=None,                                        # teacher outputs -> pseudo-labels (e.g. sign)
        n_teacher=200, n_student=800, n_test=5000, rng=np.random.default_rng(0),
    )
    out.gain  # student score − teacher score (negative = student better for an error score)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["W2SOutcome", "weak_to_strong"]

Predictor = Callable[[Any], Any]


@dataclass
class W2SOutcome:
    """Result of one weak-to-strong run. Scores are errors (lower is better) unless the caller says otherwise."""

    teacher_score: float
    student_score: float
    teacher: Predictor
    student: Predictor
    pseudo_label_score: float  # score of the pseudo-labels against the true targets on the student's inputs
    # the student's inputs, their (hidden) true targets and the pseudo-labels, for diagnostics after training
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def gain(self) -> float:
        """student score − teacher score (negative = the student beats the teacher on an error score)."""
        return self.student_score - self.teacher_score


def weak_to_strong(
    sample: Callable[[int, np.random.Generator], tuple[Any, Any]],
    fit_teacher: Callable[[Any, Any], Predictor],
    fit_student: Callable[[Any, Any], Predictor],
    score: Callable[[Any, Any], float],
    n_teacher: int,
    n_student: int,
    n_test: int,
    rng: np.random.Generator,
    label: Callable[[Any], Any] | None = None,
    test_data: tuple[Any, Any] | None = None,
) -> W2SOutcome:
    """Run teacher → pseudo-labels → student and score both on a held-out test set.

    Draws three independent samples from ``sample``: ``n_teacher`` clean training points for the teacher,
    ``n_student`` fresh inputs whose true targets are *never* shown to the student (they are used only to
    report how good the pseudo-labels are), and ``n_test`` test points (or uses ``test_data``). ``label``
    maps teacher outputs to pseudo-labels (identity by default; ``np.sign`` for classification).
    """
    for name, k in (("n_teacher", n_teacher), ("n_student", n_student)):
        if k < 1:
            raise ValueError(f"{name} must be >= 1, got {k}")
    if test_data is None and n_test < 1:
        raise ValueError("n_test must be >= 1 when no test_data is given")
    label = label or (lambda z: z)
    x_t, y_t = sample(n_teacher, rng)
    x_s, y_s_true = sample(n_student, rng)
    x_te, y_te = test_data if test_data is not None else sample(n_test, rng)

    teacher = fit_teacher(x_t, y_t)
    pseudo = label(teacher(x_s))
    student = fit_student(x_s, pseudo)
    return W2SOutcome(
        teacher_score=float(score(label(teacher(x_te)), y_te)),
        student_score=float(score(label(student(x_te)), y_te)),
        teacher=teacher,
        student=student,
        pseudo_label_score=float(score(pseudo, y_s_true)),
        extras={"x_student": x_s, "y_student_true": y_s_true, "pseudo_labels": pseudo},
    )
