"""Curriculum model merging (CMM): rank the experts, then merge them one at a time in that order.

Progressive merging of experts θ_π(1), …, θ_π(K) into a base θ₀ (task vectors always relative to θ₀):

    m₀ = θ₀,   m_k = Step(base θ₀; inputs m_{k−1}, θ_π(k); weights 1 − α_k, α_k; densities 1, d_π(k))

where Step is any generalized task-arithmetic method (``task_arithmetic``: m_k = (1 − α_k)·m_{k−1} + α_k·θ_π(k);
``ties``: the new expert's task vector is trimmed to its density and sign-elected against the accumulated one;
``dare_ties`` / ``dare_linear``: dropped and rescaled). The schedule sets α_k, and with it the weight
w_k = α_k Π_{j>k}(1 − α_j) the k-th expert ends up with in the task-arithmetic version:

- ``harmonic`` α_k = 1/k: w_k = 1/K, the running (uniform) average, whatever the order;
- ``linear`` α_k = 2/(k + 1): w_k = 2k / (K(K + 1)), weights rising linearly along the curriculum;
- ``constant`` α_k = α for k ≥ 2 (α₁ = 1): w_k = α(1 − α)^{K−k} (and (1 − α)^{K−1} for the first).

A final ``lambda`` scales the merged task vector (m_K − θ₀), as task arithmetic's λ does.

The order π is a *curriculum*: experts sorted by a capability score, ascending by default (the weakest first, so
the strongest are merged last and weigh most). The score is either a validation score the caller measured (on
data disjoint from the test data) or one computed from the weights alone: 1 − the expert's task-vector conflict,
the fraction of its |δ| mass whose sign disagrees with the sign elected by Σᵢ δᵢ (TIES's election).

[recon] The paper (He et al., NeurIPS 2025) ranks experts by capability and merges them iteratively; its exact
score, order direction, step operator and α schedule are not public, so these are our reconstruction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from genlab.merging.methods import DIRECTIONS, SCHEDULES, Method, get_method, gta_merge


def schedule_alphas(n: int, schedule: str = "harmonic", alpha: float = 0.5) -> list[float]:
    """α_1..α_n: ``harmonic`` 1/k; ``linear`` 2/(k + 1); ``constant`` 1 then ``alpha``."""
    if schedule == "harmonic":
        return [1.0 / k for k in range(1, n + 1)]
    if schedule == "linear":
        return [2.0 / (k + 1) for k in range(1, n + 1)]
    if schedule == "constant":
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"constant schedule needs 0 < alpha <= 1, got {alpha}")
        return [1.0] + [float(alpha)] * (n - 1)
    raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")


def effective_weights(alphas: Sequence[float]) -> list[float]:
    """The weight each step's expert ends up with in the task-arithmetic progressive merge: α_k Π_{j>k}(1 − α_j)."""
    out = []
    for k, a in enumerate(alphas):
        w = a
        for later in alphas[k + 1 :]:
            w *= 1.0 - later
        out.append(w)
    return out


def curriculum_order(capability: Sequence[float], direction: str = "ascending") -> list[int]:
    """Indices of the experts sorted by capability (stable: equal scores keep their given order)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    sign = 1.0 if direction == "ascending" else -1.0
    return sorted(range(len(capability)), key=lambda i: sign * capability[i])


def progressive_merge_tensor(
    base: torch.Tensor,
    experts: Iterable[torch.Tensor],
    alphas: Sequence[float],
    step: str | Method = "task_arithmetic",
    density: Sequence[float] | None = None,
    normalize: bool | None = None,
    rescale: bool | None = None,
    generator: torch.Generator | None = None,
    lam: float = 1.0,
) -> torch.Tensor:
    """One tensor of a progressive merge; ``experts`` in merge order (may be a generator loading them lazily)."""
    method = get_method(step) if isinstance(step, str) else step
    if not method.needs_base:
        raise ValueError(f"the progressive step must be a task-arithmetic method, not {method.name!r}")
    merged = base
    for k, expert in enumerate(experts):
        a = float(alphas[k])
        merged = gta_merge(
            method,
            base,
            iter((merged, expert)),
            2,
            [1.0 - a, a],
            [1.0, 1.0 if density is None else float(density[k])],
            normalize=normalize,
            rescale=rescale,
            generator=generator,
        )
    if lam != 1:
        merged = (base + (merged - base) * lam).to(base.dtype)
    return merged


class ConflictMeter:
    """Accumulates, tensor by tensor, each expert's |δ| mass and the part of it whose sign disagrees with the
    elected sign of Σᵢ δᵢ (zero counts as positive, as in TIES); ``scores()`` gives the conflict fractions."""

    def __init__(self, n_experts: int):
        self.disagree = [0.0] * n_experts
        self.total = [0.0] * n_experts

    def update(self, base: torch.Tensor, load_expert, n_experts: int) -> None:
        """``load_expert(i)`` returns expert i's tensor (called twice per expert, so only one is held)."""
        base = base.to(torch.float32)
        total = torch.zeros_like(base)
        for i in range(n_experts):
            total += load_expert(i).to(torch.float32) - base
        elected = torch.where(total >= 0, 1.0, -1.0)
        del total
        for i in range(n_experts):
            delta = load_expert(i).to(torch.float32) - base
            mag = delta.abs()
            self.total[i] += float(mag.sum())
            self.disagree[i] += float((mag * ((delta.sign() * elected) < 0)).sum())

    def scores(self) -> list[float]:
        return [d / t if t > 0 else 0.0 for d, t in zip(self.disagree, self.total)]


def task_vector_conflict(base: dict[str, torch.Tensor], experts: Sequence[dict[str, torch.Tensor]]) -> list[float]:
    """Conflict fraction of each expert's task vector over all floating-point tensors of in-memory state dicts."""
    meter = ConflictMeter(len(experts))
    for name, tensor in base.items():
        if tensor.is_floating_point():
            meter.update(tensor, lambda i, name=name: experts[i][name], len(experts))
    return meter.scores()
