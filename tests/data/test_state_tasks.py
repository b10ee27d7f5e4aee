"""State-tracking task generators: group axioms, known answers, FSM semantics, seeding."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from genlab.data.state_tracking import (
    StateTask,
    fsm_task,
    group_task,
    make_task,
    mod_task,
    permutation_group,
    run_fsm,
    sample_batch,
    sample_fixed_length,
)


def test_parity_and_modular_addition_labels_are_sums() -> None:
    rng = np.random.default_rng(0)
    for m in (2, 3, 5, 10):
        task = make_task("parity" if m == 2 else f"mod{m}")
        assert (task.n_states, task.vocab) == (m, m)
        tokens, labels = sample_fixed_length(task, 50, 37, rng)
        assert np.array_equal(labels, tokens.sum(-1) % m)
        assert task.commutes()


@pytest.mark.parametrize(("name", "order", "abelian"), [("s3", 6, False), ("a4", 12, False),
                                                          ("s5", 120, False), ("s2", 2, True)])
def test_group_tables_satisfy_group_axioms(name: str, order: int, abelian: bool) -> None:
    task = group_task(name)
    T = task.delta
    assert T.shape == (order, order)
    assert np.array_equal(T[0], np.arange(order)) and np.array_equal(T[:, 0], np.arange(order))  # identity
    for row in T:  # Latin square: every product is a bijection -> inverses exist
        assert sorted(row) == list(range(order))
    idx = np.random.default_rng(1).integers(0, order, size=(200, 3))
    a, b, c = idx.T
    assert np.array_equal(T[T[a, b], c], T[a, T[b, c]])  # associativity
    assert task.commutes() == abelian == task.abelian


def test_alternating_groups_contain_only_even_permutations() -> None:
    a4 = permutation_group("a4")
    assert len(a4) == 12 and len(permutation_group("s4")) == 24
    for p in a4:
        inv = sum(1 for i, j in itertools.combinations(range(4), 2) if p[i] > p[j])
        assert inv % 2 == 0


def test_group_word_problem_composes_left_to_right() -> None:
    task = group_task("s3")
    elems = permutation_group("s3")
    rng = np.random.default_rng(2)
    tokens, labels = sample_fixed_length(task, 20, 6, rng)
    for seq, lab in zip(tokens, labels, strict=True):
        g = tuple(range(3))
        for s in seq:  # apply g first, then s
            g = tuple(elems[s][g[i]] for i in range(3))
        assert elems[lab] == g


@pytest.mark.parametrize("name", ["s3gen", "a4gen", "s5gen", "a5gen"])
def test_generator_vocabularies_reach_the_whole_group(name: str) -> None:
    task = make_task(name)
    assert task.vocab <= 3
    reached, frontier = {0}, {0}
    while frontier:
        nxt = {int(v) for v in task.delta[list(frontier)].ravel()} - reached
        reached |= nxt
        frontier = nxt
    assert len(reached) == task.n_states


def test_run_fsm_gives_every_prefix_state_and_matches_transition_matrices() -> None:
    task = fsm_task(5, 3, seed=4)
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 3, size=(8, 15))
    states = run_fsm(task, tokens)
    M = task.transition_matrices()
    for seq, st in zip(tokens, states, strict=True):
        v = np.eye(5)[task.start]
        for t, s in enumerate(seq):
            v = M[s] @ v
            assert np.argmax(v) == st[t] and v.sum() == 1.0


def test_random_fsm_is_seeded_connected_and_varies_with_seed() -> None:
    a, b = fsm_task(10, 3, seed=7), fsm_task(10, 3, seed=7)
    assert np.array_equal(a.delta, b.delta)
    assert not np.array_equal(a.delta, fsm_task(10, 3, seed=8).delta)
    reached, frontier = {0}, {0}
    while frontier:
        nxt = {int(v) for v in a.delta[list(frontier)].ravel()} - reached
        reached |= nxt
        frontier = nxt
    assert reached == set(range(10))
    assert make_task("fsm10", seed=7).delta.shape == (10, 3)
    assert make_task("fsm4x5", seed=1).vocab == 5


def test_sample_batch_labels_lengths_and_determinism() -> None:
    task = make_task("mod5")
    t1, l1, y1 = sample_batch(task, 300, 2, 10, np.random.default_rng(5), shape=(3,))
    t2, l2, y2 = sample_batch(task, 300, 2, 10, np.random.default_rng(5), shape=(3,))
    assert np.array_equal(t1, t2) and np.array_equal(l1, l2) and np.array_equal(y1, y2)
    assert t1.shape == (3, 300, 10) and l1.shape == y1.shape == (3, 300)
    assert l1.min() == 2 and l1.max() == 10
    mask = np.arange(10) < l1[..., None]
    assert np.array_equal(y1, (t1 * mask).sum(-1) % 5)  # filler past the length does not count


def test_bad_task_arguments_raise() -> None:
    with pytest.raises(ValueError, match="unknown task"):
        make_task("dyck2")
    with pytest.raises(ValueError, match="modulus"):
        mod_task(1)
    with pytest.raises(ValueError, match="min_len"):
        sample_batch(make_task("parity"), 4, 5, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="tokens must lie"):
        run_fsm(make_task("parity"), np.array([[0, 2]]))
    with pytest.raises(ValueError, match="state indices"):
        StateTask("bad", np.array([[0, 3]]))
