"""Shared helpers for the ifbench tests: the official prompt files and NLTK data the repository ships in
tests/resources (see its README for sources and licences), and switching the NLTK data path."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
NLTK_DIR = RESOURCES / "nltk_data"
IFBENCH_FILE = RESOURCES / "ifbench" / "IFBench_test.jsonl"
IFEVAL_FILE = RESOURCES / "ifeval" / "input_data.jsonl"


@contextlib.contextmanager
def nltk_mode(mode: str):
    """Run the block with the real NLTK data (tests/resources/nltk_data) or in offline mode; restores afterwards."""
    from genlab.ifbench import nlp

    old = os.environ.get("NLTK_DATA")
    try:
        if mode == "real":
            os.environ["NLTK_DATA"] = str(NLTK_DIR)
            nlp.reset()
        else:
            nlp.reset("offline")
        yield
    finally:
        if old is None:
            os.environ.pop("NLTK_DATA", None)
        else:
            os.environ["NLTK_DATA"] = old
        nlp.reset()


def use_real_data_if_available() -> str:
    """Point NLTK_DATA at the shipped NLTK data (the reference's data) unless the caller set it; return the mode."""
    from genlab.ifbench import nlp

    if "NLTK_DATA" not in os.environ:
        os.environ["NLTK_DATA"] = str(NLTK_DIR)
        nlp.reset()
    return nlp.data_mode()
