"""IFEval (Google's instruction_following_eval): the `length_constraints:*` constraints (4 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import re

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import REL, rel_ok, rel_text, sample_relation
from genlab.ifbench.constraints.wordlists import NOUNS
from genlab.ifbench.core import Param, constraint


@constraint(
    "length_constraints:number_sentences",
    "sentence count (Punkt) less than / at least N",
    [Param("num_sentences", "int", lo=1, hi=40), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Your response should have {kw['relation']} {kw['num_sentences']} sentences.",
    sample=lambda r, c: {"num_sentences": r.randint(1, 20), "relation": sample_relation(r)},
)
def _num_sentences(t, kw, fixed):
    n = len(nlp.sent_tokenize(t))
    return rel_ok(n, kw["relation"], kw["num_sentences"]), rel_text(
        n, kw["relation"], kw["num_sentences"], "sentences:"
    )


_PARA_SPLIT = re.compile(r"\s?\*\*\*\s?")


def _divider_paragraphs(t: str) -> tuple[int | None, str]:
    parts = _PARA_SPLIT.split(t) if "***" in t else [t]  # (the pattern needs a literal "***")
    n = len(parts)
    for i, p in enumerate(parts):
        if not p.strip():
            if i in (0, len(parts) - 1):
                n -= 1
            else:
                return None, f"empty paragraph at position {i + 1} between *** dividers"
    return n, ""


@constraint(
    "length_constraints:number_paragraphs",
    "exactly N paragraphs separated by *** dividers",
    [Param("num_paragraphs", "int", lo=1, hi=10)],
    describe=lambda kw: f"Write exactly {kw['num_paragraphs']} paragraphs, separated by the markdown divider ***.",
    sample=lambda r, c: {"num_paragraphs": r.randint(2, 6)},
)
def _num_paragraphs(t, kw, fixed):
    n, why = _divider_paragraphs(t)
    if n is None:
        return False, why
    return n == kw["num_paragraphs"], f"{n} paragraphs (needs {kw['num_paragraphs']})"


@constraint(
    "length_constraints:number_words",
    "word count less than / at least N",
    [Param("num_words", "int", lo=1, hi=2000), Param("relation", "str", choices=REL)],
    describe=lambda kw: f"Answer with {kw['relation']} {kw['num_words']} words.",
    sample=lambda r, c: {"num_words": r.randint(50, 500), "relation": sample_relation(r)},
)
def _num_words(t, kw, fixed):
    n = nlp.count_words(t)
    return rel_ok(n, kw["relation"], kw["num_words"]), rel_text(n, kw["relation"], kw["num_words"], "words:")


def _first_word_of(paragraph: str) -> str:
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    out = ""
    for ch in word:
        if ch in {".", ",", "?", "!", "'", '"'}:
            break
        out += ch.lower()
    return out


@constraint(
    "length_constraints:nth_paragraph_first_word",
    "N blank-line paragraphs; paragraph i starts with a given word",
    [
        Param("num_paragraphs", "int", lo=1, hi=10),
        Param("nth_paragraph", "int", lo=1, hi=10),
        Param("first_word", "str"),
    ],
    describe=lambda kw: (
        f"Write {kw['num_paragraphs']} paragraphs separated by blank lines; paragraph "
        f"{kw['nth_paragraph']} must begin with the word '{kw['first_word']}'."
    ),
    sample=lambda r, c: (
        lambda n: {"num_paragraphs": n, "nth_paragraph": r.randint(1, n), "first_word": r.choice(NOUNS)}
    )(r.randint(2, 5)),
    fixed="the n-th paragraph is counted among non-empty paragraphs (reference indexes the raw split)",
)
def _nth_first_word(t, kw, fixed):
    paras = re.split(r"\n\n", t)
    n = sum(1 for p in paras if p.strip())
    k = kw["nth_paragraph"]
    if k > n:
        return False, f"only {n} non-empty paragraphs; paragraph {k} missing"
    pool = [p for p in paras if p.strip()] if fixed else paras
    para = pool[k - 1].strip()
    if not para:
        return False, f"paragraph {k} of the raw split is empty"
    fw = _first_word_of(para)
    want = kw["first_word"].lower()
    ok = n == kw["num_paragraphs"] and fw == want
    return ok, f"{n} paragraphs (needs {kw['num_paragraphs']}); paragraph {k} starts with '{fw}' (needs '{want}')"
