"""Strict and loose scoring of responses, exactly as the IFEval / IFBench reference evaluators score them.

* **strict**: an instruction is followed iff the response is non-empty after stripping and the checker accepts
  the (unstripped) response.
* **loose**: eight variants of the response — {as is, first line dropped, last line dropped, both dropped} ×
  {as is, every ``*`` removed}, each stripped except the first — and the instruction is followed if the
  checker accepts any non-empty variant. Different instructions may pass on different variants.
* prompt-level accuracy: fraction of prompts with every instruction followed; instruction-level: pooled
  passes / pooled instructions. A prompt with no response scores all-False and is listed in ``missing``.

Unlike the reference, strict and loose do not depend on each other (the reference's loose pass only works
because strict already dropped null kwargs in place), identical loose variants are checked once, and large
inputs are split over worker processes.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from genlab.ifbench import nlp
from genlab.ifbench.data import PromptItem, strip_thinking
from genlab.ifbench.registry import SEMANTICS, get, prepare

__all__ = [
    "EvalResult",
    "InstructionResult",
    "PromptResult",
    "compare",
    "evaluate",
    "loose_variants",
]

VARIANT_NAMES = (
    "full", "no_asterisks", "drop_first_line", "drop_last_line", "drop_first_and_last",
    "no_asterisks_drop_first", "no_asterisks_drop_last", "no_asterisks_drop_both",
)


def loose_variants(response: str) -> list[str]:
    """The reference's eight loose variants, in its order."""
    # the reference splits on "\n" and joins lines 1:, :-1 and 1:-1 again: the text after the first "\n", before
    # the last one, and between them
    a, b = response.find("\n"), response.rfind("\n")
    first = response[a + 1 :].strip() if a >= 0 else ""
    last = response[:b].strip() if b >= 0 else ""
    both = response[a + 1 : b].strip() if a < b else ""
    if "*" not in response:
        return [response, response, first, last, both, first, last, both]
    return [
        response, response.replace("*", ""), first, last, both,
        first.replace("*", ""), last.replace("*", ""), both.replace("*", ""),
    ]


@dataclass
class InstructionResult:
    """One instruction of one prompt: strict and loose verdicts, reasons, and the loose variant that passed."""

    id: str
    strict: bool
    loose: bool
    reason: str
    loose_variant: str | None = None
    skipped: bool = False


@dataclass
class PromptResult:
    key: Any
    prompt: str
    response: str
    instruction_id_list: list[str]
    instructions: list[InstructionResult]
    missing: bool = False

    def follow(self, mode: str) -> list[bool]:
        return [getattr(i, mode) for i in self.instructions if not i.skipped]

    def ids(self) -> list[str]:
        return [i.id for i in self.instructions if not i.skipped]


@dataclass
class EvalResult:
    """All per-prompt results plus the run's settings; :meth:`summary` computes every aggregate."""

    prompts: list[PromptResult]
    semantics: str
    settings: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)  # nlp.provenance(): data mode and versions

    def matrix(self, mode: str) -> tuple[list[list[bool]], list[list[str]]]:
        return [p.follow(mode) for p in self.prompts], [p.ids() for p in self.prompts]

    def accuracy(self, mode: str) -> dict[str, float]:
        """prompt- and instruction-level accuracy for mode "strict" or "loose"."""
        rows, _ = self.matrix(mode)
        rows = [r for r in rows if r]
        n_inst = sum(len(r) for r in rows)
        return {  # None (JSON null), never NaN, when nothing was scored
            "prompt_level": sum(all(r) for r in rows) / len(rows) if rows else None,
            "instruction_level": sum(sum(r) for r in rows) / n_inst if n_inst else None,
        }

    def per_id(self, mode: str) -> dict[str, dict[str, float]]:
        tot: dict[str, int] = defaultdict(int)
        ok: dict[str, int] = defaultdict(int)
        for p in self.prompts:
            for i in p.instructions:
                if i.skipped:
                    continue
                tot[i.id] += 1
                ok[i.id] += bool(getattr(i, mode))
        return {k: {"accuracy": ok[k] / tot[k], "n": tot[k]} for k in sorted(tot)}

    def per_category(self, mode: str) -> dict[str, dict[str, float]]:
        tot: dict[str, int] = defaultdict(int)
        ok: dict[str, int] = defaultdict(int)
        for k, v in self.per_id(mode).items():
            c = k.split(":")[0]
            tot[c] += int(v["n"])
            ok[c] += round(v["accuracy"] * v["n"])
        return {k: {"accuracy": ok[k] / tot[k], "n": tot[k]} for k in sorted(tot)}

    def summary(self, *, bootstrap: int = 0, seed: int = 0) -> dict[str, Any]:
        """Everything a report needs: overall accuracies (with ``bootstrap`` resamples: 95% intervals), per-id and
        per-category tables, and how the text was processed (``text_processing``: data mode and versions)."""
        out: dict[str, Any] = {
            "semantics": self.semantics,
            "n_prompts": len(self.prompts),
            "n_instructions": sum(len(p.ids()) for p in self.prompts),
            "missing_responses": [p.key for p in self.prompts if p.missing],
            "skipped_unknown_ids": sum(1 for p in self.prompts for i in p.instructions if i.skipped),
            "settings": self.settings,
            "text_processing": self.provenance,
        }
        for mode in ("strict", "loose"):
            acc = self.accuracy(mode)
            if bootstrap:
                acc["ci95"] = bootstrap_ci(self, mode, n=bootstrap, seed=seed)
            out[mode] = acc
            out[f"per_id_{mode}"] = self.per_id(mode)
            out[f"per_category_{mode}"] = self.per_category(mode)
        for mode in ("strict", "loose"):  # lm-evaluation-harness's metric names, for dashboards that read them
            out[f"prompt_level_{mode}_acc"] = out[mode]["prompt_level"]
            out[f"inst_level_{mode}_acc"] = out[mode]["instruction_level"]
        return out


