"""Bilinear recurrent cells and the parallel scan: exact constructions, equivalences and invariances."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genlab.data.state_tracking import make_task, run_fsm
from genlab.harness.torch_setup import setup_torch
from genlab.nn.bilinear_rnn import (
    BlockDiagonalBilinear,
    CPBilinear,
    EnsembleLSTM,
    FullBilinear,
    PositiveDiagonalAdditive,
    RealDiagonal,
    RotationCell,
    StateTrackingRNN,
    make_cell,
)
from genlab.nn.scan import associative_scan, linear_recurrence, linear_recurrence_loop, prefix_sum


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> None:
    setup_torch(1)  # tiny tensors: one thread avoids oversubscription on a shared CPU


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _onehot(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(tokens, vocab).float()


def _unit(h: torch.Tensor) -> torch.Tensor:
    return h / h.norm(dim=-1, keepdim=True)


# ----------------------------------------------------------------------------------------- scan
@pytest.mark.parametrize("length", [1, 2, 3, 5, 8, 13, 64, 127])
def test_prefix_sum_and_linear_recurrence_match_sequential(length: int) -> None:
    g = _gen(length)
    x = torch.randn(2, length, 3, dtype=torch.float64, generator=g)
    assert torch.allclose(prefix_sum(x, dim=1), torch.cumsum(x, dim=1))
    a = torch.randn(2, length, 3, dtype=torch.float64, generator=g)
    b = torch.randn(2, length, 3, dtype=torch.float64, generator=g)
    h0 = torch.randn(2, 3, dtype=torch.float64, generator=g)
    assert torch.allclose(linear_recurrence(a, b, h0, dim=1), linear_recurrence_loop(a, b, h0, dim=1))
    assert torch.allclose(linear_recurrence(a, b, None, dim=1), linear_recurrence_loop(a, b, None, dim=1))


def test_linear_recurrence_complex_and_gradients_match_loop() -> None:
    g = _gen(1)
    a = torch.randn(4, 37, 2, dtype=torch.complex128, generator=g) * 0.9
    b = torch.randn(4, 37, 2, dtype=torch.complex128, generator=g)
    assert torch.allclose(linear_recurrence(a, b, dim=1), linear_recurrence_loop(a, b, dim=1))
    ar = torch.randn(3, 21, 5, dtype=torch.float64, generator=g).requires_grad_()
    br = torch.randn(3, 21, 5, dtype=torch.float64, generator=g).requires_grad_()
    w = torch.randn(3, 21, 5, dtype=torch.float64, generator=g)
    g_scan = torch.autograd.grad((linear_recurrence(ar, br, dim=1) * w).sum(), (ar, br))
    g_loop = torch.autograd.grad((linear_recurrence_loop(ar, br, dim=1) * w).sum(), (ar, br))
    for u, v in zip(g_scan, g_loop, strict=True):
        assert torch.allclose(u, v)


def test_associative_scan_noncommutative_operator_keeps_order() -> None:
    # 2x2 matrix products are associative but not commutative: order must be earlier-then-later
    g = _gen(2)
    mats = torch.randn(11, 2, 2, dtype=torch.float64, generator=g)
    (out,) = associative_scan(lambda e, l: (l[0] @ e[0],), (mats,), (0.0,), dim=0)
    ref = [mats[0]]
    for m in mats[1:]:
        ref.append(m @ ref[-1])
    # odd lengths are padded at the end; the padded slot is discarded and cannot affect earlier outputs
    assert torch.allclose(out, torch.stack(ref))


def test_scan_rejects_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="same shape"):
        linear_recurrence(torch.ones(2, 3), torch.ones(3, 2))
    with pytest.raises(ValueError, match="identity"):
        associative_scan(lambda e, l: e, (torch.ones(3),), (0.0, 1.0))


# ----------------------------------------------------------------------------------------- Prop. 1
@pytest.mark.parametrize("task_name", ["s3", "fsm5", "mod5"])
def test_full_bilinear_simulates_any_fsm_exactly(task_name: str) -> None:
    """Prop. 1: A(σ) = the one-hot transition matrix of σ, h0 = e_start ⇒ 100% at length 500."""
    task = make_task(task_name, seed=3)
    S, V = task.n_states, task.vocab
    cell = FullBilinear(V, S)
    model = StateTrackingRNN(cell, V, S)
    M = torch.as_tensor(task.transition_matrices(), dtype=torch.float32)  # (V, S_out, S_in)
    with torch.no_grad():
        cell.W.copy_(M.permute(2, 0, 1).unsqueeze(0))  # W[e, j_in, k, i_out] = M[k, i, j]
        cell.h0.copy_(torch.nn.functional.one_hot(torch.tensor([task.start]), S).float())
        model.readout.copy_(torch.eye(S).unsqueeze(0))
    model.eval()
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, V, size=(1, 64, 500))
    labels = run_fsm(task, tokens)[..., -1]
    pred = model(torch.as_tensor(tokens)).argmax(-1).numpy()
    assert (pred == labels).all()


def test_cp_with_rank_hd_reproduces_full_exactly() -> None:
    H, D = 4, 3
    g = _gen(4)
    full = FullBilinear(D, H, generator=g)
    W = full.W.detach()[0]  # (H_in j, D k, H_out i)
    cp = CPBilinear(D, H, rank=H * D)
    with torch.no_grad():
        r = 0
        for j in range(H):
            for k in range(D):
                cp.W2[0, :, r] = torch.nn.functional.one_hot(torch.tensor(j), H).float()
                cp.Wx[0, :, r] = torch.nn.functional.one_hot(torch.tensor(k), D).float()
                cp.W1[0, :, r] = W[j, k, :]
                r += 1
        cp.h0.copy_(full.h0)
    x = torch.randn(1, 5, 9, D, generator=g)  # dense (not one-hot) inputs: A(x) linear in x
    assert torch.allclose(cp.transition(x[:, :, 0]), full.transition(x[:, :, 0]), atol=1e-5)
    assert torch.allclose(_unit(cp(x, normalize=False)), _unit(full(x, normalize=False)), atol=1e-4)


def test_block_size_h_equals_full_and_block_transitions_are_block_diagonal() -> None:
    H, D = 4, 2
    g = _gen(5)
    block = BlockDiagonalBilinear(D, H, block=2, generator=g)
    x = torch.randn(1, 3, D, generator=g)
    A = block.transition(x)
    assert torch.count_nonzero(A[..., :2, 2:]) == 0 and torch.count_nonzero(A[..., 2:, :2]) == 0
    one = BlockDiagonalBilinear(D, H, block=H, generator=g)
    full = FullBilinear(D, H)
    with torch.no_grad():
        full.W.copy_(one.W[:, :, 0].permute(0, 3, 1, 2))  # (E,D,i,j) -> (E, j, D, i)
        full.h0.copy_(one.h0)
    xs = torch.randn(1, 3, 7, D, generator=g)
    assert torch.allclose(one(xs, normalize=False), full(xs, normalize=False), atol=1e-5)


def test_rotation_transitions_commute_and_full_ones_do_not() -> None:
    g = _gen(6)
    rot = RotationCell(3, 6, generator=g)
    full = FullBilinear(3, 6, generator=g)
    x, y = torch.randn(1, 1, 3, generator=g), torch.randn(1, 1, 3, generator=g)
    Ax, Ay = rot.transition(x), rot.transition(y)
    assert torch.allclose(Ax @ Ay, Ay @ Ax, atol=1e-6)
    assert torch.allclose(Ax @ Ax.transpose(-1, -2), torch.eye(6).expand_as(Ax), atol=1e-6)  # orthogonal
    Fx, Fy = full.transition(x), full.transition(y)
    assert (Fx @ Fy - Fy @ Fx).abs().max() > 1e-2


# ----------------------------------------------------------------------------------------- scans vs loops
def _loop_states(transitions: torch.Tensor, h0: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Reference: h_t = A_t h_{t-1} with explicit matrices (E, B, T, H, H)."""
    h = h0.unsqueeze(1).expand(transitions.shape[0], transitions.shape[1], -1)
    out = []
    for t in range(transitions.shape[2]):
        h = (transitions[:, :, t] @ h.unsqueeze(-1)).squeeze(-1)
        if normalize:
            h = _unit(h)
        out.append(h)
    return torch.stack(out, 2)


