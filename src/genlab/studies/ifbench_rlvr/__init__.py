"""IF-RLVR at laptop scale: does reinforcement learning with verifiable rewards on some constraint *types* teach a
language model to follow constraint types it was never trained on (Pyatkin et al., arXiv 2507.02833)?

A mechanism study with the paper's protocol. The paper fine-tunes 7B+ models with GRPO on prompts carrying
IFEval ∪ IFTrain constraints and scores IFBench's unseen constraint types. Here a tiny transformer LM lives in a
synthetic "instruction world": a prompt is one argument word and 1-2 constraint-type tokens, a response is a
string of words. Eight constraint types with IFEval / IFTrain checkers are the *training* types; four types with
IFBench checkers are *held out*: no fine-tuning prompt carries them. Every verdict and reward comes from genlab's
IFBench checkers on the detokenised text.

1. **Instruction-reading prior.** The LM is first pre-trained (supervised, next-token) on instruction/response text
   generated offline over *all* twelve types: with probability ``comply_prob`` a response follows every
   constraint of its prompt, otherwise it ignores the prompt (random words). So the pre-trained policy can learn
   what a constraint token asks for, but follows it only part of the time — as a base LM does. (In the quick
   budget it learns the flag-like types, not to place the argument word: see the docs page.)
2. From that one checkpoint (shared by every seed), per seed: **GRPO** (group-normalised advantages, genlab's
   IFBench reward, k3 KL to the pre-trained policy with the paper's β = 0.01), online **DPO** (pairs of the
   policy's own samples ranked by the same reward) and **SFT** (constraint-satisfying demonstrations), all on
   training-type prompts only.
3. All four policies are scored by the real checkers (strict, prompt level) on fresh prompts of the training types
   and of the held-out types.

With ``--set model_path=DIR`` (a local ``transformers`` model with a chat template) the same GRPO and DPO run on
that model instead, in the paper's setting: make-train prompts, IFBench test constraints out of domain, and an SFT
arm of rejection-sampling fine-tuning (see :mod:`genlab.studies.ifbench_rlvr.hf` and the study's docs page).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
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
# Training types (IFEval ∪ IFTrain checkers) and held-out types (IFBench checkers).
TRAIN_TYPES = ("inc", "avoid", "first", "last", "nocomma", "short", "long", "unique")
HELDOUT_TYPES = ("mid", "range", "prime")
KINDS = TRAIN_TYPES + HELDOUT_TYPES
WORD_KINDS = ("inc", "avoid", "first", "last", "mid")
TYPES = {"train": TRAIN_TYPES, "heldout": HELDOUT_TYPES}
SPECIALS = ("<pad>", "<bos>", "<sep>", "<eos>")
PAD, BOS, SEP, EOS = range(4)
KIND_TOKEN = {k: len(SPECIALS) + i for i, k in enumerate(KINDS)}
WORD0 = len(SPECIALS) + len(KINDS)
COMMA = WORD0 + len(WORDS)
VOCAB = COMMA + 1
SHORT_MAX, LONG_MIN = 6, 10  # "less than 6 words", "at least 10 words"
RANGE = (6, 9)  # "between 6 and 9 words": neither "short" (< 6) nor "long" (>= 10) satisfies it
PRIME_WORDS = tuple(i for i, w in enumerate(WORDS) if len(w) in (2, 3, 5, 7, 11, 13))  # river, cat, bread, ...
_PRIME_ARRAY = np.array(PRIME_WORDS)
MAX_WORDS = 14
ARMS = ("base", "sft", "dpo", "grpo")
BLIND = "grpo-blind"  # the control: the GRPO policy shown its prompts with every instruction token deleted


def to_constraint(kind: str, word: int | None) -> tuple[str, dict[str, Any]]:
    """The registry id and kwargs of one world constraint."""
    w = WORDS[word] if word is not None else None
    return {
        "inc": ("keywords:existence", {"keywords": [w]}),
        "avoid": ("keywords:forbidden_words", {"forbidden_words": [w]}),
        "first": ("first_word:first_word_answer", {"first_word": w}),
        "last": ("last_word:last_word_answer", {"last_word": w}),
        "nocomma": ("punctuation:no_comma", {}),
        "short": ("length_constraints:number_words", {"num_words": SHORT_MAX, "relation": "less than"}),
        "long": ("length_constraints:number_words", {"num_words": LONG_MIN, "relation": "at least"}),
        "unique": ("count:count_unique", {}),
        "mid": ("words:words_position", {"keyword": w}),
        "range": ("count:word_count_range", {"min_words": RANGE[0], "max_words": RANGE[1]}),
        "prime": ("words:prime_lengths", {}),
    }[kind]


def sample_prompts(rng: np.random.Generator, n: int, split: str, max_constraints: int) -> list[list[tuple]]:
    """``n`` prompts of 1..max_constraints distinct constraint types, all from ``split``'s types ("train" or
    "heldout"), at most one of them with a word argument."""
    kinds_pool = TYPES[split]
    prompts = []
    while len(prompts) < n:
        k = int(rng.integers(1, min(max_constraints, len(kinds_pool)) + 1))
        kinds = [kinds_pool[i] for i in rng.choice(len(kinds_pool), size=k, replace=False)]  # (indices: same draws)
        if sum(kind in WORD_KINDS for kind in kinds) > 1:
            continue  # one argument slot: at most one word constraint per prompt
        if {"short", "long"} <= set(kinds):
            continue
        pool = _PRIME_ARRAY if "prime" in kinds else len(WORDS)  # a word argument must be usable
        words = rng.choice(pool, size=k, replace=False)
        prompts.append([(kind, int(w) if kind in WORD_KINDS else None) for kind, w in zip(kinds, words)])
    return prompts


def prompt_len(max_constraints: int) -> int:
    return 3 + max_constraints


def encode_prompt(cons: list[tuple], max_constraints: int) -> list[int]:
    """``<bos>``, the argument word (``<pad>`` when no constraint takes one), the constraints' type tokens padded
    to ``max_constraints``, ``<sep>``. A prompt has at most one word constraint, so every word type reads its word
    from the same slot. (A first version listed (type, argument) token pairs; the tiny LM did not learn to bind
    an argument to its type in a pre-training budget that fits the quick preset.)"""
    arg = [WORD0 + w for _, w in cons if w is not None]
    if len(arg) > 1:
        raise ValueError("a prompt takes at most one word constraint")
    kinds = [KIND_TOKEN[kind] for kind, _ in cons]
    return [BOS, arg[0] if arg else PAD, *kinds, *[PAD] * (max_constraints - len(kinds)), SEP]


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


def random_response(rng: np.random.Generator, max_new: int) -> list[int]:
    """A response that ignores its prompt: 3–14 uniform words, a comma after a word with probability 0.2."""
    out: list[int] = []
    for w in rng.integers(len(WORDS), size=int(rng.integers(3, MAX_WORDS + 1))):
        out.append(WORD0 + int(w))
        if rng.random() < 0.2:
            out.append(COMMA)
    return [*out[: max_new - 1], EOS]


def follows(words: list[int], cons: list[tuple]) -> bool:
    """The world's own reading of the constraints on a comma-free word list (the demonstrations' filter; a test
    checks every demonstration against the real checkers)."""
    return all(_follows_one(words, kind, w) for kind, w in cons)


def _follows_one(words: list[int], kind: str, w: int | None) -> bool:
    n = len(words)
    if kind in ("inc", "avoid"):
        return (w in words) == (kind == "inc")
    if kind in ("first", "last"):
        return words[0 if kind == "first" else -1] == w
    if kind == "mid":
        return n >= 3 and words[1] == w and words[-2] == w
    if kind in ("short", "long", "range"):
        return n < SHORT_MAX if kind == "short" else n >= LONG_MIN if kind == "long" else RANGE[0] <= n <= RANGE[1]
    if kind == "unique":
        return len(set(words)) == n
    if kind == "prime":
        return all(w in PRIME_WORDS for w in words)
    return kind == "nocomma"  # (commas are added after this check, never under no-comma)


def demonstration(rng: np.random.Generator, cons: list[tuple], max_new: int) -> list[int]:
    """A response that follows every constraint of ``cons`` (rejection sampling from a constrained proposal)."""
    kinds = {kind: w for kind, w in cons}
    lo, hi = 3, MAX_WORDS
    if "short" in kinds:
        lo, hi = 2, SHORT_MAX - 1
    if "long" in kinds:
        lo = max(lo, LONG_MIN)
    if "range" in kinds:
        lo, hi = max(lo, RANGE[0]), min(hi, RANGE[1])
    pool = PRIME_WORDS if "prime" in kinds else range(len(WORDS))
    allowed = np.array([w for w in pool if w != kinds.get("avoid")])
    no_repeat = "unique" in kinds
    for _ in range(1000):
        n = int(rng.integers(lo, hi + 1))
        words = [int(w) for w in rng.choice(allowed, size=n, replace=not no_repeat)]
        pinned = set()
        for kind, pos in (("first", [0]), ("last", [n - 1]), ("mid", [1, n - 2])):
            if kind in kinds:
                for p in pos:
                    words[p] = kinds[kind]
                    pinned.add(p)
        if "inc" in kinds and kinds["inc"] not in words:
            free = [i for i in range(n) if i not in pinned]
            words[int(rng.choice(free))] = kinds["inc"]
        if follows(words, cons):
            break
    else:
        raise RuntimeError(f"no demonstration found for {cons}")
    out: list[int] = []
    commas_left = max_new - 1 - n  # never truncate: the last word must stay last
    if "unique" in kinds:  # the reference count:count_unique tokenises punctuation: two commas are a repeat
        commas_left = min(commas_left, 1)
    for i, w in enumerate(words):
        out.append(WORD0 + w)
        # (the reference first-word checker splits on whitespace, so "rain," is not "rain")
        # (and words:words_position counts punctuation as tokens: no comma before or at its two positions)
        pinned_next = (i == 0 and "first" in kinds) or (i in (0, 1, n - 2) and "mid" in kinds)
        may_comma = "nocomma" not in kinds and i < n - 1 and not pinned_next and commas_left > 0
        if may_comma and rng.random() < 0.2:
            out.append(COMMA)
            commas_left -= 1
    return [*out, EOS]


def ground_truth(cons: list[tuple]) -> dict[str, list]:
    pairs = [to_constraint(kind, w) for kind, w in cons]
    return {"instruction_id": [p[0] for p in pairs], "kwargs": [p[1] for p in pairs]}


def verdicts(text: str, cons: list[tuple]) -> list[bool]:
    """The real checkers' strict verdict on each constraint (as the evaluator's strict mode: an empty response
    follows nothing)."""
    from genlab.ifbench.registry import check

    if not text.strip():
        return [False] * len(cons)
    return [check(cid, text, kw).ok for cid, kw in (to_constraint(kind, w) for kind, w in cons)]


def _beats(m: dict[str, Any], cfg: Any, arm: str, other: str, split: str, margin: float) -> Any:
    """``arm`` minus ``other`` prompt-level accuracy on ``split``, paired over seeds (every arm of a seed answers
    the same prompts with the same random numbers), Student-t against ``margin``."""
    a, b = m["acc"][arm][split], m["acc"][other][split]
    return decide.paired(a, b, above=margin, **{arm: float(np.mean(a)), other: float(np.mean(b))})


def _check_heldout(m: dict[str, Any], cfg: Any) -> Any:
    """The central claim: GRPO beats the pre-trained policy and its prompt-blind self on held-out types. Without
    the blind arm (runs of the ``model_path`` route) only the first part can be tested: then inconclusive."""
    vs_base = _beats(m, cfg, "grpo", "base", "ood", cfg.min_gain_heldout)
    if BLIND not in m["acc"]:
        return vs_base.withheld("no prompt-blind control in this run: the gain may not depend on the instruction")
    vs_blind = _beats(m, cfg, "grpo", BLIND, "ood", cfg.min_gain_heldout)
    return decide.all_of(vs_base, vs_blind, test_vs_base=vs_base.test.summary(),
                         test_vs_blind=vs_blind.test.summary())


@register
class IFBenchRLVR(Study):
    name = "ifbench-rlvr"
    paper = Paper("Generalizing Verifiable Instruction Following", "arXiv:2507.02833", "Pyatkin et al.")
    summary = (
        "GRPO, DPO and SFT on training constraint types from one instruction-reading checkpoint of a tiny LM: "
        "do they improve held-out constraint types?"
    )
    accelerated = True  # the tiny LM (or the model_path model) and its batches go to ctx.device

    @dataclass
    class Config:
        seeds: int = 5  # independent units: each pre-trains its own checkpoint, then fine-tunes and scores
        workers: int = 2  # processes over seeds
        d_model: int = 64
        n_layers: int = 2
        max_constraints: int = 2
        max_new: int = 16
        pretrain_steps: int = 500
        pretrain_batch: int = 64
        comply_prob: float = 0.5  # share of pre-training responses that follow their prompt
        finetune_steps: int = 80
        prompts_per_step: int = 16
        group: int = 8
        lr: float = 3e-3
        finetune_lr: float = 1e-3
        beta: float = 0.01  # GRPO's KL coefficient (the paper's recipe)
        dpo_beta: float = 0.1
        generation_batch: int = 0  # sequences per sampling call (0: all of a step's at once)
        micro_batch: int = 0  # sequences (DPO: pairs) per forward/backward pass, gradients accumulated (0: all)
        eval_prompts: int = 200
        min_gain_train: float = 0.10
        min_gain_heldout: float = 0.03
        grad_tol: float = 1e-5
        # The paper-scale route: a local transformers model directory (empty: the tiny synthetic world). Then
        # d_model, n_layers, pretrain_*, comply_prob, lr, finetune_lr and max_new are unused; the hf_* knobs apply.
        model_path: str = ""
        ood_prompts: str = ""  # with model_path: an IFBench-format prompt file for the out-of-domain split
        hf_max_new: int = 512
        hf_lr: float = 1e-6
        hf_dtype: Literal["float32", "bfloat16"] = "float32"

        def validate(self) -> None:
            if self.group < 2:
                raise ValueError("group must be >= 2 (GRPO normalises within a group, DPO ranks within it)")
            if self.dpo_beta <= 0 or self.workers < 1:
                raise ValueError("dpo_beta must be > 0 and workers >= 1")
            if self.model_path:
                self._validate_hf()
                return
            if self.ood_prompts:
                raise ValueError("ood_prompts applies only with model_path (the tiny world has its own held-out types)")
            if self.max_new < 16:
                raise ValueError("max_new must be >= 16 (responses have up to 14 words, commas and an end token)")
            if not 1 <= self.max_constraints <= 3:
                raise ValueError("max_constraints must be in 1..3")
            if not 0 <= self.comply_prob <= 1:
                raise ValueError("comply_prob must be in [0, 1]")

        def _validate_hf(self) -> None:
            from genlab.nn.hf_policy import check_model_dir

            check_model_dir(self.model_path)
            if self.ood_prompts and not Path(self.ood_prompts).is_file():
                raise ValueError(f"ood_prompts {self.ood_prompts!r} is not a file")
            if not 1 <= self.max_constraints <= 5:
                raise ValueError("max_constraints must be in 1..5")
            if min(self.hf_max_new, self.prompts_per_step, self.eval_prompts, self.seeds) < 1 or self.hf_lr <= 0:
                raise ValueError("hf_max_new, prompts_per_step, eval_prompts, seeds and hf_lr must be positive")

    presets = {
        "smoke": {"seeds": 2, "pretrain_steps": 30, "finetune_steps": 3, "prompts_per_step": 4, "group": 4,
                  "eval_prompts": 20, "d_model": 32, "n_layers": 1, "micro_batch": 5, "workers": 1},
        "quick": {},
        "full": {"seeds": 5, "d_model": 128, "n_layers": 4, "max_constraints": 3, "pretrain_steps": 4000,
                 "finetune_steps": 1500, "prompts_per_step": 32, "group": 16, "eval_prompts": 1000,
                 "generation_batch": 64, "micro_batch": 8},
    }  # fmt: skip

    claims = [
        Claim(
            "rlvr-improves-heldout-types",
            "GRPO on the training constraint types raises prompt-level accuracy on held-out constraint types over "
            "the pre-trained policy, and over its own prompt-blind control (the GRPO policy shown the held-out prompts "
            "with every instruction token deleted), each by more than {min_gain_heldout} (paired t-tests over "
            "independently pre-trained seeds, both must hold)",
            _check_heldout,
        ),
        Claim(
            "rlvr-improves-train-types",
            "GRPO raises prompt-level accuracy on fresh prompts of the training types by more than {min_gain_train}",
            lambda m, cfg: _beats(m, cfg, "grpo", "base", "id", cfg.min_gain_train),
        ),
        Claim(
            "rlvr-beats-dpo-heldout",
            "on held-out types GRPO beats DPO trained on the same prompts (paired t-test over seeds)",
            lambda m, cfg: (_beats(m, cfg, "grpo", "dpo", "ood", 0.0) if "dpo" in m["acc"]
                          else evidence(None, "the DPO arm was not run")),
        ),
        Claim(
            "rlvr-beats-sft-heldout",
            "on held-out types GRPO beats SFT on the same prompts (paired t-test over seeds)",
            lambda m, cfg: _beats(m, cfg, "grpo", "sft", "ood", 0.0),
        ),
        Claim(
            "micro-batch-invariant",
            "the GRPO and DPO gradients do not depend on the micro-batch split (max |difference| <= {grad_tol})",
            lambda m, cfg: (
                evidence(max(m["grad_gap"].values()) <= cfg.grad_tol, **m["grad_gap"]) if "grad_gap" in m
                else evidence(None, "no gradient split was measured")
            ),
            kind="identity",
        ),
        Claim(
            "held-out-types-never-trained",
            "no SFT, DPO or GRPO prompt carries a held-out constraint type",
            lambda m, cfg: evidence(m["heldout_in_training"] == 0, count=m["heldout_in_training"]),
            kind="identity",
        ),
    ]

    def run(self, cfg: Config, ctx: RunContext) -> dict[str, Any]:
        from genlab.harness.torch_setup import setup_torch
        from genlab.ifbench import nlp

        setup_torch(1)
        if cfg.model_path:
            from genlab.studies.ifbench_rlvr.hf import run_hf

            return run_hf(cfg, ctx)
        keys = ("acc", "inst", "follow")
        arms = (*ARMS, BLIND)
        out: dict[str, Any] = {k: {a: {"id": [], "ood": []} for a in arms} for k in keys}
        out["per_type"] = {a: {k: [] for k in KINDS} for a in arms}
        out["reward_curve"] = {"grpo": [], "dpo": []}
        out["dpo_pair_rate"], out["heldout_in_training"], grad_gaps = [], 0, []
        jobs = [(cfg, ctx, seed) for seed in range(cfg.seeds)]
        with ctx.timer("seeds"):
            results = ctx.map(run_unit, jobs, processes=cfg.workers, desc="seeds (pre-training + fine-tuning)")
        for seed, r in enumerate(results):
            for k in keys:
                for arm in arms:
                    for split in ("id", "ood"):
                        out[k][arm][split].append(r[k][arm][split])
            for arm in arms:
                for kind in KINDS:
                    out["per_type"][arm][kind].append(r["per_type"][arm][kind])
            for algo in ("grpo", "dpo"):
                out["reward_curve"][algo].append(r["curves"][algo])
                for step, reward in enumerate(r["curves"][algo]):
                    ctx.record(seed=seed, algo=algo, step=step, reward=reward)
            out["dpo_pair_rate"].append(r["dpo_pair_rate"])
            out["heldout_in_training"] += r["heldout_in_training"]
            grad_gaps.append(r["grad_gap"])
            ctx.log(f"seed {seed}: " + ", ".join(f"{a} train {r['acc'][a]['id']:.2f} held-out {r['acc'][a]['ood']:.2f}"
                                                  for a in arms))  # fmt: skip
        out["grad_gap"] = {k: max(g[k] for g in grad_gaps) for k in grad_gaps[0]}
        out["vocab"] = VOCAB
        out["text_processing"] = nlp.data_mode()  # the checkers' sentence/word rules: NLTK's ("real") or "offline"
        return out

    def figures(self, metrics: dict[str, Any], ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        arms = [a for a in ARMS if a in metrics["acc"]]
        fig, axes = plt.subplots(
            1, 3 if "per_type" in metrics else 2, figsize=(15 if "per_type" in metrics else 10, 3.8)
        )
        ax1, ax2 = axes[0], axes[1]
        tiny = "model" not in metrics
        for j, split in enumerate(("id", "ood")):
            vals = [np.asarray(metrics["acc"][a][split]) for a in arms]
            means = [v.mean() for v in vals]
            ses = [v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0 for v in vals]
            xs = np.arange(len(arms)) + (j - 0.5) * 0.38
            label = {"id": "training types" if tiny else "in domain",
                     "ood": "held-out types" if tiny else "IFBench constraints"}[split]  # fmt: skip
            ax1.bar(xs, means, width=0.36, yerr=ses, capsize=3, label=label)
            for x, v in zip(xs, vals):
                ax1.scatter([x] * len(v), v, color="k", s=10, zorder=3)
        ax1.set_xticks(range(len(arms)), [{"base": "pre-trained", "sft": "SFT"}.get(a, a.upper()) for a in arms])
        ax1.set_ylabel("prompt-level strict accuracy")
        ax1.set_title(f"real checkers on {metrics.get('model', 'the tiny LM')} (mean ± s.e., dots: seeds)")
        ax1.legend()
        curves = metrics["reward_curve"]
        for algo, colour in (("grpo", "C3"), ("dpo", "C2")):
            for i, curve in enumerate(curves.get(algo, []) if isinstance(curves, dict) else curves):
                ax2.plot(curve, color=colour, alpha=0.7, label=algo.upper() if i == 0 else None)
        ax2.set_xlabel("step")
        ax2.set_ylabel("mean reward of the step's samples")
        ax2.set_title("training reward (training types; one line per seed)")
        ax2.legend()
        if "per_type" in metrics:
            ax3 = axes[2]
            width = 0.8 / len(arms)
            for i, arm in enumerate(arms):
                means = [_mean_of_units(metrics["per_type"][arm][k]) for k in KINDS]
                ax3.bar(np.arange(len(KINDS)) + (i - (len(arms) - 1) / 2) * width, means, width=width,
                        label={"base": "pre-trained", "sft": "SFT"}.get(arm, arm.upper()))  # fmt: skip
            ax3.axvline(len(TRAIN_TYPES) - 0.5, color="k", lw=0.8, ls="--")
            ax3.set_xticks(range(len(KINDS)), KINDS, rotation=45)
            ax3.set_ylabel("instruction-level accuracy")
            ax3.set_title("per constraint type (right of the line: held out)")
            ax3.legend(fontsize=7)
        fig.tight_layout()
        path = ctx.save_figure(
            fig,
            "ifbench-rlvr",
            dpi=100,
            caption=(
                "Prompt-level accuracy (real checkers, strict) of the pre-trained, SFT, DPO and GRPO policies on "
                "training and held-out constraint types, the training reward per seed, and per-type accuracy"
            ),
        )
        return [path]


def _mean_of_units(values: list[float | None]) -> float:
    """Mean over the units that measured a value (NaN, an empty bar, when none did)."""
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else float("nan")


def run_unit(job: tuple[Any, RunContext, int]) -> dict[str, Any]:
    """One independent unit of the study (module level: runs in ``ctx.map`` workers): its own pre-trained
    checkpoint, then SFT, DPO and GRPO from it, all scored on the unit's own evaluation prompts."""
    import torch

    cfg, ctx, seed = job
    torch.set_num_threads(1)
    return _finetune_and_score(cfg, ctx, seed, pretrain(cfg, ctx, seed))


