"""Flow-matching trainers: one velocity model (:func:`train_flow`) or an ensemble of independent members, each on
its own data and target (:func:`train_flow_ensemble`).

Convention (as in :mod:`genlab.nn.flow`): x0 ~ N(0, I) at t = 0, data x1 at t = 1, x_t = (1 - t) x0 + t x1.
Targets: ``cfm`` (x1 - x0), ``otcfm`` (the same after exact OT pairing within the batch), ``efm`` (the
closed-form velocity over {x1} ∪ (M - 1) training draws, :func:`genlab.measures.flow_matching.efm_target`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from genlab.measures.flow_matching import efm_target
from genlab.nn.flow import METHODS


@dataclass(frozen=True)
class FlowMember:
    """One member of an ensemble run: its training set (n, d), method ('cfm' | 'otcfm' | 'efm'), EFM bank
    size M (including the generating point; ignored unless method == 'efm') and an optional ``pair`` label:
    members with the same label draw the same minibatch indices, x0 and t at every step (common random numbers
    for arms that differ only in their target; they must have training sets of one size)."""

    x_train: torch.Tensor
    method: str = "cfm"
    bank: int = 1
    pair: object | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.bank < 1:
            raise ValueError(f"bank must be >= 1, got {self.bank}")


def train_flow_ensemble(
    model: nn.Module,
    members: list[FlowMember],
    steps: int,
    generator: torch.Generator,
    batch: int = 64,
    lr: float = 1e-3,
    t_max: float = 1.0 - 1e-3,
    grad_clip: float = 1.0,
    log_every: int = 250,
    on_log: Callable[[int, list[float]], None] | None = None,
    cosine: bool = True,
    fused: bool = False,
    progress: Callable[[range], Iterable[int]] = iter,
) -> list[list[float]]:
    """Train every member of an ensemble model (``model.members`` independent nets called as model(x (E, B, d),
    t (E, B)), e.g. :class:`EnsembleVelocityMLP` or an ensemble :class:`~genlab.nn.dit.DiT`) on its own data and
    target with Adam (members never interact: per-member losses are
    summed and gradients clipped per member), cosine-decaying the learning rate to 0 unless ``cosine=False``.
    Returns per-member losses every ``log_every`` steps. Runs on the model's device; every random draw comes from
    ``generator`` on the CPU, so a seed gives the same batches on any device. Members with one ``pair`` label share
    their minibatch draws (indices, x0, t); without labels every member draws its own. ``fused=True`` uses
    torch's fused Adam (the same update in one kernel per parameter; about 4x faster on CPU, equal up to float
    rounding). ``progress`` wraps the step range (e.g. ``lambda r: ctx.progress(r, desc="steps")``)."""
    e = len(members)
    dev = next(model.parameters()).device
    if e != model.members:
        raise ValueError(f"model has {model.members} members but {e} member specs were given")
    d = members[0].x_train.shape[1]
    n = torch.tensor([len(m.x_train) for m in members])
    draw, n_draw = _draw_rows(members)  # member -> row of the shared draws
    data = torch.zeros(e, int(n.max()), d)
    for i, m in enumerate(members):
        data[i, : len(m.x_train)] = m.x_train
    ot_rows = [i for i, m in enumerate(members) if m.method == "otcfm"]
    m_bank = torch.tensor([m.bank if m.method == "efm" else 1 for m in members])
    k_max = int(m_bank.max()) - 1
    valid = (torch.arange(k_max)[None] < (m_bank - 1)[:, None]).to(dev)  # (E, K)
    data = data.to(dev)
    efm_rows = torch.nonzero(m_bank > 1).flatten()
    rows = torch.arange(e, device=dev)[:, None]
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=fused or None)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, (lambda k: 0.5 * (1 + math.cos(math.pi * k / steps))) if cosine else (lambda k: 1.0))
    history: list[list[float]] = []
    model.train()
    for step in progress(range(steps)):
        idx = (torch.rand(n_draw, batch, generator=generator)[draw] * n[:, None]).long()
        x1 = data[rows, idx.to(dev)]
        x0 = torch.randn(n_draw, batch, d, generator=generator)[draw].to(dev)
        for i in ot_rows:
            x1[i] = x1[i][ot_pair(x0[i], x1[i])]
        t = (torch.rand(n_draw, batch, generator=generator)[draw] * t_max).to(dev)
        xt = (1 - t[..., None]) * x0 + t[..., None] * x1
        target = x1 - x0
        if efm_rows.numel():
            r = efm_rows[:, None].to(dev)
            bidx = (torch.rand(len(efm_rows), k_max, generator=generator) * n[efm_rows, None]).long().to(dev)
            target[efm_rows] = efm_target(xt[efm_rows], t[efm_rows], x1[efm_rows], data[r, bidx],
                                          extra_valid=valid[efm_rows])
        per_member = (model(xt, t) - target).pow(2).mean(dim=(1, 2))
        opt.zero_grad(set_to_none=True)
        per_member.sum().backward()
        if grad_clip > 0:
            _clip_per_member(model, e, grad_clip)
        opt.step()
        sched.step()
        if step % log_every == 0 or step == steps - 1:
            losses = per_member.detach().tolist()
            history.append(losses)
            if on_log is not None:
                on_log(step, losses)
    model.eval()
    return history


def _draw_rows(members: list[FlowMember]) -> tuple[torch.Tensor, int]:
    """Row of the per-step random draws each member reads: its own, or its ``pair`` label's (shared)."""
    rows: dict[object, int] = {}
    out = []
    for i, m in enumerate(members):
        key = ("member", i) if m.pair is None else ("pair", m.pair)
        out.append(rows.setdefault(key, len(rows)))
    sizes: dict[int, int] = {}
    for r, m in zip(out, members):
        if sizes.setdefault(r, len(m.x_train)) != len(m.x_train):
            raise ValueError(f"members paired as {m.pair!r} have training sets of different sizes")
    return torch.tensor(out), len(rows)