def test_real_diagonal_scan_equals_normalised_loop_at_length_300() -> None:
    g = _gen(7)
    cell = RealDiagonal(3, 8, ensemble=2, generator=g)
    tokens = torch.randint(0, 3, (2, 4, 300), generator=g)
    x = _onehot(tokens, 3)
    A = torch.diag_embed(cell.diagonals(x)).detach()
    ref = _loop_states(A.double(), cell.h0.detach().double(), normalize=True)
    out = cell.eval()(x)  # eval mode: per-step normalisation (log-space)
    assert torch.isfinite(out).all()
    assert torch.allclose(out.double(), ref, atol=1e-4)
    # the block-diagonal loop with block size 1 and the same weights gives the same directions
    blk = BlockDiagonalBilinear(3, 8, block=1, ensemble=2)
    with torch.no_grad():
        blk.W.copy_(cell.W.view(2, 3, 8, 1, 1))
        blk.h0.copy_(cell.h0)
    assert torch.allclose(blk.eval()(x), out, atol=1e-4)


def test_rotation_scan_equals_loop_and_preserves_norm() -> None:
    g = _gen(8)
    cell = RotationCell(4, 6, ensemble=2, generator=g)
    x = _onehot(torch.randint(0, 4, (2, 3, 200), generator=g), 4)
    A = torch.stack([cell.transition(x[:, :, t]) for t in range(200)], 2)
    ref = _loop_states(A.double(), cell.h0.detach().double(), normalize=False)
    out = cell(x, normalize=False)
    assert torch.allclose(out.double(), ref, atol=1e-3)
    assert torch.allclose(out.norm(dim=-1), cell.h0.norm(dim=-1)[:, None, None].expand(-1, 3, 200), atol=1e-4)


