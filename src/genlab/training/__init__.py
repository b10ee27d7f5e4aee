"""Reusable training loops (``genlab.nn`` holds models only): flow matching, full-batch gradient descent."""
