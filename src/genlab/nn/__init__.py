"""genlab.nn."""
