"""Prompt learning on a frozen CLIP for the lepa-prompt-learning study: backends, the mini-CLIP pre-training,
the arms (CE only, fixed PromptSRC-style weights, levelling rules, PCGrad) and the base/novel/style evaluation.

A *backend* is a frozen CLIP seen through five operations (the same for the mini-CLIP and a real CLIP):
``ctx_init`` (CoOp's context initialisation), ``prompted_text`` (class features with learned context vectors),
``template_text`` (frozen features of hand-crafted prompts, averaged over templates), ``image_features`` (with an
optional additive pixel prompt) and ``inputs`` (raw [0, 1] images to model inputs).

Prompt learning only ever sees base-class images and base-class names: ``learn_prompt`` takes the base classes
explicitly and nothing else about the label space (tested by perturbing every novel-class input).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch.nn import functional as F

from genlab.data.styled_digits import CLASS_NAMES, ZERO_SHOT_TEMPLATES, Vocab
from genlab.nn.mini_clip import MiniCLIP, clip_loss
from genlab.training.levelling import Leveller, pcgrad

OBJECTIVES = ("ce", "text_l1", "image_l1", "kl")
CTX_INIT = "a photo of a"


class Backend(Protocol):
    logit_scale: float
    prompt_shape: tuple[int, ...]

    def ctx_init(self, n_ctx: int, generator: torch.Generator) -> torch.Tensor: ...
    def prompted_text(self, ctx: torch.Tensor, classes: Sequence[int]) -> torch.Tensor: ...
    def template_text(self, classes: Sequence[int]) -> torch.Tensor: ...
    def image_features(self, x: torch.Tensor, prompt: torch.Tensor | None = None) -> torch.Tensor: ...
    def inputs(self, images: np.ndarray) -> torch.Tensor: ...


# -- the mini-CLIP ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClipSpec:
    image_size: int
    dim: int
    width: int
    cnn_width: int
    steps: int
    batch: int
    lr: float


def pretrain_mini_clip(
    images: np.ndarray, texts: list[str], vocab: Vocab, spec: ClipSpec, seed: int, device: str = "cpu"
) -> MiniCLIP:
    """Contrastive pre-training on (image, caption) pairs; returns the model frozen (eval, no gradients)."""
    torch.manual_seed(seed)
    model = MiniCLIP(vocab.size, vocab.max_len, spec.image_size, spec.dim, spec.width, spec.cnn_width).to(device)
    ids_np, eos_np = vocab.encode(texts)
    x = torch.from_numpy(2.0 * images[:, None] - 1.0).to(device)
    ids, eos = torch.from_numpy(ids_np).to(device), torch.from_numpy(eos_np).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(spec.steps):
        b = torch.randint(0, len(x), (spec.batch,), generator=gen).to(device)
        same = (ids[b][:, None, :] == ids[b][None, :, :]).all(-1)
        loss = clip_loss(model.encode_image(x[b]), model.encode_text(ids[b], eos[b]), model.logit_scale, same)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval().requires_grad_(False)
    return model


class MiniBackend:
    """The frozen mini-CLIP. Class prompts are ``<sos> [V]_1..[V]_M <class name> <eos>``."""

    def __init__(self, model: MiniCLIP, vocab: Vocab, device: str = "cpu") -> None:
        self.model, self.vocab, self.device = model, vocab, device
        self.logit_scale = float(model.logit_scale)
        self.prompt_shape = (1, model.image_size, model.image_size)
        self._template_cache: dict[tuple[int, ...], torch.Tensor] = {}

    def ctx_init(self, n_ctx: int, generator: torch.Generator) -> torch.Tensor:
        words = CTX_INIT.split()
        if n_ctx == len(words):
            ids = torch.tensor([self.vocab.index(w) for w in words], device=self.device)
            return self.model.embed_tokens(ids).detach().clone()
        width = self.model.text.token.embedding_dim
        return (0.02 * torch.randn(n_ctx, width, generator=generator)).to(self.device)

    def prompted_text(self, ctx: torch.Tensor, classes: Sequence[int]) -> torch.Tensor:
        """``ctx`` (M, d) -> (C, D); a stack of contexts (A, M, d) -> (A, C, D)."""
        single = ctx.ndim == 2
        ctx = ctx[None] if single else ctx
        a, m, n = ctx.shape[0], ctx.shape[1], len(classes)
        emb = self.model.embed_tokens
        sos = emb(torch.full((1, n, 1), self.vocab.index("<sos>"), device=self.device)).expand(a, -1, -1, -1)
        ids = torch.tensor([[self.vocab.index(CLASS_NAMES[c])] for c in classes], device=self.device)
        names = emb(ids)[None].expand(a, -1, -1, -1)
        eos = emb(torch.full((1, n, 1), self.vocab.index("<eos>"), device=self.device)).expand(a, -1, -1, -1)
        seq = torch.cat([sos, ctx[:, None].expand(a, n, m, -1), names, eos], 2).flatten(0, 1)
        feats = self.model.encode_embeddings(seq, torch.full((a * n,), m + 2, device=self.device)).reshape(a, n, -1)
        return feats[0] if single else feats

    def template_text(self, classes: Sequence[int]) -> torch.Tensor:
        key = tuple(int(c) for c in classes)
        if key not in self._template_cache:
            with torch.no_grad():
                texts = [t.format(c=CLASS_NAMES[c]) for c in key for t in ZERO_SHOT_TEMPLATES]
                ids, eos = (torch.from_numpy(a).to(self.device) for a in self.vocab.encode(texts))
                feats = self.model.encode_text(ids, eos).reshape(len(key), len(ZERO_SHOT_TEMPLATES), -1)
                self._template_cache[key] = F.normalize(feats.mean(1), dim=-1)
        return self._template_cache[key]

    def image_features(self, x: torch.Tensor, prompt: torch.Tensor | None = None) -> torch.Tensor:
        """(n, D) without a prompt or with one prompt (1, H, W); (A, n, D) for a stack of prompts (A, 1, H, W)."""
        if prompt is None or prompt.ndim == x.ndim - 1:
            return self.model.encode_image(x, prompt)
        a, n = prompt.shape[0], len(x)
        return self.model.encode_image((x[None] + prompt[:, None]).flatten(0, 1)).reshape(a, n, -1)

    def inputs(self, images: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(2.0 * images[:, None] - 1.0).float().to(self.device)


# -- arms -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    """``kind``: coop (CE only, text context only: the visual prompt stays at zero) | ce (CE only, both prompts) |
    sum (the naive sum: all four objectives with weight 1) | fixed | level | pcgrad; ``scale`` multiplies the
    consistency weights (the initial weights for levelling); ``rule`` names the levelling rule."""

    kind: str
    scale: float = 1.0
    rule: str = ""

    @property
    def name(self) -> str:
        if self.kind in ("coop", "ce", "sum"):
            return self.kind
        tag = self.rule if self.kind == "level" else self.kind
        return f"{tag}@{self.scale:g}"


@dataclass(frozen=True)
class TrainSpec:
    n_ctx: int
    steps: int
    lr: float
    weights: tuple[float, float, float]  # consistency weights (text L1, image L1, KL) at scale 1
    level_rate: float
    level_ema: float
    dwa_temperature: float
    trace_every: int


def objective_weights(spec: TrainSpec, scale: float) -> list[float]:
    return [1.0, *(scale * w for w in spec.weights)]


def arm_losses(
    backend: Backend,
    ctx: torch.Tensor,
    prompt: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    frozen: dict,
    unlabelled: torch.Tensor | None = None,
) -> torch.Tensor:
    """The four objectives of a PromptSRC-style learner for A arms at once, shape (A, 4): CE on base classes;
    L1 between prompted and frozen hand-crafted text features; L1 between prompted and frozen image features (on
    the ``unlabelled`` images when given — the visual loss for unlabelled data — else on the labelled shots);
    KL(zero-shot ‖ prompted) logits. ``ctx`` is (A, M, d), ``prompt`` (A, *image shape)."""
    a, n = ctx.shape[0], len(x)
    text = backend.prompted_text(ctx, frozen["classes"])  # (A, C, D)
    img = backend.image_features(x, prompt)  # (A, n, D)
    logits = backend.logit_scale * img @ text.transpose(1, 2)  # (A, n, C)
    logp = logits.log_softmax(-1)
    ce = F.nll_loss(logp.reshape(a * n, -1), y.repeat(a), reduction="none").reshape(a, n).mean(1)
    text_l1 = (text - frozen["text"]).abs().mean((1, 2))
    img_u = img if unlabelled is None else backend.image_features(unlabelled, prompt)
    image_l1 = (img_u - frozen["image"]).abs().mean((1, 2))
    q = frozen["logits"].log_softmax(-1)
    kl = (q.exp() * (q - logp)).sum(-1).mean(-1)
    return torch.stack([ce, text_l1, image_l1, kl], 1)


class _Weighter:
    """Per-arm objective weights (A, 4) for one step, and how to turn per-objective gradients into an update."""

    def __init__(self, arms: Sequence[Arm], spec: TrainSpec, generator: torch.Generator) -> None:
        self.arms, self.gen = list(arms), generator
        self.fixed = torch.tensor([objective_weights(spec, a.scale) for a in arms])
        self.fixed[[i for i, a in enumerate(arms) if a.kind in ("coop", "ce")], 1:] = 0.0
        self.fixed[[i for i, a in enumerate(arms) if a.kind == "sum"]] = 1.0
        self.text_only = torch.tensor([a.kind == "coop" for a in arms])
        self.levellers = {
            i: Leveller(a.rule, self.fixed[i].tolist(), spec.level_rate, spec.level_ema, spec.dwa_temperature)
            for i, a in enumerate(arms)
            if a.kind == "level"
        }
        self.needs_grads = any(a.kind == "pcgrad" or (a.kind == "level" and a.rule == "gradnorm") for a in arms)

    def weights(self, losses: torch.Tensor, grad_norms: torch.Tensor | None) -> torch.Tensor:
        w = self.fixed.clone()
        for i, lev in self.levellers.items():
            w[i] = lev.weights(losses[i], None if grad_norms is None else grad_norms[i])
        return w

    def combine(self, w: torch.Tensor, grads: torch.Tensor) -> torch.Tensor:
        """``grads`` (K, A, P): per-objective gradients of every arm's own parameters -> (A, P) updates."""
        out = torch.einsum("ak,kap->ap", w.to(grads), grads)
        for i, a in enumerate(self.arms):
            if a.kind == "pcgrad":
                out[i] = pcgrad(w[i, :, None].to(grads) * grads[:, i], self.gen)
        return out


