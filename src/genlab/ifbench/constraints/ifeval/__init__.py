"""ifeval constraints, one module per id category."""
