"""Full-batch gradient descent on the logistic loss, with snapshots (the weak-to-strong CNN study's trainer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class GDHistory:
    """Steps at which ``snapshot`` was called and what it returned."""

    steps: list[int] = field(default_factory=list)
    snapshots: list[object] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)


def train_gd(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    lr: float,
    steps: int,
    snapshot_every: int = 0,
    snapshot: Callable[[nn.Module], object] | None = None,
) -> GDHistory:
    """Full-batch gradient descent on the mean logistic loss log(1 + exp(−y f(x))).

    If ``snapshot_every`` > 0, calls ``snapshot(model)`` at step 0, every ``snapshot_every`` steps and at the end
    (default: a copy of the parameters) and records the training loss there.
    """
    if steps < 0 or lr <= 0:
        raise ValueError("need steps >= 0 and lr > 0")
    y = y.to(x.dtype)
    snap = snapshot or (lambda mod: {k: v.detach().clone() for k, v in mod.state_dict().items()})
    hist = GDHistory()
    opt = torch.optim.SGD(model.parameters(), lr=lr)

    def record(step: int, loss: float) -> None:
        hist.steps.append(step)
        hist.snapshots.append(snap(model))
        hist.loss.append(loss)

    for step in range(steps + 1):
        opt.zero_grad(set_to_none=True)
        loss = F.softplus(-y * model(x)).mean()
        if snapshot_every and (step % snapshot_every == 0 or step == steps):
            record(step, float(loss.detach()))
        if step == steps:
            break
        loss.backward()
        opt.step()
    return hist
