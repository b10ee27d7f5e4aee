"""genlab.measures."""
