"""The ifbench-rlvr study on a local ``transformers`` model (``--set model_path=DIR``): the paper's setting.

Per seed: training prompts from :func:`genlab.ifbench.train_prompts.make_train` (IFEval ∪ IFTrain constraints on
the package's base prompts), ``finetune_steps`` × ``prompts_per_step`` of them.

* **base**: the model as loaded (kept, frozen, for the whole run).
* **SFT** = rejection-sampling fine-tuning: at each step the *base* model samples ``group`` responses per prompt
  (temperature 1, chat template), those that genlab's reward scores 1.0 (every constraint followed) are the
  targets, and the SFT copy takes one step on their mean token log-likelihood. No demonstrations are needed.
* **GRPO**: at each step the policy samples ``group`` responses per prompt, genlab's reward (fraction of the
  prompt's constraints followed) gives group-normalised advantages, one on-policy step of
  :func:`genlab.rl.grpo_loss` (KL to the base when ``beta > 0``), as in the tiny world.
* **DPO** (online): the same samples and reward, the best and the worst sample of each prompt's group (when
  their rewards differ) make a preference pair, one step of :func:`genlab.rl.dpo_step` against the base.

All four are scored with greedy decoding by genlab's IFBench evaluator (strict, prompt level) on fresh make-train
prompts (in domain) and on IFBench test constraints (out of domain): base prompts with one IFBench test
constraint each, or the rows of the prompt file ``ood_prompts``. Optimiser: AdamW at ``hf_lr`` for both arms.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from genlab.harness import RunContext


def run_hf(cfg: Any, ctx: RunContext) -> dict[str, Any]:
    from genlab.nn.hf_policy import HFPolicy

    device = ctx.device  # as asked with --device (the harness checks that it exists)
    base = HFPolicy.load(cfg.model_path, device=device, dtype=cfg.hf_dtype)
    ctx.log(f"model {cfg.model_path} on {device} ({cfg.hf_dtype})")
    arms = ("base", "sft", "dpo", "grpo")
    acc: dict[str, dict[str, list[float]]] = {a: {"id": [], "ood": []} for a in arms}
    follow: dict[str, dict[str, list[list[int]]]] = {a: {"id": [], "ood": []} for a in arms}
    curves: dict[str, list[list[float]]] = {"grpo": [], "dpo": []}
    accepted, overlap = [], 0
    delta: dict[str, list[float]] = {"sft": [], "dpo": [], "grpo": []}
    for seed in ctx.progress(range(cfg.seeds), desc="seeds"):
        train, tests = prompt_sets(cfg, ctx, seed)
        ood_ids = {cid for item in tests["ood"] for cid in item.instruction_id_list}
        overlap += sum(bool(ood_ids & set(row["instruction_id_list"])) for row in train)
        result = {"base": {split: accuracy(base, items, cfg) for split, items in tests.items()}}
        sft = base.clone()
        accepted.append(train_rft(sft, base, train, cfg, ctx.torch_generator("rft", seed)))
        result["sft"] = {split: accuracy(sft, items, cfg) for split, items in tests.items()}
        delta["sft"].append(param_distance(sft, base))
        del sft
        for algo in ("dpo", "grpo"):
            policy = base.clone()
            curves[algo].append(train_rl(policy, base, train, cfg, ctx, seed, algo))
            result[algo] = {split: accuracy(policy, items, cfg) for split, items in tests.items()}
            delta[algo].append(param_distance(policy, base))
            del policy
        for arm, splits in result.items():
            for split, (value, rows) in splits.items():
                acc[arm][split].append(value)
                follow[arm][split].append(rows)
        ctx.log(
            f"seed {seed}: " + ", ".join(f"{a} id {v['id'][0]:.2f} ood {v['ood'][0]:.2f}" for a, v in result.items())
        )
    return {
        "acc": acc,
        "follow": follow,
        "heldout_in_training": overlap,
        "reward_curve": curves,
        "model": base.name,
        "param_delta": delta,
        "sft_accepted": accepted,
        "eval_prompts": {split: len(items) for split, items in tests.items()},
    }


def prompt_sets(cfg: Any, ctx: RunContext, seed: int) -> tuple[list[dict[str, Any]], dict[str, list]]:
    """Training rows, and the in-domain and out-of-domain evaluation items (``PromptItem``) of one seed."""
    from genlab.ifbench.data import load_prompts
    from genlab.ifbench.registry import ids
    from genlab.ifbench.train_prompts import make_train

    train = make_train(
        n=cfg.finetune_steps * cfg.prompts_per_step if cfg.finetune_steps else 1,
        max_constraints=cfg.max_constraints,
        seed=ctx.seed_for("train", seed),
    )
    seen = {row["prompt"] for row in train}
    n = cfg.eval_prompts
    while True:  # fresh prompts: none of them in the training set (make_train with a larger n extends the list)
        rows = make_train(n=n, max_constraints=cfg.max_constraints, seed=ctx.seed_for("eval-id", seed))
        fresh = [row for row in rows if row["prompt"] not in seen][: cfg.eval_prompts]
        if len(fresh) == cfg.eval_prompts:
            break
        n *= 2
    if cfg.ood_prompts:
        ood = load_prompts(cfg.ood_prompts)
        if len(ood) > cfg.eval_prompts:
            keep = ctx.rng("eval-ood", seed).choice(len(ood), cfg.eval_prompts, replace=False)
            ood = [ood[i] for i in sorted(keep)]
    else:
        ood_rows = make_train(
            n=cfg.eval_prompts, max_constraints=1, seed=ctx.seed_for("eval-ood", seed), constraint_ids=ids("ifbench")
        )
        ood = [prompt_item(row) for row in ood_rows]
    return train, {"id": [prompt_item(row) for row in fresh], "ood": ood}


def prompt_item(row: dict[str, Any]) -> Any:
    from genlab.ifbench.data import PromptItem
    from genlab.ifbench.registry import get

    kwargs = [get(c).normalize(kw) for c, kw in zip(row["instruction_id_list"], row["kwargs"])]
    return PromptItem(row["key"], row["prompt"], list(row["instruction_id_list"]), kwargs)


def _chat(row: dict[str, Any]) -> list[dict[str, str]]:
    return [{"role": "user", "content": row["prompt"]}]


def _truth(row: dict[str, Any]) -> dict[str, Any]:
    return {"instruction_id": row["instruction_id_list"], "kwargs": row["kwargs"]}


def _steps(train: list[dict[str, Any]], cfg: Any) -> Iterator[list[dict[str, Any]]]:
    for step in range(cfg.finetune_steps):
        yield train[step * cfg.prompts_per_step : (step + 1) * cfg.prompts_per_step]


def _sample_and_score(policy, rows, cfg, generator) -> tuple[Any, Any, Any]:
    """``group`` samples per row at temperature 1: (prompt batch, completions, rewards)."""
    import torch

    from genlab.ifbench.reward import score_batch

    prompts = policy.encode([_chat(row) for row in rows for _ in range(cfg.group)])
    comp = policy.sample(prompts, cfg.hf_max_new, 1.0, generator, cfg.generation_batch)
    truths = [_truth(row) for row in rows for _ in range(cfg.group)]
    rewards = torch.tensor(score_batch(policy.decode(comp), truths, workers=1, scale=1.0), dtype=torch.float32)
    return prompts, comp, rewards


def train_rl(policy, ref, train, cfg, ctx: RunContext, seed: int, algo: str) -> list[float]:
    """GRPO (``algo="grpo"``) or online DPO on the training rows; returns the mean reward of each step's samples."""
    import torch

    from genlab.rl import dpo_step, group_advantages, policy_gradient_step, preference_pairs

    gen = ctx.torch_generator("sample" if algo == "grpo" else "dpo-sample", seed)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.hf_lr, weight_decay=0.0)
    curve = []
    for step, rows in enumerate(_steps(train, cfg)):
        prompts, comp, rewards = _sample_and_score(policy, rows, cfg, gen)
        if algo == "grpo":
            advantages = group_advantages(rewards, cfg.group)
            policy_gradient_step(
                policy, opt, prompts, comp, advantages, eos=policy.eos_ids, ref=ref, beta=cfg.beta,
                micro_batch=cfg.micro_batch,
            )  # fmt: skip
        elif pairs := preference_pairs(rewards, cfg.group):
            win, lose = [p[0] for p in pairs], [p[1] for p in pairs]
            dpo_step(policy, opt, prompts[win], comp[win], comp[lose], eos=policy.eos_ids, ref=ref,
                     beta=cfg.dpo_beta, micro_batch=cfg.micro_batch)  # fmt: skip
        curve.append(float(rewards.mean()))
        ctx.record(seed=seed, algo=algo, step=step, reward=curve[-1])
    return curve


