"""Fixtures shared across test folders."""

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def build_tiny_chat_lm(tmp_path_factory) -> Callable[..., Path]:
    """A builder of tiny randomly initialised GPT-2 models with a word-level tokenizer and a chat template, saved
    to a temporary folder (no hub access): ``build(words, n_positions=64) -> path``."""

    def build(words: list[str], n_positions: int = 64) -> Path:
        transformers = pytest.importorskip("transformers")
        import torch
        from tokenizers import Tokenizer, models, pre_tokenizers

        path = tmp_path_factory.mktemp("tiny-chat-lm")
        vocab = {tok: i for i, tok in enumerate(["[PAD]", "[UNK]", "[EOS]", "user", "assistant", ":", *words])}
        core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
        core.pre_tokenizer = pre_tokenizers.Whitespace()
        tok = transformers.PreTrainedTokenizerFast(
            tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
        )
        tok.chat_template = (
            "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
            "{% if add_generation_prompt %}assistant :{% endif %}"
        )
        torch.manual_seed(0)
        config = transformers.GPT2Config(
            vocab_size=len(vocab), n_positions=n_positions, n_embd=16, n_layer=1, n_head=2,
            pad_token_id=0, eos_token_id=2, bos_token_id=2,
        )  # fmt: skip
        transformers.GPT2LMHeadModel(config).save_pretrained(path)
        tok.save_pretrained(path)
        return path

    return build


@pytest.fixture
def cli(capsys) -> Callable[..., tuple[int, str, str]]:
    """Run one ``genlab`` command in process: ``cli("run", "toy-mean", ...) -> (exit code, stdout, stderr)``."""
    from genlab.cli import main

    def run(*args: object) -> tuple[int, str, str]:
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
