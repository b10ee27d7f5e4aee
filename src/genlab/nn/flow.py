"""Flow-matching training and ODE samplers shared by the generative studies.

Convention: x0 ~ N(0, I) at t = 0, data x1 at t = 1, x_t = (1 - t) x0 + t x1, and a velocity model
``model(x, t) -> v`` with x (B, d) flat and t (B,). Training targets:

- ``cfm``: conditional flow matching at sigma = 0 (rectified flow), target x1 - x0;
- ``otcfm``: the same after pairing x0 and x1 in the batch by an exact optimal-transport plan (``pot``'s
  ``ot.emd`` on squared Euclidean costs, uniform weights -> a permutation);
- ``efm``: Empirical Flow Matching, the closed-form velocity over {x1} ∪ (M - 1 training draws)
  (:func:`genlab.measures.flow_matching.efm_target`).

Samplers: fixed-step Euler, an adaptive Dormand–Prince 5(4) (one step size for the whole batch) and the hybrid
sampler of the paper's Fig. 3 (one velocity field on [0, tau), another on [tau, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from genlab.measures.flow_matching import efm_target

VelocityFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
METHODS = ("cfm", "otcfm", "efm")


class TimeEmbedding(nn.Module):
    """Sinusoidal features of t in [0, 1] (``dim`` even)."""

    def __init__(self, dim: int = 32, max_period: float = 1000.0, scale: float = 1000.0):
        super().__init__()
        self.scale = scale
        if dim % 2:
            raise ValueError(f"time embedding dim must be even, got {dim}")
        half = dim // 2
        self.register_buffer("freqs", torch.exp(-math.log(max_period) * torch.arange(half) / half))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        a = self.scale * t[:, None] * self.freqs[None]
        return torch.cat([torch.cos(a), torch.sin(a)], 1)


class VelocityMLP(nn.Module):
    """MLP velocity field v(x, t): [x, emb(t)] -> ``depth`` hidden SiLU layers of ``width`` -> d."""

    def __init__(self, dim: int, width: int = 256, depth: int = 3, t_dim: int = 32):
        super().__init__()
        self.temb = TimeEmbedding(t_dim)
        layers: list[nn.Module] = []
        d_in = dim + t_dim
        for _ in range(depth):
            layers += [nn.Linear(d_in, width), nn.SiLU()]
            d_in = width
        layers.append(nn.Linear(d_in, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.temb(t)], 1))


class EnsembleLinear(nn.Module):
    """E independent linear maps applied batch-wise: x (E, B, in) -> (E, B, out) with one ``baddbmm``."""

    def __init__(self, members: int, d_in: int, d_out: int, generator: torch.Generator | None = None):
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)
        w = (torch.rand(members, d_in, d_out, generator=generator) * 2 - 1) * bound
        b = (torch.rand(members, 1, d_out, generator=generator) * 2 - 1) * bound
        self.weight, self.bias = nn.Parameter(w), nn.Parameter(b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleVelocityMLP(nn.Module):
    """E independent :class:`VelocityMLP`-shaped velocity fields trained side by side in one process (the small
    models are dispatch-bound on CPU, so batching members with ``bmm`` is several times faster than a loop).
    forward(x (E, B, d), t (E, B)) -> (E, B, d); :meth:`member` gives a (B, d), (B,) view of one member."""

    def __init__(self, members: int, dim: int, width: int = 128, depth: int = 3, t_dim: int = 32,
                 generator: torch.Generator | None = None, t_scale: float = 1000.0):
        super().__init__()
        if members < 1 or depth < 1:
            raise ValueError("members and depth must be >= 1")
        self.members = members
        self.temb = TimeEmbedding(t_dim, max_period=t_scale, scale=t_scale)
        dims = [dim + t_dim] + [width] * depth + [dim]
        self.layers = nn.ModuleList(EnsembleLinear(members, a, b, generator) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        e, b = t.shape
        h = torch.cat([x, self.temb(t.reshape(-1)).reshape(e, b, -1)], -1)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = nn.functional.silu(h)
        return h

    def member(self, i: int) -> VelocityFn:
        """No-grad velocity function of member ``i`` on flat batches (B, d), t (B,)."""

        @torch.no_grad()
        def fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            h = torch.cat([x, self.temb(t)], -1)
            for k, layer in enumerate(self.layers):
                h = torch.addmm(layer.bias[i], h, layer.weight[i])
                if k < len(self.layers) - 1:
                    h = nn.functional.silu(h)
            return h

        return fn


@dataclass(frozen=True)
class FlowMember:
    """One member of an ensemble run: its training set (n, d), method ('cfm' | 'otcfm' | 'efm') and EFM bank
    size M (including the generating point; ignored unless method == 'efm')."""

    x_train: torch.Tensor
    method: str = "cfm"
    bank: int = 1

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
) -> list[list[float]]:
    """Train every member of an ensemble model (``model.members`` independent nets called as model(x (E, B, d),
    t (E, B)), e.g. :class:`EnsembleVelocityMLP` or an ensemble :class:`~genlab.nn.dit.DiT`) on its own data and
    target with Adam (members never interact: per-member losses are
    summed and gradients clipped per member), cosine-decaying the learning rate to 0 unless ``cosine=False``.
    Returns per-member losses every ``log_every`` steps."""
    e = len(members)
    if e != model.members:
        raise ValueError(f"model has {model.members} members but {e} member specs were given")
    d = members[0].x_train.shape[1]
    n = torch.tensor([len(m.x_train) for m in members])
    data = torch.zeros(e, int(n.max()), d)
    for i, m in enumerate(members):
        data[i, : len(m.x_train)] = m.x_train
    ot_rows = [i for i, m in enumerate(members) if m.method == "otcfm"]
    m_bank = torch.tensor([m.bank if m.method == "efm" else 1 for m in members])
    k_max = int(m_bank.max()) - 1
    valid = torch.arange(k_max)[None] < (m_bank - 1)[:, None]  # (E, K)
    efm_rows = torch.nonzero(m_bank > 1).flatten()
    rows = torch.arange(e)[:, None]
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, (lambda k: 0.5 * (1 + math.cos(math.pi * k / steps))) if cosine else (lambda k: 1.0))
    history: list[list[float]] = []
    model.train()
    for step in range(steps):
        idx = (torch.rand(e, batch, generator=generator) * n[:, None]).long()
        x1 = data[rows, idx]
        x0 = torch.randn(x1.shape, generator=generator)
        for i in ot_rows:
            x1[i] = x1[i][ot_pair(x0[i], x1[i])]
        t = torch.rand(e, batch, generator=generator) * t_max
        xt = (1 - t[..., None]) * x0 + t[..., None] * x1
        target = x1 - x0
        if efm_rows.numel():
            r = efm_rows[:, None]
            bidx = (torch.rand(len(efm_rows), k_max, generator=generator) * n[efm_rows, None]).long()
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


def _clip_per_member(model: nn.Module, members: int, max_norm: float) -> None:
    grads = [p.grad for p in model.parameters() if p.grad is not None and p.grad.shape[0] == members]
    sq = sum(g.pow(2).reshape(members, -1).sum(1) for g in grads)
    scale = (max_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.ndim - 1))))


def ot_pair(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    """Indices ``perm`` so that (x0[i], x1[perm[i]]) follow an exact OT plan (squared Euclidean cost, uniform
    weights, equal batch sizes -> the plan is a permutation)."""
    import ot

    x0d, x1d = x0.double(), x1.double()
    cost = ((x0d * x0d).sum(1)[:, None] - 2 * x0d @ x1d.T + (x1d * x1d).sum(1)[None]).clamp_min(0).numpy()
    a = np.full(len(x0), 1.0 / len(x0))
    b = np.full(len(x1), 1.0 / len(x1))
    plan = ot.emd(a, b, cost)
    return torch.from_numpy(plan.argmax(1))


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


def model_velocity(model: nn.Module) -> VelocityFn:
    """Wrap a velocity model as a no-grad ``fn(x, t_batch)``."""

    @torch.no_grad()
    def fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return model(x, t)

    return fn


def closed_form_velocity(bank: torch.Tensor, chunk: int = 4096) -> VelocityFn:
    """The empirical optimal velocity over ``bank`` as ``fn(x, t_batch)``."""
    from genlab.measures.flow_matching import optimal_velocity

    def fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return optimal_velocity(x, t, bank, chunk).velocity

    return fn


def hybrid_velocity(first: VelocityFn, second: VelocityFn, tau: float) -> VelocityFn:
    """``first`` for t < tau, ``second`` for t >= tau (per row)."""

    def fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        early = t < tau
        if bool(early.all()):
            return first(x, t)
        if not bool(early.any()):
            return second(x, t)
        out = torch.empty_like(x)
        out[early] = first(x[early], t[early])
        out[~early] = second(x[~early], t[~early])
        return out

    return fn


@torch.no_grad()
def euler_sample(v: VelocityFn, x0: torch.Tensor, steps: int = 50, t0: float = 0.0, t1: float = 1.0) -> torch.Tensor:
    """Integrate dx/dt = v(x, t) from t0 to t1 with ``steps`` uniform Euler steps (never evaluates v at t1, so
    the closed-form field can be integrated to t1 = 1: its last step lands on the weighted bank mean)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    x = x0.clone()
    ts = torch.linspace(t0, t1, steps + 1, dtype=x0.dtype)
    for k in range(steps):
        t = ts[k].expand(x.shape[:-1])  # (B,), or (E, B) for an ensemble's (E, B, d) states
        x = x + (ts[k + 1] - ts[k]) * v(x, t)
    return x


