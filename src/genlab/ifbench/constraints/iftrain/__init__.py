"""iftrain constraints, one module per id category."""
