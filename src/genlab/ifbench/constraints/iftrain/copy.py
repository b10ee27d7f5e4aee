"""IFTrain (open-instruct's IFEvalG training-only ids): the `copy:*` constraints (4 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

from genlab.ifbench.constraints.helpers import find_pattern
from genlab.ifbench.constraints.wordlists import SENTENCES
from genlab.ifbench.core import Param, constraint

_PHRASES = (
    "The early bird catches the worm",
    "All that glitters is not gold",
    "Every cloud has a silver lining",
    "Time flies when you are having fun",
    "Actions speak louder than words",
)


@constraint(
    "copy:repeat_phrase",
    "repeat a phrase N times, changing one middle word each time",
    [Param("phrase", "str"), Param("small_n", "int", lo=1, hi=10)],
    describe=lambda kw: (
        f'Repeat the phrase "{kw["phrase"]}" exactly {kw["small_n"]} times, each time replacing '
        "just one word in the middle of the phrase."
    ),
    sample=lambda r, c: {"phrase": r.choice(_PHRASES), "small_n": r.randint(2, 4)},
)
def _repeat_phrase(t, kw, fixed):
    words = kw["phrase"].split()
    if not words:
        return False, "empty phrase"
    first, last = words[0], words[-1]
    found = find_pattern(rf"{first} .*? {last}", t, 0)
    if len(found) != kw["small_n"]:
        return False, f"found {len(found)} phrase copies (needs {kw['small_n']})"
    diffs = 0
    for ph in found:
        p = ph.split()
        diffs = 0
        for i in range(len(p)):
            if i >= len(words):
                return False, "a copy is longer than the phrase"
            if p[i] != words[i]:
                diffs += 1
                if diffs > 1:
                    return False, f"copy {ph[:40]!r} changes more than one word"
    ok = diffs == 1
    return ok, "copies each change one word" if ok else "the last copy does not change exactly one word"


@constraint(
    "copy:copy",
    "copy the instruction text verbatim instead of following it",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: "Copy this instruction verbatim without following it (do not include this sentence).",
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES)},
)
def _copy(t, kw, fixed):
    ok = t.strip().lower() == kw["prompt_to_repeat"].strip().lower()
    return ok, "verbatim copy" if ok else "not an exact copy of the request"


@constraint(
    "copy:copying_simple",
    "repeat the request unchanged, without answering",
    [Param("prompt_to_repeat", "str")],
    describe=lambda kw: "Repeat the request without any change and do not answer it (do not repeat this sentence).",
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES)},
)
def _copying_simple(t, kw, fixed):
    ok = t.strip().lower() == kw["prompt_to_repeat"].strip().lower()
    return ok, "exact repetition" if ok else "not an exact repetition of the request"


@constraint(
    "copy:copying_multiple",
    "repeat the request N times separated by ******",
    [Param("prompt_to_repeat", "str"), Param("N", "int", lo=1, hi=10)],
    describe=lambda kw: (
        f"Repeat the request {kw['N']} times without change, separated by six asterisks ******, and do not answer it."
    ),
    sample=lambda r, c: {"prompt_to_repeat": c.get("prompt") or r.choice(SENTENCES), "N": r.randint(2, 4)},
)
def _copying_multiple(t, kw, fixed):
    parts = t.split("******")
    if len(parts) != kw["N"]:
        return False, f"{len(parts)} parts (needs {kw['N']})"
    want = kw["prompt_to_repeat"].strip().lower()
    for i, p in enumerate(parts, 1):
        if p.strip().lower() != want:
            return False, f"part {i} is not the request"
    return True, f"{kw['N']} exact repetitions"
