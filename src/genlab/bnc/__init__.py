"""genlab.bnc — learned score-based branching in a real branch-and-cut (SCIP), and its sample complexity.

A tool, not a study: a solver wrapper (:mod:`genlab.bnc.solver`), score-based policies (:mod:`genlab.bnc.policies`),
the exact piecewise-constant structure of tree size along a line in θ (:mod:`genlab.bnc.staircase`), ERM over
instances (:mod:`genlab.bnc.tune`) and the ``genlab bnc`` command line (:mod:`genlab.bnc.cli`). The counting bounds
live in :mod:`genlab.measures.bnc_bounds`, the instance generators in :mod:`genlab.data.mip`.

Importing this package does not import pyscipopt; solving does.
"""

from genlab.bnc.errors import BncInputError, SolverMissingError
from genlab.bnc.policies import SCORES, MixturePolicy, ReLUPolicy, ScorePolicy, choose, classic_scores

__all__ = [
    "SCORES",
    "BncInputError",
    "MixturePolicy",
    "ReLUPolicy",
    "ScorePolicy",
    "SolverMissingError",
    "choose",
    "classic_scores",
]
