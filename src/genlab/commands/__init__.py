"""Command-line front ends of genlab's tools (``genlab bound``, ``genlab oodselect``, ...).

They sit above the libraries they expose (``genlab.measures`` and friends never import the harness or the CLI),
keep module-level imports light, and turn bad input into one clear line with exit code 2.
"""
