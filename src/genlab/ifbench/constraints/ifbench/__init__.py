"""ifbench constraints, one module per id category."""
