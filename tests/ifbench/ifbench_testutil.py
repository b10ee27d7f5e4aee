"""Shared helpers for the ifbench tests: where ../shared lives, and switching the NLTK data path."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
NLTK_DIR = SHARED / "nltk_data"
IFBENCH_FILE = SHARED / "data" / "ifbench" / "IFBench_test.jsonl"
IFEVAL_FILE = SHARED / "data" / "ifeval" / "input_data.jsonl"
HAVE_NLTK_DATA = (NLTK_DIR / "tokenizers" / "punkt_tab" / "english").exists()
HAVE_DATA = IFBENCH_FILE.exists() and IFEVAL_FILE.exists()


@contextlib.contextmanager
def nltk_mode(mode: str):
    """Run the block with the real NLTK data (from ../shared) or in offline mode; restores afterwards."""
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
    """Point NLTK_DATA at ../shared/nltk_data when it exists (the reference's data); return the mode."""
    from genlab.ifbench import nlp

    if HAVE_NLTK_DATA and "NLTK_DATA" not in os.environ:
        os.environ["NLTK_DATA"] = str(NLTK_DIR)
        nlp.reset()
    return nlp.data_mode()
