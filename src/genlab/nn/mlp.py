"""A plain MLP classifier with a named feature body and a separate linear ``head``.

``MLP(64, (256, 256), 10)`` is ``64 → 256 → 256 → 10`` with the activation after every hidden layer. The last
hidden activations are the model's *features* (``model.features(x)``), and ``model.head`` is the classifier
(bias-free by default, so measures such as relative flatness and NC3 see the whole classifier in one matrix).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


class MLP(nn.Module):
    """``in_features → hidden[0] → … → hidden[-1] → out_features``; ``body`` gives features, ``head`` logits."""

    def __init__(
        self,
        in_features: int,
        hidden: Sequence[int],
        out_features: int,
        activation: str = "relu",
        head_bias: bool = False,
    ):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of {', '.join(_ACTIVATIONS)}")
        if in_features < 1 or out_features < 1 or any(h < 1 for h in hidden):
            raise ValueError(f"layer sizes must be >= 1, got {in_features}, {tuple(hidden)}, {out_features}")
        layers: list[nn.Module] = []
        d = in_features
        for h in hidden:
            layers += [nn.Linear(d, h), _ACTIVATIONS[activation]()]
            d = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(d, out_features, bias=head_bias)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features (the input of ``head``)."""
        return self.body(x)

    def forward_with_features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, features)`` in one pass."""
        h = self.body(x)
        return self.head(h), h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))
