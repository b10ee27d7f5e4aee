import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from genlab.ifbench.generate import (
    GenerationError,
    OpenAIChatBackend,
    PromptItem,
    ResponseCache,
    generate_responses,
    read_prompt_items,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stub_openai import StubServer


def items(n):
    return [PromptItem(f"p{i}", [{"role": "user", "content": f"p{i}"}]) for i in range(n)]


def test_generates_in_order_with_concurrency_and_key_never_logged(tmp_path, monkeypatch):
    monkeypatch.setenv("GENLAB_TEST_KEY", "sk-secret-123")
    with StubServer(delay=0.01) as server:
        backend = OpenAIChatBackend(server.url, "m", api_key_env="GENLAB_TEST_KEY", concurrency=4)
        seen = []
        rows = generate_responses(items(12), backend, ResponseCache(tmp_path / "c.jsonl"), tmp_path / "r.jsonl",
                                  progress=lambda d, t: seen.append((d, t)))  # fmt: skip
    assert [r["response"] for r in rows] == [f"echo: p{i}" for i in range(12)]
    assert [json.loads(line)["prompt"] for line in (tmp_path / "r.jsonl").read_text().splitlines()] == [
        f"p{i}" for i in range(12)
    ]
    assert set(server.auth) == {"Bearer sk-secret-123"} and seen[-1] == (12, 12)
    assert "sk-secret" not in repr(backend) and "sk-secret" not in (tmp_path / "c.jsonl").read_text()


def test_cache_hits_do_not_call_the_server_and_duplicates_are_asked_once(tmp_path):
    dup = [*items(3), PromptItem("p0", [{"role": "user", "content": "p0"}])]
    with StubServer() as server:
        backend = OpenAIChatBackend(server.url, "m", api_key_env=None)
        cache = ResponseCache(tmp_path / "c.jsonl")
        generate_responses(dup, backend, cache)
        assert sorted(server.calls) == ["p0", "p1", "p2"]
        rows = generate_responses(dup, backend, ResponseCache(tmp_path / "c.jsonl"))
        assert len(server.calls) == 3 and rows[3]["response"] == "echo: p0"


def test_transient_errors_are_retried_and_client_errors_are_not(tmp_path):
    with StubServer(fail_first=3, fail_code=503) as server:
        backend = OpenAIChatBackend(server.url, "m", api_key_env=None, backoff=0.001, concurrency=1)
        assert backend.complete([{"role": "user", "content": "x"}]) == "echo: x"
        assert len(server.calls) == 4
    with StubServer(fail_first=10, fail_code=429) as server:
        backend = OpenAIChatBackend(server.url, "m", api_key_env=None, backoff=0.001, max_retries=2)
        with pytest.raises(GenerationError, match="gave up after 3 attempts: HTTP 429"):
            backend.complete([{"role": "user", "content": "x"}])
    with StubServer() as server:
        backend = OpenAIChatBackend(server.url, "bad", api_key_env=None, backoff=0.001)
        with pytest.raises(GenerationError, match="HTTP 400.*unknown model"):
            backend.complete([{"role": "user", "content": "x"}])
        assert len(server.calls) == 1
    backend = OpenAIChatBackend("http://127.0.0.1:9/v1", "m", api_key_env=None, max_retries=1, backoff=0.001, timeout=2)
    with pytest.raises(GenerationError, match="URLError"):
        backend.complete([{"role": "user", "content": "x"}])


def test_killed_run_resumes_without_losing_or_repeating(tmp_path):
    n = 30
    cache_path = tmp_path / "c.jsonl"
    script = textwrap.dedent(f"""
        import sys
        from genlab.ifbench.generate import OpenAIChatBackend, PromptItem, ResponseCache, generate_responses
        items = [PromptItem(f"p{{i}}", [{{"role": "user", "content": f"p{{i}}"}}]) for i in range({n})]
        backend = OpenAIChatBackend(sys.argv[1], "m", api_key_env=None, concurrency=2)
        generate_responses(items, backend, ResponseCache({str(cache_path)!r}))
    """)
    with StubServer(delay=0.05) as server:
        proc = subprocess.Popen([sys.executable, "-c", script, server.url], env=os.environ.copy())
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            if cache_path.exists() and len(cache_path.read_bytes().splitlines()) >= 6:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with cache_path.open("a") as fh:
            fh.write('{"key": "torn')  # a kill mid-write leaves a torn last line
        before = len(ResponseCache(cache_path).entries)
        assert 6 <= before < n
        calls_before = len(server.calls)
        backend = OpenAIChatBackend(server.url, "m", api_key_env=None, concurrency=2)
        rows = generate_responses(items(n), backend, ResponseCache(cache_path), tmp_path / "r.jsonl")
    assert [r["response"] for r in rows] == [f"echo: p{i}" for i in range(n)]
    assert len(server.calls) - calls_before == n - before  # only the missing ones were asked again
    keys = Counter(json.loads(line)["key"] for line in cache_path.read_text().splitlines())
    assert len(keys) == n and max(keys.values()) == 1


def test_read_prompt_items_both_formats_and_errors(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text(
        json.dumps({"key": 1, "prompt": "Write a poem."}) + "\n\n"
        + json.dumps({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                   {"role": "user", "content": "c"}]}) + "\n"
    )  # fmt: skip
    got = read_prompt_items(p)
    assert got[0] == PromptItem("Write a poem.", [{"role": "user", "content": "Write a poem."}])
    assert got[1].prompt == "c" and len(got[1].messages) == 3
    p.write_text('{"prompt": "x"}\n{"nope": 1}\n')
    with pytest.raises(ValueError, match=r"p.jsonl:2: a row needs"):
        read_prompt_items(p)