def needs_objective_grads(arm: Arm) -> bool:
    """Arms whose update needs each objective's gradient separately (K backward passes instead of one)."""
    return arm.kind == "pcgrad" or (arm.kind == "level" and arm.rule == "gradnorm")


def learn_prompts(
    backend: Backend,
    x: torch.Tensor,
    y: torch.Tensor,
    base_classes: Sequence[int],
    arms: Sequence[Arm],
    spec: TrainSpec,
    seed: int,
    max_arms: int = 0,
    unlabelled: torch.Tensor | None = None,
) -> list[dict[str, Any]]:
    """Learn, for every arm, context vectors and a pixel prompt on base-class images ``x`` with labels ``y``
    (indices into ``base_classes``). Arms are trained together in groups (those needing per-objective gradients
    apart, at most ``max_arms`` per group when > 0): their parameters are separate slices and Adam is
    element-wise, so a group equals training its arms one by one. Returns per arm (in order) ``ctx``, ``prompt``,
    the objective-weight trace and the last losses. ``unlabelled`` images (no labels, any class) carry the image
    consistency loss when given."""
    order = sorted(range(len(arms)), key=lambda i: needs_objective_grads(arms[i]))
    groups: list[list[int]] = []
    for i in order:
        same = groups and needs_objective_grads(arms[groups[-1][0]]) == needs_objective_grads(arms[i])
        if same and (max_arms <= 0 or len(groups[-1]) < max_arms):
            groups[-1].append(i)
        else:
            groups.append([i])
    results: list[dict[str, Any]] = [{} for _ in arms]
    for group in groups:
        for i, res in zip(group, _learn_group(backend, x, y, base_classes, [arms[i] for i in group], spec, seed,
                                                  unlabelled)):
            results[i] = res
    return results


