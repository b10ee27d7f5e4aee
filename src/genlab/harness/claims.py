"""Claims: statements from a paper, checked against a run's metrics by code, never by hand.

A claim's ``check`` receives the metrics dict and returns either a bool, or an :class:`Evidence`
(``held`` is True / False / None for inconclusive, plus the numbers behind the verdict).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"

VerdictName = Literal["reproduced", "not reproduced", "inconclusive"]


@dataclass(frozen=True)
class Evidence:
    """What a claim check saw: ``held`` (None = inconclusive) and the numbers it was decided on."""

    held: bool | None
    numbers: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def evidence(held: bool | None, note: str = "", **numbers: Any) -> Evidence:
    """Shorthand: ``evidence(r > 0.9, r=r)``. numpy scalars are converted to plain Python."""
    return Evidence(None if held is None else bool(held), {k: _plain(v) for k, v in numbers.items()}, note)


def unanimous(helds: list[bool | None]) -> bool | None:
    """All True -> True, all False -> False; mixed, empty, or any undecidable (None) entry -> None."""
    if helds and all(h is True for h in helds):
        return True
    if helds and all(h is False for h in helds):
        return False
    return None


def by_seeds(held_per_seed: list[bool | None], note: str = "", **numbers: Any) -> Evidence:
    """Verdict over seeds: all agree -> that verdict; seeds disagree (or one is undecidable) -> inconclusive."""
    held_per_seed = [None if h is None else bool(h) for h in held_per_seed]
    n_true = sum(h is True for h in held_per_seed)
    return evidence(unanimous(held_per_seed), note, seeds_held=f"{n_true}/{len(held_per_seed)}", **numbers)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper. ``check(metrics) -> bool | Evidence``."""

    text: str
    check: Callable[[Mapping[str, Any]], bool | Evidence]

    def evaluate(self, metrics: Mapping[str, Any]) -> Verdict:
        try:
            result = self.check(metrics)
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as exc:
            return Verdict(self.text, INCONCLUSIVE, {}, f"check could not be computed: {exc!r}")
        if not isinstance(result, Evidence):
            result = evidence(bool(result))
        if result.held is None:
            name = INCONCLUSIVE
        else:
            name = REPRODUCED if result.held else NOT_REPRODUCED
        return Verdict(self.text, name, result.numbers, result.note)


@dataclass(frozen=True)
class Verdict:
    claim: str
    verdict: VerdictName
    numbers: dict[str, Any]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "verdict": self.verdict, "numbers": self.numbers, "note": self.note}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        return cls(d["claim"], d["verdict"], dict(d.get("numbers", {})), d.get("note", ""))

    def numbers_text(self, digits: int = 4) -> str:
        return ", ".join(f"{k}={_fmt(v, digits)}" for k, v in self.numbers.items())


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}g}" if math.isfinite(v) else str(v)
    return str(v)


def _plain(v: Any) -> Any:
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return v.item()
    if hasattr(v, "tolist"):
        return v.tolist()
    return v