def _clip_per_member(model: nn.Module, members: int, max_norm: float) -> None:
    grads = [p.grad for p in model.parameters() if p.grad is not None and p.grad.shape[0] == members]
    sq = sum(torch.linalg.vector_norm(g.reshape(members, -1), dim=1).square() for g in grads)
    scale = (max_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.ndim - 1))))


def ot_pair(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    """Indices ``perm`` so that (x0[i], x1[perm[i]]) follow an exact OT plan (squared Euclidean cost, uniform
    weights, equal batch sizes -> the plan is a permutation)."""
    import ot

    x0d, x1d = x0.double(), x1.double()
    cost = ((x0d * x0d).sum(1)[:, None] - 2 * x0d @ x1d.T + (x1d * x1d).sum(1)[None]).clamp_min(0).cpu().numpy()
    a = np.full(len(x0), 1.0 / len(x0))
    b = np.full(len(x1), 1.0 / len(x1))
    plan = ot.emd(a, b, cost)
    return torch.from_numpy(plan.argmax(1)).to(x0.device)


@dataclass
class FlowTrainConfig:
    method: str = "cfm"
    steps: int = 2000
    batch: int = 128
    lr: float = 1e-3
    bank: int = 128  # EFM M: bank size including the generating point
    t_max: float = 1.0 - 1e-3
    grad_clip: float = 1.0

    def validate(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.steps < 1 or self.batch < 1 or self.bank < 1:
            raise ValueError("steps, batch and bank must be >= 1")
        if not 0.0 < self.t_max < 1.0:
            raise ValueError(f"t_max must lie in (0, 1), got {self.t_max}")


def flow_targets(
    x1: torch.Tensor, x_train: torch.Tensor, cfg: FlowTrainConfig, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One training batch for ``x1`` rows: returns (x_t, t, target) for the configured method."""
    x0 = torch.randn(x1.shape, generator=generator)
    if cfg.method == "otcfm":
        x1 = x1[ot_pair(x0, x1)]
    t = torch.rand(x1.shape[0], generator=generator) * cfg.t_max
    xt = (1 - t[:, None]) * x0 + t[:, None] * x1
    if cfg.method == "efm":
        extra = x_train[torch.randint(len(x_train), (cfg.bank - 1,), generator=generator)]
        target = efm_target(xt, t, x1, extra)
    else:
        target = x1 - x0
    return xt, t, target


def train_flow(
    model: nn.Module,
    x_train: torch.Tensor,
    cfg: FlowTrainConfig,
    generator: torch.Generator,
    on_log: Callable[[int, float], None] | None = None,
    log_every: int = 250,
) -> list[float]:
    """Train ``model`` by flow matching on ``x_train`` (n, d) with Adam; returns the loss every ``log_every``."""
    cfg.validate()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    losses: list[float] = []
    model.train()
    for step in range(cfg.steps):
        idx = torch.randint(len(x_train), (cfg.batch,), generator=generator)
        xt, t, target = flow_targets(x_train[idx], x_train, cfg, generator)
        loss = (model(xt, t) - target).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if step % log_every == 0 or step == cfg.steps - 1:
            losses.append(float(loss.detach()))
            if on_log is not None:
                on_log(step, losses[-1])
    model.eval()
    return losses
