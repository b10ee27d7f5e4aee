"""Typed errors. Library code raises these; only the CLI turns them into exit codes."""


class GenlabError(Exception):
    """Base class of every error genlab raises on purpose."""


class ConfigError(GenlabError, ValueError):
    """A bad configuration: an unknown key, a value of the wrong type, an unknown preset."""


class UnknownStudyError(GenlabError, KeyError):
    """A study name that is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; we want a sentence.
        return str(self.args[0])


class RunError(GenlabError, RuntimeError):
    """A run failed; the message names the study and the run directory."""
