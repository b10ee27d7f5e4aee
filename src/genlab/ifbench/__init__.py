"""genlab.ifbench — verifiable instruction-following constraints (IFEval, IFBench, IFTrain) and their evaluator.

Public API (stable; see docs/ifbench.md):

    from genlab.ifbench import get, ids, check, conflicts, Verdict
    c = get("count:numbers")              # Constraint: .params (schema), .describe(kw), .sample(rng), .check(text, kw)
    v = check("punctuation:no_comma", "a, b")   # Verdict(ok=False, reason="1 comma(s)")

    from genlab.ifbench import load_prompts, load_responses, evaluate, write_outputs, compare
    res = evaluate(load_prompts("IFBench_test.jsonl"), load_responses("responses.jsonl"))
    res.summary()["loose"]["prompt_level"]

Importing this package is light (no NLTK, numpy or torch); NLTK's tokenizer modules load on first use.
"""

from genlab.ifbench.core import (
    FAMILIES,
    SEMANTICS,
    Constraint,
    KwargsError,
    Param,
    UnknownInstructionError,
    Verdict,
)
from genlab.ifbench.registry import all_constraints, check, conflicts, get, ids


def __getattr__(name: str):
    # Lazy re-exports so `import genlab.ifbench` stays cheap.
    if name in {"load_prompts", "load_responses", "parse_ground_truth", "strip_thinking", "PromptItem", "DataError"}:
        import importlib

        data = importlib.import_module("genlab.ifbench.data")

        return getattr(data, name)
    if name in {"evaluate", "compare", "loose_variants", "EvalResult"}:
        import importlib

        ev = importlib.import_module("genlab.ifbench.evaluator")

        return getattr(ev, name)
    if name == "write_outputs":
        from genlab.ifbench.outputs import write_outputs

        return write_outputs
    raise AttributeError(f"module 'genlab.ifbench' has no attribute {name!r}")


__all__ = [
    "FAMILIES",
    "SEMANTICS",
    "Constraint",
    "DataError",
    "EvalResult",
    "KwargsError",
    "Param",
    "PromptItem",
    "UnknownInstructionError",
    "Verdict",
    "all_constraints",
    "check",
    "compare",
    "conflicts",
    "evaluate",
    "get",
    "ids",
    "load_prompts",
    "load_responses",
    "loose_variants",
    "parse_ground_truth",
    "strip_thinking",
    "write_outputs",
]