def _distinct_variants(response: str) -> list[tuple[str, str]]:
    """The loose variants after the response itself that differ from it and from each other and are not
    blank, with their names, in the reference's order (a repeated variant cannot change the verdict)."""
    if "\n" not in response and "*" not in response:  # every variant is the response or blank
        return []
    variants = loose_variants(response)
    seen = {response}
    out = []
    slices = {}  # variant that drops a line -> the text it is a slice of (sentence splitting can reuse its split)
    for k in (1, 2, 3, 4, 5, 6, 7) if "*" in response else (2, 3, 4):  # without "*" the others are repeats
        text = variants[k]
        if text not in seen and text.strip():
            seen.add(text)
            out.append((VARIANT_NAMES[k], text))
            if _SLICE_OF[k] is not None:
                slices[text] = variants[_SLICE_OF[k]]
    nlp.note_substrings(slices)
    return out


# for each loose variant, the variant it is a slice of: the response (0) or its copy without "*" (1)
_SLICE_OF = (None, None, 0, 0, 0, 1, 1, 1)


def _worker(args: tuple[list[PromptItem], list[str | None], str]) -> list[PromptResult]:
    """Strict verdicts for every instruction, then the loose variants of the instructions that failed."""
    items, resps, semantics = args
    fixed = semantics == "fixed"
    todo = []  # (prompt, instruction, constraint, normalised kwargs) of every instruction with a response
    for i, (item, response) in enumerate(zip(items, resps)):
        if response is not None and response.strip():
            for j, cid in enumerate(item.instruction_id_list):
                if j not in item.unknown:
                    c, kw = get(cid), item.kwargs[j]
                    todo.append((i, j, c, kw if item.normalized else c.normalize(kw)))
    prepare((c, resps[i]) for i, _, c, _ in todo if c.prepare is not None)
    strict = {(i, j): c.judge(resps[i], kw, fixed) for i, j, c, kw in todo}  # (ok, reason)
    failed = [t for t in todo if not strict[t[0], t[1]][0]]
    variants = {i: _distinct_variants(resps[i]) for i in {t[0] for t in failed}}
    prepare((c, text) for i, _, c, _ in failed if c.prepare is not None for _, text in variants[i])
    loose = {}
    for i, j, c, kw in failed:
        loose[i, j] = next((name for name, text in variants[i] if c.judge(text, kw, fixed)[0]), None)
    results = []
    for i, (item, response) in enumerate(zip(items, resps)):
        ins = []
        for j, cid in enumerate(item.instruction_id_list):
            if (i, j) in strict:
                ok, reason = strict[i, j]
                if ok:
                    ins.append(InstructionResult(cid, True, True, reason, "full"))
                else:
                    lv = loose[i, j]
                    ins.append(InstructionResult(cid, False, lv is not None, reason, lv))
            elif response is None:
                reason = "no response for this prompt"
                ins.append(InstructionResult(cid, False, False, reason, skipped=j in item.unknown))
            elif j in item.unknown:
                ins.append(InstructionResult(cid, False, False, "unknown instruction id (skipped)", skipped=True))
            else:
                ins.append(InstructionResult(cid, False, False, "empty response"))
        results.append(
            PromptResult(item.key, item.prompt, response or "", item.instruction_id_list, ins, missing=response is None)
        )
    return results


def _lookup(responses: Mapping[str, str], item: PromptItem) -> str | None:
    """A prompt's response: by its text (or stripped text), else by its key (rows that carry no prompt)."""
    if item.prompt in responses:
        return responses[item.prompt]
    found = responses.get(item.prompt.strip())
    if found is None:
        found = (getattr(responses, "by_key", None) or {}).get(str(item.key))
    return found


