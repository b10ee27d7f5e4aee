"""Claims: statements from a paper, checked against a run's metrics by code, never by hand.

A :class:`Claim` has a stable ``key`` (runs are matched by it, never by list position), a ``kind``
(``empirical``: a measured outcome that could have come out either way; ``identity``: a check that our own
transcription of a formula or construction holds), a ``text`` formatted from the config, and a
``check(metrics, cfg)``. Thresholds and margins live in the config, so ``--set`` changes the check and the text
together.

An empirical check returns the evidence of one of :mod:`genlab.harness.decision`'s tests (``decide.paired``,
``decide.mean``, ``decide.proportion``, ...): the verdict follows from that test (its CI against the declared
margin, Holm's correction over the study's empirical claims, at least 5 units), never from a rule of the check's
own. A check may withhold a decision (``ev.withheld("no headroom")``: inconclusive, test still recorded) or
return ``evidence(None, note)`` when there is nothing to test. An identity check returns a bool or
``evidence(held, **numbers)``.

A check that raises is a bug, not scientific uncertainty: its verdict is ``error``, and so is an empirical
claim decided without a test.

The runs of ``--seeds N`` are combined per claim key (:func:`combine_claims`): empirical claims by pooling the
units of their tests and testing again, identities by unanimity (all must hold).
"""

from __future__ import annotations

import re
import string
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Literal

from genlab.harness.decision import ClaimTest, Evidence, apply_holm, pool
from genlab.harness.io import fmt_number, plain

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


def evidence(held: bool | None, note: str = "", **numbers: Any) -> Evidence:
    """Evidence without a test: an identity's outcome, or ``evidence(None, note)`` when nothing can be tested.
    numpy scalars are converted to plain Python."""
    return Evidence(None if held is None else bool(held), {k: plain(v) for k, v in numbers.items()}, note)


# -- claims and verdicts -------------------------------------------------------------------------------------

_KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper: ``check(metrics, cfg) -> Evidence`` (a bool for an identity). ``requires`` names
    earlier claims of the study that are an empirical claim's preconditions (headroom, competence): after Holm's
    correction the claim is withheld (inconclusive, its test kept) unless each of them is reproduced (see
    :func:`finalize`)."""

    key: str
    text: str
    check: Callable[[Mapping[str, Any], Any], bool | Evidence]
    kind: Kind = EMPIRICAL
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ValueError(f"claim key {self.key!r} must be lower-case words joined by '-'")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.key!r}: kind must be one of {KINDS}, got {self.kind!r}")

    def text_for(self, cfg: Any) -> str:
        """The claim's text with ``{field}`` placeholders filled from the config."""
        return self.text.format_map(_ConfigView(cfg))

    def fields(self) -> list[str]:
        """The config fields the text names."""
        return [name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(self.text) if name]

    def evaluate(self, metrics: Mapping[str, Any], cfg: Any = None) -> Verdict:
        """This claim's verdict on one run, before Holm's correction over the study (see :func:`finalize`)."""
        text = self.text_for(cfg) if cfg is not None else self.text
        try:
            result = self.check(metrics, cfg)
            if not isinstance(result, Evidence):
                result = evidence(bool(result))
        except Exception as exc:  # a bug in the check, never scientific uncertainty
            where = traceback.extract_tb(exc.__traceback__)[-1]
            note = f"the check raised {type(exc).__name__}: {exc} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
            return Verdict(self.key, text, ERROR, {}, note, self.kind, requires=self.requires)
        if self.kind == EMPIRICAL and result.test is None and result.held is not None:
            note = "an empirical claim was decided without a test (the decision rule: genlab.harness.decision)"
            return Verdict(self.key, text, ERROR, result.numbers, note, self.kind, requires=self.requires)
        test = result.test
        if test is None:
            return Verdict(self.key, text, _name(result.held), result.numbers, result.note, self.kind,
                           requires=self.requires)  # fmt: skip
        if result.held is None and test.held is not None:  # the check withheld a decision its test would make
            test = replace(test, gate=result.note or "the check withheld the decision")
        return Verdict(self.key, text, _name(test.held), result.numbers, result.note, self.kind, test, self.requires)


@dataclass(frozen=True)
class Verdict:
    key: str
    claim: str
    verdict: VerdictName
    numbers: dict[str, Any]
    note: str = ""
    kind: Kind = EMPIRICAL
    test: ClaimTest | None = None
    requires: tuple[str, ...] = ()  # the claim's preconditions (keys), as declared by its Claim

    @property
    def held(self) -> bool | None:
        return {REPRODUCED: True, NOT_REPRODUCED: False}.get(self.verdict)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "key": self.key,
            "kind": self.kind,
            "claim": self.claim,
            "verdict": self.verdict,
            "numbers": self.numbers,
            "note": self.note,
        }
        if self.test is not None:
            out["test"] = self.test.to_dict()
        if self.requires:
            out["requires"] = list(self.requires)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        """Read a stored verdict; runs written before claims had keys get a key made from their text."""
        if not isinstance(d, Mapping) or d.get("verdict") not in VERDICTS or not isinstance(d.get("claim"), str):
            raise ValueError(f"not a stored verdict: {d!r:.120}")
        numbers = d.get("numbers") or {}
        if not isinstance(numbers, Mapping):
            raise ValueError(f"not a stored verdict (numbers): {d!r:.120}")
        test = d.get("test")
        requires = d.get("requires") or []
        return cls(
            str(d.get("key") or slug(d["claim"])),
            d["claim"],
            d["verdict"],
            dict(numbers),
            str(d.get("note", "")),
            d.get("kind", EMPIRICAL) if d.get("kind") in KINDS else EMPIRICAL,
            None if test is None else ClaimTest.from_dict(test if isinstance(test, Mapping) else {}),
            tuple(str(k) for k in requires) if isinstance(requires, list) else (),
        )

    def numbers_text(self, digits: int = 3) -> str:
        return ", ".join(f"{k}={fmt_number(v, digits)}" for k, v in self.numbers.items())