def _learn_group(
    backend: Backend,
    x: torch.Tensor,
    y: torch.Tensor,
    base_classes: Sequence[int],
    arms: Sequence[Arm],
    spec: TrainSpec,
    seed: int,
    unlabelled: torch.Tensor | None = None,
) -> list[dict[str, Any]]:
    gen = torch.Generator().manual_seed(seed)
    n_arms = len(arms)
    ctx0 = backend.ctx_init(spec.n_ctx, gen)
    ctx = torch.nn.Parameter(ctx0[None].repeat(n_arms, 1, 1))
    prompt = torch.nn.Parameter(torch.zeros((n_arms, *backend.prompt_shape), device=x.device))
    opt = torch.optim.Adam([ctx, prompt], lr=spec.lr)
    with torch.no_grad():
        text0, img0 = backend.template_text(base_classes), backend.image_features(x)
        frozen = {
            "classes": list(base_classes),
            "text": text0,
            "image": img0 if unlabelled is None else backend.image_features(unlabelled),
            "logits": backend.logit_scale * img0 @ text0.T,
        }
    weighter = _Weighter(arms, spec, gen)
    traces: list[list[list[float]]] = [[] for _ in arms]
    for step in range(spec.steps):
        losses = arm_losses(backend, ctx, prompt, x, y, frozen, unlabelled)
        opt.zero_grad(set_to_none=True)
        if weighter.needs_grads:
            grads = torch.stack([_per_arm_grads(losses[:, k].sum(), ctx, prompt) for k in range(losses.shape[1])])
            w = weighter.weights(losses.detach().cpu(), grads.norm(dim=-1).T.cpu())
            _set_grads(ctx, prompt, weighter.combine(w, grads))
        else:
            w = weighter.weights(losses.detach().cpu(), None)
            (w.to(losses) * losses).sum().backward()
        prompt.grad[weighter.text_only.to(prompt.device)] = 0.0  # CoOp learns no visual prompt
        opt.step()
        if spec.trace_every and step % spec.trace_every == 0:
            for i in range(n_arms):
                traces[i].append([round(float(v), 6) for v in w[i]])
    last = losses.detach().cpu()
    return [
        {"ctx": ctx[i].detach(), "prompt": prompt[i].detach(), "weights": traces[i], "losses": last[i].tolist()}
        for i in range(n_arms)
    ]


