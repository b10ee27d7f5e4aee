"""Modular arithmetic tables (Power et al., 2022): every pair (a, b) labelled with ``a ∘ b mod p``.

Operations: ``add`` (a + b), ``sub`` (a − b, non-commutative), ``mul`` (a · b), ``div`` (a · b⁻¹, b ≠ 0,
non-commutative), ``x2y`` (a² + a·b + b², commutative) and ``sub_sq`` (a² − b, non-commutative).
Inputs come as one-hot pairs (for MLPs) or token sequences ``[a, op, b, =]`` (for transformers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPERATIONS = ("add", "sub", "mul", "div", "x2y", "sub_sq")
COMMUTATIVE = {"add": True, "sub": False, "mul": True, "div": False, "x2y": True, "sub_sq": False}


@dataclass(frozen=True)
class ModularSplit:
    """All pairs of one operation mod ``p`` and a seeded train/test split (index arrays into a, b, c)."""

    p: int
    op: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    train: np.ndarray
    test: np.ndarray

    @property
    def num_classes(self) -> int:
        return self.p


def _is_prime(p: int) -> bool:
    return p >= 2 and all(p % q for q in range(2, int(p**0.5) + 1))


def modular_table(p: int, op: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Operands a, b and results c (int64) for every valid pair of ``op`` mod ``p``."""
    if op not in OPERATIONS:
        raise ValueError(f"unknown operation {op!r}; choose one of {', '.join(OPERATIONS)}")
    if p < 2:
        raise ValueError(f"p must be >= 2, got {p}")
    if op == "div" and not _is_prime(p):
        raise ValueError(f"div needs a prime modulus (b must be invertible), got p={p}")
    a, b = (g.ravel().astype(np.int64) for g in np.meshgrid(np.arange(p), np.arange(p), indexing="ij"))
    if op == "div":
        keep = b != 0
        a, b = a[keep], b[keep]
        c = (a * np.array([pow(int(v), p - 2, p) for v in range(p)], dtype=np.int64)[b]) % p
    elif op == "add":
        c = (a + b) % p
    elif op == "sub":
        c = (a - b) % p
    elif op == "mul":
        c = (a * b) % p
    elif op == "x2y":
        c = (a * a + a * b + b * b) % p
    else:  # sub_sq
        c = (a * a - b) % p
    return a, b, c


def modular_split(p: int, op: str = "add", train_fraction: float = 0.4, seed: int = 0) -> ModularSplit:
    """A random ``train_fraction`` of all pairs for training, the rest for testing (seeded)."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    a, b, c = modular_table(p, op)
    perm = np.random.default_rng(seed).permutation(len(a))
    n_train = int(round(train_fraction * len(a)))
    if n_train < 1 or n_train >= len(a):
        raise ValueError(f"train_fraction={train_fraction} leaves an empty train or test set for p={p}")
    return ModularSplit(p, op, a, b, c, np.sort(perm[:n_train]), np.sort(perm[n_train:]))


def one_hot_pairs(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """Concatenated one-hot encodings [e_a, e_b] as float32 (n, 2p)."""
    x = np.zeros((len(a), 2 * p), dtype=np.float32)
    rows = np.arange(len(a))
    x[rows, a] = 1.0
    x[rows, p + b] = 1.0
    return x


def token_sequences(a: np.ndarray, b: np.ndarray, p: int, op: str) -> np.ndarray:
    """Token ids ``[a, op, b, =]`` (n, 4); numbers are 0..p-1, each operation has its own token, ``=`` is last.

    Vocabulary size: ``p + len(OPERATIONS) + 1``.
    """
    if op not in OPERATIONS:
        raise ValueError(f"unknown operation {op!r}; choose one of {', '.join(OPERATIONS)}")
    n = len(a)
    op_tok = p + OPERATIONS.index(op)
    eq_tok = p + len(OPERATIONS)
    return np.stack([a, np.full(n, op_tok), b, np.full(n, eq_tok)], axis=1).astype(np.int64)


def vocab_size(p: int) -> int:
    """Vocabulary size of :func:`token_sequences` for modulus ``p``."""
    return p + len(OPERATIONS) + 1
