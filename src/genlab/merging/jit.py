"""numba's ``njit`` for the merge loops: cached on disk where numba finds a writable place for its cache (beside the
source, or in the user's cache directory), compiled afresh in each process where it finds none (a read-only
install with no writable home), instead of failing."""

from __future__ import annotations

from collections.abc import Callable

import numba


def compiled(fn: Callable) -> Callable:
    """``fn`` compiled without the GIL (threads run it side by side), cached when possible."""
    try:
        return numba.njit(nogil=True, cache=True)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(nogil=True)(fn)
