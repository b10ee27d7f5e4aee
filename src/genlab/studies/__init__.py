"""genlab.studies."""