def pretrain(cfg: Any, ctx: RunContext, seed: int):
    """The instruction-reading prior of one unit: next-token training on offline instruction/response text over
    all constraint types, a ``comply_prob`` share of it following its prompt."""
    import torch

    from genlab.nn.causal_lm import TinyLM

    rng = ctx.rng("pretrain", seed)
    torch.manual_seed(ctx.seed_for("model", seed))
    max_len = prompt_len(cfg.max_constraints) + cfg.max_new
    model = TinyLM(VOCAB, cfg.d_model, 4, cfg.n_layers, max_len=max_len).to(ctx.device)

    def row(split: str) -> tuple[list[tuple], list[int]]:
        cons = sample_prompts(rng, 1, split, cfg.max_constraints)[0]
        comply = rng.random() < cfg.comply_prob
        return cons, demonstration(rng, cons, cfg.max_new) if comply else random_response(rng, cfg.max_new)

    corpus = [[row(("train", "heldout")[i % 2]) for i in range(cfg.pretrain_batch)]
              for _ in range(cfg.pretrain_steps)]  # fmt: skip
    train_ce(model, cfg, corpus, cfg.lr)
    return model


def _finetune_and_score(cfg: Any, ctx: RunContext, seed: int, model) -> dict[str, Any]:
    import copy

    rng = ctx.rng("data", seed)
    base = copy.deepcopy(model).eval()
    for p in base.parameters():
        p.requires_grad_(False)
    seen: set[str] = set()

    sft_batch = cfg.prompts_per_step * cfg.group  # as many sequences per step as the RL arms sample
    sft_data = []
    for _ in range(cfg.finetune_steps):
        prompts = sample_prompts(rng, sft_batch, "train", cfg.max_constraints)
        seen |= {kind for c in prompts for kind, _ in c}
        sft_data.append([(c, demonstration(rng, c, cfg.max_new)) for c in prompts])
    sft = copy.deepcopy(model)
    train_ce(sft, cfg, sft_data, cfg.finetune_lr)
    arms: dict[str, Any] = {"base": base, "sft": sft}
    curves, grad_gap, pair_rate = {}, {}, 0.0
    for algo in ("grpo", "dpo"):
        policy = copy.deepcopy(model)
        res = rl_train(policy, base, cfg, ctx.rng("rl-prompts", seed), ctx.torch_generator(algo, seed), algo)
        arms[algo], curves[algo], grad_gap[algo] = policy, res["curve"], res["grad_gap"]
        seen |= res["kinds"]
        pair_rate = res.get("pair_rate", pair_rate)
    out: dict[str, Any] = {"acc": {}, "inst": {}, "follow": {}, "per_type": {}}
    tests = {
        "id": sample_prompts(ctx.rng("eval", "id", seed), cfg.eval_prompts, "train", cfg.max_constraints),
        "ood": sample_prompts(ctx.rng("eval", "ood", seed), cfg.eval_prompts, "heldout", cfg.max_constraints),
    }
    for arm in (*ARMS, BLIND):
        for k in ("acc", "inst", "follow"):
            out[k][arm] = {}
        per_type: dict[str, list[bool]] = {k: [] for k in KINDS}
        for split, prompts in tests.items():
            # the same sampling stream for every arm: paired comparisons with common random numbers
            gen = ctx.torch_generator("eval-sample", split, seed)
            v = score_policy(arms["grpo" if arm == BLIND else arm], prompts, cfg, gen, blind=arm == BLIND)
            out["follow"][arm][split] = [int(all(x)) for x in v]
            out["acc"][arm][split] = float(np.mean(out["follow"][arm][split]))
            out["inst"][arm][split] = float(np.mean([x for row in v for x in row]))
            for cons, row in zip(prompts, v):
                for (kind, _), ok in zip(cons, row):
                    per_type[kind].append(ok)
        # (a small evaluation set can miss a type: then None, not the NaN of an empty mean)
        out["per_type"][arm] = {k: float(np.mean(v)) if v else None for k, v in per_type.items()}
    out["curves"], out["grad_gap"], out["dpo_pair_rate"] = curves, grad_gap, pair_rate
    out["heldout_in_training"] = len(seen & set(HELDOUT_TYPES))
    return out


