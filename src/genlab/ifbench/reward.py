"""The RLVR reward for verifiable instruction following.

Two entry points over the same scoring rule:

* :func:`ifeval_reward` — open-instruct's ``IFEvalVerifier`` semantics: the ground truth is its string format
  (a Python list literal holding one dict with ``instruction_id`` and positional ``kwargs``; a dict or JSON is
  accepted too); the thinking section is stripped; an empty answer scores 0; each constraint is checked
  **strictly** (no loose variants) on the answer; the score is the **mean over constraints** (partial credit),
  times ``scale`` (default 1 for both entry points; open-instruct's trainer multiplies by
  ``verification_reward = 10``: pass ``scale=10`` to match its reward magnitude).
* :class:`IFReward` — a callable in TRL's GRPO ``reward_funcs`` convention: ``reward(prompts=..., completions=...,
  **dataset_columns) -> list[float]``; completions may be plain strings or conversational message lists.

``partial=False`` gives all-or-nothing credit (1 only if every constraint holds). Large batches are scored on
several processes. A strict verdict here equals the evaluator's strict verdict on the same answer text.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from genlab.ifbench.data import parse_ground_truth, strip_thinking
from genlab.ifbench.registry import get, prepare

__all__ = ["IFReward", "constraint_verdicts", "ifeval_reward", "score_batch"]

GroundTruth = str | Mapping[str, Any] | Sequence[Any]
_ASSISTANT_MARKERS = ("<|assistant|>", "<|im_start|>assistant", "assistant:")


def answer_text(prediction: str, strip_think: bool = True) -> str:
    """The answer the verifier sees: assistant marker removed, thinking stripped (see ``data.strip_thinking``)."""
    text = prediction
    for marker in _ASSISTANT_MARKERS:
        if text.lstrip().startswith(marker):
            text = text.lstrip()[len(marker) :]
            break
    return strip_thinking(text) if strip_think else text.strip()


def constraint_verdicts(
    prediction: str, ground_truth: GroundTruth, *, semantics: str = "reference", strip_think: bool = True
) -> list[bool]:
    """Strict verdict of each constraint in ``ground_truth`` on the answer in ``prediction`` (positional)."""
    return _verdicts(answer_text(prediction, strip_think), *parse_ground_truth(ground_truth), semantics)


def _verdicts(answer: str, ids: list[str], kwargs: list[Any], semantics: str) -> list[bool]:
    if not answer:
        return [False] * len(ids)
    return [get(cid).check(answer, kw, semantics=semantics).ok for cid, kw in zip(ids, kwargs)]


def ifeval_reward(
    prediction: str,
    ground_truth: GroundTruth,
    *,
    scale: float = 1.0,
    partial: bool = True,
    semantics: str = "reference",
    strip_think: bool = True,
) -> float:
    """``scale`` × (fraction of constraints followed, or 1/0 all-or-nothing when ``partial=False``)."""
    verdicts = constraint_verdicts(prediction, ground_truth, semantics=semantics, strip_think=strip_think)
    return _credit(verdicts, scale, partial)


def _credit(verdicts: list[bool], scale: float, partial: bool) -> float:
    if not verdicts:
        return 0.0
    return scale * (sum(verdicts) / len(verdicts) if partial else float(all(verdicts)))


_REWARD_DEFAULTS = {
    name: p.default for name, p in inspect.signature(ifeval_reward).parameters.items() if p.kind is p.KEYWORD_ONLY
}


def _score_chunk(args: tuple[list[str], list[Any], dict[str, Any]]) -> list[float]:
    """:func:`ifeval_reward` of each pair, the answers and ground truths parsed once and language detection
    batched over the chunk."""
    preds, gts, options = args
    opts = {**_REWARD_DEFAULTS, **options}
    answers = [answer_text(p, opts["strip_think"]) for p in preds]
    truths = [parse_ground_truth(g) for g in gts]
    prepare((get(cid), a) for a, (ids, _) in zip(answers, truths) if a for cid in ids)
    return [
        _credit(_verdicts(a, ids, kwargs, opts["semantics"]), opts["scale"], opts["partial"])
        for a, (ids, kwargs) in zip(answers, truths)
    ]


def score_batch(
    predictions: Sequence[str], ground_truths: Sequence[GroundTruth], *, workers: int | None = None, **options: Any
) -> list[float]:
    """:func:`ifeval_reward` over a batch, in order. ``workers``: processes (default: 1 below 512 items, else all
    CPUs). ``options`` are those of :func:`ifeval_reward`."""
    if len(predictions) != len(ground_truths):
        raise ValueError(f"{len(predictions)} predictions but {len(ground_truths)} ground truths")
    n = len(predictions)
    if workers is None:
        workers = 1 if n < 512 else os.cpu_count() or 1
    if workers <= 1 or n < 2 * workers:
        return _score_chunk((list(predictions), list(ground_truths), options))
    size = -(-n // (workers * 4))
    chunks = [(list(predictions[i : i + size]), list(ground_truths[i : i + size]), options) for i in range(0, n, size)]
    with ProcessPoolExecutor(workers) as pool:
        return [r for part in pool.map(_score_chunk, chunks) for r in part]


def _completion_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        return str(completion[-1].get("content", ""))  # TRL conversational format: the assistant turn(s)
    if isinstance(completion, Mapping):
        return str(completion.get("content", ""))
    raise TypeError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")


class IFReward:
    """TRL GRPO reward function: ``IFReward()(prompts=..., completions=..., ground_truth=[...])``.

    The constraints come from the dataset column ``ground_truth`` (open-instruct format), or from the columns
    ``instruction_id_list`` + ``kwargs`` (IFEval format). Returns one float per completion.
    """

    def __init__(
        self,
        *,
        scale: float = 1.0,
        partial: bool = True,
        semantics: str = "reference",
        strip_think: bool = True,
        workers: int | None = None,
        column: str = "ground_truth",
    ) -> None:
        self.options = {"scale": scale, "partial": partial, "semantics": semantics, "strip_think": strip_think}
        self.workers = workers
        self.column = column
        self.__name__ = "ifbench_reward"  # TRL logs reward functions by __name__

    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any):
        texts = [_completion_text(c) for c in completions]
        if self.column in columns:
            truths = list(columns[self.column])
        elif "instruction_id_list" in columns:
            kwargs = columns.get("kwargs") or [None] * len(texts)
            truths = [{"instruction_id": ids, "kwargs": kw} for ids, kw in zip(columns["instruction_id_list"], kwargs)]
        else:
            raise KeyError(f"no '{self.column}' (or 'instruction_id_list') column in the batch: {sorted(columns)}")
        return score_batch(texts, truths, workers=self.workers, **self.options)
