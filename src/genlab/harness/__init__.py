"""The engine: Study API, registry, configs, run context, result store, runners, claims and report."""

from genlab.harness import decision as decide
from genlab.harness.claims import (
    EMPIRICAL,
    ERROR,
    IDENTITY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Evidence,
    evidence,
)
from genlab.harness.config import Range
from genlab.harness.context import RunContext
from genlab.harness.errors import ConfigError, GenlabError, RunError, UnknownStudyError
from genlab.harness.study import Paper, Study, all_studies, get_study, register

__all__ = [
    "EMPIRICAL",
    "ERROR",
    "IDENTITY",
    "INCONCLUSIVE",
    "NOT_REPRODUCED",
    "REPRODUCED",
    "Claim",
    "ConfigError",
    "Evidence",
    "GenlabError",
    "Paper",
    "Range",
    "RunContext",
    "RunError",
    "Study",
    "UnknownStudyError",
    "all_studies",
    "decide",
    "evidence",
    "get_study",
    "register",
]
