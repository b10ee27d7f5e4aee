"""Training prompts for RLVR: 1–N verifiable constraints composed onto base prompts.

Constraints come from IFEval ∪ IFTrain, never from the IFBench test set, so that IFBench stays out of
distribution. One IFTrain id, ``keywords:keyword_specific_position``, asks for the same thing as the IFBench test
id ``words:keywords_specific_position`` (the paper calls the sets disjoint, but this pair overlaps), so it is
excluded too. Pairs that the registry marks as conflicting (``registry.conflicts``: e.g. all-lowercase with
all-capitals, two length constraints of one kind, the same id twice) are never combined, nor are two ids that
each fix how the response starts or ends (:data:`RESPONSE_FRAME_IDS`). Output is seeded and
deduplicated, in open-instruct's RLVR format (``messages`` + ``ground_truth``) and as an IFEval-style prompt file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from genlab.ifbench.registry import conflicts, get, ids

__all__ = [
    "EXCLUDED_TRAIN_IDS",
    "compatible",
    "default_base_prompts",
    "load_base_prompts",
    "make_train",
    "to_ifeval",
    "to_open_instruct",
    "to_trl",
    "train_ids",
    "write_train",
]

EXCLUDED_TRAIN_IDS = frozenset({"keywords:keyword_specific_position"})
# Ids that each dictate how the whole response starts or ends; any two of them contradict each other
# (e.g. "wrap it in double quotes" with "end with the same word you started with, nothing after it").
RESPONSE_FRAME_IDS = frozenset(
    {
        "startend:quotation",
        "keywords:start_end",
        "startend:end_checker",
        "first_word:first_word_answer",
        "last_word:last_word_answer",
        "combination:repeat_prompt",
    }
)


def compatible(a: str, b: str) -> bool:
    """True if ``a`` and ``b`` may share a training prompt: no registry conflict and not two response frames."""
    return not conflicts(a, b) and not (a in RESPONSE_FRAME_IDS and b in RESPONSE_FRAME_IDS)


def train_ids() -> list[str]:
    """The ids training prompts may use: IFEval ∪ IFTrain minus IFBench test ids and the overlapping pair."""
    test = set(ids("ifbench"))
    return [cid for cid in ids("ifeval") + ids("iftrain") if cid not in test and cid not in EXCLUDED_TRAIN_IDS]


def default_base_prompts() -> list[str]:
    """The package's own base prompts (written for genlab)."""
    text = resources.files("genlab.ifbench").joinpath("data/base_prompts.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def load_base_prompts(path: str | Path) -> list[str]:
    """Base prompts from a text file (one per line) or JSONL (``prompt`` or ``messages`` rows)."""
    path = Path(path)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix not in (".jsonl", ".json"):
        return [line.strip() for line in lines]
    prompts = []
    for lineno, line in enumerate(lines, 1):
        row = json.loads(line)
        if isinstance(row.get("prompt"), str):
            prompts.append(row["prompt"])
        elif isinstance(row.get("messages"), list) and row["messages"]:
            prompts.append(str(row["messages"][-1]["content"]))
        else:
            raise ValueError(f"{path}:{lineno}: a base-prompt row needs 'prompt' or 'messages'")
    return prompts


def _compose(
    base: str, rng: random.Random, k: int, pool: Sequence[str]
) -> tuple[list[str], list[dict[str, Any]]] | None:
    chosen: list[str] = []
    for cid in rng.sample(list(pool), len(pool)):
        if len(chosen) == k:
            break
        if all(compatible(cid, other) for other in chosen):
            chosen.append(cid)
    if len(chosen) < k:
        return None
    return chosen, [get(cid).sample(rng, {"prompt": base}) for cid in chosen]


def make_train(
    base_prompts: Sequence[str] | None = None,
    n: int = 1000,
    *,
    max_constraints: int = 5,
    min_constraints: int = 1,
    seed: int = 0,
    max_tries: int = 50,
    constraint_ids: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """``n`` unique training rows: ``{"key", "prompt", "base", "instruction_id_list", "kwargs"}``.

    Each row takes a base prompt and k ~ U{min..max} non-conflicting constraints with sampled kwargs; the prompt
    is the base followed by each constraint's instruction text. ``constraint_ids`` replaces the pool of
    :func:`train_ids` (e.g. IFBench's test ids, for held-out prompts built the same way). Raises ValueError if
    ``n`` unique rows cannot be drawn."""
    if not 1 <= min_constraints <= max_constraints:
        raise ValueError(f"need 1 <= min_constraints <= max_constraints, got {min_constraints}, {max_constraints}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    bases = list(base_prompts) if base_prompts is not None else default_base_prompts()
    if not bases:
        raise ValueError("no base prompts")
    pool = list(constraint_ids) if constraint_ids is not None else train_ids()
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    misses = 0
    while len(rows) < n:
        base = rng.choice(bases)
        composed = _compose(base, rng, rng.randint(min_constraints, max_constraints), pool)
        if composed is not None:
            cids, kwargs = composed
            prompt = " ".join([base, *(get(c).describe(kw) for c, kw in zip(cids, kwargs))])
            if prompt not in seen:
                seen.add(prompt)
                rows.append(
                    {"key": f"genlab-train-{seed}-{len(rows)}", "prompt": prompt, "base": base,
                     "instruction_id_list": cids, "kwargs": kwargs}
                )  # fmt: skip
                misses = 0
                continue
        misses += 1
        if misses > max_tries * 100:
            raise ValueError(f"could only draw {len(rows)} unique rows of the {n} asked; give more base prompts")
    return rows


def to_open_instruct(row: dict[str, Any]) -> dict[str, Any]:
    """open-instruct's RLVR row: ``ground_truth`` is a Python-literal string of a one-element list."""
    kwargs = [kw or None for kw in row["kwargs"]]
    truth = [{"instruction_id": row["instruction_id_list"], "kwargs": kwargs}]
    return {
        "key": row["key"],
        "messages": [{"role": "user", "content": row["prompt"]}],
        "ground_truth": repr(truth),
        "dataset": "ifeval",
        "constraint_type": ", ".join(row["instruction_id_list"]),
        "constraint": " ".join(get(c).describe(kw) for c, kw in zip(row["instruction_id_list"], row["kwargs"])),
    }


def to_ifeval(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("key", "prompt", "instruction_id_list", "kwargs")}


def to_trl(row: dict[str, Any]) -> dict[str, Any]:
    """A row for TRL's ``GRPOTrainer``: the conversational ``prompt`` column (a list of messages; TRL applies the
    chat template) plus the ``ground_truth`` column that :class:`genlab.ifbench.reward.IFReward` reads."""
    oi = to_open_instruct(row)
    return {"prompt": oi["messages"], "ground_truth": oi["ground_truth"], "key": row["key"]}


def write_train(rows: Sequence[dict[str, Any]], out_dir: str | Path) -> dict[str, Path]:
    """Write ``train_open_instruct.jsonl``, ``train_ifeval.jsonl`` and ``train_trl.jsonl`` (TRL's ``prompt``
    column + ``ground_truth``; ``datasets.load_dataset("json", data_files=...)`` reads it) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"open_instruct": out / "train_open_instruct.jsonl", "ifeval": out / "train_ifeval.jsonl",
             "trl": out / "train_trl.jsonl"}
    for name, convert in (("open_instruct", to_open_instruct), ("ifeval", to_ifeval), ("trl", to_trl)):
        with paths[name].open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(convert(r), ensure_ascii=False) + "\n" for r in rows)
    return paths
