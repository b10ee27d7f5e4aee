"""Recurrent cells with bilinear (input × hidden) state transitions and their restrictions.

Every cell maps an input sequence ``x`` of shape ``(E, B, T, D)`` to its hidden states ``(E, B, T, H)``.
``E`` is an *ensemble* axis: E independent models (seeds, learning rates) with their own parameters are
evaluated by the same tensor ops, which amortises Python overhead on small CPU models. ``B`` is the
batch, ``T`` time, ``D`` the input (embedding) width and ``H`` the hidden width.

The families (Ebrahimi & Memisevic, arXiv:2505.21749), from most to least expressive:

=====================  =========================================================  =================
name                   update                                                     time evaluation
=====================  =========================================================  =================
``full``               ``h_t = A(x_t) h_{t-1}``, ``A(x)_ij = Σ_k W_ijk x_k``      loop
``full+add``           ``h_t = A(x_t) h_{t-1} + B x_t + b`` (ablation)            loop
``cp{R}``              ``h_t = W1 [(W2ᵀ h_{t-1}) ⊙ (Wxᵀ x_t)]`` (CP rank R)       loop
``block{b}``           ``A(x) = blockdiag(A_1(x), ..., A_{H/b}(x))``              loop
``rotation``           2×2 rotation blocks, angle linear in x (complex diagonal)  prefix sum
``diag``               ``A(x) = diag(W x)`` (real, sign free)                     prefix sum
``posdiag+add``        ``h_t = σ(W_a x_t + c) ⊙ h_{t-1} + B x_t`` (Mamba/GLA)     parallel scan
``lstm``               standard LSTM (baseline)                                   loop
=====================  =========================================================  =================

Cells without additive terms are *scale invariant*: rescaling ``h`` rescales every later state by the
same factor, so the state's direction — all a normalised readout sees — is unchanged. They are trained
without normalisation and, at inference (``normalize=True``, the default in eval mode), renormalise
``h ← h/‖h‖`` after every step so that length-500 sequences cannot overflow. The diagonal families
compute in log-magnitude space and divide by a shared positive scale per step, which is the same thing
(exact in real arithmetic) and keeps training and evaluation numerically identical.
"""

from __future__ import annotations

import math
import re

import torch
from torch import Tensor, nn

from genlab.nn.scan import linear_recurrence

__all__ = [
    "CELL_FAMILIES",
    "BlockDiagonalBilinear",
    "CPBilinear",
    "EnsembleLSTM",
    "FullBilinear",
    "PositiveDiagonalAdditive",
    "RealDiagonal",
    "RotationCell",
    "StateCell",
    "StateTrackingRNN",
    "make_cell",
]


def _randn(generator: torch.Generator | None, *shape: int) -> Tensor:
    return torch.randn(*shape, generator=generator)


def _prefix(v: Tensor, last_only: bool, lengths: Tensor | None = None) -> Tensor:
    """Prefix sums over time (dim 2) of v (E, B, T, H) by ``torch.cumsum`` (one native scan); only the total (time
    length 1) when ``last_only``; with ``lengths`` ((B,) or (E, B)) each sequence's sum over its first ``lengths``
    steps (time length 1: a masked sum, not a scan)."""
    if lengths is not None:
        mask = torch.arange(v.shape[2], device=v.device) <= _last_steps(lengths, v.shape)[..., None]  # (E, B, T)
        return torch.where(mask[..., None], v, 0.0).sum(dim=2, keepdim=True)
    return v.sum(dim=2, keepdim=True) if last_only else torch.cumsum(v, dim=2)


def _token_index(x: Tensor) -> Tensor | None:
    """The token at every position (shape ``x.shape[:-1]``) when ``x`` is exactly one-hot and needs no gradient
    (the study's inputs), else None."""
    if x.requires_grad or not bool(((x == 0) | (x == 1)).all()) or not bool((x.sum(-1) == 1).all()):
        return None
    return x.argmax(-1)


def _last_steps(lengths: Tensor, shape: torch.Size | tuple[int, ...]) -> Tensor:
    """Each sequence's last step ``lengths - 1`` as (E, B) for inputs of shape (E, B, T, ...), checked."""
    E, B, T = shape[:3]
    lengths = torch.broadcast_to(lengths, (E, B))
    if int(lengths.min()) < 1 or int(lengths.max()) > T:
        raise ValueError(f"lengths must lie in [1, {T}]")
    return lengths - 1


