"""A small CNN for unsupervised domain generalisation: encoder, semantic and variation heads, decoder.

``encode(x) -> h``; ``s = normalize(g_s(h))`` (semantic, unit norm), ``v = g_v(h)`` (variation);
``aug(v)`` predicts augmentation parameters; ``decode(s, v)`` reconstructs the image (sigmoid output);
``classify(h)`` is the supervised head (used by the ERM reference only). Image size must be divisible by 4.
"""

from __future__ import annotations

import torch
from torch import nn


class UDGNet(nn.Module):
    def __init__(self, size: int = 12, width: int = 32, hidden: int = 128, ds: int = 32, dv: int = 8,
                 n_aug: int = 11, n_classes: int = 10):  # fmt: skip
        super().__init__()
        if size % 4:
            raise ValueError("size must be divisible by 4")
        q = size // 4
        self.q, self.width = q, width
        self.encoder = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * width * q * q, hidden), nn.ReLU(),
        )  # fmt: skip
        self.g_s = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, ds))
        self.g_v = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, dv))
        self.aug = nn.Linear(dv, n_aug)
        self.dec_in = nn.Linear(ds + dv, width * q * q)
        self.decoder = nn.Sequential(
            nn.ReLU(), nn.ConvTranspose2d(width, width, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(width, 3, 4, 2, 1)
        )
        self.classify = nn.Linear(hidden, n_classes)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def heads(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return nn.functional.normalize(self.g_s(h), dim=1), self.g_v(h)

    def decode(self, s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        z = self.dec_in(torch.cat([s, v], 1)).reshape(len(s), self.width, self.q, self.q)
        return torch.sigmoid(self.decoder(z))
