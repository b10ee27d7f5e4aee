"""Deterministic language detection (langdetect, seeded).

The reference checkers call ``langdetect.detect`` without seeding it, so the same text can get a different
answer from one run to the next. We set ``DetectorFactory.seed = 0`` once (the value lm-evaluation-harness
and langdetect's own docs use), load the profiles once, and memoise per text, so every run agrees.
"""

from __future__ import annotations

import functools

SEED = 0


class DetectionError(Exception):
    """langdetect could not decide (no features in the text); the reference counts this as a pass."""


@functools.lru_cache(maxsize=1)
def _factory():
    from langdetect import DetectorFactory, detector_factory

    DetectorFactory.seed = SEED
    detector_factory.init_factory()
    return detector_factory._factory


@functools.lru_cache(maxsize=8192)
def _detect(text: str) -> str | None:
    from langdetect.lang_detect_exception import LangDetectException

    try:
        d = _factory().create()
        d.append(text)
        return d.detect()
    except LangDetectException:
        return None


def detect(text: str) -> str:
    """ISO 639-1 code (langdetect's label) of ``text``; raises :class:`DetectionError` when undecidable."""
    code = _detect(text)
    if code is None:
        raise DetectionError("language could not be detected")
    return code
