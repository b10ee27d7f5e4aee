"""Throughput of the bilinear cell families and of the log-depth scan vs a Python loop over time.

Usage: ``python benchmarks/bench_state_tracking.py [--hidden 64 256] [--repeats 5] [--threads 1]``

Prints two tables: (1) training throughput (tokens/s, forward + backward, one-hot inputs, vocabulary 6,
batch 64, length 10 — the training shape of the study) per cell family and hidden size, plus the parameter
count; (2) the diagonal linear recurrence ``h_t = a_t h_{t-1} + b_t`` (batch 64 × H 256, and batch 1 × H 32)
computed by :func:`genlab.nn.scan.linear_recurrence` vs the sequential loop, forward and forward + backward.
Timings are medians over repeats, single thread. Results of the last run are in
docs/studies/state-tracking.md (with the machine load, which inflates them on a shared CPU). Last run
(load 2, 2-core shared VM): full 1.5e5 / 2.4e4 tokens/s at H = 64 / 256, cp16 4.0e5 / 3.0e5, diag (scan)
2.7e5 / 9.3e4, lstm 1.5e5 / 2.5e4; scan vs loop at T = 1000: 607 vs 110 ms (f+b, batch 64 × H 256) but
2.5 vs 20 ms (batch 1 × H 32).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from genlab.harness.torch_setup import setup_torch
from genlab.nn.bilinear_rnn import StateTrackingRNN, make_cell
from genlab.nn.scan import linear_recurrence, linear_recurrence_loop

FAMILIES = ("full", "full+add", "cp16", "block2", "block8", "rotation", "diag", "posdiag+add", "lstm")


def _median_time(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_cells(hiddens: list[int], repeats: int, batch: int = 64, length: int = 10, vocab: int = 6) -> None:
    print(f"\ncell throughput: forward+backward, batch {batch}, length {length}, vocab {vocab} (tokens/s)")
    print(f"{'family':>12s} " + " ".join(f"{'H=' + str(h):>12s} {'params':>9s}" for h in hiddens))
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (1, batch, length), generator=g)
    labels = torch.randint(0, vocab, (1, batch), generator=g)
    for fam in FAMILIES:
        cells = []
        for h in hiddens:
            model = StateTrackingRNN(make_cell(fam, vocab, h, 1, g), vocab, vocab, g)

            def step(model=model) -> None:  # type: ignore[no-untyped-def]
                loss = torch.nn.functional.cross_entropy(model(tokens)[0], labels[0])
                loss.backward()

            sec = _median_time(step, repeats)
            n_params = sum(p.numel() for p in model.parameters())
            cells.append(f"{batch * length / sec:12.3g} {n_params:9d}")
        print(f"{fam:>12s} " + " ".join(cells))


def bench_scan(repeats: int, batch: int = 64, hidden: int = 256, lengths=(10, 100, 500, 1000)) -> None:  # type: ignore[no-untyped-def]
    print(f"\ndiagonal recurrence, batch {batch}, H={hidden}: milliseconds (scan / loop)")
    print(f"{'T':>6s} {'fwd scan':>10s} {'fwd loop':>10s} {'f+b scan':>10s} {'f+b loop':>10s}")
    g = torch.Generator().manual_seed(1)
    for T in lengths:
        a = torch.rand(batch, T, hidden, generator=g).requires_grad_()
        b = torch.randn(batch, T, hidden, generator=g).requires_grad_()
        row = []
        for backward in (False, True):
            for fn in (linear_recurrence, linear_recurrence_loop):
                def run(fn=fn, backward=backward, a=a, b=b) -> None:  # type: ignore[no-untyped-def]
                    if backward:
                        fn(a, b, dim=1).sum().backward()
                    else:
                        with torch.no_grad():
                            fn(a, b, dim=1)

                row.append(1000 * _median_time(run, repeats))
        print(f"{T:6d} " + " ".join(f"{v:10.2f}" for v in row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-cells", action="store_true", help="only the scan-vs-loop tables")
    args = parser.parse_args()
    setup_torch(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, {args.threads} thread(s), load average {load:.1f}")
    if not args.skip_cells:
        bench_cells(args.hidden, args.repeats)
    bench_scan(args.repeats)
    bench_scan(args.repeats, batch=1, hidden=32)


if __name__ == "__main__":
    main()