AFTER_HOLM = "withheld after Holm's correction: precondition "  # how finalize marks what it withheld


def finalize(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Holm's correction over a study's empirical claims: a claim whose CI lies on the claimed side but whose
    Holm-adjusted p exceeds alpha becomes inconclusive. Every empirical test records its ``p_holm``. Then a
    claim whose preconditions (``requires``) are not all reproduced *after* the correction is withheld
    (inconclusive, its test kept with the reason), so no decision rests on a premise Holm did not confirm."""
    tests = [v.test if v.kind == EMPIRICAL and v.verdict != ERROR else None for v in verdicts]
    adjusted = apply_holm(tests)
    out: list[Verdict] = []
    for v, test in zip(verdicts, adjusted, strict=True):
        if test is None:
            out.append(v)
            continue
        name, note = _name(test.held), v.note
        if test.held is None and (why := test.why_undecided) and why not in note:
            note = "; ".join(n for n in (why, note) if n)
        out.append(replace(v, verdict=name, test=test, note=note))
    final = {v.key: v.verdict for v in out}
    for i, v in enumerate(out):
        unmet = [f"{k} is {final.get(k, 'missing')}" for k in v.requires if final.get(k) != REPRODUCED]
        if unmet and v.test is not None and v.verdict in (REPRODUCED, NOT_REPRODUCED):
            why = AFTER_HOLM + ", ".join(unmet)
            test = replace(v.test, gate=why)
            out[i] = replace(v, verdict=INCONCLUSIVE, test=test, note="; ".join(n for n in (why, v.note) if n))
            final[v.key] = INCONCLUSIVE
    return out


def combine_claims(per_key: Sequence[Sequence[Verdict]]) -> list[Verdict]:
    """One verdict per claim over the runs of several seeds (each inner list: one claim key, one verdict per
    run), then Holm's correction over the study's combined empirical claims."""
    return finalize([combine_verdicts(v) for v in per_key])


def combine_verdicts(verdicts: Sequence[Verdict]) -> Verdict:
    """Combine one claim's verdicts over runs (all share its key): any run in error makes an error; empirical
    tests are pooled (their units tested again); identities and tests-less verdicts must agree."""
    if not verdicts:
        raise ValueError("no verdicts to combine")
    verdicts = [_before_preconditions(v) for v in verdicts]  # finalize applies them again to the combination
    first = verdicts[0]
    errors = [v for v in verdicts if v.verdict == ERROR]
    if errors:
        return Verdict(first.key, first.claim, ERROR, {"runs_in_error": len(errors)}, errors[0].note, first.kind,
                       requires=first.requires)  # fmt: skip
    if len(verdicts) == 1:
        return replace(first, test=None if first.test is None else replace(first.test, p_holm=None))
    tests = [v.test for v in verdicts]
    if first.kind == EMPIRICAL and all(t is not None for t in tests):
        try:
            pooled = pool(tests)  # type: ignore[arg-type]
        except ValueError as exc:
            return Verdict(first.key, first.claim, INCONCLUSIVE, {}, str(exc), first.kind, requires=first.requires)
        gates = sorted({t.gate for t in tests if t.gate})  # type: ignore[union-attr]
        if gates:
            pooled = replace(pooled, gate="; ".join(gates))
        note = f"{len(verdicts)} runs pooled"
        return Verdict(first.key, first.claim, _name(pooled.held), {}, note, first.kind, pooled, first.requires)
    helds = [v.held for v in verdicts]
    held = True if all(h is True for h in helds) else False if all(h is False for h in helds) else None
    note = f"{sum(h is True for h in helds)}/{len(helds)} runs held"
    return Verdict(first.key, first.claim, _name(held), {}, note, first.kind, requires=first.requires)


def _before_preconditions(v: Verdict) -> Verdict:
    """A stored verdict as it was before :func:`finalize` withheld it for a precondition (that decision is
    made again on the combined preconditions)."""
    if v.test is None or not v.test.gate.startswith(AFTER_HOLM):
        return v
    note = "; ".join(n for n in v.note.split("; ") if not n.startswith(AFTER_HOLM))
    test = replace(v.test, gate="")
    return replace(v, verdict=_name(test.held), test=test, note=note)


def _name(held: bool | None) -> VerdictName:
    return INCONCLUSIVE if held is None else REPRODUCED if held else NOT_REPRODUCED


def slug(text: str) -> str:
    """A key made from a claim's text (for runs stored before claims had keys)."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:8]) or "claim"


class _ConfigView(dict):
    """``str.format_map`` over a config's fields (a dataclass or a mapping)."""

    def __init__(self, cfg: Any) -> None:
        if is_dataclass(cfg):
            super().__init__({f.name: getattr(cfg, f.name) for f in fields(cfg)})
        else:
            super().__init__(dict(cfg or {}))

    def __missing__(self, key: str) -> Any:
        raise KeyError(f"claim text names {key!r}, which is not a config field")