def _end_masks(last: Tensor, T: int) -> list[Tensor]:
    """Per step t, the float mask (E, B, 1) of the sequences whose last step is t: a loop sums ``mask_t · h_t`` to
    read each sequence's state at its own length (a multiply-add is several times cheaper than ``torch.where`` with
    a broadcast mask on CPU)."""
    return list((last[..., None] == torch.arange(T, device=last.device)).to(torch.get_default_dtype())
                .unsqueeze(-1).unbind(2))


def _unit(h: Tensor) -> Tensor:
    return h / h.norm(dim=-1, keepdim=True).clamp_min(1e-30)


class StateCell(nn.Module):
    """Base class: ``forward(x (E,B,T,D)) -> states (E,B,T,H)``.

    ``scale_invariant`` says whether the update has no additive terms (then per-step normalisation at
    inference leaves the state's direction unchanged).
    """

    scale_invariant: bool = True

    def __init__(self, input_dim: int, hidden: int, ensemble: int = 1) -> None:
        super().__init__()
        if input_dim < 1 or hidden < 1 or ensemble < 1:
            raise ValueError(
                f"input_dim, hidden and ensemble must be >= 1, got {input_dim}, {hidden}, {ensemble}"
            )
        self.input_dim, self.hidden, self.ensemble = input_dim, hidden, ensemble

    def _check(self, x: Tensor) -> None:
        if x.ndim != 4 or x.shape[0] != self.ensemble or x.shape[-1] != self.input_dim:
            raise ValueError(
                f"{type(self).__name__} expects x of shape (E={self.ensemble}, B, T, D={self.input_dim}), "
                f"got {tuple(x.shape)}"
            )
        if x.shape[2] < 1:
            raise ValueError("sequences must have at least one step")

    def _normalize_flag(self, normalize: bool | None) -> bool:
        if normalize is None:
            return (not self.training) and self.scale_invariant
        return normalize

    def forward(self, x: Tensor, normalize: bool | None = None, last_only: bool = False) -> Tensor:
        """States (E, B, T, H), or only the last one (E, B, H) when ``last_only``."""
        raise NotImplementedError


def _rows(cache: object, n: int) -> object:
    """The first ``n`` batch rows (dim 1) of a step cache (see ``prepare``): a tensor, a tuple of them, or None."""
    if isinstance(cache, tuple):
        return tuple(_rows(c, n) for c in cache)
    return None if cache is None else cache[:, :n]  # type: ignore[index]


