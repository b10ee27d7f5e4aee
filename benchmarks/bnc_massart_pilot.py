"""Pilot for bnc-sample-complexity's confirmatory Massart run: how |A_S| grows with the number N of training instances.

    PYTHONPATH=src python benchmarks/bnc_massart_pilot.py 60 /tmp/bnc-pilot

Traces the μ-staircase of `count` fresh knapsacks (the quick preset's generator and solver settings; instances drawn
by `genlab.data.mip.write_family` with its own seed, so none is a pool instance of any study run), then runs the
study's continuous-μ ERM on the first N of them for nested N and prints |A_S|, the Massart ε (exact |A_S|) as a
fraction of H, and the CPU seconds per traced instance.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from genlab.data.mip import write_family
from genlab.measures.bnc_bounds import epsilon_massart
from genlab.studies.bnc_sample_complexity import BncSampleComplexity, _settings, _trace_job, staircase_erm

PILOT_SEED = 1000  # write_family's (seed, k) streams: unrelated to any run seed's pool streams


def main(count: int, out: str) -> None:
    cfg = BncSampleComplexity.Config()  # the quick preset is the defaults
    paths = write_family("knapsack", Path(out), count, seed=PILOT_SEED, items=cfg.items, rows=cfg.rows,
                         correlation=cfg.correlation)
    settings = asdict(_settings(cfg))
    start = time.process_time()
    traces = [_trace_job((str(p), settings, cfg.staircase_max_runs)) for p in paths]
    cpu = time.process_time() - start
    rows = []
    for n in range(10, count + 1, 10):
        fit = staircase_erm(traces[:n])
        eps = epsilon_massart(n, cfg.delta, cfg.node_limit, fit["a_s"])
        rows.append({"n": n, "a_s": fit["a_s"], "candidates": fit["candidates"], "eps_over_h": eps / cfg.node_limit})
    ns, a_s = np.array([r["n"] for r in rows], float), np.array([r["a_s"] for r in rows], float)
    slope = float(np.polyfit(np.log(ns), np.log(a_s), 1)[0])
    print(json.dumps({"rows": rows, "log_log_slope": slope, "cpu_per_trace": cpu / count,
                      "pieces": [t["run_pieces"] for t in traces],
                      "complete": all(t["complete"] for t in traces)}, indent=1))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
