"""Linear CNN (weak teacher) and two-layer ReLU CNN (strong student) on three-patch inputs, trained by
full-batch gradient descent on the logistic loss (Oh, Song & Yun, arXiv 2510.24812; the loop is
:func:`genlab.training.gd.train_gd`).

* linear CNN:  f(w, X) = Σ_p ⟨w, x⁽ᵖ⁾⟩
* ReLU CNN:    f(W, X) = F₊(W₊, X) − F₋(W₋, X),  F_j = (1/m) Σ_{r≤m} Σ_p ReLU(⟨w_{j,r}, x⁽ᵖ⁾⟩),
  second layer fixed, first layer initialised N(0, σ₀²).

Inputs are float tensors of shape (n, P, d); labels are ±1.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["LinearCNN", "ReLUCNN"]


class LinearCNN(nn.Module):
    """f(w, X) = Σ_p ⟨w, x⁽ᵖ⁾⟩ with one shared filter w ∈ R^d, initialised at zero."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1) @ self.w


class ReLUCNN(nn.Module):
    """Two-layer ReLU CNN with m filters per class and a fixed ±1/m second layer."""

    def __init__(self, d: int, m: int, sigma0: float, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if m < 1 or d < 1 or sigma0 < 0:
            raise ValueError("need d >= 1, m >= 1 and sigma0 >= 0")
        self.m = m
        self.W = nn.Parameter(sigma0 * torch.randn(2, m, d, generator=generator))  # W[0] = W₋, W[1] = W₊

    def class_scores(self, x: torch.Tensor) -> torch.Tensor:
        """(n, 2) tensor of F₋, F₊."""
        n, p, d = x.shape
        pre = x.reshape(n * p, d) @ self.W.reshape(-1, d).T  # one GEMM: (n·P, 2m)
        return F.relu(pre).reshape(n, p, 2, self.m).sum(dim=1).mean(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.class_scores(x)
        return s[:, 1] - s[:, 0]
