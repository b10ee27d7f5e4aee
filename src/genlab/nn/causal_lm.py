"""A tiny decoder-only language model (the pre-LN blocks of :mod:`genlab.nn.transformer`) with sampling,
sequence log-probabilities and the GRPO policy-gradient loss, for mechanism studies on CPU. The GRPO pieces
(:func:`completion_mask`, :func:`grpo_loss`, :func:`policy_gradient_step`; the group advantages are
:func:`genlab.rl.group_advantages`) work with any
policy that has ``token_logprobs(prompts, completions)``, e.g. :class:`genlab.nn.hf_policy.HFPolicy`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from genlab.nn.transformer import Block


class TinyLM(nn.Module):
    """Next-token model over ``vocab_size`` tokens and contexts of at most ``max_len`` tokens."""

    def __init__(self, vocab_size: int, d_model: int = 64, n_heads: int = 4, n_layers: int = 2, max_len: int = 32):
        super().__init__()
        if min(vocab_size, d_model, n_heads, n_layers, max_len) < 1:
            raise ValueError("vocab_size, d_model, n_heads, n_layers and max_len must be >= 1")
        self.max_len = max_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, 4 * d_model) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (n, t, vocab) for every position of ``tokens`` (n, t)."""
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"sequence of {tokens.shape[1]} tokens exceeds max_len={self.max_len}")
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    @torch.no_grad()
    def sample(
        self,
        prompts: torch.Tensor,
        max_new: int,
        eos: int,
        pad: int,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Continue each prompt (n, t0, all the same length) by up to ``max_new`` tokens; after ``eos`` a row is
        padded with ``pad``. ``temperature=0`` is greedy. Returns the new tokens (n, max_new)."""
        seq = prompts
        done = torch.zeros(len(prompts), dtype=torch.bool, device=prompts.device)
        out = []
        for _ in range(max_new):
            logits = self(seq[:, -self.max_len :])[:, -1]
            if temperature == 0:
                nxt = logits.argmax(-1)
            else:
                # drawn on the generator's (CPU) device: a seed gives the same samples with the model anywhere
                probs = F.softmax(logits / temperature, -1)
                gen_dev = generator.device if generator is not None else probs.device
                nxt = torch.multinomial(probs.to(gen_dev), 1, generator=generator).squeeze(1).to(probs.device)
            nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
            out.append(nxt)
            done |= nxt == eos
            seq = torch.cat([seq, nxt[:, None]], 1)
            if done.all():
                break
        new = torch.stack(out, 1)
        if new.shape[1] < max_new:
            fill = torch.full((len(new), max_new - new.shape[1]), pad, dtype=new.dtype, device=new.device)
            new = torch.cat([new, fill], 1)
        return new

    def token_logprobs(self, prompts: torch.Tensor, completions: torch.Tensor) -> torch.Tensor:
        """log p(completion token | prefix) for each completion position, shape (n, m)."""
        seq = torch.cat([prompts, completions], 1)
        logits = self(seq[:, :-1])[:, prompts.shape[1] - 1 :]
        return torch.gather(F.log_softmax(logits, -1), 2, completions[:, :, None]).squeeze(2)


def completion_mask(completions: torch.Tensor, eos: int | Sequence[int]) -> torch.Tensor:
    """1 for completion tokens up to and including the first end token, 0 after it. ``eos`` is one token id or
    several (a chat model may end a turn with an end-of-turn or an end-of-text token)."""
    if isinstance(eos, int):
        is_eos = (completions == eos).int()
    else:
        is_eos = torch.isin(completions, torch.as_tensor(list(eos), device=completions.device)).int()
    after = (is_eos.cumsum(1) - is_eos) > 0
    return (~after).float()


def grpo_loss(
    logprobs: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
    ref_logprobs: torch.Tensor | None = None,
    beta: float = 0.0,
) -> torch.Tensor:
    """On-policy GRPO objective (one update per batch, so the PPO ratio is 1): minus the advantage-weighted
    mean token log-probability, plus ``beta`` times the k3 estimate of KL(policy || reference)."""
    per_token = -advantages[:, None] * logprobs
    if ref_logprobs is not None and beta > 0:
        diff = ref_logprobs - logprobs
        per_token = per_token + beta * (torch.exp(diff) - diff - 1)
    return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()


def policy_gradient_step(
    policy: Any,
    optimizer: torch.optim.Optimizer,
    prompts: Any,
    completions: torch.Tensor,
    weights: torch.Tensor,
    *,
    eos: int | Sequence[int],
    ref: Any = None,
    beta: float = 0.0,
    micro_batch: int = 0,
) -> None:
    """One optimiser step on :func:`grpo_loss` for sampled ``completions`` of ``prompts`` with per-completion
    ``weights``: GRPO's group advantages, or ones for supervised fine-tuning on the completions (the mean token
    log-likelihood of each completion, averaged over completions).

    ``policy`` and ``ref`` are any models with ``token_logprobs(prompts, completions)``; ``prompts`` is whatever
    they take (a token tensor, an :class:`~genlab.nn.hf_policy.ChatBatch`) and must support ``prompts[a:b]``.
    ``ref`` is used only when ``beta > 0``. With ``micro_batch > 0`` the batch goes through the model in slices
    of that many rows and the gradients are accumulated: the update is the same, the memory smaller."""
    n = len(completions)
    size = micro_batch if 0 < micro_batch < n else n
    mask = completion_mask(completions, eos)
    weights = weights.to(completions.device)
    optimizer.zero_grad()
    for start in range(0, n, size):
        rows = slice(start, start + size)
        logp = policy.token_logprobs(prompts[rows], completions[rows])
        ref_logp = None
        if ref is not None and beta > 0:
            with torch.no_grad():
                ref_logp = ref.token_logprobs(prompts[rows], completions[rows])
        loss = grpo_loss(logp, mask[rows], weights[rows], ref_logp, beta)
        (loss if size == n else loss * (len(logp) / n)).backward()
    optimizer.step()
