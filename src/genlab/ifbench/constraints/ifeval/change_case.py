"""IFEval (Google's instruction_following_eval): the `change_case:*` constraints (3 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench import langid, nlp
from genlab.ifbench.constraints.helpers import REL, detect_language, rel_ok, rel_text, sample_relation
from genlab.ifbench.core import Param, constraint


@constraint(
    "change_case:capital_word_frequency",
    "all-caps words less than / at least N",
    [Param("capital_frequency", "int", lo=1, hi=50), Param("capital_relation", "str", choices=REL)],
    describe=lambda kw: (
        f"Use words written entirely in capital letters {kw['capital_relation']} {kw['capital_frequency']} times."
    ),
    sample=lambda r, c: {"capital_frequency": r.randint(1, 20), "capital_relation": sample_relation(r)},
)
def _capital_words(t, kw, fixed):
    n = sum(map(str.isupper, nlp.word_tokenize(t)))
    return rel_ok(n, kw["capital_relation"], kw["capital_frequency"]), rel_text(
        n, kw["capital_relation"], kw["capital_frequency"], "all-caps words:"
    )


def _case_lang(t: str, fixed: bool, upper: bool) -> tuple[bool, str]:
    cased = t.isupper() if upper else t.islower()
    if not cased:
        return False, "not all " + ("uppercase" if upper else "lowercase")
    code = detect_language(t)
    if code is None:
        return (not fixed), "language undetectable" + ("" if fixed else "; the reference counts this as followed")
    return code == "en", f"all {'uppercase' if upper else 'lowercase'}; detected language '{code}'"


@constraint(
    "change_case:english_capital",
    "English, all capital letters",
    describe=lambda kw: "Write your entire response in English, using capital letters only.",
    fixed="an undetectable language counts as not followed",
    prepare=lambda texts: langid.expect(t for t in texts if t.isupper()),
)
def _english_capital(t, kw, fixed):
    return _case_lang(t, fixed, True)


@constraint(
    "change_case:english_lowercase",
    "English, all lowercase",
    describe=lambda kw: "Write your entire response in English, in lowercase letters only; no capitals.",
    fixed="an undetectable language counts as not followed",
    prepare=lambda texts: langid.expect(t for t in texts if t.islower()),
)
def _english_lower(t, kw, fixed):
    return _case_lang(t, fixed, False)
