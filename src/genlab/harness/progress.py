"""Progress on stderr for long work: a rich bar (count, elapsed, ETA) on a terminal, or — piped, or in a log —
a plain line about every few seconds: ``<what> 12/40, ETA 35 s``."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

T = TypeVar("T")


class PlainProgress:
    """A plain line ``<what> D/T <unit>, ETA S s`` at most every ``every`` seconds (and at the end); callable as
    ``progress(done, total)``."""

    def __init__(self, what: str, unit: str = "", every: float = 5.0, stream: TextIO | None = None):
        self.what, self.unit = what, f" {unit}" if unit else ""
        self.start = self.last = time.monotonic()
        self.every = every
        self.stream = stream

    def __call__(self, done: int, total: int | None) -> None:
        now = time.monotonic()
        if now - self.last < self.every and (total is None or done < total):
            return
        self.last = now
        if total:
            eta = (now - self.start) / max(done, 1) * (total - done)
            line = f"{self.what} {done}/{total}{self.unit}, ETA {eta:.0f} s"
        else:
            line = f"{self.what} {done}{self.unit}, {now - self.start:.0f} s"
        print(line, file=self.stream or sys.stderr, flush=True)


def rich_columns(unit: str = "") -> tuple[Any, ...]:
    """Description, bar, done/total, elapsed and ETA."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn(f"{unit} elapsed" if unit else "elapsed"), TimeElapsedColumn(), TextColumn("ETA"),
            TimeRemainingColumn())  # fmt: skip


def track(iterable: Iterable[T], total: int | None = None, desc: str = "working", quiet: bool = False) -> Iterator[T]:
    """Iterate with progress on stderr: a rich bar on a terminal, plain lines otherwise, nothing when quiet."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    if quiet:
        yield from iterable
        return
    if not sys.stderr.isatty():
        plain = PlainProgress(desc)
        for done, item in enumerate(iterable, 1):
            yield item
            plain(done, total)
        return
    from rich.progress import Progress

    with Progress(*rich_columns(), transient=True) as bar:
        task = bar.add_task(desc, total=total)
        for item in iterable:
            yield item
            bar.advance(task)
