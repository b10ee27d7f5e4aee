"""IFEval (Google's instruction_following_eval): the `language:*` constraints (1 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench import langid
from genlab.ifbench.constraints.helpers import detect_language
from genlab.ifbench.constraints.wordlists import LANGUAGES
from genlab.ifbench.core import Param, constraint


@constraint(
    "language:response_language",
    "the whole response is in a given language (langdetect)",
    [Param("language", "str", choices=tuple(LANGUAGES), doc="ISO 639-1 code")],
    describe=lambda kw: f"Respond only in {LANGUAGES.get(kw['language'], kw['language'])}; no other language.",
    sample=lambda r, c: {"language": r.choice(list(LANGUAGES))},
    fixed="an undetectable language counts as not followed (reference: followed)",
    prepare=langid.expect,
)
def _language(t, kw, fixed):
    code = detect_language(t)
    if code is None:
        return (not fixed), "language undetectable" + ("" if fixed else "; the reference counts this as followed")
    return code == kw["language"], f"detected '{code}', expected '{kw['language']}'"
