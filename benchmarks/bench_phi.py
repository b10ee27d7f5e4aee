"""Speed of the φ-curve pieces: deterministic-equivalent grid evaluation and the batched Monte Carlo.

Run: ``.venv/bin/python benchmarks/bench_phi.py`` (single BLAS thread). Prints one row per case:
grid size, wall seconds, and throughput.

Last results (2-core shared VM, one BLAS thread, load average ≈ 15 from other jobs, so absolute times are
inflated by roughly 3-5x):

    case                                           seconds  throughput
    RFRR DE, k=800, 100×5 (p, λ) grid                0.506  988 points/s
    RFRR DE, k=800, 400×10 (p, λ) grid               2.003  1,997 points/s
    RFRR DE, k=800, 1000×40 (p, λ) grid             19.972  2,003 points/s
    ridge DE, d=1000, 400×10 (n, λ) grid             4.743  843 points/s
    RFRR MC, n=100, k=800, 27 p × 45 λ × 16 reps     7.414  58 fits/s (all λ per fit)
    ridge MC, d=200, 21 n × 4 λ × 16 reps            8.915  38 fits/s
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from genlab.measures.deterministic_equivalents import rf_ridge_de, ridge_de
from genlab.measures.ridge_simulation import power_law_problem, rf_ridge_mc, ridge_mc
from genlab.studies.phi_curve import size_grid


def _time(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    rows = []
    xi, beta = power_law_problem(800, 1.5, 0.4)
    for n_p, n_l in ((100, 5), (400, 10), (1000, 40)):
        p = np.linspace(10, 400, n_p)[:, None]
        lam = np.geomspace(1e-6, 10, n_l)[None, :]
        sec = _time(lambda p=p, lam=lam: rf_ridge_de(xi, beta, 100, p, lam, 0.01))
        rows.append((f"RFRR DE, k=800, {n_p}×{n_l} (p, λ) grid", sec, f"{n_p * n_l / sec:,.0f} points/s"))
    xr, br = power_law_problem(1000, 1.0, 1.0)
    n = np.linspace(250, 10_000, 400)[:, None]
    lam = np.geomspace(1e-3, 5, 10)[None, :]
    sec = _time(lambda: ridge_de(xr, br, n, lam, 4e-4))
    rows.append(("ridge DE, d=1000, 400×10 (n, λ) grid", sec, f"{4000 / sec:,.0f} points/s"))

    ps = size_grid(100, 0.1, 4.0, 27, (0.8, 1.25))
    lams = np.geomspace(1e-6, 10, 45)
    sec = _time(lambda: rf_ridge_mc(xi, beta, 100, ps, lams, 0.01, 16, np.random.default_rng(0)), repeat=1)
    rows.append((f"RFRR MC, n=100, k=800, {ps.size} p × 45 λ × 16 reps", sec,
                 f"{ps.size * 16 / sec:,.0f} fits/s (all λ per fit)"))
    gam = size_grid(200, 0.25, 4.0, 21, (0.8, 1.25)) / 200
    ns = np.unique(np.round(200 / gam).astype(int))
    sec = _time(lambda: ridge_mc(xr[:200], br[:200], ns, lams[:4], 4e-4, 16, np.random.default_rng(0)), repeat=1)
    rows.append((f"ridge MC, d=200, {ns.size} n × 4 λ × 16 reps", sec, f"{ns.size * 16 / sec:,.0f} fits/s"))

    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'seconds':>8}  throughput")
    for name, sec, thr in rows:
        print(f"{name:<{width}}  {sec:8.3f}  {thr}")


if __name__ == "__main__":
    with threadpool_limits(1):
        main()