class _LoopCell(StateCell):
    """A cell evaluated by a Python loop over time with an optional per-step normalisation.

    ``prepare`` hands per-step inputs as one tensor per step (``unbind`` over time), not as one tensor indexed at
    every step: the backward of an index allocates a zero gradient of the whole tensor per step (O(T²) memory
    traffic), the backward of ``unbind`` stacks the steps' gradients once.

    ``skip_finished``: a model reading each sequence at its own length computes the loop only for the sequences
    still running (:meth:`forward` with ``lengths``). It pays where a step is heavy (the full cell: about
    1.3x); for light cells (CP, LSTM) the extra slicing costs as much as it saves, so they run every step.
    """

    skip_finished: bool = False

    def initial_state(self, batch: int) -> Tensor:
        return self.h0.unsqueeze(1).expand(self.ensemble, batch, self.hidden)

    def prepare(self, x: Tensor) -> object:
        """Per-sequence precomputation shared by all steps (default: nothing); batch rows on dim 1."""
        return None

    def step(self, h: Tensor, x_t: Tensor, t: int, cache: object) -> Tensor:
        raise NotImplementedError

    def prefix_states(self, cache: object, batch: int, norm: bool) -> list[Tensor]:
        """The states (E, B, H) of the first few steps for every row (also rows whose sequence has ended: they are
        read at their own length), computed some cheaper way than by :meth:`step` on every row (default: none)."""
        return []

    def forward(
        self, x: Tensor, normalize: bool | None = None, last_only: bool = False, lengths: Tensor | None = None
    ) -> Tensor:
        """States (E, B, T, H); only the last one (E, B, H) when ``last_only``; with ``lengths`` ((B,) or (E, B)),
        each sequence's state after its own length (E, B, H), computed without the steps past its end."""
        self._check(x)
        norm = self._normalize_flag(normalize)
        if lengths is not None and self.skip_finished:
            return self._final_states(x, lengths, norm)
        last = None if lengths is None else _last_steps(lengths, x.shape)
        ends = None if last is None else _end_masks(last, x.shape[2])
        cache = self.prepare(x)
        h = self.initial_state(x.shape[1])
        if norm:
            h = _unit(h)
        states = []
        for t in range(x.shape[2] if last is None else int(last.max()) + 1):
            h = self.step(h, x[:, :, t], t, cache)
            if norm:
                h = _unit(h)
            if last is not None:  # each sequence's state at its last step, summed in as the loop passes it
                states = [torch.addcmul(states[0], h, ends[t]) if states else h * ends[t]]
            elif not last_only:
                states.append(h)
        if last is not None:
            return states[0]
        return h if last_only else torch.stack(states, dim=2)

    def _final_states(self, x: Tensor, lengths: Tensor, norm: bool) -> Tensor:
        """Sort each member's sequences by length (longest first); step t updates only the rows still running in
        some member (a prefix of ``n_t`` rows), and each row's output is read at its own last step. Rows are
        independent, so this equals reading the full loop's states at ``lengths - 1``, at about mean/max length of
        its work."""
        E, B, T, _ = x.shape
        lengths = _last_steps(lengths, x.shape) + 1
        order = torch.argsort(lengths, dim=1, descending=True, stable=True)
        lengths = lengths.gather(1, order)
        x = x.gather(1, order[:, :, None, None].expand_as(x))
        running = (lengths[None] > torch.arange(T, device=x.device)[:, None, None]).sum(-1).amax(-1)  # (T,) n_t
        cache = self.prepare(x)
        outs = self.prefix_states(cache, B, norm)  # the first steps for all B rows (finished ones too)
        running[: len(outs)] = B
        h = outs[-1] if outs else (_unit(self.initial_state(B)) if norm else self.initial_state(B))
        for t, n in enumerate(running[: int(lengths[:, 0].max())].tolist()):
            if t < len(outs):
                continue
            h = self.step(h[:, :n], x[:, :n, t], t, _rows(cache, n))
            if norm:
                h = _unit(h)
            outs.append(h)
        # row i (sorted) ends at step L_i - 1, where it lies inside the prefix: its state is flat row offset + i
        offset = torch.cumsum(running, 0) - running
        idx = offset[lengths - 1] + torch.arange(B, device=x.device)
        last = torch.cat(outs, dim=1).gather(1, idx[..., None].expand(E, B, self.hidden))
        return last.gather(1, torch.argsort(order, dim=1)[..., None].expand(E, B, self.hidden))


