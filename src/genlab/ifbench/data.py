"""Loading prompt files, response files and open-instruct ground truth.

Accepted prompt formats (JSONL, one object per line; a ``.json`` file holding a list also works):

* IFEval / IFBench: ``key`` (int or str), ``prompt``, ``instruction_id_list``, ``kwargs`` (one dict per id,
  positional; null values are dropped, integral floats become ints).
* IFBench multi-turn: as above plus ``messages`` (user / assistant / user). The scored prompt is ``prompt``.
* open-instruct RLVR rows: ``messages`` plus ``ground_truth`` (a string holding a Python literal list whose
  first element is ``{"instruction_id": [...], "kwargs": [...]}``, or that element as JSON).

Responses: JSONL rows with ``prompt`` and ``response``, joined on the exact prompt, then on the stripped
prompt. Every error names the file, the line and the offending key.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genlab.ifbench.registry import KwargsError, UnknownInstructionError, get

__all__ = [
    "DataError",
    "PromptItem",
    "load_prompts",
    "load_responses",
    "parse_ground_truth",
    "strip_thinking",
]


class DataError(ValueError):
    """A malformed input file; the message names the file, line and key."""


@dataclass
class PromptItem:
    """One prompt to score: its instructions (positional ids + kwargs, already validated)."""

    key: Any
    prompt: str
    instruction_id_list: list[str]
    kwargs: list[dict[str, Any]]
    messages: list[dict[str, str]] | None = None
    unknown: list[int] = field(default_factory=list)  # positions of unknown ids (only with lenient=True)
    line: int = 0


def _rows(path: Path) -> Iterator[tuple[int, dict]]:
    if not path.exists():
        raise DataError(f"{path}: file not found")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: invalid JSON ({e})") from None
        for i, row in enumerate(data, 1):
            if not isinstance(row, dict):
                raise DataError(f"{path}: item {i}: expected an object")
            yield i, row
        return
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{i}: invalid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{i}: expected a JSON object, got {type(row).__name__}")
        yield i, row


def parse_ground_truth(gt: Any) -> tuple[list[str], list[dict | None]]:
    """(ids, kwargs) from open-instruct's ground-truth field (Python-literal string, JSON string, or dict)."""
    obj = gt
    if isinstance(obj, str):
        try:
            obj = ast.literal_eval(obj)
        except (ValueError, SyntaxError):
            obj = json.loads(obj)
    if isinstance(obj, list):
        if not obj:
            raise ValueError("empty ground-truth list")
        obj = obj[0]
    if isinstance(obj, str):
        obj = json.loads(obj)
    if not isinstance(obj, Mapping):
        raise ValueError("ground truth must hold a dict with 'instruction_id' and 'kwargs'")
    ids = obj.get("instruction_id", obj.get("instruction_id_list"))
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, list):
        raise ValueError("ground truth has no 'instruction_id' list")
    kws = obj.get("kwargs")
    if kws is None:
        kws = [None] * len(ids)
    elif isinstance(kws, Mapping):
        kws = [kws]
    return list(ids), list(kws)


def _last_user(messages: list[dict]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return str(m.get("content", ""))
    return str(messages[-1].get("content", "")) if messages else ""


def load_prompts(path: str | Path, *, lenient: bool = False) -> list[PromptItem]:
    """Read a prompt file in any of the supported formats (see module docstring).

    An unknown instruction id raises :class:`DataError`; with ``lenient=True`` it is kept, marked in
    ``PromptItem.unknown`` and skipped (not scored) by the evaluator, which reports how many it skipped."""
    p = Path(path)
    items: list[PromptItem] = []
    for ln, row in _rows(p):
        where = f"{p}:{ln}"
        messages = row.get("messages")
        if "instruction_id_list" in row:
            ids = row["instruction_id_list"]
            kws = row.get("kwargs")
            if kws is None:
                kws = [{} for _ in ids]
        elif "ground_truth" in row:
            try:
                ids, kws = parse_ground_truth(row["ground_truth"])
            except (ValueError, SyntaxError) as e:
                raise DataError(f"{where}: key 'ground_truth': {e}") from None
        else:
            raise DataError(f"{where}: missing key 'instruction_id_list' (or open-instruct 'ground_truth')")
        if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
            raise DataError(f"{where}: key 'instruction_id_list' must be a list of strings")
        if not isinstance(kws, list) or len(kws) != len(ids):
            raise DataError(
                f"{where}: key 'kwargs' must be a list with one entry per instruction "
                f"({len(ids)} ids, got {len(kws) if isinstance(kws, list) else type(kws).__name__})"
            )
        prompt = row.get("prompt")
        if prompt is None and isinstance(messages, list):
            prompt = _last_user(messages)
        if not isinstance(prompt, str):
            raise DataError(f"{where}: key 'prompt' missing or not a string")
        norm: list[dict[str, Any]] = []
        unknown: list[int] = []
        for j, (cid, kw) in enumerate(zip(ids, kws)):
            if kw is not None and not isinstance(kw, Mapping):
                raise DataError(f"{where}: key 'kwargs[{j}]' must be an object or null")
            try:
                c = get(cid)
            except UnknownInstructionError as e:
                if not lenient:
                    raise DataError(f"{where}: key 'instruction_id_list[{j}]': {e} (use --lenient to skip)") from None
                unknown.append(j)
                norm.append(dict(kw or {}))
                continue
            try:
                norm.append(c.normalize(kw))
            except KwargsError as e:
                raise DataError(f"{where}: key 'kwargs[{j}]': {e}") from None
        items.append(
            PromptItem(row.get("key", ln), prompt, list(ids), norm, messages if isinstance(messages, list) else None,
                       unknown, ln)
        )
    return items


def load_responses(path: str | Path) -> dict[str, str]:
    """prompt -> response from a JSONL file with ``prompt`` and ``response``; also indexed by the stripped
    prompt (as IFBench does). Later rows win for a repeated prompt."""
    p = Path(path)
    out: dict[str, str] = {}
    for ln, row in _rows(p):
        prompt = row.get("prompt")
        if prompt is None and isinstance(row.get("messages"), list):
            prompt = _last_user(row["messages"])
        if not isinstance(prompt, str):
            raise DataError(f"{p}:{ln}: key 'prompt' missing or not a string")
        resp = row.get("response")
        if resp is None:
            raise DataError(f"{p}:{ln}: key 'response' missing")
        if not isinstance(resp, str):
            raise DataError(f"{p}:{ln}: key 'response' must be a string, got {type(resp).__name__}")
        out[prompt] = resp
        if prompt.strip() != prompt:
            out[prompt.strip()] = resp  # as IFBench's read_prompt_to_response_dict
    return out


_ANSWER_TAG = re.compile(r"</?answer>")


def strip_thinking(text: str) -> str:
    """Remove a reasoning model's thinking section: keep the text after the last ``</think>`` (if any),
    drop ``<answer>`` tags, strip. Same rule as open-instruct's verifier."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    elif text.lstrip().startswith("<think>"):
        return ""  # thinking never finished: no answer
    return _ANSWER_TAG.sub("", text).strip()