# Dormand–Prince 5(4) tableau
_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)


@torch.no_grad()
def adaptive_sample(
    v: VelocityFn, x0: torch.Tensor, t0: float = 0.0, t1: float = 1.0, rtol: float = 1e-4, atol: float = 1e-4,
    max_steps: int = 10_000,
) -> tuple[torch.Tensor, int]:
    """Adaptive Dormand–Prince 5(4) from t0 to t1 with one step size for the batch (RMS error norm).
    Returns (x(t1), number of velocity evaluations). Use t1 < 1 for the closed-form field."""
    x = x0.clone()
    t, h, nfe = t0, (t1 - t0) / 20, 0
    n_batch = x.shape[0]
    for _ in range(max_steps):
        if t >= t1 - 1e-12:
            return x, nfe
        h = min(h, t1 - t)
        ks: list[torch.Tensor] = []
        for i in range(7):
            xi = x + h * sum((a * k for a, k in zip(_A[i], ks)), torch.zeros_like(x))
            ks.append(v(xi, torch.full((n_batch,), t + _C[i] * h, dtype=x.dtype)))
        nfe += 7
        x5 = x + h * sum(b * k for b, k in zip(_B5, ks))
        x4 = x + h * sum(b * k for b, k in zip(_B4, ks))
        scale = atol + rtol * torch.maximum(x.abs(), x5.abs())
        err = float(((x5 - x4) / scale).pow(2).mean().sqrt())
        if err <= 1.0:
            t, x = t + h, x5
        h = h * min(5.0, max(0.2, 0.9 * (err + 1e-12) ** -0.2))
    raise RuntimeError(f"adaptive_sample did not reach t1={t1} within {max_steps} steps (stiff field?)")