class FullBilinear(_LoopCell):
    """Full bilinear cell ``h_t = A(x_t) h_{t-1}`` with ``A(x)_ij = Σ_k W_ijk x_k`` (H²D parameters).

    ``additive=True`` gives the ablation ``h_t = A(x_t) h_{t-1} + B x_t + b`` (no longer scale invariant).
    Initialisation: every slice ``W_{::k}`` is ``I + N(0, init_scale²/H)``.
    """

    skip_finished = True

    def __init__(
        self,
        input_dim: int,
        hidden: int,
        ensemble: int = 1,
        additive: bool = False,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(input_dim, hidden, ensemble)
        E, D, H = ensemble, input_dim, hidden
        eye = torch.eye(H).view(1, H, 1, H)
        # stored as (E, H_in, D, H_out): one batched matmul per step gives A(e_k) h for all k.
        self.W = nn.Parameter(eye + init_scale / math.sqrt(H) * _randn(generator, E, H, D, H))
        self.h0 = nn.Parameter(_randn(generator, E, H) / math.sqrt(H))
        self.additive = additive
        self.scale_invariant = not additive
        if additive:
            self.B = nn.Parameter(_randn(generator, E, D, H) / math.sqrt(D))
            self.b = nn.Parameter(torch.zeros(E, H))

    def transition(self, x_t: Tensor) -> Tensor:
        """The matrices ``A(x_t)`` of shape (E, B, H, H) acting as ``h_new = A @ h``."""
        return torch.einsum("ejko,ebk->eboj", self.W, x_t)

    def prepare(self, x: Tensor) -> object:
        """(tokens (E, B, T) for one-hot inputs or None, the additive term ``B x_t + b`` (E, B, T, H) or None)."""
        tokens = _token_index(x)
        add = torch.einsum("ebtd,edh->ebth", x, self.B) + self.b[:, None, None, :] if self.additive else None
        return tokens, None if add is None else add.unbind(2)  # one tensor per step: see ``_LoopCell``

    def prefix_states(self, cache: object, batch: int, norm: bool) -> list[Tensor]:
        """For one-hot inputs, the first k steps by a prefix tree: the states after every one of the D^k token
        prefixes (level j: one batched matmul on the D^(j-1) states of level j - 1 gives all their D successors),
        then each sequence's row gathered by its prefix. k is the largest (<= T) whose last level reads fewer rows
        than the batch, D^(k-1) < ``batch``: S3 (D = 6, B = 64) 3 steps on 1 + 6 + 36 rows instead of about 2.8B,
        parity 6 steps on 63 rows instead of about 5B. The same products as :meth:`step` (equal up to float
        rounding)."""
        tokens = cache[0]  # type: ignore[index]
        if tokens is None:
            return []
        E, B, T = tokens.shape
        D, H = self.input_dim, self.hidden
        k = 0
        while k < T and D**k < batch:
            k += 1
        h = _unit(self.h0[:, None, :]) if norm else self.h0[:, None, :]  # (E, 1, H): the root
        W = self.W.reshape(E, H, D * H)
        bias = self.B + self.b[:, None, :] if self.additive else None  # ``B x + b`` for every token x: (E, D, H)
        node = torch.zeros(E, B, dtype=torch.long, device=tokens.device)
        states = []
        for j in range(k):
            y = torch.bmm(h, W).view(E, -1, D, H)  # successor (node, token) of every node of level j
            if bias is not None:
                y = y + bias[:, None]
            h = y.reshape(E, -1, H)  # level j + 1: node index = parent * D + token
            if norm:
                h = _unit(h)
            node = node * D + tokens[:, :, j]
            states.append(h.gather(1, node[..., None].expand(E, B, H)))
        return states

    def step(self, h: Tensor, x_t: Tensor, t: int, cache: object) -> Tensor:
        """``A(x_t) h`` for every token (one batched matmul, (E, B, D·H)), then the token's row: gathered for
        one-hot inputs (the study's case), contracted with ``x_t`` otherwise (the general bilinear form)."""
        tokens, add = cache  # type: ignore[misc]
        E, B, H = h.shape
        D = self.input_dim
        y = torch.bmm(h, self.W.reshape(E, H, D * H)).view(E, B, D, H)
        if tokens is not None:
            h_new = y.gather(2, tokens[:, :, t, None, None].expand(E, B, 1, H)).view(E, B, H)
        else:
            h_new = torch.bmm(x_t.reshape(E * B, 1, D), y.view(E * B, D, H)).view(E, B, H)
        if add is not None:
            h_new = h_new + add[t]
        return h_new


class CPBilinear(_LoopCell):
    """CP-factored bilinear cell of rank R: ``A(x) = W1 diag(Wxᵀ x) W2ᵀ`` (R(2H+D) parameters).

    Initialised so that ``W1 diag(1) W2ᵀ`` is the identity (R ≥ H) or an orthogonal projection (R < H),
    plus noise; ``Wx = 1 + N(0, init_scale²/4)``.

    ``member_ranks`` (one per ensemble member, each ≤ ``rank`` ≤ H) trains members of several ranks in one
    ensemble: member e uses only its first ``member_ranks[e]`` components (the others are masked to zero and get no
    gradient), which is a rank-``member_ranks[e]`` cell with the same initial distribution (the first r of R
    orthonormal columns are orthonormal).
    """

    def __init__(
        self,
        input_dim: int,
        hidden: int,
        rank: int,
        ensemble: int = 1,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
        member_ranks: list[int] | tuple[int, ...] | None = None,
    ) -> None:
        super().__init__(input_dim, hidden, ensemble)
        if rank < 1:
            raise ValueError(f"rank must be >= 1, got {rank}")
        mask = torch.ones(ensemble, rank)
        if member_ranks is not None:
            if len(member_ranks) != ensemble or min(member_ranks) < 1 or max(member_ranks) > min(rank, hidden):
                raise ValueError(f"member_ranks needs {ensemble} ranks in [1, min(rank, hidden)], got {member_ranks}")
            mask = (torch.arange(rank)[None] < torch.as_tensor(member_ranks)[:, None]).float()
        self.register_buffer("rank_mask", mask)
        E, D, H, R = ensemble, input_dim, hidden, rank
        self.rank = rank
        q, _ = torch.linalg.qr(_randn(generator, E, max(H, R), min(H, R)))
        q = q if H >= R else q.transpose(1, 2)  # (E, H, R) with orthonormal columns or rows
        noise = init_scale / (2 * math.sqrt(H))
        self.W1 = nn.Parameter(q + noise * _randn(generator, E, H, R))
        self.W2 = nn.Parameter(q.clone() + noise * _randn(generator, E, H, R))
        self.Wx = nn.Parameter(1.0 + init_scale / 2 * _randn(generator, E, D, R))
        self.h0 = nn.Parameter(_randn(generator, E, H) / math.sqrt(H))

    def transition(self, x_t: Tensor) -> Tensor:
        """The matrices ``A(x_t)`` of shape (E, B, H, H)."""
        c = torch.einsum("ebd,edr->ebr", x_t, self.Wx) * self.rank_mask[:, None]
        return torch.einsum("eir,ebr,ejr->ebij", self.W1, c, self.W2)

    def prepare(self, x: Tensor) -> object:
        return (torch.einsum("ebtd,edr->ebtr", x, self.Wx) * self.rank_mask[:, None, None]).unbind(2)

    def step(self, h: Tensor, x_t: Tensor, t: int, cache: object) -> Tensor:
        z = torch.bmm(h, self.W2) * cache[t]  # type: ignore[index]
        return torch.bmm(z, self.W1.transpose(1, 2))


class BlockDiagonalBilinear(_LoopCell):
    """Block-diagonal bilinear cell: ``A(x) = blockdiag(A_1(x), ..., A_{H/b}(x))``, each block linear in x.

    Blocks initialised to ``I + N(0, init_scale²/b)``. ``block=H`` is the full model, ``block=1`` the real
    diagonal (use :class:`RealDiagonal` for the scanned version).
    """

    def __init__(
        self,
        input_dim: int,
        hidden: int,
        block: int,
        ensemble: int = 1,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(input_dim, hidden, ensemble)
        if block < 1 or hidden % block:
            raise ValueError(f"block size {block} must be >= 1 and divide hidden={hidden}")
        E, D, n, b = ensemble, input_dim, hidden // block, block
        self.block, self.n_blocks = block, n
        eye = torch.eye(b).expand(E, D, n, b, b)
        self.W = nn.Parameter(eye + init_scale / math.sqrt(b) * _randn(generator, E, D, n, b, b))
        self.h0 = nn.Parameter(_randn(generator, E, hidden) / math.sqrt(hidden))

    def blocks(self, x_t: Tensor) -> Tensor:
        """The blocks ``A_i(x_t)`` of shape (E, B, H/b, b, b)."""
        E, B, D = x_t.shape
        flat = torch.bmm(x_t, self.W.reshape(E, D, -1))
        return flat.view(E, B, self.n_blocks, self.block, self.block)

    def transition(self, x_t: Tensor) -> Tensor:
        """The full block-diagonal matrices ``A(x_t)`` of shape (E, B, H, H)."""
        return torch.stack([torch.block_diag(*m) for m in self.blocks(x_t).flatten(0, 1)]).view(
            *x_t.shape[:2], self.hidden, self.hidden
        )

    def step(self, h: Tensor, x_t: Tensor, t: int, cache: object) -> Tensor:
        E, B, H = h.shape
        blocks = self.blocks(x_t)
        return (blocks @ h.view(E, B, self.n_blocks, self.block, 1)).view(E, B, H)


class RealDiagonal(StateCell):
    """Real diagonal cell ``h_t = diag(W x_t) h_{t-1}`` (entries may be negative), by a parallel scan.

    The product of diagonals is computed as a prefix sum (``torch.cumsum``, one native scan) of ``log|a|`` and of
    the sign flips;
    dividing by the per-step maximum magnitude is the per-step normalisation (direction unchanged).
    Initialised on the unit circle like :class:`RotationCell` (random phase; for a real number the phase
    is 0 or π): entries ``±(1 + N(0, (init_scale/10)²))`` with random signs — the random network of
    Prop. 3 plus a little magnitude noise. (``1 + N(0, 1)``, i.e. near identity, leaves magnitudes so
    uneven that the largest-growing coordinates, not the parity-coding ones, dominate long sequences.)
    """

    def __init__(
        self,
        input_dim: int,
        hidden: int,
        ensemble: int = 1,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(input_dim, hidden, ensemble)
        E, D, H = ensemble, input_dim, hidden
        signs = torch.where(torch.rand(E, D, H, generator=generator) < 0.5, -1.0, 1.0)
        self.W = nn.Parameter(signs * (1.0 + init_scale / 10 * _randn(generator, E, D, H)))
        self.h0 = nn.Parameter(_randn(generator, E, H) / math.sqrt(H))

    def diagonals(self, x: Tensor) -> Tensor:
        """The transition diagonals ``a_t = W x_t`` of shape (E, B, T, H)."""
        return torch.einsum("ebtd,edh->ebth", x, self.W)

    def forward(
        self, x: Tensor, normalize: bool | None = None, last_only: bool = False, lengths: Tensor | None = None
    ) -> Tensor:
        """States (E, B, T, H); the last one (E, B, H) when ``last_only``; with ``lengths`` ((B,) or (E, B)) each
        sequence's state after its own length (E, B, H), by a masked sum instead of a prefix sum."""
        self._check(x)
        if (last_only or lengths is not None) and _token_index(x) is not None:
            # one-hot inputs, one state per sequence: a_t = W[token_t], so the sums over t are token counts times
            # log|W| and (W < 0): (E, B, 1, D) @ (E, D, H) instead of elementwise work on (E, B, T, H)
            counts = _prefix(x, last_only, lengths).squeeze(2)
            log_mag = torch.bmm(counts, self.W.abs().clamp_min(1e-30).log())[:, :, None]
            flips = torch.bmm(counts, (self.W < 0).to(x.dtype))[:, :, None]
        else:
            a = self.diagonals(x)
            log_mag = _prefix(a.abs().clamp_min(1e-30).log(), last_only, lengths)
            flips = _prefix((a < 0).to(a.dtype), last_only, lengths)
        sign = 1.0 - 2.0 * torch.remainder(flips, 2.0)
        shift = log_mag.detach().amax(dim=-1, keepdim=True)
        h = self.h0[:, None, None, :] * sign * torch.exp(log_mag - shift)
        h = h[:, :, -1] if last_only or lengths is not None else h
        return _unit(h) if self._normalize_flag(normalize) else h


class RotationCell(StateCell):
    """R₂ / complex-diagonal cell: H/2 planar rotations with angles ``θ(x) = Wθ x`` (unit modulus).

    All transitions commute (they share the eigenbasis), so only abelian state machines are reachable.
    The cumulative angle is a prefix sum (``torch.cumsum``); norms are preserved exactly.
    """

    def __init__(
        self,
        input_dim: int,
        hidden: int,
        ensemble: int = 1,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(input_dim, hidden, ensemble)
        if hidden % 2:
            raise ValueError(f"rotation cells need an even hidden size, got {hidden}")
        E, D, H = ensemble, input_dim, hidden
        self.theta = nn.Parameter(init_scale * _randn(generator, E, D, H // 2))
        self.h0 = nn.Parameter(_randn(generator, E, H) / math.sqrt(H))

    def angles(self, x: Tensor) -> Tensor:
        """Per-step rotation angles (E, B, T, H/2)."""
        return torch.einsum("ebtd,edh->ebth", x, self.theta)

    def transition(self, x_t: Tensor) -> Tensor:
        """The block-diagonal rotation matrices ``A(x_t)`` of shape (E, B, H, H)."""
        ang = torch.einsum("ebd,edh->ebh", x_t, self.theta)
        c, s = ang.cos(), ang.sin()
        rot = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (E,B,H/2,2,2)
        E, B = x_t.shape[:2]
        out = torch.zeros(E, B, self.hidden, self.hidden, dtype=rot.dtype)
        idx = torch.arange(self.hidden // 2) * 2
        for i in range(2):
            for j in range(2):
                out[:, :, idx + i, idx + j] = rot[..., i, j]
        return out

    def forward(
        self, x: Tensor, normalize: bool | None = None, last_only: bool = False, lengths: Tensor | None = None
    ) -> Tensor:
        """States (E, B, T, H); the last one (E, B, H) when ``last_only``; with ``lengths`` each sequence's state
        after its own length (E, B, H)."""
        self._check(x)
        if last_only or lengths is not None:  # the angle is linear in x: sum the inputs first, (E, B, 1, D)
            total = torch.bmm(_prefix(x, last_only, lengths).squeeze(2), self.theta)[:, :, None]
        else:
            total = _prefix(self.angles(x), last_only, lengths)
        c, s = total.cos(), total.sin()
        h0 = self.h0.view(self.ensemble, 1, 1, self.hidden // 2, 2)
        re, im = h0[..., 0], h0[..., 1]
        h = torch.stack([c * re - s * im, s * re + c * im], dim=-1).flatten(-2)
        h = h[:, :, -1] if last_only or lengths is not None else h
        return _unit(h) if self._normalize_flag(normalize) else h


class PositiveDiagonalAdditive(StateCell):
    """Mamba/GLA-style cell: ``h_t = σ(W_a x_t + c) ⊙ h_{t-1} + B x_t`` (decay in (0, 1)), parallel scan."""

    scale_invariant = False

    def __init__(
        self,
        input_dim: int,
        hidden: int,
        ensemble: int = 1,
        init_scale: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(input_dim, hidden, ensemble)
        E, D, H = ensemble, input_dim, hidden
        self.Wa = nn.Parameter(init_scale * _randn(generator, E, D, H))
        self.c = nn.Parameter(torch.full((E, H), 2.0))
        self.B = nn.Parameter(init_scale * _randn(generator, E, D, H))
        self.h0 = nn.Parameter(torch.zeros(E, H))

    def forward(self, x: Tensor, normalize: bool | None = None, last_only: bool = False) -> Tensor:
        self._check(x)
        a = torch.sigmoid(torch.einsum("ebtd,edh->ebth", x, self.Wa) + self.c[:, None, None, :])
        b = torch.einsum("ebtd,edh->ebth", x, self.B)
        h = linear_recurrence(a, b, self.h0[:, None, :].expand(-1, x.shape[1], -1), dim=2)
        h = h[:, :, -1] if last_only else h
        return _unit(h) if self._normalize_flag(normalize) else h


class EnsembleLSTM(_LoopCell):
    """A standard LSTM (forget-gate bias 1), batched over the ensemble axis. Not scale invariant."""

    scale_invariant = False

    def __init__(
        self, input_dim: int, hidden: int, ensemble: int = 1, generator: torch.Generator | None = None
    ) -> None:
        super().__init__(input_dim, hidden, ensemble)
        E, D, H = ensemble, input_dim, hidden
        k = 1.0 / math.sqrt(H)
        self.W_ih = nn.Parameter(k * (2 * torch.rand(E, D, 4 * H, generator=generator) - 1))
        self.W_hh = nn.Parameter(k * (2 * torch.rand(E, H, 4 * H, generator=generator) - 1))
        bias = torch.zeros(E, 4 * H)
        bias[:, H : 2 * H] = 1.0
        self.bias = nn.Parameter(bias)

    def prepare(self, x: Tensor) -> object:
        return (torch.einsum("ebtd,edg->ebtg", x, self.W_ih) + self.bias[:, None, None, :]).unbind(2)

    def forward(
        self, x: Tensor, normalize: bool | None = None, last_only: bool = False, lengths: Tensor | None = None
    ) -> Tensor:
        """States (E, B, T, H); the last one (E, B, H) when ``last_only``; with ``lengths`` each sequence's state
        after its own length (E, B, H)."""
        self._check(x)
        E, B, T, _ = x.shape
        H = self.hidden
        last = None if lengths is None else _last_steps(lengths, x.shape)
        ends = None if last is None else _end_masks(last, T)
        pre = self.prepare(x)
        h = x.new_zeros(E, B, H)
        c = x.new_zeros(E, B, H)
        states = []
        for t in range(T if last is None else int(last.max()) + 1):
            g = torch.baddbmm(pre[t], h, self.W_hh)  # type: ignore[index]
            s = torch.sigmoid(g)  # gates i, f, (unused), o in one op
            c = torch.addcmul(s[..., H : 2 * H] * c, s[..., :H], torch.tanh(g[..., 2 * H : 3 * H]))
            h = s[..., 3 * H :] * torch.tanh(c)
            if last is not None:
                states = [torch.addcmul(states[0], h, ends[t]) if states else h * ends[t]]
            elif not last_only:
                states.append(h)
        if last is not None:
            return states[0]
        return h if last_only else torch.stack(states, dim=2)


CELL_FAMILIES = ("full", "full+add", "cp{R}", "block{b}", "rotation", "diag", "posdiag+add", "lstm")


def make_cell(
    kind: str,
    input_dim: int,
    hidden: int,
    ensemble: int = 1,
    generator: torch.Generator | None = None,
    init_scale: float = 1.0,
) -> StateCell:
    """Build a cell by name: ``full``, ``full+add``, ``cp<R>`` (e.g. ``cp8``), ``block<b>`` (e.g. ``block2``),
    ``rotation``, ``diag``, ``posdiag+add`` or ``lstm``."""
    kw = {"ensemble": ensemble, "generator": generator}
    if kind == "full":
        return FullBilinear(input_dim, hidden, init_scale=init_scale, **kw)
    if kind == "full+add":
        return FullBilinear(input_dim, hidden, additive=True, init_scale=init_scale, **kw)
    if kind == "rotation":
        return RotationCell(input_dim, hidden, init_scale=init_scale, **kw)
    if kind == "diag":
        return RealDiagonal(input_dim, hidden, init_scale=init_scale, **kw)
    if kind == "posdiag+add":
        return PositiveDiagonalAdditive(input_dim, hidden, init_scale=init_scale, **kw)
    if kind == "lstm":
        return EnsembleLSTM(input_dim, hidden, **kw)
    if m := re.fullmatch(r"cp(\d+)", kind):
        return CPBilinear(input_dim, hidden, int(m.group(1)), init_scale=init_scale, **kw)
    if m := re.fullmatch(r"block(\d+)", kind):
        return BlockDiagonalBilinear(input_dim, hidden, int(m.group(1)), init_scale=init_scale, **kw)
    raise ValueError(f"unknown cell kind {kind!r}; known: {', '.join(CELL_FAMILIES)}")


class StateTrackingRNN(nn.Module):
    """One-hot tokens → cell → linear readout of the unit-normalised state (scaled by √H).

    ``forward(tokens (E,B,T), lengths (B,) or (E,B) | None)`` returns logits (E, B, C) at position
    ``lengths - 1`` (the last position when ``lengths`` is None). The readout sees ``√H · h/‖h‖`` in
    training and evaluation alike, so scale-invariant cells compute the same function either way.
    """

    def __init__(self, cell: StateCell, vocab: int, n_classes: int, generator: torch.Generator | None = None):
        super().__init__()
        if cell.input_dim != vocab:
            raise ValueError(f"one-hot inputs need cell.input_dim == vocab, got {cell.input_dim} != {vocab}")
        self.cell, self.vocab, self.n_classes = cell, vocab, n_classes
        E, H = cell.ensemble, cell.hidden
        self.readout = nn.Parameter(_randn(generator, E, H, n_classes) / math.sqrt(H))
        self.readout_bias = nn.Parameter(torch.zeros(E, n_classes))

    def one_hot(self, tokens: Tensor) -> Tensor:
        """Checked one-hot inputs (E, B, T, vocab) for integer tokens (E, B, T)."""
        if tokens.ndim != 3 or tokens.shape[0] != self.cell.ensemble:
            raise ValueError(f"tokens must be (E={self.cell.ensemble}, B, T), got {tuple(tokens.shape)}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab):
            raise ValueError(f"tokens must lie in [0, {self.vocab})")
        return nn.functional.one_hot(tokens, self.vocab).to(torch.get_default_dtype())

    def states(self, tokens: Tensor, normalize: bool | None = None, last_only: bool = False) -> Tensor:
        """Cell states for integer tokens (E, B, T): (E, B, T, H), or (E, B, H) when ``last_only``."""
        return self.cell(self.one_hot(tokens), normalize=normalize, last_only=last_only)

    def logits_from_states(self, h: Tensor) -> Tensor:
        z = _unit(h) * math.sqrt(self.cell.hidden)
        return torch.einsum("eb...h,ehc->eb...c", z, self.readout) + self.readout_bias.view(
            self.cell.ensemble, 1, *([1] * (h.ndim - 3)), self.n_classes
        )

    def forward(self, tokens: Tensor, lengths: Tensor | None = None, normalize: bool | None = None) -> Tensor:
        if lengths is None:
            return self.logits_from_states(self.states(tokens, normalize, last_only=True))
        if isinstance(self.cell, RealDiagonal | RotationCell | _LoopCell | EnsembleLSTM):
            # each sequence's own final state directly (full cell: steps past its end skipped; other loops: kept
            # as the loop passes it; scans: a masked sum)
            return self.logits_from_states(self.cell(self.one_hot(tokens), normalize=normalize, lengths=lengths))
        h = self.states(tokens, normalize)
        idx = (lengths - 1).expand(tokens.shape[:2]).reshape(*tokens.shape[:2], 1, 1)
        last = h.gather(2, idx.expand(-1, -1, 1, h.shape[-1])).squeeze(2)
        return self.logits_from_states(last)
