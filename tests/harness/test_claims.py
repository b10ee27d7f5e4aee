"""Claims: keys, kinds, texts formatted from the config, the error verdict, combining runs, recheck."""

from dataclasses import dataclass

import pytest

from genlab.harness import decide
from genlab.harness.claims import (
    ERROR,
    IDENTITY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Verdict,
    combine_verdicts,
    evidence,
    fmt_number,
)


@dataclass
class Cfg:
    threshold: float = 0.5
    name: str = "x"


def test_check_gets_the_config_and_the_text_is_formatted_from_it():
    claim = Claim("x-above", "{name} exceeds {threshold:.2f}", lambda m, cfg: decide.exact(m["x"], above=cfg.threshold))
    low, high = Cfg(threshold=2.0), Cfg(threshold=0.5)
    assert claim.evaluate({"x": 1.0}, low).verdict == NOT_REPRODUCED
    v = claim.evaluate({"x": 1.0}, high)
    assert v.verdict == REPRODUCED and v.claim == "x exceeds 0.50" and v.key == "x-above" and v.kind == "empirical"
    assert claim.fields() == ["name", "threshold"]


def test_a_check_that_raises_is_an_error_never_inconclusive():
    for check in (lambda m, cfg: m["typo"] > 0, lambda m, cfg: [][0], lambda m, cfg: 1 / 0):
        v = Claim("k", "t", check).evaluate({"x": 1.0}, Cfg())
        assert v.verdict == ERROR and "raised" in v.note
    assert Claim("k", "t", lambda m, cfg: evidence(None)).evaluate({}, Cfg()).verdict == INCONCLUSIVE


def test_claim_declares_key_and_kind():
    assert Claim("k", "t", lambda m, cfg: True, kind=IDENTITY).evaluate({}, Cfg()).kind == IDENTITY
    with pytest.raises(ValueError):
        Claim("Bad Key", "t", lambda m, cfg: True)
    with pytest.raises(ValueError):
        Claim("k", "t", lambda m, cfg: True, kind="proof")


def _v(verdict, **numbers):
    return Verdict("k", "t", verdict, numbers)


def test_identities_over_runs_must_all_hold():
    r, n, i = _v(REPRODUCED), _v(NOT_REPRODUCED), _v(INCONCLUSIVE)
    assert combine_verdicts([r, r]).verdict == REPRODUCED
    assert combine_verdicts([n, n]).verdict == NOT_REPRODUCED
    assert combine_verdicts([r, n]).verdict == INCONCLUSIVE and combine_verdicts([r, i]).verdict == INCONCLUSIVE
    assert combine_verdicts([r, _v(ERROR)]).verdict == ERROR  # an error is never outvoted


def test_verdicts_round_trip_and_legacy_runs_get_a_key():
    v = Verdict("k", "t", REPRODUCED, {"a": 1.5}, "n", IDENTITY)
    assert Verdict.from_dict(v.to_dict()) == v
    legacy = Verdict.from_dict({"claim": "GRPO raises accuracy (by >= 0.10)", "verdict": "reproduced"})
    assert legacy.key == "grpo-raises-accuracy-by-0-10" and legacy.kind == "empirical"
    with pytest.raises(ValueError):
        Verdict.from_dict({"claim": "x", "verdict": "maybe"})


def test_numbers_are_rounded_to_meaningful_digits():
    assert fmt_number(0.123456) == "0.123" and fmt_number(12.3456) == "12.3" and fmt_number(12345.6) == "12346"
    assert fmt_number(3) == "3" and fmt_number(float("nan")) == "nan" and fmt_number("a") == "a"


def test_every_study_claim_has_a_unique_key_and_a_text_its_config_can_fill():
    from genlab.harness.study import all_studies

    for cls in all_studies().values():
        keys = [c.key for c in cls.claims]
        assert len(keys) == len(set(keys)), cls.name
        for c in cls.claims:
            c.text_for(cls.config("quick"))
