"""genlab: a laboratory for generalization in machine learning."""

__version__ = "0.1.0"
