"""Rewards per second of genlab.ifbench.reward on synthetic RLVR batches (training prompts from make-train and
responses built from their base prompts), serial and on all cores.

    python benchmarks/bench_ifbench_reward.py [--n 4000]

Last results (2-core machine, no other job running, 2026-12-02 22:55 UTC, n=4000; 1-5 constraints each; language
detection batched per chunk, each answer and ground truth parsed once):

     workers   items  seconds  rewards/s
           1    4000     0.34     11,823
           2    4000     0.17     23,531

(Earlier the same day: 5,266 / 10,328 before the one-pass Punkt, early-stopped language detection and the
single parse; 648 / 1,006 at load ~13 before language detection was batched.)
"""

from __future__ import annotations

import argparse
import os
import time

from genlab.ifbench.reward import score_batch
from genlab.ifbench.train_prompts import make_train, to_open_instruct


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4000)
    args = parser.parse_args()
    rows = make_train(n=args.n, seed=0)
    truths = [to_open_instruct(r)["ground_truth"] for r in rows]
    texts = [
        f"<think>plan</think>{r['base']} Here is my answer, with some words about it.\n\n* a point\n* another point"
        for r in rows
    ]
    score_batch(texts[:50], truths[:50])  # warm caches (NLTK data, regexes)
    print(f"{'workers':>8} {'items':>7} {'seconds':>8} {'rewards/s':>10}")
    for workers in sorted({1, os.cpu_count() or 1}):
        t0 = time.perf_counter()
        score_batch(texts, truths, workers=workers)
        dt = time.perf_counter() - t0
        print(f"{workers:>8} {len(texts):>7} {dt:>8.2f} {len(texts) / dt:>10.0f}")


if __name__ == "__main__":
    main()
