"""A tiny decoder-only language model (the pre-LN blocks of :mod:`genlab.nn.transformer`) with sampling and
sequence log-probabilities, for mechanism studies on CPU. Its GRPO training step lives with the other RL
objectives in :mod:`genlab.rl` (:func:`~genlab.rl.policy_gradient_step`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from genlab.nn.transformer import Block

KVCache = list[tuple[torch.Tensor, torch.Tensor]]  # per block: keys and values (n, heads, t, d_head)


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
    def decode(self, tokens: torch.Tensor, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        """Incremental decoding with a key/value cache (inference only): the logits (n, vocab) of the next token
        after ``tokens`` and the cache to pass with the next call. Without ``cache``, ``tokens`` (n, t) is a whole
        prefix; with it, ``tokens`` (n, 1) is the one position after the cached ones, so each new token costs one
        position instead of the prefix. The same numbers as ``self(prefix)[:, -1]`` up to float rounding."""
        start = 0 if cache is None else cache[0][0].shape[2]
        if start + tokens.shape[1] > self.max_len:
            raise ValueError(f"sequence of {start + tokens.shape[1]} tokens exceeds max_len={self.max_len}")
        x = self.tok(tokens) + self.pos(torch.arange(start, start + tokens.shape[1], device=tokens.device))
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block.forward_cached(x, None if cache is None else cache[i])
            new_cache.append(kv)
        return self.head(self.ln_f(x[:, -1])), new_cache

    @torch.no_grad()
    def sample(
        self,
        prompts: torch.Tensor,
        max_new: int,
        eos: int,
        pad: int,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Continue each prompt (n, t0, all the same length) by up to ``max_new`` tokens; after ``eos`` a row is
        padded with ``pad``. ``temperature=0`` is greedy. Returns the new tokens (n, max_new). With ``use_cache``
        (the default) the keys and values of past positions are kept (:meth:`decode`) while the sequence fits in
        ``max_len``; beyond it (and with ``use_cache=False``) every token recomputes the last ``max_len`` positions."""
        seq = prompts
        done = torch.zeros(len(prompts), dtype=torch.bool, device=prompts.device)
        out: list[torch.Tensor] = []
        cache = None
        for _ in range(max_new):
            if use_cache and seq.shape[1] <= self.max_len:
                logits, cache = self.decode(seq if cache is None else seq[:, -1:], cache)
            else:
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
