"""One worker policy for every process pool genlab starts (the runner's ``--jobs`` pool and ``ctx.map``).

- ``spawn`` start method: ``fork`` after torch/OpenMP have started threads can deadlock.
- One torch/BLAS thread per worker, and ``GENLAB_WORKER=1`` so work inside a worker never nests another pool.
- Workers die with their parent (Linux parent-death signal), and an interrupted or failing map terminates its
  workers instead of waiting for queued jobs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def worker_init() -> None:
    """Runs first in every worker process."""
    os.environ["GENLAB_WORKER"] = "1"
    for var in THREAD_VARS:
        os.environ[var] = "1"
    die_with_parent()
    signal.signal(signal.SIGTERM, _interrupt)  # terminate() of the pool: unwind so the run records it
    try:
        from genlab.harness.torch_setup import setup_torch

        setup_torch(1)
    except ImportError:  # torch is optional for non-torch work
        pass


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (a ``kill -9`` of genlab leaves no orphans)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"), initializer=worker_init)


def terminate(pool: ProcessPoolExecutor) -> None:
    """Cancel queued jobs and kill running workers now (Ctrl-C, or a job failed)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(timeout=5)


def run_in_pool(
    fn: Callable[[T], R],
    jobs: Sequence[T],
    workers: int,
    on_done: Callable[[int, R], None] | None = None,
    wrap: Callable[[Iterable[Future]], Iterable[Future]] | None = None,
) -> list[R]:
    """Run ``fn`` over ``jobs`` on a spawn pool; results in job order. ``wrap`` wraps the stream of finished
    futures (a progress bar). Any exception, Ctrl-C included, terminates the workers and propagates."""
    results: list[Any] = [None] * len(jobs)
    pool = spawn_pool(min(workers, len(jobs)))
    try:
        futures: dict[Future, int] = {pool.submit(fn, job): i for i, job in enumerate(jobs)}
        finished = as_completed(futures)
        for fut in wrap(finished) if wrap else finished:
            i = futures[fut]
            results[i] = fut.result()
            if on_done:
                on_done(i, results[i])
    except BaseException:
        terminate(pool)
        raise
    pool.shutdown()
    return results


def map_jobs(
    fn: Callable[[T], R],
    jobs: Sequence[T],
    processes: int,
    progress: Callable[..., Iterator[Any]] | None = None,
    desc: str = "jobs",
) -> list[R]:
    """``ctx.map``'s engine: serial in this process when ``processes <= 1`` (or one job), else a spawn pool."""
    wrap = (lambda items: progress(items, total=len(jobs), desc=desc)) if progress else None
    if processes <= 1 or len(jobs) <= 1:
        return [fn(job) for job in (wrap(jobs) if wrap else jobs)]
    return run_in_pool(fn, jobs, processes, wrap=wrap)