def test_positive_diagonal_additive_scan_equals_recurrence() -> None:
    g = _gen(9)
    cell = PositiveDiagonalAdditive(3, 5, ensemble=2, generator=g)
    x = _onehot(torch.randint(0, 3, (2, 4, 50), generator=g), 3)
    a = torch.sigmoid(torch.einsum("ebtd,edh->ebth", x, cell.Wa) + cell.c[:, None, None])
    b = torch.einsum("ebtd,edh->ebth", x, cell.B)
    h = cell.h0[:, None].expand(-1, 4, -1)
    ref = []
    for t in range(50):
        h = a[:, :, t] * h + b[:, :, t]
        ref.append(h)
    assert torch.allclose(cell(x, normalize=False), torch.stack(ref, 2), atol=1e-5)
    assert bool(((a > 0) & (a < 1)).all())
    assert not cell.scale_invariant


def test_lstm_matches_torch_lstm() -> None:
    g = _gen(10)
    D, H = 3, 5
    cell = EnsembleLSTM(D, H, ensemble=1, generator=g)
    ref = torch.nn.LSTM(D, H, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(cell.W_ih[0].T)
        ref.weight_hh_l0.copy_(cell.W_hh[0].T)
        ref.bias_ih_l0.copy_(cell.bias[0])
        ref.bias_hh_l0.zero_()
    x = torch.randn(1, 4, 12, D, generator=g)
    out, _ = ref(x[0])
    ours = cell(x)[0]
    assert torch.allclose(ours, out, atol=1e-5)
    # gradients too (the fused gates: one sigmoid over all four, baddbmm, addcmul)
    w = torch.randn(4, 12, H, generator=g)
    (ours * w).sum().backward()
    (out * w).sum().backward()
    assert torch.allclose(cell.W_ih.grad[0], ref.weight_ih_l0.grad.T, atol=1e-5)
    assert torch.allclose(cell.W_hh.grad[0], ref.weight_hh_l0.grad.T, atol=1e-5)
    assert torch.allclose(cell.bias.grad[0], ref.bias_ih_l0.grad, atol=1e-5)


# ----------------------------------------------------------------------------------------- invariances
@pytest.mark.parametrize("kind", ["full", "cp3", "block2", "diag", "rotation"])
def test_scale_invariance_and_inference_normalisation(kind: str) -> None:
    g = _gen(11)
    cell = make_cell(kind, 3, 6, ensemble=2, generator=g)
    assert cell.scale_invariant
    x = _onehot(torch.randint(0, 3, (2, 4, 12), generator=g), 3)
    base = cell(x, normalize=False)
    with torch.no_grad():
        cell.h0.mul_(7.5)
    scaled = cell(x, normalize=False)
    assert torch.allclose(_unit(scaled), _unit(base), atol=1e-5)
    assert torch.allclose(cell(x, normalize=True), _unit(base), atol=1e-5)
    cell.eval()
    assert torch.allclose(cell(x), _unit(base), atol=1e-5)  # eval mode normalises by default
    assert torch.allclose(cell(x, last_only=True), _unit(base)[:, :, -1], atol=1e-5)


def test_additive_ablation_is_not_scale_invariant() -> None:
    g = _gen(12)
    cell = make_cell("full+add", 2, 4, generator=g)
    assert not cell.scale_invariant
    x = _onehot(torch.randint(0, 2, (1, 3, 6), generator=g), 2)
    base = _unit(cell(x, normalize=False))
    with torch.no_grad():
        cell.h0.mul_(50.0)
    assert not torch.allclose(_unit(cell(x, normalize=False)), base, atol=1e-3)


def test_full_bilinear_length_500_needs_normalisation_and_stays_finite_with_it() -> None:
    g = _gen(13)
    cell = FullBilinear(2, 16, init_scale=1.0, generator=g)
    x = _onehot(torch.randint(0, 2, (1, 2, 500), generator=g), 2)
    raw = cell(x, normalize=False, last_only=True)
    assert not torch.isfinite(raw).all() or raw.abs().max() > 1e30 or raw.abs().max() < 1e-30
    normed = cell(x, normalize=True, last_only=True)
    assert torch.isfinite(normed).all() and torch.allclose(normed.norm(dim=-1), torch.ones(1, 2))


@pytest.mark.parametrize("kind", ["full", "cp4", "block2", "diag", "rotation", "posdiag+add", "lstm", "full+add"])
def test_ensemble_members_are_independent(kind: str) -> None:
    """Member 1's outputs do not depend on member 0's inputs or parameters."""
    g = _gen(14)
    cell = make_cell(kind, 3, 8, ensemble=2, generator=g)
    tokens = torch.randint(0, 3, (2, 5, 9), generator=g)
    out = cell(_onehot(tokens, 3))
    tokens2 = tokens.clone()
    tokens2[0] = (tokens2[0] + 1) % 3
    with torch.no_grad():
        for p in cell.parameters():
            p[0].mul_(0.5)
    out2 = cell(_onehot(tokens2, 3))
    assert torch.allclose(out[1], out2[1], atol=1e-6)
    assert not torch.allclose(out[0], out2[0], atol=1e-3)


def test_model_gathers_the_state_at_each_length() -> None:
    g = _gen(15)
    model = StateTrackingRNN(make_cell("full", 2, 4, ensemble=2, generator=g), 2, 2, generator=g)
    tokens = torch.randint(0, 2, (2, 3, 10), generator=g)
    lengths = torch.tensor([[2, 5, 10], [10, 1, 7]])
    got = model(tokens, lengths)
    for e in range(2):
        for b in range(3):
            L = int(lengths[e, b])
            single = model(tokens[:, :, :L])[e, b]
            assert torch.allclose(got[e, b], single, atol=1e-5)


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown cell kind"):
        make_cell("mamba", 2, 4)
    with pytest.raises(ValueError, match="divide"):
        make_cell("block3", 2, 4)
    with pytest.raises(ValueError, match="even"):
        make_cell("rotation", 2, 5)
    cell = make_cell("full", 2, 4, ensemble=2)
    with pytest.raises(ValueError, match="expects x"):
        cell(torch.zeros(1, 3, 4, 2))
    model = StateTrackingRNN(cell, 2, 2)
    with pytest.raises(ValueError, match="tokens must lie"):
        model(torch.full((2, 1, 3), 5))


# ----------------------------------------------------------------------------------------- fast paths
def _dense_full_step(cell: FullBilinear, h: torch.Tensor, x_t: torch.Tensor) -> torch.Tensor:
    """The full cell's step as it was before the gather path (2026-12-05): all D products, then a one-hot
    contraction over the input."""
    E, B, H = h.shape
    D = cell.input_dim
    y = torch.bmm(h, cell.W.reshape(E, H, D * H)).view(E * B, D, H)
    return torch.bmm(x_t.reshape(E * B, 1, D), y).view(E, B, H)


@pytest.mark.parametrize("additive", [False, True])
def test_full_gather_step_equals_dense_contraction_and_transition_matrices(additive: bool) -> None:
    g = _gen(21)
    cell = FullBilinear(5, 8, ensemble=3, additive=additive, generator=g)
    tokens = torch.randint(0, 5, (3, 7, 12), generator=g)
    x = _onehot(tokens, 5)
    states = cell(x, normalize=True)  # one-hot, no grad: the gather path
    cache = cell.prepare(x)
    assert cache[0] is not None and torch.equal(cache[0], tokens)  # type: ignore[index]
    # the same inputs with requires_grad take the general path (contraction with x_t)
    assert torch.allclose(cell(x.clone().requires_grad_(True), normalize=True), states, atol=1e-6)
    # the old step and A(x_t) h (the einsum transition matrices), step by step
    h = _unit(cell.initial_state(7))
    for t in range(12):
        old = _dense_full_step(cell, h, x[:, :, t])
        via_a = torch.einsum("ebij,ebj->ebi", cell.transition(x[:, :, t]), h)
        assert torch.allclose(old, via_a, atol=1e-5)
        if additive:
            old = old + torch.einsum("ebd,edh->ebh", x[:, :, t], cell.B) + cell.b[:, None]
        h = _unit(old)
        assert torch.allclose(states[:, :, t], h, atol=1e-5)
    assert not torch.allclose(states[:, :, -1], states[:, :, -2], atol=1e-3)  # the steps do move the state


def test_full_gather_step_gradients_equal_the_dense_contraction() -> None:
    g = _gen(22)
    cell = FullBilinear(4, 6, ensemble=2, generator=g)
    x = _onehot(torch.randint(0, 4, (2, 5, 9), generator=g), 4)
    w = torch.randn(2, 5, 9, 6, generator=g)
    fast = torch.autograd.grad((cell(x) * w).sum(), [cell.W, cell.h0])
    h, outs = cell.initial_state(5), []
    for t in range(9):
        h = _dense_full_step(cell, h, x[:, :, t])
        outs.append(h)
    old = torch.autograd.grad((torch.stack(outs, 2) * w).sum(), [cell.W, cell.h0])
    for a, b in zip(fast, old, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
        assert a.abs().max() > 1e-3


def test_token_index_only_for_exact_one_hot() -> None:
    from genlab.nn.bilinear_rnn import _token_index

    x = _onehot(torch.tensor([[[0, 2, 1]]]), 3)
    assert torch.equal(_token_index(x), torch.tensor([[[0, 2, 1]]]))
    assert _token_index(0.5 * x) is None
    assert _token_index(x + 0.1) is None
    assert _token_index(x.clone().requires_grad_(True)) is None


@pytest.mark.parametrize(("additive", "min_len", "batch", "depth"), [(False, 1, 30, 4), (True, 1, 30, 4),
                                                                      (False, 3, 8, 2), (True, 2, 9, 2),
                                                                      (False, 4, 3, 1), (False, 1, 1, 0)])
def test_skipping_finished_sequences_equals_reading_the_full_loop(
    additive: bool, min_len: int, batch: int, depth: int
) -> None:
    """The length-aware loop (finished rows skipped, the first ``depth`` steps by the prefix tree for every row:
    3^(depth - 1) < batch, also past some sequences' ends) equals reading the plain loop's states at each length: values
    and gradients."""
    g = _gen(23)
    cell = FullBilinear(3, 6, ensemble=3, additive=additive, generator=g)
    assert cell.skip_finished
    model = StateTrackingRNN(cell, 3, 4, generator=g)
    tokens = torch.randint(0, 3, (3, batch, 10), generator=g)
    lengths = torch.randint(min_len, 11, (3, batch), generator=g)
    lengths[0, 0], lengths[1, -1] = 10, min_len  # the longest and shortest both present
    x = model.one_hot(tokens)
    assert len(cell.prefix_states(cell.prepare(x), batch, False)) == depth
    skipped = model(tokens, lengths)
    h = model.states(tokens)
    read = model.logits_from_states(h.gather(2, (lengths - 1)[..., None, None].expand(-1, -1, 1, 6)).squeeze(2))
    assert torch.allclose(skipped, read, atol=1e-5)
    # gradients too
    ps = list(model.parameters())
    w = torch.randn(3, batch, 4, generator=g)
    ga = torch.autograd.grad((model(tokens, lengths) * w).sum(), ps)
    gb = torch.autograd.grad((model.logits_from_states(
        model.states(tokens).gather(2, (lengths - 1)[..., None, None].expand(-1, -1, 1, 6)).squeeze(2)) * w).sum(), ps)
    for a, b in zip(ga, gb, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
    # shared lengths (B,) broadcast over members; out-of-range lengths raise
    assert torch.allclose(model(tokens, lengths[0]), model(tokens, lengths[0].expand(3, batch)))
    model.eval()  # per-step normalisation in the tree too (the scale-invariant cell)
    h = model.states(tokens)
    read = model.logits_from_states(h.gather(2, (lengths - 1)[..., None, None].expand(-1, -1, 1, 6)).squeeze(2))
    assert torch.allclose(model(tokens, lengths), read, atol=1e-5)
    with pytest.raises(ValueError, match="lengths must lie"):
        model(tokens, torch.full((batch,), 11))


@pytest.mark.parametrize("kind", ["diag", "rotation", "cp3", "lstm", "block2", "full"])
def test_cells_read_each_length_equal_to_gathering_all_states(kind: str) -> None:
    """With ``lengths``, each cell returns each sequence's state after its own length directly (diag: token counts
    of its first L steps times log|W|; rotation: the summed inputs times θ; loops: the state kept as the loop passes
    step L - 1; full: steps past the end skipped): equal to reading all T states at L - 1, values and gradients,
    trained and normalised."""
    g = _gen(29)
    model = StateTrackingRNN(make_cell(kind, 3, 6, ensemble=3, generator=g), 3, 4, generator=g)
    tokens = torch.randint(0, 3, (3, 20, 10), generator=g)
    lengths = torch.randint(1, 11, (3, 20), generator=g)
    lengths[0, 0] = 10
    w = torch.randn(3, 20, 4, generator=g)
    ps = list(model.parameters())
    for train in (True, False):
        model.train(train)
        direct = model(tokens, lengths)
        h = model.states(tokens)
        read = model.logits_from_states(h.gather(2, (lengths - 1)[..., None, None].expand(-1, -1, 1, 6)).squeeze(2))
        assert torch.allclose(direct, read, atol=1e-5)
        ga = torch.autograd.grad((direct * w).sum(), ps)
        gb = torch.autograd.grad((read * w).sum(), ps)
        for a, b in zip(ga, gb, strict=True):
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="lengths must lie"):
        model(tokens, torch.full((20,), 11))
