"""Flow-matching velocity models and ODE samplers shared by the generative studies (the trainers are in
:mod:`genlab.training.flow_matching`).

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

import torch
from torch import nn

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
def hybrid_sample_sweep(
    first: VelocityFn, second: VelocityFn, x0: torch.Tensor, taus: list[float] | tuple[float, ...], steps: int = 50
) -> torch.Tensor:
    """Euler samples of the hybrid field (``first`` on [0, tau), ``second`` after) for every tau in ``taus`` at
    once: (len(taus), B, d), the same steps as ``euler_sample(hybrid_velocity(first, second, tau), x0, steps)``
    per tau. The ``first`` part of the path is shared by all tau, so it is integrated once (keeping the state at
    each switch step) and ``second`` then advances the states of every tau in one batch."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    ts = torch.linspace(0.0, 1.0, steps + 1, dtype=x0.dtype, device=x0.device)
    switch = [int((ts[:-1] < tau).sum()) for tau in taus]  # the steps taken with ``first`` for each tau
    states = torch.empty(len(taus), *x0.shape, dtype=x0.dtype, device=x0.device)
    x = x0.clone()
    for k in range(max(switch) + 1):
        for j, sw in enumerate(switch):
            if sw == k:
                states[j] = x
        if k < max(switch):
            x = x + (ts[k + 1] - ts[k]) * first(x, ts[k].expand(x.shape[:-1]))
    d = x0.shape[-1]
    for k in range(min(switch), steps):
        act = [j for j, sw in enumerate(switch) if sw <= k]
        xa = states[act].reshape(-1, d)
        states[act] = (xa + (ts[k + 1] - ts[k]) * second(xa, ts[k].expand(len(xa)))).reshape(len(act), *x0.shape)
    return states


@torch.no_grad()
def euler_sample(v: VelocityFn, x0: torch.Tensor, steps: int = 50, t0: float = 0.0, t1: float = 1.0) -> torch.Tensor:
    """Integrate dx/dt = v(x, t) from t0 to t1 with ``steps`` uniform Euler steps (never evaluates v at t1, so
    the closed-form field can be integrated to t1 = 1: its last step lands on the weighted bank mean)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    x = x0.clone()
    ts = torch.linspace(t0, t1, steps + 1, dtype=x0.dtype, device=x0.device)
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