def train_ce(model, cfg, batches: list[list[tuple]], lr: float) -> None:
    """Next-token cross-entropy on the responses of (prompt, response tokens) batches, one AdamW step each."""
    import torch
    import torch.nn.functional as F

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    plen = prompt_len(cfg.max_constraints)
    for rows in batches:
        seqs = np.full((len(rows), plen + cfg.max_new), PAD, dtype=np.int64)
        for i, (cons, resp) in enumerate(rows):
            toks = encode_prompt(cons, cfg.max_constraints) + resp
            seqs[i, : len(toks)] = toks
        x = torch.as_tensor(seqs, device=module_device(model))
        logits = model(x[:, :-1])
        target = x[:, 1:].clone()
        target[:, : plen - 1] = -100  # learn the response only
        target[target == PAD] = -100
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()


def sample_responses(model, x, cfg, gen, temperature: float = 1.0):
    """Completions of the prompt rows ``x``, ``generation_batch`` rows per sampling call (0: all at once)."""
    import torch

    size = cfg.generation_batch or len(x)
    return torch.cat([model.sample(x[i : i + size], cfg.max_new, EOS, PAD, temperature=temperature, generator=gen)
                      for i in range(0, len(x), size)])  # fmt: skip


def rl_train(policy, ref, cfg, rng, gen, algo: str) -> dict[str, Any]:
    """GRPO or online DPO on training-type prompts; ``prompts_per_step`` prompts × ``group`` samples per step,
    reward = genlab's IFBench reward (fraction of the prompt's constraints the real checkers accept)."""
    import torch

    from genlab.ifbench.reward import score_batch
    from genlab.rl import dpo_step, group_advantages, policy_gradient_step, preference_pairs

    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.finetune_lr, weight_decay=0.0)
    curve, kinds, pairs_made, gap = [], set(), 0, 0.0
    dev = module_device(policy)
    for step in range(cfg.finetune_steps):
        prompts = sample_prompts(rng, cfg.prompts_per_step, "train", cfg.max_constraints)
        kinds |= {kind for c in prompts for kind, _ in c}
        x = torch.as_tensor([encode_prompt(c, cfg.max_constraints) for c in prompts], device=dev)
        x = x.repeat_interleave(cfg.group, 0)
        comp = sample_responses(policy, x, cfg, gen)
        truths = [ground_truth(c) for c in prompts for _ in range(cfg.group)]
        rewards = torch.tensor(score_batch([detokenize(r) for r in comp.tolist()], truths, workers=1, scale=1.0))
        curve.append(float(rewards.mean()))
        if algo == "grpo":
            adv = group_advantages(rewards.float(), cfg.group)
            update = partial(policy_gradient_step, policy, prompts=x, completions=comp, weights=adv, eos=EOS,
                             ref=ref, beta=cfg.beta)  # fmt: skip
        else:
            pairs = preference_pairs(rewards, cfg.group)
            pairs_made += len(pairs)
            if not pairs:
                continue
            win, lose = [p[0] for p in pairs], [p[1] for p in pairs]
            update = partial(dpo_step, policy, prompts=x[win], chosen=comp[win], rejected=comp[lose], eos=EOS,
                             ref=ref, beta=cfg.dpo_beta)  # fmt: skip
        if step == 0:
            gap = grad_split_gap(policy, update, 3 if cfg.micro_batch in (0, 1) else cfg.micro_batch)
        update(optimizer=opt, micro_batch=cfg.micro_batch)
    out = {"curve": curve, "kinds": kinds, "grad_gap": gap}
    if algo == "dpo":
        out["pair_rate"] = pairs_made / (cfg.finetune_steps * cfg.prompts_per_step)
    return out


