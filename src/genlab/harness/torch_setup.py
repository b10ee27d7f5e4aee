"""Torch settings for small models on CPU: one thread per worker process, flush denormals, and (opt-in) a malloc
that keeps freed blocks."""

from __future__ import annotations


def setup_torch(threads: int = 1) -> None:
    import torch

    torch.set_flush_denormal(True)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def module_device(module):
    """The device a model's parameters live on (where its inputs must go)."""
    return next(module.parameters()).device


def keep_freed_memory(limit: int = 256 << 20) -> bool:
    """Ask glibc's malloc to keep freed blocks up to ``limit`` bytes instead of unmapping them (mallopt
    M_MMAP_THRESHOLD / M_TRIM_THRESHOLD). A stacked step allocates and frees megabyte temporaries hundreds of times;
    with the default dynamic threshold each came back as fresh zeroed pages (≈ 4·10⁴ page faults per step, ~10 %
    of a run's CPU as system time). Results are unaffected. False where there is no glibc (nothing changed)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):
        return False
    if mallopt is None:
        return False
    return bool(mallopt(-3, limit)) and bool(mallopt(-1, 2 * limit))  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
