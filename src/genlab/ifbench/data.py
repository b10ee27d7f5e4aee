"""Loading prompt files, response files and open-instruct ground truth.

Every reader of :mod:`genlab.ifbench.readers` is accepted (``fmt``: "auto" detects it from the content): JSONL /
JSON, Parquet / Arrow, a Hugging Face dataset folder, lm-evaluation-harness samples and inspect_ai logs. Rows:

* IFEval / IFBench: ``key`` (int or str), ``prompt``, ``instruction_id_list``, ``kwargs`` (one dict per id,
  positional; null values are dropped, integral floats become ints).
* IFBench multi-turn: as above plus ``messages`` (user / assistant / user). The scored prompt is ``prompt``.
* open-instruct RLVR rows: ``messages`` plus ``ground_truth`` (a string holding a Python literal list whose
  first element is ``{"instruction_id": [...], "kwargs": [...]}``, or that element as JSON).
* TRL prompt datasets: ``prompt`` may be a list of chat messages (the last user turn is the prompt).

Responses: rows with ``prompt`` and ``response``, joined on the exact prompt, then on the stripped prompt
(lm-eval samples and inspect logs carry both the prompt and the response). Every error is one
:class:`DataError` line naming the file, the record and the field; nothing is written before the inputs load.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genlab.ifbench.readers import DataError, read_records
from genlab.ifbench.registry import KwargsError, UnknownInstructionError, get

__all__ = [
    "RESPONSE_FIELDS",
    "DataError",
    "PromptItem",
    "Responses",
    "load_prompts",
    "load_responses",
    "parse_ground_truth",
    "strip_thinking",
]


@dataclass
class PromptItem:
    """One prompt to score: its instructions (positional ids + kwargs). ``normalized`` says that the kwargs are
    already what :meth:`Constraint.normalize` returns (:func:`load_prompts` sets it); otherwise the evaluator
    normalises them."""

    key: Any
    prompt: str
    instruction_id_list: list[str]
    kwargs: list[dict[str, Any]]
    messages: list[dict[str, str]] | None = None
    unknown: list[int] = field(default_factory=list)  # positions of unknown ids (only with lenient=True)
    line: int = 0
    normalized: bool = False


def parse_ground_truth(gt: Any) -> tuple[list[str], list[dict | None]]:
    """(ids, kwargs) from open-instruct's ground-truth field (Python-literal string, JSON string, or dict).
    Raises ValueError with a one-line reason for anything else."""
    obj = gt
    if isinstance(obj, str):
        try:
            obj = ast.literal_eval(obj)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            try:
                obj = json.loads(obj)
            except ValueError:
                raise ValueError("not a Python literal or JSON") from None
    if isinstance(obj, list | tuple):
        if not obj:
            raise ValueError("empty ground-truth list")
        obj = obj[0]
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except ValueError:
            raise ValueError("the list's first element is a string but not JSON") from None
    if not isinstance(obj, Mapping):
        raise ValueError(f"must hold a dict with 'instruction_id' and 'kwargs', got {type(obj).__name__}")
    if "func_name" in obj:
        raise ValueError("an open-instruct 'func_name' constraint (the older form): score it with "
                         "genlab.ifbench.verifier.IFBenchVerifier")
    ids = obj.get("instruction_id", obj.get("instruction_id_list"))
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, list | tuple):
        raise ValueError("has no 'instruction_id' list")
    for j, cid in enumerate(ids):
        if not isinstance(cid, str):
            raise ValueError(f"instruction_id[{j}] must be a string, got {type(cid).__name__}")
    kws = obj.get("kwargs")
    if kws is None:
        kws = [None] * len(ids)
    elif isinstance(kws, Mapping):
        kws = [kws]
    if not isinstance(kws, list | tuple):
        raise ValueError(f"'kwargs' must be a list, got {type(kws).__name__}")
    if len(kws) != len(ids):
        raise ValueError(f"{len(ids)} instruction ids but {len(kws)} kwargs")
    for j, kw in enumerate(kws):
        if kw is not None and not isinstance(kw, Mapping):
            raise ValueError(f"kwargs[{j}] must be an object or null, got {type(kw).__name__}")
    return list(ids), list(kws)


def _prompt_of(row: Mapping[str, Any], where: str) -> str:
    """The scored prompt: ``prompt`` (a string, or TRL's conversational list of messages), else the last user
    turn of ``messages``."""
    prompt = row.get("prompt")
    field_name = "prompt"
    if isinstance(prompt, list):
        prompt = _last_turn(prompt, "user")
    elif prompt is None and isinstance(row.get("messages"), list):
        prompt, field_name = _last_turn(row["messages"], "user"), "messages"
    if not isinstance(prompt, str):
        got = "missing" if row.get("prompt") is None and "messages" not in row else "not a string"
        raise DataError(f"{where}: field '{field_name}' {got} (needs the prompt text or a user message)")
    return prompt


def _instructions(row: Mapping[str, Any], where: str) -> tuple[list[str], list[Any]]:
    if "instruction_id_list" in row:
        ids, kws = row["instruction_id_list"], row.get("kwargs")
        if not isinstance(ids, list | tuple):
            raise DataError(f"{where}: field 'instruction_id_list' must be a list of ids, got {type(ids).__name__}")
        for j, cid in enumerate(ids):
            if not isinstance(cid, str):
                raise DataError(f"{where}: field 'instruction_id_list[{j}]' must be a string, got {type(cid).__name__}")
        if kws is None:
            kws = [{} for _ in ids]
        if not isinstance(kws, list | tuple) or len(kws) != len(ids):
            got = f"{len(kws)} entries" if isinstance(kws, list | tuple) else type(kws).__name__
            raise DataError(f"{where}: field 'kwargs' must be a list with one entry per instruction ({len(ids)} ids, "
                            f"got {got})")
        return list(ids), list(kws)
    if "ground_truth" in row:
        try:
            return parse_ground_truth(row["ground_truth"])
        except (ValueError, TypeError) as e:
            raise DataError(f"{where}: field 'ground_truth': {e}") from None
    raise DataError(f"{where}: field 'instruction_id_list' missing (or open-instruct 'ground_truth')")


def _normalized(ids: list[str], kws: list[Any], where: str, lenient: bool) -> tuple[list[dict[str, Any]], list[int]]:
    norm: list[dict[str, Any]] = []
    unknown: list[int] = []
    for j, (cid, kw) in enumerate(zip(ids, kws)):
        if kw is not None and not isinstance(kw, Mapping):
            raise DataError(f"{where}: field 'kwargs[{j}]' must be an object or null, got {type(kw).__name__}")
        try:
            c = get(cid)
        except UnknownInstructionError as e:
            if not lenient:
                raise DataError(f"{where}: field 'instruction_id_list[{j}]': {e} (use --lenient to skip)") from None
            unknown.append(j)
            norm.append(dict(kw or {}))
            continue
        try:
            norm.append(c.normalize(kw))
        except KwargsError as e:
            raise DataError(f"{where}: field 'kwargs[{j}]': {e}") from None
    return norm, unknown


def load_prompts(path: str | Path, *, lenient: bool = False, fmt: str = "auto") -> list[PromptItem]:
    """Read a prompt file in any supported format (see the module docstring); an empty file is an error.

    An unknown instruction id raises :class:`DataError`; with ``lenient=True`` it is kept, marked in
    ``PromptItem.unknown`` and skipped (not scored) by the evaluator, which reports how many it skipped."""
    items: list[PromptItem] = []
    for n, (where, row) in enumerate(read_records(path, fmt), 1):
        ids, kws = _instructions(row, where)
        prompt = _prompt_of(row, where)
        norm, unknown = _normalized(ids, kws, where, lenient)
        messages = row.get("messages")
        key = row.get("key", n)
        key = key if key is not None else n
        messages = messages if isinstance(messages, list) else None
        items.append(PromptItem(key, prompt, ids, norm, messages, unknown, n, normalized=True))
    if not items:
        raise DataError(f"{path}: no prompts (the file holds no records)")
    return items


RESPONSE_FIELDS = ("response", "completion", "output", "generation", "model_output", "answer")


class Responses(dict):
    """prompt -> response (also under the stripped prompt, as IFBench does); the responses of rows that carry a
    ``key`` and no prompt under :attr:`by_key` (matched to the prompt with that key); and the field they were
    read from (:attr:`field`: ``response``, ``completion``, ..., or ``messages`` for the last assistant turn).
    A row with a prompt is matched by its text only: keys of different prompt sets overlap (IFEval's and
    IFBench's share 36), so a key never pairs a response with another prompt's text."""

    def __init__(self) -> None:
        super().__init__()
        self.by_key: dict[str, str] = {}
        self.field = ""
        self.rows = 0


def load_responses(
    path: str | Path, *, fmt: str = "auto", response_field: str | None = None, prompt_field: str | None = None
) -> Responses:
    """Responses read from rows as other tools write them: the response in ``response_field`` if given, else the
    first of :data:`RESPONSE_FIELDS` a row has, else the last assistant turn of ``messages`` (open-instruct,
    chat logs); lm-eval samples and inspect logs as they are. The prompt from ``prompt_field`` (else ``prompt``
    or the last user turn). Rows with a ``key`` are also matched by it. Later rows win for a repeated prompt."""
    out = Responses()
    fields_used: set[str] = set()
    for where, row in read_records(path, fmt):
        resp, used = _response_of(row, where, response_field)
        fields_used.add(used)
        out.rows += 1
        key = row.get("key")
        messages = row.get("messages")
        has_prompt = row.get("prompt") is not None or (isinstance(messages, list) and _last_turn(messages, "user"))
        if prompt_field is None and not has_prompt and isinstance(key, str | int) and not isinstance(key, bool):
            out.by_key[str(key)] = resp
            continue
        prompt = _prompt_of(row if prompt_field is None else _renamed(row, prompt_field, where), where)
        out[prompt] = resp
        if prompt.strip() != prompt:
            out[prompt.strip()] = resp  # as IFBench's read_prompt_to_response_dict
    out.field = ", ".join(sorted(fields_used))
    return out


def _renamed(row: Mapping[str, Any], field_name: str, where: str) -> dict[str, Any]:
    if field_name not in row:
        raise DataError(f"{where}: field {field_name!r} (--prompt-field) missing")
    return {**row, "prompt": row[field_name]}


def _response_of(row: Mapping[str, Any], where: str, field_name: str | None) -> tuple[str, str]:
    """(response, the field it came from)."""
    if field_name is not None:
        if field_name not in row:
            raise DataError(f"{where}: field {field_name!r} (--response-field) missing")
        names: tuple[str, ...] = (field_name,)
    else:
        names = tuple(f for f in RESPONSE_FIELDS if row.get(f) is not None)
    if names:
        resp = row[names[0]]
        if isinstance(resp, list):  # a conversation: its last assistant turn
            resp = _last_turn(resp, "assistant")
        if not isinstance(resp, str):
            raise DataError(f"{where}: field {names[0]!r} must be a string, got {type(resp).__name__}")
        return resp, names[0]
    if isinstance(row.get("messages"), list):
        resp = _last_turn(row["messages"], "assistant")
        if isinstance(resp, str):
            return resp, "messages"
    raise DataError(f"{where}: no response: none of the fields {', '.join(RESPONSE_FIELDS)} and no assistant turn "
                    "in 'messages' (name the field with --response-field)")  # fmt: skip


def _last_turn(messages: list[Any], role: str) -> str | None:
    """The text of the last message with ``role`` (string content or a list of text parts)."""
    for m in reversed(messages):
        if isinstance(m, Mapping) and m.get("role") == role:
            content = m.get("content")
            if isinstance(content, list):
                parts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
                return "".join(parts)
            return content if isinstance(content, str) else None
    return None


_ANSWER_TAG = re.compile(r"</?answer>")


def strip_thinking(text: str) -> str:
    """Remove a reasoning model's thinking section: keep the text after the last ``</think>`` (if any),
    drop ``<answer>`` tags, strip. Same rule as open-instruct's verifier."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    elif text.lstrip().startswith("<think>"):
        return ""  # thinking never finished: no answer
    return _ANSWER_TAG.sub("", text).strip()
