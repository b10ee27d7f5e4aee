"""Theorem 4.3 where the stability term binds, with the theorem's α₁ (tight-bounds study, issue 35).

Definition 4.2 / Theorem 4.3 (arXiv:2410.01969): with S₁ ~ D^{m−k} and S₂ ~ D^k, A is (α₁, β₁, m, k)-loss stable if
P[|L_D(A(S₁)) − L_D(A(S₁∘S₂))| ≤ α₁] ≥ 1 − β₁; the hold-out estimate E(S) = L_{S₂}(A(S₁)) is then within
α₀ + α₁ of L_D(A(S)) with probability ≥ 1 − β₀ − β₁, α₀ Hoeffding's radius at β₀. α₁ is a constant of the algorithm
and the distribution at the sizes (m − k, m); it is not computed from the sample S being judged.

Here D is the mnist1d generator, and each unit draws its own sample S ~ D^m (fresh generated signals, so units are
independent). A(S₁) and A(S) are a one-hidden-layer MLP trained from the same initialisation with the same
mini-batch draws; all units' pairs are trained as one batched model (a leading member dimension, ``baddbmm``).
α̂₁ for unit i is the split-conformal (1 − β₁) quantile of the other units' loss changes
|L_T(A(S₁)) − L_T(A(S))| at exactly (m − k, m), measured on a shared generated test set T that stands in for D:
by exchangeability of the units, P[unit i's change ≤ α̂₁] ≥ 1 − β₁, which is the definition's guarantee. Unit i's
own test labels never enter its interval.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from genlab.measures.estimability import hoeffding_radius


def conformal_rank(n: int, beta: float) -> int:
    """⌈(1 − β) n⌉: the order statistic of n − 1 other units that bounds a new unit's value w.p. ≥ 1 − β."""
    return math.ceil((1 - beta) * n - 1e-9)  # the tolerance keeps (1 − 0.025)·40 = 39, not 39.000000000000004


def conformal_alpha1(changes: np.ndarray, beta1: float) -> np.ndarray:
    """Leave-one-out split-conformal (1 − β₁) quantile of the loss changes: for unit i, the ⌈(1 − β₁) n⌉-th
    smallest of the other n − 1 units' changes (∞ when that rank exceeds n − 1: too few units for level β₁)."""
    changes = np.asarray(changes, dtype=float)
    n = changes.size
    rank = conformal_rank(n, beta1)
    out = np.full(n, np.inf)
    if rank > n - 1:
        return out
    for i in range(n):
        out[i] = np.sort(np.delete(changes, i))[rank - 1]
    return out


def train_pairs(x: np.ndarray, y: np.ndarray, k: int, width: int, lr: float, steps: int, seed: int,
                batch: int = 64, device: str = "cpu"):
    """Train A(S₁) and A(S) for every unit at once. ``x`` (U, m, d), ``y`` (U, m): unit u's sample S; S₁ is its
    first m − k points. Member 2u is A(S₁), 2u + 1 is A(S); the two share the initialisation and, at every step,
    the uniform draws that pick the mini-batch (index ⌊u·n⌋ of each member's own n points). SGD, momentum 0.9,
    cross-entropy. Returns a predict function z (B, d) -> labels (2U, B)."""
    import torch

    from genlab.nn.flow import EnsembleLinear

    units, m, d = x.shape
    gen = torch.Generator().manual_seed(seed)
    hidden, head = EnsembleLinear(units, d, width, gen), EnsembleLinear(units, width, 10, gen)
    params = [torch.nn.Parameter(p.detach().repeat_interleave(2, 0).to(device))
              for p in (hidden.weight, hidden.bias, head.weight, head.bias)]
    opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    xt = torch.as_tensor(x, device=device).repeat_interleave(2, 0)
    yt = torch.as_tensor(y, device=device).repeat_interleave(2, 0)
    sizes = torch.tensor([m - k, m] * units, device=device)[:, None]
    rows = torch.arange(2 * units, device=device)[:, None]

    def logits(z: torch.Tensor) -> torch.Tensor:
        h = torch.relu(torch.baddbmm(params[1], z, params[0]))
        return torch.baddbmm(params[3], h, params[2])

    for _ in range(steps):
        u = torch.rand(units, batch, generator=gen).to(device).repeat_interleave(2, 0)
        idx = (u * sizes).long()
        out = logits(xt[rows, idx])
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, 10), yt[rows, idx].reshape(-1), reduction="sum")
        opt.zero_grad()
        (loss / batch).backward()  # each member's gradient is that of its own mean loss
        opt.step()

    def predict(z: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Labels (2U, B): z (B, d) for every member, or z (U, B, d) with unit u's points for its two members."""
        with torch.no_grad():
            parts = []
            for a in range(0, z.shape[-2], chunk):
                zt = torch.as_tensor(z[..., a : a + chunk, :], device=device)
                zt = zt.expand(2 * units, -1, -1) if zt.dim() == 2 else zt.repeat_interleave(2, 0)
                parts.append(logits(zt).argmax(-1).cpu().numpy())
            return np.concatenate(parts, axis=1)

    return predict


def population_runs(x: np.ndarray, y: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, k: int, delta: float,
                    **fit: Any) -> list[dict[str, Any]]:
    """One row per unit: the hold-out estimate, α₀ at β₀ = δ/2, the test-measured loss change, α̂₁ (conformal, at
    β₁ = δ/2, from the other units) and whether [E − α₀ − α̂₁, E + α₀ + α̂₁] covers L_T(A(S))."""
    units, m, _ = x.shape
    predict = train_pairs(x, y, k, **fit)
    test_pred = predict(x_test)  # (2U, |T|)
    s2 = predict(x[:, m - k :])[0::2]  # (U, k): A(S₁) on its own held-out S₂
    a0, a0_full = hoeffding_radius(k, delta / 2), hoeffding_radius(k, delta)
    loss_s1 = (test_pred[0::2] != y_test).mean(1)
    loss_full = (test_pred[1::2] != y_test).mean(1)
    train_err = (predict(x)[1::2] != y).mean(1)  # A(S) on S
    change = np.abs(loss_s1 - loss_full)
    alpha1 = conformal_alpha1(change, delta / 2)
    rows = []
    for u in range(units):
        est = float(np.mean(s2[u] != y[u, m - k :]))
        err = abs(est - float(loss_full[u]))
        rows.append({
            "seed": u, "k": k, "m": m, "holdout": est, "alpha0": a0, "alpha0_full_delta": a0_full,
            "loss_s1": float(loss_s1[u]), "test_err": float(loss_full[u]), "test_acc": 1 - float(loss_full[u]),
            "train_err": float(train_err[u]), "loss_instability": float(change[u]),
            "alpha1_resampled": float(alpha1[u]),
            "agreement": float(np.mean(test_pred[2 * u] == test_pred[2 * u + 1])), "error": err,
            "covers": bool(err <= a0 + alpha1[u]), "width_allowed": 2 * (a0 + float(alpha1[u])),
            "covers_without_alpha1": bool(err <= a0_full),
        })
    return rows

