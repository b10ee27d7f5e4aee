"""State-tracking tasks as finite-state machines, generated on the fly from a numpy Generator.

Every task is a deterministic automaton: ``n_states`` states, ``vocab`` input symbols, a transition
table ``delta[state, symbol] -> state`` and a start state. A sequence's label is the state reached after
reading it (and :func:`run_fsm` gives the state after every prefix). Tasks:

- ``parity``: states {0, 1}, symbols {0, 1}, ``s ← s xor σ`` (= ``mod2``);
- ``mod<m>``: modular addition, states and symbols Z_m, ``s ← (s + σ) mod m``;
- ``fsm<m>`` / ``fsm<m>x<k>``: a random transition table with m states and k symbols (default 3), drawn
  from a seed; every state is reachable from the start state;
- ``s3``, ``a4``, ``s5`` (and ``s<n>``, ``a<n>``): the word problem of a permutation group — symbols are the
  group elements, the state is the running product ``g ← g·σ`` with ``(g·σ)(i) = σ(g(i))`` (apply g first),
  start = identity. ``s5gen`` etc. restrict the symbols to two generators plus the identity.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

__all__ = [
    "StateTask",
    "fsm_task",
    "group_task",
    "make_task",
    "mod_task",
    "permutation_group",
    "run_fsm",
    "sample_batch",
    "sample_fixed_length",
]


@dataclass(frozen=True)
class StateTask:
    """A deterministic finite-state machine task. ``delta`` is an int64 array (n_states, vocab)."""

    name: str
    delta: np.ndarray
    start: int = 0
    abelian: bool | None = None  # do all symbol transitions commute? (None: not computed)

    def __post_init__(self) -> None:
        d = np.asarray(self.delta)
        if d.ndim != 2 or d.size == 0:
            raise ValueError(f"delta must be a non-empty 2-d table (states × symbols), got shape {d.shape}")
        if d.min() < 0 or d.max() >= d.shape[0]:
            raise ValueError("delta entries must be valid state indices")
        if not 0 <= self.start < d.shape[0]:
            raise ValueError(f"start state {self.start} out of range")

    @property
    def n_states(self) -> int:
        return int(self.delta.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.delta.shape[1])

    def transition_matrices(self) -> np.ndarray:
        """One-hot transition matrices M (vocab, n_states, n_states): ``M[σ] @ e_s = e_{delta[s, σ]}``."""
        m = np.zeros((self.vocab, self.n_states, self.n_states))
        s = np.arange(self.n_states)
        for sym in range(self.vocab):
            m[sym, self.delta[:, sym], s] = 1.0
        return m

    def commutes(self) -> bool:
        """Whether all symbol transitions commute (the automaton's transformation monoid is abelian)."""
        d = self.delta
        return bool(all(np.array_equal(d[d[:, a], b], d[d[:, b], a]) for a in range(self.vocab)
                        for b in range(a + 1, self.vocab)))


def run_fsm(task: StateTask, tokens: np.ndarray) -> np.ndarray:
    """States after every prefix: ``out[..., t]`` is the state after reading ``tokens[..., :t+1]``."""
    tokens = np.asarray(tokens)
    if tokens.ndim < 1 or tokens.shape[-1] < 1:
        raise ValueError("tokens must have a non-empty last (time) axis")
    if tokens.min() < 0 or tokens.max() >= task.vocab:
        raise ValueError(f"tokens must lie in [0, {task.vocab})")
    out = np.empty(tokens.shape, dtype=np.int64)
    state = np.full(tokens.shape[:-1], task.start, dtype=np.int64)
    for t in range(tokens.shape[-1]):  # vectorised over every sequence; loops only over time
        state = task.delta[state, tokens[..., t]]
        out[..., t] = state
    return out


def mod_task(m: int) -> StateTask:
    """Modular addition mod m (m = 2 is parity)."""
    if m < 2:
        raise ValueError(f"modulus must be >= 2, got {m}")
    s = np.arange(m)
    return StateTask("parity" if m == 2 else f"mod{m}", (s[:, None] + s[None, :]) % m, 0, True)


def fsm_task(n_states: int, n_symbols: int = 3, seed: int = 0) -> StateTask:
    """A random automaton with ``n_states`` states and ``n_symbols`` symbols, all states reachable from 0.

    Tables are redrawn (deterministically from ``seed``) until every state is reachable.
    """
    if n_states < 2 or n_symbols < 1:
        raise ValueError(f"need n_states >= 2 and n_symbols >= 1, got {n_states}, {n_symbols}")
    rng = np.random.default_rng([seed, n_states, n_symbols])
    for _ in range(10_000):
        delta = rng.integers(0, n_states, size=(n_states, n_symbols))
        seen, frontier = {0}, [0]
        while frontier:
            nxt = {int(v) for v in delta[frontier].ravel()} - seen
            seen |= nxt
            frontier = list(nxt)
        if len(seen) == n_states:
            task = StateTask(f"fsm{n_states}x{n_symbols}", delta, 0)
            return StateTask(task.name, delta, 0, task.commutes())
    raise ValueError(f"could not draw a connected automaton with {n_states} states and {n_symbols} symbols")


def permutation_group(name: str) -> list[tuple[int, ...]]:
    """Elements of ``s<n>`` (all permutations) or ``a<n>`` (even ones) as tuples; identity first."""
    m = re.fullmatch(r"([sa])(\d+)", name)
    if not m or int(m.group(2)) < 2:
        raise ValueError(f"unknown permutation group {name!r}; use s<n> or a<n> with n >= 2")
    n = int(m.group(2))
    perms = list(itertools.permutations(range(n)))
    if m.group(1) == "a":
        perms = [p for p in perms if _sign(p) == 1]
    return perms


def _sign(p: tuple[int, ...]) -> int:
    inversions = sum(1 for i in range(len(p)) for j in range(i + 1, len(p)) if p[i] > p[j])
    return -1 if inversions % 2 else 1


def group_task(name: str, generators_only: bool = False) -> StateTask:
    """Word problem of a permutation group: state = running product, symbols = elements (or generators).

    ``generators_only`` uses the identity plus two generators: for S_n a transposition (0 1) and the
    n-cycle; for A_n the 3-cycles (0 1 2) and (for n > 3) ``(0 1 ... n-1)`` or ``(1 2 ... n-1)``,
    whichever is even.
    """
    elems = permutation_group(name)
    index = {p: i for i, p in enumerate(elems)}
    n = len(elems[0])

    def compose(g: tuple[int, ...], s: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(s[g[i]] for i in range(n))  # apply g first, then s

    table = np.array([[index[compose(g, s)] for s in elems] for g in elems], dtype=np.int64)
    abelian = bool(np.array_equal(table, table.T))
    if not generators_only:
        return StateTask(name, table, 0, abelian)
    cycle = tuple((i + 1) % n for i in range(n))
    if name.startswith("s"):
        gens = [tuple([1, 0, *range(2, n)]), cycle]
    else:
        three = tuple([1, 2, 0, *range(3, n)])
        other = cycle if _sign(cycle) == 1 else tuple([0, *((i % (n - 1)) + 1 for i in range(1, n))])
        gens = [three, other] if n > 3 else [three]
    cols = [0] + [index[g] for g in gens]
    return StateTask(f"{name}gen", table[:, cols], 0, abelian)


def make_task(name: str, seed: int = 0) -> StateTask:
    """A task by name: ``parity``, ``mod<m>``, ``fsm<m>`` / ``fsm<m>x<k>``, ``s<n>``/``a<n>`` (+ ``gen``)."""
    if name == "parity":
        return mod_task(2)
    if m := re.fullmatch(r"mod(\d+)", name):
        return mod_task(int(m.group(1)))
    if m := re.fullmatch(r"fsm(\d+)(?:x(\d+))?", name):
        return fsm_task(int(m.group(1)), int(m.group(2) or 3), seed)
    if m := re.fullmatch(r"([sa]\d+)(gen)?", name):
        return group_task(m.group(1), generators_only=bool(m.group(2)))
    raise ValueError(f"unknown task {name!r}; use parity, mod<m>, fsm<m>[x<k>], s<n>, a<n> or <group>gen")


def sample_fixed_length(
    task: StateTask, batch: int, length: int, rng: np.random.Generator, shape: tuple[int, ...] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """``shape + (batch, length)`` uniform random tokens and the final states ``shape + (batch,)``."""
    if length < 1 or batch < 1:
        raise ValueError(f"batch and length must be >= 1, got {batch}, {length}")
    tokens = rng.integers(0, task.vocab, size=(*shape, batch, length))
    return tokens, run_fsm(task, tokens)[..., -1]


def sample_batch(
    task: StateTask,
    batch: int,
    min_len: int,
    max_len: int,
    rng: np.random.Generator,
    shape: tuple[int, ...] = (),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Variable-length training batch: tokens ``shape+(batch, max_len)`` (positions past a sequence's
    length are filler), lengths ``~ U{min_len..max_len}`` and labels = the state after ``length`` steps."""
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    tokens = rng.integers(0, task.vocab, size=(*shape, batch, max_len))
    lengths = rng.integers(min_len, max_len + 1, size=(*shape, batch))
    states = run_fsm(task, tokens)
    labels = np.take_along_axis(states, (lengths - 1)[..., None], axis=-1)[..., 0]
    return tokens, lengths, labels
