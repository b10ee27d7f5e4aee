"""Errors of genlab.merging. Every one is a :class:`~genlab.harness.errors.ConfigError`, so the ``genlab`` CLI
prints one line and exits with code 2."""

from genlab.harness.errors import ConfigError


class MergeError(ConfigError):
    """A merge that cannot be done as asked; the message says what and where."""


class MergeConfigError(MergeError):
    """A bad merge configuration: an unknown or unsupported key, method or parameter value."""


class CheckpointError(MergeError):
    """A checkpoint that is missing, unreadable, or does not match the others (names, shapes, dtypes)."""