def train_rft(policy, base, train, cfg, generator) -> float:
    """Rejection-sampling fine-tuning of ``policy`` on the base model's samples that score 1.0; returns the
    fraction of samples accepted."""
    import torch

    from genlab.rl import policy_gradient_step

    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.hf_lr, weight_decay=0.0)
    kept = total = 0
    for rows in _steps(train, cfg):
        prompts, comp, rewards = _sample_and_score(base, rows, cfg, generator)
        keep = [i for i, r in enumerate(rewards.tolist()) if r == 1.0]
        kept, total = kept + len(keep), total + len(comp)
        if keep:  # a step without an accepted sample makes no update
            ones = torch.ones(len(keep))
            policy_gradient_step(
                policy, opt, prompts[keep], comp[keep], ones, eos=policy.eos_ids, micro_batch=cfg.micro_batch
            )
    return kept / total if total else 0.0


def accuracy(policy, items: list, cfg: Any) -> tuple[float, list[int]]:
    """Greedy responses scored by genlab's IFBench evaluator: strict prompt-level accuracy and each prompt's
    verdict (1: every instruction followed)."""
    from genlab.ifbench.evaluator import evaluate
    from genlab.ifbench.generate import messages_of

    size = cfg.generation_batch or len(items)
    responses: dict[str, str] = {}
    for start in range(0, len(items), size):
        part = items[start : start + size]
        comp = policy.sample(policy.encode([messages_of(it) for it in part]), cfg.hf_max_new, temperature=0)
        responses.update(zip((it.prompt for it in part), policy.decode(comp)))
    result = evaluate(items, responses, workers=1)
    rows, _ = result.matrix("strict")
    return float(result.summary(bootstrap=0)["strict"]["prompt_level"]), [int(bool(r) and all(r)) for r in rows]


def param_distance(a, b) -> float:
    """Euclidean distance between two policies' parameters."""
    import torch

    with torch.no_grad():
        total = sum(float(((p.float() - q.float()) ** 2).sum()) for p, q in zip(a.parameters(), b.parameters()))
    return total**0.5
