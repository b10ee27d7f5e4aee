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

from genlab.ifbench.data import PromptItem
from genlab.ifbench.generate import (
    GenerationError,
    OpenAIChatBackend,
    ResponseCache,
    generate_responses,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stub_openai import StubServer


def item(prompt, messages=None):
    return PromptItem(prompt, prompt, [], [], messages)


def items(n):
    return [item(f"p{i}") for i in range(n)]


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
    dup = [*items(3), item("p0")]
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
        from genlab.ifbench.data import PromptItem
        from genlab.ifbench.generate import OpenAIChatBackend, ResponseCache, generate_responses
        items = [PromptItem(i, f"p{{i}}", [], []) for i in range({n})]
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
        time.sleep(0.5)  # let the server record requests the killed client had already sent
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


def test_multi_turn_messages_are_sent_whole(tmp_path):
    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    with StubServer() as server:
        rows = generate_responses([item("c", turns)], OpenAIChatBackend(server.url, "m", api_key_env=None),
                                  ResponseCache(tmp_path / "c.jsonl"))  # fmt: skip
    assert rows == [{"prompt": "c", "response": "echo: c"}] and server.calls == ["c"]


def test_ifbench_run_generates_and_evaluates_end_to_end(tmp_path, capsys):
    from genlab.cli import main

    rows = [
        {"key": 1, "prompt": "answer in lowercase", "instruction_id_list": ["change_case:english_lowercase"],
         "kwargs": [{}]},
        {"key": 2, "prompt": "ANSWER IN LOWERCASE", "instruction_id_list": ["change_case:english_lowercase"],
         "kwargs": [{}]},
        {"key": 3, "prompt": "say hi", "instruction_id_list": ["keywords:existence"],
         "kwargs": [{"keywords": ["echo"]}]},
    ]  # fmt: skip
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    with StubServer() as server:
        args = ["ifbench", "run", "--prompts", str(prompts), "--out", str(out), "--base-url", server.url,
                "--api-key-env", "", "--quiet"]  # fmt: skip
        with pytest.raises(SystemExit) as info:
            main(args)
            raise SystemExit(0)
        assert info.value.code in (0, None)
        assert len(server.calls) == 3
    strict = [json.loads(line) for line in (out / "eval_results_strict.jsonl").read_text().splitlines()]
    assert [r["follow_all_instructions"] for r in strict] == [True, False, True]
    assert [json.loads(line)["response"] for line in (out / "responses.jsonl").read_text().splitlines()] == [
        "echo: answer in lowercase", "echo: ANSWER IN LOWERCASE", "echo: say hi",
    ]  # fmt: skip
    assert (out / "report.html").exists() and "strict prompt-level  66.67" in capsys.readouterr().out