def _as_mapping(prompts: Sequence[PromptItem], responses: Mapping[str, str] | Sequence[str]) -> Mapping[str, str]:
    """A plain list of responses is paired with the prompts by position."""
    if isinstance(responses, Mapping):
        return responses
    if isinstance(responses, str) or not isinstance(responses, Sequence):
        raise TypeError("responses must map prompt -> response, or be a list of responses in prompt order")
    if len(responses) != len(prompts):
        raise ValueError(f"{len(responses)} responses for {len(prompts)} prompts: a list must have one per prompt")
    bad = next((i for i, r in enumerate(responses) if r is not None and not isinstance(r, str)), None)
    if bad is not None:
        raise TypeError(f"responses[{bad}] is a {type(responses[bad]).__name__}, not a string")
    mapping = _KeyedResponses()
    mapping.by_key = {str(p.key): r for p, r in zip(prompts, responses, strict=True) if r is not None}
    return mapping


class _KeyedResponses(dict):
    by_key: dict[str, str]


def evaluate(
    prompts: Sequence[PromptItem],
    responses: Mapping[str, str] | Sequence[str],
    *,
    semantics: str = "reference",
    thinking: bool = False,
    workers: int | None = None,
) -> EvalResult:
    """Score ``responses`` (prompt -> response) on ``prompts``; see the module docstring.

    ``thinking=True`` strips a reasoning model's thinking section first (:func:`data.strip_thinking`).
    ``workers``: processes to use (default: 1 below 2,000 prompts, else up to 8 CPUs)."""
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics must be one of {SEMANTICS}")
    t0 = time.perf_counter()
    responses = _as_mapping(prompts, responses)
    resps = []
    for it in prompts:
        r = _lookup(responses, it)
        if r is not None and thinking:
            r = strip_thinking(r)
        resps.append(r)
    if workers is None:
        workers = 1 if len(prompts) < 5000 else min(8, os.cpu_count() or 1)
    if workers <= 1:
        results = _worker((list(prompts), resps, semantics))
    else:
        import concurrent.futures as cf

        k = max(1, len(prompts) // (workers * 4))
        chunks = [(list(prompts[i : i + k]), resps[i : i + k], semantics) for i in range(0, len(prompts), k)]
        with cf.ProcessPoolExecutor(workers) as ex:
            results = [r for part in ex.map(_worker, chunks) for r in part]
    settings = {"thinking_stripped": thinking, "workers": workers, "seconds": round(time.perf_counter() - t0, 4)}
    return EvalResult(results, semantics, settings, nlp.provenance())


# --------------------------------------------------------------------------------------------- bootstrap


def _prompt_arrays(res: EvalResult, mode: str):
    import numpy as np

    rows, _ = res.matrix(mode)
    rows = [r for r in rows if r]
    allok = np.array([all(r) for r in rows], dtype=float)
    passed = np.array([sum(r) for r in rows], dtype=float)
    count = np.array([len(r) for r in rows], dtype=float)
    return allok, passed, count


def bootstrap_ci(res: EvalResult, mode: str, *, n: int = 1000, seed: int = 0) -> dict[str, list[float]]:
    """95% percentile bootstrap intervals over prompts (instruction level resamples whole prompts)."""
    import numpy as np

    allok, passed, count = _prompt_arrays(res, mode)
    if len(allok) == 0:
        return {}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(allok), size=(n, len(allok)))
    pl = allok[idx].mean(axis=1)
    il = passed[idx].sum(axis=1) / count[idx].sum(axis=1)
    q = [2.5, 97.5]
    return {"prompt_level": np.percentile(pl, q).tolist(), "instruction_level": np.percentile(il, q).tolist()}


def compare(a: EvalResult, b: EvalResult, *, n: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Paired bootstrap of B − A on the same prompts: mean deltas, 95% CIs and the share of resamples with
    B > A, for strict and loose, prompt- and instruction-level."""
    import numpy as np

    if [p.prompt for p in a.prompts] != [p.prompt for p in b.prompts]:
        raise ValueError("compare needs two results on the same prompts in the same order")
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for mode in ("strict", "loose"):
        a_all, a_pass, cnt = _prompt_arrays(a, mode)
        b_all, b_pass, _ = _prompt_arrays(b, mode)
        idx = rng.integers(0, len(a_all), size=(n, len(a_all)))
        dpl = b_all[idx].mean(1) - a_all[idx].mean(1)
        c = cnt[idx].sum(1)
        dil = b_pass[idx].sum(1) / c - a_pass[idx].sum(1) / c
        for level, d, point in (
            ("prompt_level", dpl, b_all.mean() - a_all.mean()),
            ("instruction_level", dil, b_pass.sum() / cnt.sum() - a_pass.sum() / cnt.sum()),
        ):
            out[f"{mode}_{level}"] = {
                "delta": float(point),
                "ci95": np.percentile(d, [2.5, 97.5]).tolist(),
                "p_b_better": float((d > 0).mean()),
            }
    flips = {"a_only": 0, "b_only": 0}
    for pa, pb in zip(a.prompts, b.prompts):
        fa, fb = all(pa.follow("loose")), all(pb.follow("loose"))
        flips["a_only"] += fa and not fb
        flips["b_only"] += fb and not fa
    out["prompt_flips_loose"] = flips
    return out
