"""A local Hugging Face ``transformers`` causal LM as an RL policy: chat-template prompts, sampling at a given
temperature, per-token log-probabilities of completions, decoding.

It has the interface of :class:`genlab.nn.causal_lm.TinyLM` that the GRPO pieces use (``token_logprobs(prompts,
completions)``), so :func:`genlab.rl.policy_gradient_step` trains either. Models load from a local
directory only (``local_files_only``: nothing is downloaded). ``torch`` and ``transformers`` are imported when a
policy is loaded, not when this module is imported, so :func:`check_model_dir` stays cheap.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["ChatBatch", "HFPolicy", "check_model_dir", "encode_chats", "load_chat_model"]

Messages = list[dict[str, str]]
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


def check_model_dir(path: str) -> None:
    """Raise a one-sentence ValueError unless ``path`` is a directory with a model config, a tokenizer and a chat
    template (checked on the files, without loading anything)."""
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"model_path {path!r} is not a directory")
    if not (root / "config.json").is_file():
        raise ValueError(f"model_path {path!r} has no config.json (not a transformers model directory)")
    if not any((root / name).is_file() for name in _TOKENIZER_FILES):
        raise ValueError(f"model_path {path!r} has no tokenizer files ({', '.join(_TOKENIZER_FILES)})")
    if not _has_chat_template(root):
        raise ValueError(f"the tokenizer in model_path {path!r} has no chat template")


def _has_chat_template(root: Path) -> bool:
    if (root / "chat_template.jinja").is_file() or (root / "chat_template.json").is_file():
        return True
    if (root / "additional_chat_templates").is_dir():
        return True
    config = root / "tokenizer_config.json"
    if not config.is_file():
        return False
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


def load_chat_model(path: str, device: str = "cpu", dtype: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) from the local directory ``path`` (never the hub), the tokenizer padding on the left
    (with its end token as padding when it has no pad token), the model in eval mode on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    model.to(device=device, dtype=getattr(torch, dtype) if dtype else None)
    model.eval()
    return model, tokenizer


def encode_chats(tokenizer: Any, conversations: Sequence[Messages], device: Any) -> tuple[Any, Any]:
    """Token ids and attention mask of the conversations, chat-templated (ending with the assistant's turn to come)
    and left-padded, on ``device``."""
    template = tokenizer.apply_chat_template
    texts = [template(m, tokenize=False, add_generation_prompt=True) for m in conversations]
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


@dataclass
class ChatBatch:
    """Left-padded prompt token ids (n, t) and their attention mask; ``batch[a:b]`` slices rows."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, rows: Any) -> ChatBatch:
        return ChatBatch(self.input_ids[rows], self.attention_mask[rows])


class HFPolicy:
    """A causal LM and its tokenizer on one device, in eval mode throughout (no dropout: the samples and the
    training loss see the same distribution; gradients flow all the same)."""

    def __init__(self, model: Any, tokenizer: Any, eos_ids: list[int], name: str = "") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids
        self.name = name

    @classmethod
    def load(cls, path: str, device: str = "cpu", dtype: str = "float32") -> HFPolicy:
        """Load model and tokenizer from the local directory ``path`` (see :func:`check_model_dir`)."""
        check_model_dir(path)
        from transformers import GenerationConfig

        model, tokenizer = load_chat_model(path, device, dtype)
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError(f"the tokenizer in model_path {path!r} has no chat template")
        eos = {tokenizer.eos_token_id, *_as_list(model.generation_config.eos_token_id)} - {None}
        if not eos:
            raise ValueError(f"the model in model_path {path!r} defines no end-of-sequence token")
        # A clean generation config: the checkpoint's own sampling defaults (top-k, top-p, repetition penalty...)
        # would make the samples come from another distribution than the policy's softmax.
        model.generation_config = GenerationConfig(
            eos_token_id=sorted(eos), pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id
        )
        return cls(model, tokenizer, sorted(eos), Path(path).name)

    def clone(self) -> HFPolicy:
        """An independent copy of the model (same tokenizer), e.g. to fine-tune while keeping the base."""
        return HFPolicy(copy.deepcopy(self.model), self.tokenizer, list(self.eos_ids), self.name)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        return self.model.parameters()

    def encode(self, conversations: Sequence[Messages]) -> ChatBatch:
        """Chat-template each conversation (ending with the assistant's turn to come) and left-pad them."""
        return ChatBatch(*encode_chats(self.tokenizer, conversations, self.device))

    def sample(
        self,
        prompts: ChatBatch,
        max_new: int,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
        batch_size: int = 0,
    ) -> torch.Tensor:
        """Up to ``max_new`` new tokens per prompt, (n, max_new), padded after the end token. ``temperature=0`` is
        greedy; otherwise plain sampling from softmax(logits / temperature), no top-k or top-p. Each slice of
        ``batch_size`` rows (0: all) is seeded from ``generator``, so equal generators give equal samples."""
        import torch

        n = len(prompts)
        size = batch_size if 0 < batch_size < n else n
        pad = self.tokenizer.pad_token_id
        out = []
        for start in range(0, n, size):
            part = prompts[start : start + size]
            seed = int(torch.randint(2**62, (1,), generator=generator)) if temperature > 0 else 0
            devices = [self.device] if self.device.type == "cuda" else []
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                torch.manual_seed(seed)
                options = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
                seq = self.model.generate(
                    input_ids=part.input_ids,
                    attention_mask=part.attention_mask,
                    max_new_tokens=max_new,
                    **(options if temperature > 0 else {"do_sample": False}),
                )
            new = seq[:, part.input_ids.shape[1] :]
            if new.shape[1] < max_new:
                new = torch.cat([new, new.new_full((len(new), max_new - new.shape[1]), pad)], 1)
            out.append(new)
        return torch.cat(out)

    def token_logprobs(self, prompts: ChatBatch, completions: torch.Tensor) -> torch.Tensor:
        """log p(completion token | prompt and earlier completion tokens), shape (n, m), differentiable. Positions
        count from each prompt's first real token, as in generation with left padding."""
        import torch
        import torch.nn.functional as F

        seq = torch.cat([prompts.input_ids, completions], 1)
        mask = torch.cat([prompts.attention_mask, torch.ones_like(completions)], 1)
        positions = (mask.cumsum(1) - 1).clamp(min=0)
        logits = self.model(input_ids=seq, attention_mask=mask, position_ids=positions).logits
        logits = logits[:, prompts.input_ids.shape[1] - 1 : -1].float()
        return torch.gather(F.log_softmax(logits, -1), 2, completions[:, :, None]).squeeze(2)

    def decode(self, completions: torch.Tensor) -> list[str]:
        """The completions' text up to the first end token, special tokens removed."""
        rows = []
        for row in completions.tolist():
            ends = [i for i, t in enumerate(row) if t in self.eos_ids]
            rows.append(row[: ends[0]] if ends else row)
        return self.tokenizer.batch_decode(rows, skip_special_tokens=True)


def _as_list(value: int | list[int] | None) -> list[int]:
    if value is None:
        return []
    return [value] if isinstance(value, int) else list(value)
