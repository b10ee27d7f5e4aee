"""Torch settings for small models on CPU: one thread per worker process, flush denormals."""

from __future__ import annotations


def setup_torch(threads: int = 1) -> None:
    import torch

    torch.set_flush_denormal(True)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def module_device(module):
    """The device a model's parameters live on (where its inputs must go)."""
    return next(module.parameters()).device
