"""Speed of relative flatness and neural-collapse measures (CPU, one thread).

Compares, for a last layer W (k × d) on n samples:
- closed form (``relative_flatness`` on the model's head: one forward pass, O(n·k·d));
- autograd route (the same layer measured through a custom per-sample CE loss: k Hessian-vector products);
- brute force (``torch.autograd.functional.hessian`` of the loss w.r.t. W, (k·d)² entries) — tiny sizes only;
- ``neural_collapse`` (NC1–NC4 and NCC) on the same model.

Run: ``.venv/bin/python benchmarks/bench_measures_flatness.py``. Last results (2 cores shared with other jobs,
load average ~3.5; times in ms, best of 3):

        n    d    k    closed ms  autograd ms   brute ms   NC ms
      256   16    5          0.4          1.4       18.5     1.6
     2048  128   10          3.9          5.4          -    16.6
     4096  256   97         24.8        278.1          -    81.4

The closed form is linear in n·k·d; the autograd route costs k extra backward passes (k = 97: ~11× the closed
form); the brute-force Hessian is only feasible for k·d ≲ 10³.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

from genlab.measures.flatness import relative_flatness
from genlab.measures.neural_collapse import neural_collapse


def timed(fn, repeat: int = 3) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def per_sample_ce(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out, y, reduction="none")


def bench_one(n: int, d: int, k: int) -> str:
    model = nn.Sequential(nn.Linear(32, d), nn.ReLU(), nn.Linear(d, k, bias=False)).eval()
    x, y = torch.randn(n, 32), torch.randint(0, k, (n,))
    closed = timed(lambda: relative_flatness(model, "2", (x, y)))
    auto = timed(lambda: relative_flatness(model, "2", (x, y), loss=per_sample_ce), 1)
    brute = "-"
    if k * d <= 100:
        phi = model[1](model[0](x)).detach()
        w = model[2].weight.detach()
        brute = f"{timed(lambda: torch.autograd.functional.hessian(lambda v: F.cross_entropy(phi @ v.T, y), w), 1):.1f}"
    nc = timed(lambda: neural_collapse(model, "2", (x, y)))
    return f"{n:>5} {d:>4} {k:>4} {closed:>12.1f} {auto:>12.1f} {brute:>10} {nc:>7.1f}"


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"{'n':>5} {'d':>4} {'k':>4} {'closed ms':>12} {'autograd ms':>12} {'brute ms':>10} {'NC ms':>7}")
    for n, d, k in [(256, 16, 5), (2048, 128, 10), (4096, 256, 97)]:
        print(bench_one(n, d, k))


if __name__ == "__main__":
    main()
