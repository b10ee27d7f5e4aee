"""genlab.ifbench."""
