"""IF-RLVR at laptop scale: does reinforcement learning with verifiable rewards teach a language model to follow
output constraints it was not trained on (Pyatkin et al., arXiv 2507.02833)?

A mechanism study. The paper fine-tunes 7B+ models with GRPO on prompts carrying IFEval ∪ IFTrain constraints and
scores IFBench's unseen constraints. Here a tiny transformer LM is pretrained on a synthetic "instruction world"
(a prompt is a list of constraint tokens; responses are random word strings, independent of the prompt, so the
base model follows instructions only by chance), then fine-tuned on training constraints either with GRPO
(group-normalised advantages, genlab's IFBench reward = the real checkers on the detokenised text) or with SFT on
constraint-satisfying demonstrations of the same prompts. Both are scored by genlab's IFBench evaluator (strict,
prompt level) on fresh in-domain prompts and on out-of-domain prompts whose (constraint, word) pairs never occur
in training: keyword inclusion, first word and last word train on one half of the vocabulary and are tested on
the other, and forbidden words the other way round.

With ``--set model_path=DIR`` (a local ``transformers`` model with a chat template) the same GRPO runs on that
model instead, in the paper's setting: make-train prompts, IFBench test constraints out of domain, and an SFT arm
of rejection-sampling fine-tuning (see :mod:`genlab.studies._rlvr_hf` and the study's docs page).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, by_seeds, register
from genlab.harness.torch_setup import module_device

WORDS = (
    "river",
    "cat",
    "tree",
    "moon",
    "bread",
    "stone",
    "lamp",
    "fox",
    "rain",
    "ship",
    "bell",
    "milk",
    "wolf",
    "sand",
    "leaf",
    "door",
    "fire",
    "hill",
    "coat",
    "fish",
    "king",
    "rope",
    "salt",
    "wing",
)  # fmt: skip  (no word is a substring of another: keywords:existence matches substrings)
KINDS = ("inc", "avoid", "first", "end", "nocomma", "short", "long")
WORD_KINDS = ("inc", "avoid", "first", "end")
SPECIALS = ("<pad>", "<bos>", "<sep>", "<eos>")
PAD, BOS, SEP, EOS = range(4)
KIND_TOKEN = {k: len(SPECIALS) + i for i, k in enumerate(KINDS)}
WORD0 = len(SPECIALS) + len(KINDS)
COMMA = WORD0 + len(WORDS)
VOCAB = COMMA + 1
SHORT_MAX, LONG_MIN = 6, 10  # "less than 6 words", "at least 10 words"


def to_constraint(kind: str, word: int | None) -> tuple[str, dict[str, Any]]:
    """The registry id and kwargs of one world constraint."""
    w = WORDS[word] if word is not None else None
    return {
        "inc": ("keywords:existence", {"keywords": [w]}),
        "avoid": ("keywords:forbidden_words", {"forbidden_words": [w]}),
        "first": ("first_word:first_word_answer", {"first_word": w}),
        "end": ("startend:end_checker", {"end_phrase": w}),
        "nocomma": ("punctuation:no_comma", {}),
        "short": ("length_constraints:number_words", {"num_words": SHORT_MAX, "relation": "less than"}),
        "long": ("length_constraints:number_words", {"num_words": LONG_MIN, "relation": "at least"}),
    }[kind]


def word_pool(kind: str, split: str) -> np.ndarray:
    """Words a word-constraint may use: training uses even words for inc/first/end and odd ones for avoid;
    the out-of-domain split swaps them, so every (constraint, word) pair there is unseen in training."""
    even = (kind == "avoid") == (split == "ood")
    return np.arange(0 if even else 1, len(WORDS), 2)


def sample_prompts(rng: np.random.Generator, n: int, split: str, max_constraints: int) -> list[list[tuple]]:
    """``n`` prompts of 1..max_constraints compatible constraints; OOD prompts hold at least one word constraint."""
    prompts = []
    while len(prompts) < n:
        k = int(rng.integers(1, max_constraints + 1))
        kinds = list(rng.choice(KINDS, size=k, replace=False))
        if {"short", "long"} <= set(kinds):
            continue
        if split == "ood" and not set(kinds) & set(WORD_KINDS):
            continue
        cons = []
        for kind in kinds:
            word = int(rng.choice(word_pool(kind, split))) if kind in WORD_KINDS else None
            cons.append((kind, word))
        used = {w for kind, w in cons if kind != "avoid"}
        if any(kind == "avoid" and w in used for kind, w in cons):
            continue
        prompts.append(cons)
    return prompts


def encode_prompt(cons: list[tuple], max_constraints: int) -> list[int]:
    toks = [BOS]
    for kind, word in cons:
        toks += [KIND_TOKEN[kind], WORD0 + word if word is not None else PAD]
    toks += [PAD, PAD] * (max_constraints - len(cons))
    return [*toks, SEP]


def detokenize(tokens: list[int]) -> str:
    words: list[str] = []
    for t in tokens:
        if t in (EOS, PAD):
            break
        if t == COMMA:
            if words:
                words[-1] += ","
        elif WORD0 <= t < COMMA:
            words.append(WORDS[t - WORD0])
    return " ".join(words)


def random_response(
    rng: np.random.Generator, max_new: int, cons: list[tuple] | None = None, copy_prob: float = 0.0
) -> list[int]:
    """The pretraining distribution: 3–14 uniform words, a comma after a word with probability 0.2. With
    ``copy_prob`` each word named in the prompt (whatever its constraint) is also placed at a random position,
    so the base model learns to copy from its context, as pretrained LMs do, but not when copying is wanted."""
    words = [int(w) for w in rng.integers(len(WORDS), size=int(rng.integers(3, 15)))]
    for _, w in cons or []:
        if w is not None and rng.random() < copy_prob:
            words[int(rng.integers(len(words)))] = w
    out: list[int] = []
    for w in words:
        out.append(WORD0 + w)
        if rng.random() < 0.2:
            out.append(COMMA)
    return [*out[: max_new - 1], EOS]


def demonstration(rng: np.random.Generator, cons: list[tuple], max_new: int) -> list[int]:
    """A response that satisfies every constraint (the SFT targets)."""
    kinds = {kind: w for kind, w in cons}
    lo, hi = (2, SHORT_MAX - 1) if "short" in kinds else (LONG_MIN, 14) if "long" in kinds else (3, 14)
    n = int(rng.integers(lo, hi + 1))
    allowed = np.array([w for w in range(len(WORDS)) if w != kinds.get("avoid")])
    words = list(rng.choice(allowed, size=n))
    slots = list(range(n))
    for kind, pos in (("first", 0), ("end", n - 1)):
        if kind in kinds:
            words[pos] = kinds[kind]
            slots.remove(pos)
    if "inc" in kinds and kinds["inc"] not in words:
        words[int(rng.choice(slots))] = kinds["inc"]
    out: list[int] = []
    commas_left = max_new - 1 - n  # never truncate: the last word must stay last
    for i, w in enumerate(words):
        out.append(WORD0 + int(w))
        # (the reference first-word checker splits on whitespace, so "rain," is not "rain")
        may_comma = "nocomma" not in kinds and i < n - 1 and not (i == 0 and "first" in kinds) and commas_left > 0
        if may_comma and rng.random() < 0.2:
            out.append(COMMA)
            commas_left -= 1
    return [*out, EOS]


def ground_truth(cons: list[tuple]) -> dict[str, list]:
    pairs = [to_constraint(kind, w) for kind, w in cons]
    return {"instruction_id": [p[0] for p in pairs], "kwargs": [p[1] for p in pairs]}


@register
class IFBenchRLVR(Study):
    name = "ifbench-rlvr"
    paper = Paper("Generalizing Verifiable Instruction Following", "arXiv:2507.02833", "Pyatkin et al.")
    summary = "GRPO with the IFBench reward vs SFT on a tiny LM: in-domain and unseen (constraint, argument) pairs."
    accelerated = True  # the tiny LM (or the model_path model) and its batches go to ctx.device

    @dataclass
    class Config:
        seeds: int = 3
        d_model: int = 64
        n_layers: int = 2
        max_constraints: int = 2
        max_new: int = 16
        pretrain_steps: int = 400
        pretrain_batch: int = 64
        copy_prob: float = 0.5
        finetune_steps: int = 150
        prompts_per_step: int = 16
        group: int = 8
        lr: float = 3e-3
        finetune_lr: float = 2e-3
        beta: float = 0.0
        eval_prompts: int = 200
        # The paper-scale route: a local transformers model directory (empty: the tiny synthetic world). Then
        # d_model, n_layers, pretrain_*, copy_prob, lr, finetune_lr and max_new are unused; the hf_* knobs apply.
        model_path: str = ""
        ood_prompts: str = ""  # with model_path: an IFBench-format prompt file for the out-of-domain split
        hf_max_new: int = 512
        hf_lr: float = 1e-6
        hf_micro_batch: int = 8  # sequences per forward pass / generate call (gradients are accumulated)
        hf_dtype: Literal["float32", "bfloat16"] = "float32"

        def validate(self) -> None:
            if self.group < 2:
                raise ValueError("group must be >= 2 (GRPO normalises within a group)")
            if self.model_path:
                self._validate_hf()
                return
            if self.ood_prompts:
                raise ValueError("ood_prompts applies only with model_path (the tiny world has its own OOD split)")
            if self.max_new < 16:
                raise ValueError("max_new must be >= 16 (responses have up to 14 words, commas and an end token)")
            if not 1 <= self.max_constraints <= 3:
                raise ValueError("max_constraints must be in 1..3")

        def _validate_hf(self) -> None:
            from genlab.nn.hf_policy import check_model_dir

            check_model_dir(self.model_path)
            if self.ood_prompts and not Path(self.ood_prompts).is_file():
                raise ValueError(f"ood_prompts {self.ood_prompts!r} is not a file")
            if not 1 <= self.max_constraints <= 5:
                raise ValueError("max_constraints must be in 1..5")
            if min(self.hf_max_new, self.prompts_per_step, self.eval_prompts, self.seeds) < 1 or self.hf_lr <= 0:
                raise ValueError("hf_max_new, prompts_per_step, eval_prompts, seeds and hf_lr must be positive")
            if self.hf_micro_batch < 0:
                raise ValueError("hf_micro_batch must be >= 0 (0: the whole batch at once)")

    presets = {
        "smoke": {"seeds": 1, "pretrain_steps": 30, "finetune_steps": 4, "prompts_per_step": 4, "group": 4,
                  "eval_prompts": 20, "d_model": 32, "n_layers": 1},
        "quick": {},
        "full": {"seeds": 5, "d_model": 128, "n_layers": 4, "max_constraints": 3, "pretrain_steps": 4000,
                 "finetune_steps": 1500, "prompts_per_step": 32, "group": 16, "eval_prompts": 1000},
    }  # fmt: skip

    claims = [
        Claim(
            "grpo-raises-in-domain",
            "GRPO with the verifiable reward raises in-domain prompt-level accuracy over the base model (by >= 0.10)",
            lambda m, cfg: by_seeds(
                [g - b >= 0.10 for g, b in zip(m["acc"]["grpo"]["id"], m["acc"]["base"]["id"])],
                base=np.mean(m["acc"]["base"]["id"]),
                grpo=np.mean(m["acc"]["grpo"]["id"]),
            ),
        ),
        Claim(
            "grpo-raises-unseen",
            "GRPO raises accuracy on unseen (constraint, word) pairs over the base model (by >= 0.05)",
            lambda m, cfg: by_seeds(
                [g - b >= 0.05 for g, b in zip(m["acc"]["grpo"]["ood"], m["acc"]["base"]["ood"])],
                base=np.mean(m["acc"]["base"]["ood"]),
                grpo=np.mean(m["acc"]["grpo"]["ood"]),
            ),
        ),
        Claim(
            "grpo-vs-sft-unseen",
            "on unseen pairs GRPO does at least as well as SFT on the same prompts",
            lambda m, cfg: by_seeds(
                [g >= s for g, s in zip(m["acc"]["grpo"]["ood"], m["acc"]["sft"]["ood"])],
                sft=np.mean(m["acc"]["sft"]["ood"]),
                grpo=np.mean(m["acc"]["grpo"]["ood"]),
            ),
        ),
    ]

    def run(self, cfg: Config, ctx: RunContext) -> dict[str, Any]:
        from genlab.harness.torch_setup import setup_torch

        setup_torch(1)
        if cfg.model_path:
            from genlab.studies._rlvr_hf import run_hf

            return run_hf(cfg, ctx)
        acc: dict[str, dict[str, list[float]]] = {a: {"id": [], "ood": []} for a in ("base", "sft", "grpo")}
        curves = []
        for seed in ctx.progress(range(cfg.seeds), desc="seeds"):
            result = self._one_seed(cfg, ctx, seed)
            for arm, splits in result["acc"].items():
                for split, value in splits.items():
                    acc[arm][split].append(value)
            curves.append(result["reward_curve"])
            ctx.log(
                f"seed {seed}: "
                + ", ".join(f"{a} id {v['id']:.2f} ood {v['ood']:.2f}" for a, v in result["acc"].items())
            )
        return {"acc": acc, "reward_curve": curves, "vocab": VOCAB}

    def _one_seed(self, cfg: Config, ctx: RunContext, seed: int) -> dict[str, Any]:
        import copy

        import torch

        from genlab.nn.causal_lm import TinyLM

        rng = ctx.rng("data", seed)
        torch.manual_seed(ctx.seed_for("model", seed))
        gen = ctx.torch_generator("sample", seed)
        plen = 2 + 2 * cfg.max_constraints
        model = TinyLM(VOCAB, cfg.d_model, 4, cfg.n_layers, max_len=plen + cfg.max_new).to(ctx.device)
        corpus = lambda c: random_response(rng, cfg.max_new, c, cfg.copy_prob)  # noqa: E731
        self._train_ce(model, cfg, rng, cfg.pretrain_steps, cfg.lr, corpus, "any")
        base = copy.deepcopy(model)
        sft = copy.deepcopy(model)
        demos = lambda c: demonstration(rng, c, cfg.max_new)  # noqa: E731
        self._train_ce(
            sft, cfg, rng, cfg.finetune_steps, cfg.finetune_lr, demos, "train", cfg.prompts_per_step * cfg.group
        )
        grpo = copy.deepcopy(model)
        curve = self._train_grpo(grpo, base, cfg, rng, gen, ctx, seed)
        tests = {split: sample_prompts(ctx.rng("eval", split, seed), cfg.eval_prompts, split, cfg.max_constraints)
                 for split in ("id", "ood")}  # fmt: skip
        acc = {arm: {split: evaluate_model(m, tests[split], cfg) for split in tests}
               for arm, m in (("base", base), ("sft", sft), ("grpo", grpo))}  # fmt: skip
        return {"acc": acc, "reward_curve": curve}

    @staticmethod
    def _train_ce(model, cfg, rng, steps, lr, response_fn, split, batch=None) -> None:
        import torch
        import torch.nn.functional as F

        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        batch = batch or cfg.pretrain_batch
        total = 2 + 2 * cfg.max_constraints + cfg.max_new
        for _ in range(steps):
            if split == "any":  # pretraining sees every constraint token and word in every role
                half = batch // 2
                prompts = sample_prompts(rng, half, "id", cfg.max_constraints)
                prompts += sample_prompts(rng, batch - half, "ood", cfg.max_constraints)
            else:
                prompts = sample_prompts(rng, batch, "id", cfg.max_constraints)
            seqs = np.full((batch, total), PAD, dtype=np.int64)
            for i, cons in enumerate(prompts):
                toks = encode_prompt(cons, cfg.max_constraints) + response_fn(cons)
                seqs[i, : len(toks)] = toks
            x = torch.as_tensor(seqs, device=module_device(model))
            logits = model(x[:, :-1])
            target = x[:, 1:].clone()
            plen = 2 + 2 * cfg.max_constraints
            target[:, : plen - 1] = -100  # learn the response only
            target[target == PAD] = -100
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()

    @staticmethod
    def _train_grpo(model, ref, cfg, rng, gen, ctx, seed) -> list[float]:
        import torch

        from genlab.ifbench.reward import score_batch
        from genlab.rl import group_advantages, policy_gradient_step

        opt = torch.optim.AdamW(model.parameters(), lr=cfg.finetune_lr, weight_decay=0.0)
        curve = []
        for step in range(cfg.finetune_steps):
            prompts = sample_prompts(rng, cfg.prompts_per_step, "id", cfg.max_constraints)
            x = torch.as_tensor([encode_prompt(c, cfg.max_constraints) for c in prompts],
                                device=module_device(model)).repeat_interleave(cfg.group, 0)
            comp = model.sample(x, cfg.max_new, EOS, PAD, temperature=1.0, generator=gen)
            texts = [detokenize(row) for row in comp.tolist()]
            truths = [ground_truth(c) for c in prompts for _ in range(cfg.group)]
            rewards = torch.tensor(score_batch(texts, truths, workers=1, scale=1.0), dtype=torch.float32)
            advantages = group_advantages(rewards, cfg.group)
            policy_gradient_step(model, opt, x, comp, advantages, eos=EOS, ref=ref, beta=cfg.beta)
            curve.append(float(rewards.mean()))
            ctx.record(seed=seed, step=step, reward=curve[-1])
        return curve

    def figures(self, metrics: dict[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
        arms, splits = ("base", "sft", "grpo"), ("id", "ood")
        for j, split in enumerate(splits):
            means = [np.mean(metrics["acc"][a][split]) for a in arms]
            xs = np.arange(len(arms)) + (j - 0.5) * 0.38
            ood = "unseen pairs" if "model" not in metrics else "IFBench constraints"
            ax1.bar(xs, means, width=0.36, label={"id": "in-domain", "ood": ood}[split])
            for x, a in zip(xs, arms):
                vals = metrics["acc"][a][split]
                ax1.scatter([x] * len(vals), vals, color="k", s=10, zorder=3)
        ax1.set_xticks(range(len(arms)), ["base", "SFT", "GRPO"])
        ax1.set_ylabel("prompt-level strict accuracy")
        ax1.set_title(f"genlab IFBench evaluator on {metrics.get('model', 'the tiny LM')}")
        ax1.legend()
        for curve in metrics["reward_curve"]:
            ax2.plot(curve, alpha=0.7)
        ax2.set_xlabel("GRPO step")
        ax2.set_ylabel("mean reward (fraction of constraints followed)")
        ax2.set_title("training reward (one line per seed)")
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "ifbench-rlvr", dpi=100,
            caption=(
                "Prompt-level accuracy (genlab's IFBench evaluator) of the base, SFT and GRPO "
                "policies in domain and on unseen constraints, and the GRPO training reward per seed"
            ),
        )
        return [path]


def evaluate_model(model, prompts: list[list[tuple]], cfg) -> float:
    """Greedy responses scored by genlab's IFBench evaluator (strict, prompt level)."""
    import torch

    from genlab.ifbench.data import PromptItem
    from genlab.ifbench.evaluator import evaluate
    from genlab.ifbench.registry import get

    dev = module_device(model)
    x = torch.as_tensor([encode_prompt(c, cfg.max_constraints) for c in prompts], device=dev)
    comp = model.sample(x, cfg.max_new, EOS, PAD, temperature=0)
    items, responses = [], {}
    for i, (cons, row) in enumerate(zip(prompts, comp.tolist())):
        gt = ground_truth(cons)
        text = " ".join(get(c).describe(kw) for c, kw in zip(gt["instruction_id"], gt["kwargs"]))
        key = f"[{i}] Write a few words. {text}"
        items.append(PromptItem(i, key, gt["instruction_id"], [get(c).normalize(kw) for c, kw in zip(*gt.values())]))
        responses[key] = detokenize(row)
    result = evaluate(items, responses)
    return float(result.summary(bootstrap=0)["strict"]["prompt_level"])