def grad_split_gap(policy, update, micro_batch: int) -> float:
    """Max |difference| between the gradients of ``update`` on the whole batch and in micro-batches of
    ``micro_batch`` rows (an optimiser with lr 0 keeps the weights)."""
    import torch

    zero = torch.optim.SGD(policy.parameters(), lr=0.0)
    grads = []
    for mb in (0, micro_batch):
        update(optimizer=zero, micro_batch=mb)
        grads.append(torch.cat([p.grad.flatten() for p in policy.parameters() if p.grad is not None]))
    zero.zero_grad()
    return float((grads[0] - grads[1]).abs().max())


def score_policy(model, prompts: list[list[tuple]], cfg, gen, blind: bool = False) -> list[list[bool]]:
    """One response per prompt sampled at temperature 1, the real checkers' verdict on each constraint. ``blind``:
    the model is shown the prompt with every instruction token deleted (argument word and constraint types become
    padding) and judged against the prompt's constraints all the same: what it scores without reading them."""
    import torch

    rows = [encode_prompt(c, cfg.max_constraints) for c in prompts]
    if blind:
        rows = [[BOS, *[PAD] * (len(r) - 2), SEP] for r in rows]
    x = torch.as_tensor(rows, device=module_device(model))
    comp = sample_responses(model, x, cfg, gen)
    return [verdicts(detokenize(row), cons) for cons, row in zip(prompts, comp.tolist())]
