"""Conflicting tasks on one input space: scikit-learn's digits with different label maps (identity, parity,
"> 4", mod 3, "has a loop", prime, 9 − d, d + 3 mod 10). A model reads all tasks from the same pixels through a
shared body; its output layer holds one block of ``BLOCK`` logits per task (task t uses the first
``N_CLASSES[t]`` logits of block t). Experts fine-tuned on different tasks pull the shared hidden units in
different, often opposite, directions: the setting where merging methods differ.

Splits are stratified by digit and disjoint: train (fitting), validation (every selection: merge
hyper-parameters, the curriculum's capability ranking) and test (reported only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genlab.data.digits import load_digits_arrays

TASKS: dict[str, tuple[int, ...]] = {
    "identity": (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    "parity": (0, 1, 0, 1, 0, 1, 0, 1, 0, 1),
    "greater4": (0, 0, 0, 0, 0, 1, 1, 1, 1, 1),
    "mod3": (0, 1, 2, 0, 1, 2, 0, 1, 2, 0),
    "loop": (1, 0, 0, 0, 1, 0, 1, 0, 1, 1),
    "prime": (0, 0, 1, 1, 0, 1, 0, 1, 0, 0),
    "reverse": (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
    "shift3": (3, 4, 5, 6, 7, 8, 9, 0, 1, 2),
}
TASK_NAMES = tuple(TASKS)
N_CLASSES = {t: len(set(m)) for t, m in TASKS.items()}
BLOCK = 10  # logits per task in the output layer


def task_labels(task: str, digits: np.ndarray) -> np.ndarray:
    """Labels of ``task`` for digit classes ``digits``."""
    return np.asarray(TASKS[task], dtype=np.int64)[digits]


@dataclass(frozen=True)
class Splits:
    x: np.ndarray  # (n, 64) pixels in [0, 1]
    digit: np.ndarray  # (n,) digit class
    train: np.ndarray  # indices
    val: np.ndarray
    test: np.ndarray


def digit_task_splits(fractions: tuple[float, float, float] = (0.5, 0.2, 0.3), seed: int = 0) -> Splits:
    """Disjoint, digit-stratified train / validation / test index sets over the 1797 digits."""
    if len(fractions) != 3 or min(fractions) <= 0 or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions}")
    x, y = load_digits_arrays()
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[], [], []]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        a = round(fractions[0] * len(idx))
        b = a + round(fractions[1] * len(idx))
        for part, chunk in zip(parts, (idx[:a], idx[a:b], idx[b:])):
            part.append(chunk)
    train, val, test = (np.sort(np.concatenate(p)) for p in parts)
    return Splits(x, y, train, val, test)
