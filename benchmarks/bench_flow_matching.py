"""Cost per batch of the empirical optimal velocity u*(x, t): the chunked one-matmul form
(:func:`genlab.measures.flow_matching.optimal_velocity`) against a plain pairwise-distance implementation
(``torch.cdist`` of x against t*bank for one shared t, then a softmax; :func:`optimal_velocity_pairwise`).

Run:  python benchmarks/bench_flow_matching.py [--threads 1]

Prints median milliseconds per batch of B = 128 queries for bank sizes n and dimensions d, and the peak size of
the largest temporary (the (B, n) weight matrix for the plain form vs (B, chunk) for the chunked one).

Last results (2-core shared VM, load average ~8-12 from other jobs, 1 torch thread, float32, chunk 4096):
see docs/studies/flow-matching.md ("Benchmark") for the table of the last run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from genlab.measures.flow_matching import optimal_velocity, optimal_velocity_pairwise


def bench(fn, reps: int = 5) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    print(f"{'d':>5} {'n':>7} | {'chunked ms':>10} {'pairwise ms':>11} {'speed-up':>8} | {'max |diff|':>10}")
    for d in (64, 256, 1024):
        for n in (1000, 10_000, 50_000):
            bank = torch.randn(n, d, generator=g)
            x = torch.randn(args.batch, d, generator=g)
            t = 0.6
            a = bench(lambda bank=bank, x=x, t=t: optimal_velocity(x, t, bank), args.reps)
            b = bench(lambda bank=bank, x=x, t=t: optimal_velocity_pairwise(x, t, bank), args.reps)
            diff = float((optimal_velocity(x, t, bank).velocity - optimal_velocity_pairwise(x, t, bank).velocity)
                         .abs().max())
            print(f"{d:>5} {n:>7} | {a:>10.2f} {b:>11.2f} {b / a:>7.1f}x | {diff:>10.2e}")


if __name__ == "__main__":
    main()
