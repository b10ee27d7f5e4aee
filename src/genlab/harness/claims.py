"""Claims: statements from a paper, checked against a run's metrics by code, never by hand.

A :class:`Claim` has a stable ``key`` (runs are matched by it, never by list position), a ``kind``
(``empirical``: a measured outcome that could have come out either way; ``identity``: a check that our own
transcription of a formula or construction holds), a ``text`` formatted from the config, and a
``check(metrics, cfg)`` returning a bool or an :class:`Evidence` (``held`` True / False / None for
inconclusive, plus the numbers behind the verdict). Thresholds live in the config, so ``--set`` changes the
check and the text together.

A check that raises is a bug, not scientific uncertainty: its verdict is ``error``.

Seeds are combined by one named :class:`Reducer` per claim (``unanimous`` by default, ``majority``, or
:class:`MeanSE` on a number the check reports); the same reducers combine a study's internal repeats
(:func:`by_seeds`), the ``--seeds`` runs in the report, ``genlab list`` and ``genlab sweep``.
"""

from __future__ import annotations

import math
import re
import string
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
ERROR = "error"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, ERROR)

EMPIRICAL = "empirical"
IDENTITY = "identity"
KINDS = (EMPIRICAL, IDENTITY)

VerdictName = Literal["reproduced", "not reproduced", "inconclusive", "error"]
Kind = Literal["empirical", "identity"]


@dataclass(frozen=True)
class Evidence:
    """What a claim check saw: ``held`` (None = inconclusive) and the numbers it was decided on."""

    held: bool | None
    numbers: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def evidence(held: bool | None, note: str = "", **numbers: Any) -> Evidence:
    """Shorthand: ``evidence(r > cfg.r_min, r=r)``. numpy scalars are converted to plain Python."""
    return Evidence(None if held is None else bool(held), {k: _plain(v) for k, v in numbers.items()}, note)


# -- seed reducers -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unanimous:
    """All seeds held -> held; all failed -> failed; anything else (mixed, undecidable, none) -> inconclusive."""

    name: str = "unanimous"

    def decide(self, helds: Sequence[bool | None], numbers: Sequence[Mapping[str, Any]] = ()) -> Evidence:
        return evidence(_unanimous(helds), seeds_held=_tally(helds))


@dataclass(frozen=True)
class Majority:
    """More than half of all seeds held -> held; more than half failed -> failed; otherwise inconclusive."""

    name: str = "majority"

    def decide(self, helds: Sequence[bool | None], numbers: Sequence[Mapping[str, Any]] = ()) -> Evidence:
        n_true, n_false, n = sum(h is True for h in helds), sum(h is False for h in helds), len(helds)
        held = True if n_true * 2 > n else False if n_false * 2 > n else None
        return evidence(held, seeds_held=_tally(helds))


@dataclass(frozen=True)
class MeanSE:
    """Decide on the mean ± ``z`` standard errors over seeds of the number ``number`` each check reports:
    held when the whole interval lies on the claimed side of ``threshold`` (``direction`` ">" or "<"),
    failed when it lies wholly on the other side, inconclusive when it straddles it (or n < 2)."""

    number: str
    threshold: float = 0.0
    direction: Literal[">", "<"] = ">"
    z: float = 2.0

    @property
    def name(self) -> str:
        return f"mean ± {self.z:g} s.e. of {self.number} {self.direction} {self.threshold:g}"

    def decide(self, helds: Sequence[bool | None], numbers: Sequence[Mapping[str, Any]] = ()) -> Evidence:
        values = [float(n[self.number]) for n in numbers if _is_number(n.get(self.number))]
        if len(values) < 2:
            return evidence(None, note=f"{self.number} reported by {len(values)} seed(s); need 2", n=len(values))
        mean = sum(values) / len(values)
        se = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
        sign = 1.0 if self.direction == ">" else -1.0
        lo, hi = sign * (mean - self.threshold) - self.z * se, sign * (mean - self.threshold) + self.z * se
        held = True if lo > 0 else False if hi < 0 else None
        return evidence(held, **{f"{self.number}_mean": mean, f"{self.number}_se": se, "n": len(values)})


Reducer = Unanimous | Majority | MeanSE
UNANIMOUS = Unanimous()
MAJORITY = Majority()
REDUCERS: dict[str, Reducer] = {"unanimous": UNANIMOUS, "majority": MAJORITY}


def get_reducer(reducer: str | Reducer) -> Reducer:
    if isinstance(reducer, str):
        if reducer not in REDUCERS:
            raise ValueError(f"unknown seed reducer {reducer!r}; known: {', '.join(REDUCERS)} or MeanSE(...)")
        return REDUCERS[reducer]
    return reducer


def by_seeds(
    held_per_seed: Sequence[bool | None], note: str = "", reducer: str | Reducer = "unanimous", **numbers: Any
) -> Evidence:
    """A verdict over a study's internal repeats, combined by a named reducer (unanimous by default)."""
    helds = [None if h is None else bool(h) for h in held_per_seed]
    decided = get_reducer(reducer).decide(helds, [numbers])
    return evidence(decided.held, note or decided.note, **decided.numbers, **numbers)