def _per_arm_grads(loss: torch.Tensor, ctx: torch.Tensor, prompt: torch.Tensor) -> torch.Tensor:
    """(A, P) gradients of a sum over arms of one objective; each arm's slice only depends on its own loss."""
    g_ctx, g_prompt = torch.autograd.grad(loss, [ctx, prompt], retain_graph=True, allow_unused=True)
    g_ctx = torch.zeros_like(ctx) if g_ctx is None else g_ctx
    g_prompt = torch.zeros_like(prompt) if g_prompt is None else g_prompt
    return torch.cat([g_ctx.flatten(1), g_prompt.flatten(1)], 1)


def _set_grads(ctx: torch.Tensor, prompt: torch.Tensor, flat: torch.Tensor) -> None:
    n = ctx[0].numel()
    ctx.grad = flat[:, :n].reshape(ctx.shape).clone()
    prompt.grad = flat[:, n:].reshape(prompt.shape).clone()


# -- evaluation -------------------------------------------------------------------------------------------------


def harmonic_mean(a: float, b: float) -> float:
    return 0.0 if a + b <= 0 else 2 * a * b / (a + b)


@torch.no_grad()
def accuracy(
    backend: Backend,
    text: torch.Tensor,
    x: torch.Tensor,
    y: np.ndarray,
    classes: Sequence[int],
    prompt: torch.Tensor | None,
    batch: int = 2048,
) -> float:
    """Accuracy of ``len(classes)``-way classification of images whose labels ``y`` lie in ``classes``;
    ``text`` holds the features of all ten classes."""
    sub = text[list(classes)]
    lookup = {c: i for i, c in enumerate(classes)}
    target = torch.tensor([lookup[int(c)] for c in y], device=x.device)
    pred = torch.cat(
        [(backend.image_features(x[i : i + batch], prompt) @ sub.T).argmax(1) for i in range(0, len(x), batch)]
    )
    return float((pred == target).float().mean())


def evaluate(
    backend: Backend,
    test: dict[str, tuple[torch.Tensor, np.ndarray]],
    base: Sequence[int],
    novel: Sequence[int],
    ctx: torch.Tensor | None,
    prompt: torch.Tensor | None,
) -> dict[str, Any]:
    """Base / novel accuracy and their harmonic mean in every style; ``ctx=None`` is zero-shot (templates)."""
    with torch.no_grad():
        all_classes = list(range(len(CLASS_NAMES)))
        text = backend.template_text(all_classes) if ctx is None else backend.prompted_text(ctx, all_classes)
    out: dict[str, Any] = {}
    for style, (x, y) in test.items():
        b_mask, n_mask = np.isin(y, base), np.isin(y, novel)
        acc_b = accuracy(backend, text, x[torch.from_numpy(b_mask)], y[b_mask], base, prompt)
        acc_n = accuracy(backend, text, x[torch.from_numpy(n_mask)], y[n_mask], novel, prompt)
        out[style] = {"base": acc_b, "novel": acc_n, "hm": harmonic_mean(acc_b, acc_n)}
    return out
