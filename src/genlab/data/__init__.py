"""genlab.data."""
