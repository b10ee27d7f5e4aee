"""The transformers backend on a tiny randomly initialised model built here (no hub access)."""

import pytest

transformers = pytest.importorskip("transformers")

from genlab.ifbench.data import PromptItem  # noqa: E402
from genlab.ifbench.generate import (  # noqa: E402
    GenerationError,
    ResponseCache,
    TransformersBackend,
    generate_responses,
)

WORDS = "write a poem about the sea in lowercase letters only please short long story cat dog".split()


@pytest.fixture(scope="module")
def tiny_model(build_tiny_chat_lm):
    return build_tiny_chat_lm(WORDS)


def test_batched_greedy_generation_is_deterministic_and_resumable(tiny_model, tmp_path):
    prompts = ["write a poem", "a short story about the cat", "please", "dog"]
    items = [PromptItem(p, p, [], []) for p in prompts]
    backend = TransformersBackend(str(tiny_model), batch_size=3, max_new_tokens=5)
    rows = generate_responses(items, backend, ResponseCache(tmp_path / "c.jsonl"))
    assert [r["prompt"] for r in rows] == prompts
    assert all(len(r["response"].split()) <= 5 for r in rows)  # at most max_new_tokens words
    assert any(r["response"] for r in rows)
    single = TransformersBackend(str(tiny_model), batch_size=1, max_new_tokens=5)
    again = generate_responses(items, single, ResponseCache(tmp_path / "c2.jsonl"))
    assert [r["response"] for r in again] == [r["response"] for r in rows]  # left padding changes nothing


def test_missing_model_directory_is_a_clear_error(tmp_path):
    backend = TransformersBackend(str(tmp_path / "nope"))
    with pytest.raises(GenerationError, match="no model directory"):
        backend.generate_many([[{"role": "user", "content": "x"}]], lambda i, t: None)
