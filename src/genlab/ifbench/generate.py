"""Generating responses to instruction-following prompts: an OpenAI-compatible chat client (vLLM, TGI,
llama.cpp, ollama and hosted APIs all speak it), a local Hugging Face ``transformers`` backend, and a
resumable on-disk cache so that a killed run loses nothing and repeats nothing.

The client uses only the standard library (``urllib`` and threads), so the ifbench CLI path stays light.
The API key is read from an environment variable and never printed, logged or stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from genlab.ifbench.data import PromptItem

Messages = list[dict[str, str]]

__all__ = [
    "GenerationError",
    "OpenAIChatBackend",
    "ResponseCache",
    "TransformersBackend",
    "generate_responses",
    "messages_of",
]


class GenerationError(RuntimeError):
    """A request that failed for good (after retries, or a non-retryable HTTP error)."""


def messages_of(item: PromptItem) -> Messages:
    """What is sent for a prompt: its multi-turn ``messages`` if it has them, else one user turn."""
    return item.messages or [{"role": "user", "content": item.prompt}]


class ResponseCache:
    """Append-only JSONL of finished generations keyed by a hash of (backend identity, messages).

    Each finished response is one line written with a single ``write`` and flushed at once; on load, a torn
    last line (a kill mid-write) is dropped and truncated away. So a killed run resumes with everything that
    finished, and asking again for a cached item never calls the model.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.entries: dict[str, str] = {}
        self._load()

    @staticmethod
    def key(identity: str, messages: Messages) -> str:
        blob = json.dumps({"id": identity, "messages": messages}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break
            self.entries[row["key"]] = row["response"]
            good += len(line)
        if good < len(data):  # drop a torn tail so the next append starts on a fresh line
            with self.path.open("r+b") as fh:
                fh.truncate(good)

    def get(self, key: str) -> str | None:
        return self.entries.get(key)

    def put(self, key: str, response: str, prompt: str) -> None:
        line = json.dumps({"key": key, "prompt": prompt, "response": response}, ensure_ascii=False) + "\n"
        with self._lock:
            if key in self.entries:
                return
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self.entries[key] = response


class Backend(Protocol):
    identity: str

    def generate_many(self, batch: Sequence[Messages], on_each: Callable[[int, str], None]) -> None: ...


@dataclass
class OpenAIChatBackend:
    """Chat completions against any OpenAI-compatible server.

    ``base_url`` is the server's API root (e.g. ``http://127.0.0.1:8000/v1``). Transient failures (connection
    errors, timeouts, HTTP 408/409/429/5xx) are retried with exponential backoff and jitter, honouring
    ``Retry-After``; other HTTP errors fail at once with the server's message. At most ``concurrency``
    requests are in flight.
    """

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    concurrency: int = 8
    max_retries: int = 5
    timeout: float = 120.0
    backoff: float = 1.0
    temperature: float = 0.0
    max_tokens: int = 2048
    extra_body: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        self.base_url = self.base_url.rstrip("/")

    @property
    def identity(self) -> str:
        params = {"t": self.temperature, "max_tokens": self.max_tokens, **self.extra_body}
        return f"openai:{self.model}:{json.dumps(params, sort_keys=True)}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def complete(self, messages: Messages) -> str:
        """One chat completion, with retries. Raises GenerationError (never showing the API key)."""
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **self.extra_body,
        }
        data = json.dumps(body).encode()
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(url, data=data, headers=self._headers(), method="POST")
            retry_after = None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                    payload = json.loads(resp.read())
                return _content(payload)
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode(errors="replace")
                last = f"HTTP {exc.code} from {url}: {detail}"
                if exc.code not in (408, 409, 429) and exc.code < 500:
                    raise GenerationError(last) from None
                retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as exc:
                last = f"{type(exc).__name__} talking to {url}: {getattr(exc, 'reason', exc)}"
            if attempt < self.max_retries:
                delay = retry_after if retry_after is not None else self.backoff * 2**attempt
                time.sleep(delay * (0.5 + random.random()) if retry_after is None else delay)
        raise GenerationError(f"gave up after {self.max_retries + 1} attempts: {last}")

    def generate_many(self, batch: Sequence[Messages], on_each: Callable[[int, str], None]) -> None:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self.complete, messages): i for i, messages in enumerate(batch)}
            try:
                for fut in as_completed(futures):
                    on_each(futures[fut], fut.result())
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise


def _content(payload: dict[str, Any]) -> str:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise GenerationError(f"unexpected response shape: {str(payload)[:200]}") from None
    return content or ""


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


@dataclass
class TransformersBackend:
    """Greedy or sampled generation with a local ``transformers`` causal LM (a directory with config, weights and a
    tokenizer that has a chat template). Batched with left padding; no network access (``local_files_only``)."""

    model_path: str
    batch_size: int = 8
    max_new_tokens: int = 512
    temperature: float = 0.0
    device: str = "cpu"
    seed: int = 0
    _model: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)

    @property
    def identity(self) -> str:
        return f"hf:{Path(self.model_path).resolve()}:{self.max_new_tokens}:{self.temperature}:{self.seed}"

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            import transformers  # noqa: F401
        except ImportError as exc:
            raise GenerationError("the transformers backend needs `pip install transformers`") from exc
        if not Path(self.model_path).is_dir():
            raise GenerationError(f"no model directory at {self.model_path}")
        from genlab.nn.hf_policy import load_chat_model

        self._model, self._tokenizer = load_chat_model(self.model_path, self.device)

    def generate_many(self, batch: Sequence[Messages], on_each: Callable[[int, str], None]) -> None:
        import torch

        from genlab.nn.hf_policy import encode_chats

        self._load()
        tok, model = self._tokenizer, self._model
        torch.manual_seed(self.seed)
        for start in range(0, len(batch), self.batch_size):
            ids, mask = encode_chats(tok, batch[start : start + self.batch_size], self.device)
            sample = self.temperature > 0
            with torch.no_grad():
                out = model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=sample,
                    temperature=self.temperature if sample else None,
                    pad_token_id=tok.pad_token_id,
                )
            new = out[:, ids.shape[1] :]
            for i, text in enumerate(tok.batch_decode(new, skip_special_tokens=True)):
                on_each(start + i, text)


def generate_responses(
    items: Iterable[PromptItem],
    backend: Backend,
    cache: ResponseCache,
    out: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, str]]:
    """Answer every item (cached ones are not asked again), then write ``out`` as IFEval-style
    ``{"prompt", "response"}`` JSONL in the items' order. ``progress(done, total)`` is called as work finishes."""
    items = list(items)
    messages = [messages_of(it) for it in items]
    keys = [ResponseCache.key(backend.identity, m) for m in messages]
    todo = [i for i, k in enumerate(keys) if cache.get(k) is None]
    unique_todo = list({keys[i]: i for i in reversed(todo)}.values())[::-1]  # identical prompts are asked once
    copies = Counter(keys[i] for i in todo)
    done = len(items) - len(todo)
    if progress:
        progress(done, len(items))

    def on_each(j: int, text: str) -> None:
        nonlocal done
        i = unique_todo[j]
        cache.put(keys[i], text, items[i].prompt)
        done += copies[keys[i]]
        if progress:
            progress(done, len(items))

    if unique_todo:
        backend.generate_many([messages[i] for i in unique_todo], on_each)
    rows = [{"prompt": it.prompt, "response": cache.get(k) or ""} for it, k in zip(items, keys)]
    if out is not None:
        _write_jsonl_atomic(Path(out), rows)
    return rows


def _write_jsonl_atomic(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    os.replace(tmp, path)
