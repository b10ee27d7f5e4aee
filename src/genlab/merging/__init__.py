"""genlab.merging."""
