"""An open-instruct verifier for IFEval / IFBench / IFTrain constraints.

:class:`IFBenchVerifier` has the interface of open-instruct's ``VerifierFunction`` (``ground_truth_utils.py``):
``name``, ``weight``, ``verifier_config``, ``get_config_class()``, ``__call__(tokenized_prediction, prediction,
label, query=None, rollout_state=None) -> VerificationResult`` and ``async_call(...)``. It scores both ground-truth
forms open-instruct has used:

* ``IFEvalVerifier``'s: a Python-literal list whose first element is ``{"instruction_id": [...], "kwargs": [...]}``
  (or that element as JSON): the mean over the constraints of the strict verdict, 0 for an empty answer;
* ``IFEvalVerifierOld``'s ``func_name`` form: ``{"func_name": NAME, **kwargs}`` (a dict or its JSON), one rule of
  :mod:`genlab.ifbench.legacy`; a label without ``func_name`` that is not the first form scores 0.

The answer is the prediction with ``<|assistant|>`` removed, the text after the last ``</think>`` and ``<answer>``
tags dropped, stripped — as open-instruct's ``remove_thinking_section``. To use it inside open-instruct, subclass
its ``VerifierFunction`` with this class as a mixin, or call it from your own verifier.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from genlab.ifbench import legacy
from genlab.ifbench.data import parse_ground_truth
from genlab.ifbench.registry import get, prepare

__all__ = ["IFBenchVerifier", "VerificationResult", "VerifierConfig", "open_instruct_answer"]


@dataclasses.dataclass
class VerifierConfig:
    """Settings (open-instruct passes a config object; this verifier has one option of its own)."""

    semantics: str = "reference"


@dataclasses.dataclass
class VerificationResult:
    """Same fields as open-instruct's: ``score`` in [0, 1], ``cost``, ``reasoning`` (here: which constraints
    failed and why)."""

    score: float
    cost: float = 0.0
    reasoning: str | None = None


def open_instruct_answer(prediction: str) -> str:
    """open-instruct's ``remove_thinking_section``: drop ``<|assistant|>``, keep the text after the last
    ``</think>``, drop ``<answer>`` tags, strip."""
    text = prediction.replace("<|assistant|>", "").strip().split("</think>")[-1]
    return text.replace("<answer>", "").replace("</answer>", "").strip()


def _func_name_label(label: Any) -> dict | None:
    obj = label
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except ValueError:
            return None
    return obj if isinstance(obj, dict) and "func_name" in obj else None


class IFBenchVerifier:
    """open-instruct verifier over genlab's checkers (see the module docstring)."""

    def __init__(self, verifier_config: VerifierConfig | None = None, *, name: str = "ifeval",
                 weight: float = 1.0) -> None:
        self.name = name
        self.weight = weight
        self.verifier_config = verifier_config or VerifierConfig()

    @classmethod
    def get_config_class(cls) -> type:
        return VerifierConfig

    def __call__(self, tokenized_prediction: list[int], prediction: str, label: Any, query: str | None = None,
                 rollout_state: dict | None = None) -> VerificationResult:
        answer = open_instruct_answer(prediction)
        legacy_label = _func_name_label(label)
        if legacy_label is not None:
            ok = bool(answer) and legacy.check_func_name(answer, legacy_label)
            return VerificationResult(float(ok), reasoning=f"{legacy_label['func_name']}: {'pass' if ok else 'fail'}")
        ids, kwargs = parse_ground_truth(label)
        if not prediction or not answer:
            return VerificationResult(0.0, reasoning="empty answer")
        constraints = [get(cid) for cid in ids]
        prepare((c, answer) for c in constraints)
        semantics = self.verifier_config.semantics
        verdicts = [c.check(answer, kw, semantics=semantics) for c, kw in zip(constraints, kwargs)]
        failed = [f"{c.id}: {v.reason}" for c, v in zip(constraints, verdicts) if not v.ok]
        score = sum(v.ok for v in verdicts) / max(len(verdicts), 1)
        return VerificationResult(score, reasoning="; ".join(failed) or "all constraints followed")

    async def async_call(self, tokenized_prediction: list[int], prediction: str, label: Any,
                         query: str | None = None, rollout_state: dict | None = None) -> VerificationResult:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, lambda: self(tokenized_prediction, prediction, label, query, rollout_state)
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name}, weight={self.weight})"
