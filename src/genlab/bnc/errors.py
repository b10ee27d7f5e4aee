"""Errors of the branch-and-cut tool. They are :class:`~genlab.harness.errors.ConfigError` subclasses, so
``genlab bnc ...`` turns them into one line and exit code 2."""

from __future__ import annotations

from genlab.harness.errors import ConfigError


class BncInputError(ConfigError):
    """A MIP file SCIP cannot read, an instance that is infeasible or unbounded, a bad option, or no solver."""


class SolverMissingError(BncInputError):
    """pyscipopt (which bundles SCIP) is not importable."""