def _unanimous(helds: Sequence[bool | None]) -> bool | None:
    if helds and all(h is True for h in helds):
        return True
    if helds and all(h is False for h in helds):
        return False
    return None


def _tally(helds: Sequence[bool | None]) -> str:
    return f"{sum(h is True for h in helds)}/{len(helds)}"


# -- claims and verdicts -------------------------------------------------------------------------------------

_KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper: ``check(metrics, cfg) -> bool | Evidence``, decided over seeds by ``reducer``."""

    key: str
    text: str
    check: Callable[[Mapping[str, Any], Any], bool | Evidence]
    kind: Kind = EMPIRICAL
    reducer: str | Reducer = "unanimous"

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ValueError(f"claim key {self.key!r} must be lower-case words joined by '-'")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.key!r}: kind must be one of {KINDS}, got {self.kind!r}")
        get_reducer(self.reducer)

    def text_for(self, cfg: Any) -> str:
        """The claim's text with ``{field}`` placeholders filled from the config."""
        return self.text.format_map(_ConfigView(cfg))

    def fields(self) -> list[str]:
        """The config fields the text names."""
        return [name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(self.text) if name]

    def evaluate(self, metrics: Mapping[str, Any], cfg: Any = None) -> Verdict:
        text = self.text_for(cfg) if cfg is not None else self.text
        try:
            result = self.check(metrics, cfg)
            if not isinstance(result, Evidence):
                result = evidence(bool(result))
        except Exception as exc:  # a bug in the check, never scientific uncertainty
            where = traceback.extract_tb(exc.__traceback__)[-1]
            note = f"the check raised {type(exc).__name__}: {exc} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
            return Verdict(self.key, text, ERROR, {}, note, self.kind)
        name = INCONCLUSIVE if result.held is None else REPRODUCED if result.held else NOT_REPRODUCED
        return Verdict(self.key, text, name, result.numbers, result.note, self.kind)

    def combine(self, verdicts: Sequence[Verdict]) -> Verdict:
        """One verdict over seeds by this claim's reducer; any seed in error makes the whole an error."""
        return combine_verdicts(verdicts, self.reducer)


@dataclass(frozen=True)
class Verdict:
    key: str
    claim: str
    verdict: VerdictName
    numbers: dict[str, Any]
    note: str = ""
    kind: Kind = EMPIRICAL

    @property
    def held(self) -> bool | None:
        return {REPRODUCED: True, NOT_REPRODUCED: False}.get(self.verdict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "claim": self.claim,
            "verdict": self.verdict,
            "numbers": self.numbers,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        """Read a stored verdict; runs written before claims had keys get a key made from their text."""
        if d.get("verdict") not in VERDICTS or not isinstance(d.get("claim"), str):
            raise ValueError(f"not a stored verdict: {dict(d)!r:.120}")
        return cls(
            str(d.get("key") or slug(d["claim"])),
            d["claim"],
            d["verdict"],
            dict(d.get("numbers") or {}),
            str(d.get("note", "")),
            d.get("kind", EMPIRICAL) if d.get("kind") in KINDS else EMPIRICAL,
        )

    def numbers_text(self, digits: int = 3) -> str:
        return ", ".join(f"{k}={fmt_number(v, digits)}" for k, v in self.numbers.items())


def combine_verdicts(verdicts: Sequence[Verdict], reducer: str | Reducer = "unanimous") -> Verdict:
    """Combine one claim's verdicts over seeds (all share its key)."""
    if not verdicts:
        raise ValueError("no verdicts to combine")
    first = verdicts[0]
    errors = [v for v in verdicts if v.verdict == ERROR]
    if errors:
        return Verdict(first.key, first.claim, ERROR, {"seeds_in_error": len(errors)}, errors[0].note, first.kind)
    if len(verdicts) == 1:
        return first
    decided = get_reducer(reducer).decide([v.held for v in verdicts], [v.numbers for v in verdicts])
    name = INCONCLUSIVE if decided.held is None else REPRODUCED if decided.held else NOT_REPRODUCED
    return Verdict(first.key, first.claim, name, decided.numbers, decided.note, first.kind)


def slug(text: str) -> str:
    """A key made from a claim's text (for runs stored before claims had keys)."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:8]) or "claim"


def fmt_number(v: Any, digits: int = 3) -> str:
    """Numbers rounded to meaningful digits for people; everything else as text."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    if 10**digits <= abs(v) < 1e6:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


class _ConfigView(dict):
    """``str.format_map`` over a config's fields (a dataclass or a mapping)."""

    def __init__(self, cfg: Any) -> None:
        if is_dataclass(cfg):
            super().__init__({f.name: getattr(cfg, f.name) for f in fields(cfg)})
        else:
            super().__init__(dict(cfg or {}))

    def __missing__(self, key: str) -> Any:
        raise KeyError(f"claim text names {key!r}, which is not a config field")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _plain(v: Any) -> Any:
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return v.item()
    if hasattr(v, "tolist"):
        return v.tolist()
    return v
