"""Multi-objective loss weighting: "levelling" rules and PCGrad gradient surgery (no training loop here).

Levelling re-weights K objectives at every step so that their effective contributions become level. Three rules
(our reconstruction of a LePa-style plug-in; the paper's exact rule is not confirmed):

- ``loss``: w_i ∝ 1 / L̄_i, the inverse of a detached running mean (EMA) of each loss, so w_i·L̄_i is equal for
  all i (loss-magnitude levelling; the gradient is then that of Σ log L_i);
- ``gradnorm``: w_i ∝ 1 / ‖∇_p L_i‖ (EMA of the gradient norms on the learned parameters), so every objective
  pushes the parameters by a vector of the same length (GradNorm-like, without GradNorm's learned weights);
- ``dwa``: Dynamic Weight Average, w_i ∝ exp(r_i / T) with r_i = L̄_i(t-1) / L̄_i(t-2): objectives whose loss
  falls slowly get more weight.

Weights are normalised to sum to K and never carry gradient. They start at the given initial weights (the fixed
weights a prompt learner was configured with, normalised) and relax towards the levelled target at ``rate`` per
step (``rate = 1`` jumps there at once). ``loss`` and ``gradnorm`` level only the objectives whose running value is
material (above ``active_frac`` of the largest); one that is still ~0 (zero at the start) keeps its weight.
PCGrad (Yu et al., 2020, arXiv:2001.06782) projects each objective's
gradient off the normal plane of every other objective's gradient it conflicts with (negative inner product).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

RULES = ("loss", "gradnorm", "dwa")


def level_target(
    rule: str,
    values: torch.Tensor,
    previous: torch.Tensor | None = None,
    temperature: float = 2.0,
    eps: float = 1e-8,
) -> torch.Tensor:
    """Levelled weights (sum K) from per-objective ``values``: running-mean losses (``loss``), gradient norms
    (``gradnorm``), or for ``dwa`` the running-mean losses at t-1 (``values``) and t-2 (``previous``)."""
    values = values.detach().double()
    k = values.numel()
    if rule in ("loss", "gradnorm"):
        raw = 1.0 / (values.abs() + eps)
    elif rule == "dwa":
        if previous is None:
            raise ValueError("dwa needs the previous running-mean losses")
        ratio = values / (previous.detach().double().abs() + eps)
        raw = torch.softmax(ratio / temperature, dim=0)
    else:
        raise ValueError(f"unknown levelling rule {rule!r}; rules: {', '.join(RULES)}")
    return (k * raw / raw.sum()).float()


class Leveller:
    """Stateful levelling of K objectives: ``weights(losses, grad_norms)`` returns detached weights summing to K."""

    def __init__(
        self,
        rule: str,
        init: Sequence[float],
        rate: float = 0.1,
        ema: float = 0.9,
        temperature: float = 2.0,
        eps: float = 1e-8,
        active_frac: float = 1e-2,
    ) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown levelling rule {rule!r}; rules: {', '.join(RULES)}")
        init_t = torch.as_tensor(init, dtype=torch.float32)
        if init_t.ndim != 1 or init_t.numel() < 1 or bool((init_t <= 0).any()) or not bool(init_t.isfinite().all()):
            raise ValueError("initial weights must be a non-empty sequence of positive finite numbers")
        if not 0.0 < rate <= 1.0 or not 0.0 <= ema < 1.0 or temperature <= 0:
            raise ValueError("need 0 < rate <= 1, 0 <= ema < 1 and temperature > 0")
        if not 0.0 <= active_frac < 1.0:
            raise ValueError("need 0 <= active_frac < 1")
        self.rule, self.rate, self.ema, self.temperature, self.eps = rule, rate, ema, temperature, eps
        self.active_frac = active_frac
        self.k = init_t.numel()
        self.w = self.k * init_t / init_t.sum()
        self.mean: torch.Tensor | None = None  # running mean of the levelled quantity
        self.prev: list[torch.Tensor] = []  # running-mean losses of the last two steps (dwa)

    @property
    def needs_grad_norms(self) -> bool:
        return self.rule == "gradnorm"

    def _smooth(self, values: torch.Tensor) -> torch.Tensor:
        values = values.detach().float()
        self.mean = values.clone() if self.mean is None else self.ema * self.mean + (1 - self.ema) * values
        return self.mean

    def weights(self, losses: torch.Tensor | Sequence[torch.Tensor], grad_norms: torch.Tensor | None = None):
        """Update the state with this step's losses (and gradient norms for ``gradnorm``); return the weights."""
        losses_t = torch.stack([torch.as_tensor(v).detach().float().reshape(()) for v in losses])
        if losses_t.numel() != self.k:
            raise ValueError(f"expected {self.k} losses, got {losses_t.numel()}")
        if self.rule == "gradnorm":
            if grad_norms is None:
                raise ValueError("the gradnorm rule needs the per-objective gradient norms")
            target = self._levelled(self._smooth(torch.as_tensor(grad_norms)))
        elif self.rule == "loss":
            target = self._levelled(self._smooth(losses_t))
        else:  # dwa: weights from the two previous steps' running means, then record this step
            target = (
                level_target("dwa", self.prev[-1], self.prev[-2], self.temperature, self.eps)
                if len(self.prev) == 2
                else self.w
            )
            self.prev = [*self.prev[-1:], self._smooth(losses_t).clone()]
        self.w = ((1 - self.rate) * self.w + self.rate * target).detach()
        return self.w.clone()

    def _levelled(self, values: torch.Tensor) -> torch.Tensor:
        """The ``loss`` / ``gradnorm`` target over the *material* objectives only: those whose running value is
        above ``active_frac`` times the largest. The others keep their current weight until they become material
        (a loss that is exactly zero at the start, e.g. an L1 to frozen features with a zero-initialised prompt,
        would otherwise take all the weight: 1 / (0 + eps))."""
        mag = values.abs()
        active = mag > self.active_frac * mag.max()
        if bool(active.all()):
            return level_target(self.rule, values, eps=self.eps)
        target = self.w.clone()
        if not bool(active.any()):
            return target
        budget = self.k - float(self.w[~active].sum())
        target[active] = level_target(self.rule, values[active], eps=self.eps) * budget / int(active.sum())
        return target

    def combine(self, losses: Sequence[torch.Tensor], grad_norms: torch.Tensor | None = None) -> torch.Tensor:
        """Σ_i w_i·L_i with this step's (detached) weights: gradient flows through the losses only."""
        w = self.weights(losses, grad_norms)
        return sum(wi * li for wi, li in zip(w, losses))


def pcgrad(grads: torch.Tensor, generator: torch.Generator | None = None, eps: float = 1e-20) -> torch.Tensor:
    """PCGrad update direction from per-objective gradients ``grads`` (K, P): for each i, in a random order of
    the others j, if g_i·g_j < 0 remove from g_i its component along the original g_j; return the sum."""
    k = grads.shape[0]
    out = grads.clone()
    for i in range(k):
        order = [j for j in torch.randperm(k, generator=generator).tolist() if j != i]
        for j in order:
            dot = out[i] @ grads[j]
            if dot < 0:
                out[i] = out[i] - dot / (grads[j] @ grads[j] + eps) * grads[j]
    return out.sum(0)
