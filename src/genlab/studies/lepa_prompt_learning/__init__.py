"""Study "lepa-prompt-learning": levelling the objectives of multi-objective prompt learning on a frozen CLIP
(LePa-style, reconstructed — the paper's title, id and exact rule are not confirmed; see the docs page).

Mechanism study. A mini-CLIP (small CNN image tower, tiny causal-transformer text tower) is pre-trained
contrastively by the study on digits rendered in five styles with templated captions, then frozen. Prompt learning
(4 learned context vectors + an additive pixel prompt) uses a few shots of the base classes 0–4 in one style;
evaluation is zero-shot on the novel classes 5–9 and on the four unseen styles. Arms: zero-shot (hand-crafted
template ensemble); CoOp (CE only, text context only); CE only on the same text+visual prompts; PromptSRC-style
consistency (text L1, image L1, KL to zero-shot logits) with fixed weights swept over two decades; three levelling
rules started from every weight of that sweep; PCGrad. With ``clip_path`` a real CLIP (transformers, local
directory) replaces the mini-CLIP and the same arms run on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genlab.data.styled_digits import STYLES
from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
from genlab.training.levelling import RULES

BASE, NOVEL = (0, 1, 2, 3, 4), (5, 6, 7, 8, 9)
LABEL = "mechanism study (LePa-style levelling, reconstructed)"


# -- arms and one seed's run ----------------------------------------------------------------------------------


def arm_list(cfg: Any) -> list:
    """Every trained arm of a config, in a fixed order (zero-shot needs no training)."""
    from genlab.studies.lepa_prompt_learning.train import Arm

    arms = [Arm("coop"), Arm("ce"), Arm("sum")] + [Arm("fixed", s) for s in cfg.scales]
    for rule in cfg.rules:
        inits = cfg.scales if (cfg.level_every_init or rule == cfg.primary_rule) else (cfg.ref_scale,)
        arms += [Arm("level", s, rule) for s in inits]
    if cfg.pcgrad:
        arms.append(Arm("pcgrad", cfg.ref_scale))
    return arms


def split_indices(labels: np.ndarray, cfg: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Pre-training images, the few-shot prompt-learning set (base classes only) and the test images.

    The pre-training half holds every class (CLIP saw all of them); the rest is the downstream pool, from which
    ``shots`` images per *base* class are drawn, then ``unlabelled`` images of any class whose labels are never
    used (the image consistency loss runs on them); the test set is the remaining downstream pool."""
    perm = rng.permutation(len(labels))
    n_pre = round(cfg.pretrain_fraction * len(labels))
    pre, down = perm[:n_pre], perm[n_pre:]
    few = np.concatenate([down[labels[down] == c][: cfg.shots] for c in BASE])
    rest = np.setdiff1d(down, few)
    unlabelled = rng.choice(rest, cfg.unlabelled, replace=False) if cfg.unlabelled else np.array([], dtype=int)
    test = np.setdiff1d(rest, unlabelled)
    return {"pretrain": np.sort(pre), "few": few, "unlabelled": np.sort(unlabelled), "test": np.sort(test)}


def _backend(cfg: Any, x: np.ndarray, y: np.ndarray, idx: np.ndarray, rng: np.random.Generator, seed: int, device):
    if cfg.clip_path:
        from genlab.studies.lepa_prompt_learning.hf import HFClipBackend

        return HFClipBackend(cfg.clip_path, device)
    from genlab.data.styled_digits import Vocab, captions, render_styles
    from genlab.studies.lepa_prompt_learning.train import ClipSpec, MiniBackend, pretrain_mini_clip

    imgs, style_idx = render_styles(x[idx], cfg.pretrain_styles, rng)
    texts = captions(np.tile(y[idx], len(STYLES)), style_idx, rng)
    vocab = Vocab.build()
    spec = ClipSpec(
        cfg.image_size, cfg.clip_dim, cfg.clip_width, cfg.cnn_width, cfg.clip_steps, cfg.clip_batch, cfg.clip_lr
    )
    return MiniBackend(pretrain_mini_clip(imgs, texts, vocab, spec, seed, device), vocab, device)


def run_seed(job: dict[str, Any]) -> dict[str, Any]:
    """One seed: (pre-train the mini-CLIP,) learn every arm's prompts on base-class shots, evaluate all arms."""
    import torch

    from genlab.data.styled_digits import base_digits, render
    from genlab.studies.lepa_prompt_learning.train import TrainSpec, evaluate, learn_prompts

    cfg, seed, device = LepaPromptLearning.Config(**job["cfg"]), job["seed"], job["device"]
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = base_digits(cfg.image_size)
    idx = split_indices(y, cfg, rng)
    backend = _backend(cfg, x, y, idx["pretrain"], rng, seed, device)
    test = {s: (backend.inputs(render(x[idx["test"]], s, rng)), y[idx["test"]]) for s in STYLES}
    few_x = backend.inputs(render(x[idx["few"]], cfg.train_style, rng))
    few_y = torch.tensor([BASE.index(int(c)) for c in y[idx["few"]]], device=few_x.device)
    unl = backend.inputs(render(x[idx["unlabelled"]], cfg.train_style, rng)) if cfg.unlabelled else None
    spec = TrainSpec(
        cfg.n_ctx,
        cfg.steps,
        cfg.lr,
        tuple(cfg.weights),
        cfg.level_rate,
        cfg.level_ema,
        cfg.dwa_temperature,
        cfg.trace_every,
    )
    arms = arm_list(cfg)
    learned = learn_prompts(backend, few_x, few_y, BASE, arms, spec, seed, cfg.max_arms, unl)
    out = {"zero-shot": evaluate(backend, test, BASE, NOVEL, None, None)}
    for arm, res in zip(arms, learned):
        out[arm.name] = evaluate(backend, test, BASE, NOVEL, res["ctx"], res["prompt"])
    traces = {a.name: r["weights"] for a, r in zip(arms, learned) if a.kind == "level"}
    return {"eval": out, "weights": traces, "losses": {a.name: r["losses"] for a, r in zip(arms, learned)}}


def summarise(evals: list[dict[str, Any]], train_style: str) -> dict[str, dict[str, list[float]]]:
    """Per arm and seed: base / novel / HM in the training style, and their means over the unseen styles."""
    unseen = [s for s in STYLES if s != train_style]
    acc: dict[str, dict[str, list[float]]] = {}
    for arm in evals[0]:
        rows = {k: [] for k in ("base", "novel", "hm", "dg_base", "dg_novel", "dg_hm")}
        for ev in evals:
            r = ev[arm]
            for k in ("base", "novel", "hm"):
                rows[k].append(r[train_style][k])
                rows[f"dg_{k}"].append(float(np.mean([r[s][k] for s in unseen])))
        acc[arm] = rows
    return acc


# -- claims ---------------------------------------------------------------------------------------------------


def _hm(m: Mapping[str, Any], arm: str) -> np.ndarray:
    return np.asarray(m["acc"][arm]["hm"], dtype=float)


def _sweep(m: Mapping[str, Any], kind: str) -> np.ndarray:
    """HM per seed (rows) and sweep weight (columns) for ``kind`` = fixed or a levelling rule."""
    return np.stack([_hm(m, f"{kind}@{s:g}") for s in m["scales"]], 1)


def check_tradeoff(m: Mapping[str, Any], cfg: Any):
    """Precondition: a usable zero-shot mini-CLIP, and CE-only prompt learning raises base / lowers novel."""
    zs, ce, coop = m["acc"]["zero-shot"], m["acc"]["ce"], m["acc"]["coop"]
    return decide.all_of(
        decide.mean(zs["novel"], above=cfg.min_zero_shot, zero_shot_novel=float(np.mean(zs["novel"]))),
        decide.paired(ce["base"], zs["base"], above=0.0, base_gain=_mean_diff(ce["base"], zs["base"])),
        decide.paired(zs["novel"], ce["novel"], above=0.0, novel_drop=_mean_diff(zs["novel"], ce["novel"])),
        coop_text_only_base_gain=_mean_diff(coop["base"], zs["base"]),
        coop_text_only_novel_drop=_mean_diff(zs["novel"], coop["novel"]),
    )


def _mean_diff(a: Any, b: Any) -> float:
    return float(np.mean(np.subtract(a, b)))


def _gated(ev: Any, m: Mapping[str, Any], cfg: Any, headroom: bool = False):
    """Withhold a decision unless its precondition holds: for the consistency claim the CoOp trade-off (CE-only
    learning loses novel accuracy, which consistency is meant to recover); for a levelling claim the headroom (the
    best fixed weight beats zero-shot: otherwise no weighting rule can be told apart from doing nothing)."""
    name, held = (
        ("prompt-learning-headroom", check_headroom(m, cfg).held) if headroom
        else ("coop-tradeoff", check_tradeoff(m, cfg).held)
    )  # fmt: skip
    if held is not True:
        return ev.withheld(f"precondition {name} is {'not met' if held is False else 'undecided'}")
    return ev


def check_headroom(m: Mapping[str, Any], cfg: Any):
    """Precondition of the levelling claims: the best fixed weight (an oracle picked on test HM, biased upwards)
    beats zero-shot by more than ``headroom_margin`` HM."""
    fixed = _sweep(m, "fixed")
    best = int(np.argmax(fixed.mean(0)))
    return decide.paired(fixed[:, best], _hm(m, "zero-shot"), above=cfg.headroom_margin,
                         best_fixed_scale=m["scales"][best], best_fixed_hm=float(fixed[:, best].mean()),
                         zero_shot_hm=float(_hm(m, "zero-shot").mean()))  # fmt: skip


def check_recovers(m: Mapping[str, Any], cfg: Any):
    ref = f"fixed@{cfg.ref_scale:g}"
    ev = decide.paired(m["acc"][ref]["novel"], m["acc"]["ce"]["novel"], above=cfg.recover_margin,
                       novel_zero_shot=float(np.mean(m["acc"]["zero-shot"]["novel"])),
                       hm_gain_over_ce=_mean_diff(_hm(m, ref), _hm(m, "ce")))  # fmt: skip
    return _gated(ev, m, cfg)


def _rule_numbers(m: Mapping[str, Any], against: np.ndarray, prefix: str) -> dict[str, float]:
    """Mean HM difference (rule averaged over its initial weights − ``against``) for every rule run at all inits."""
    out = {}
    for rule in m["rules_every_init"]:
        out[f"{prefix}_{rule}"] = float(np.mean(_sweep(m, rule).mean(1) - against))
    return out


NO_CONTROL_NOTE = "the zero-shot control (no prompt learning at all) passes this test too, so it cannot decide"


def _unless_control_passes(ev: Any, control: Any):
    """A test that a do-nothing control also passes decides nothing: such a pass is withheld (inconclusive)."""
    ev = ev.with_numbers(zero_shot_would_pass=control.held is True)
    return ev.withheld(NO_CONTROL_NOTE) if control.held is True else ev


def check_median(m: Mapping[str, Any], cfg: Any):
    median = np.median(_sweep(m, "fixed"), 1)
    lev = _sweep(m, cfg.primary_rule).mean(1)
    ev = decide.paired(lev, median, above=-cfg.median_tol, rule=cfg.primary_rule, median_fixed_hm=float(median.mean()),
                       levelled_hm=float(lev.mean()), zero_shot_hm=float(_hm(m, "zero-shot").mean()),
                       **_rule_numbers(m, median, "vs_median"))  # fmt: skip
    control = decide.paired(_hm(m, "zero-shot"), median, above=-cfg.median_tol)
    return _gated(_unless_control_passes(ev, control), m, cfg, headroom=True)


def check_tracks_best(m: Mapping[str, Any], cfg: Any):
    fixed = _sweep(m, "fixed")
    best = int(np.argmax(fixed.mean(0)))  # oracle: chosen on the test HM, a reference only
    lev = _sweep(m, cfg.primary_rule).mean(1)
    ev = decide.paired(fixed[:, best], lev, below=cfg.track_tol, rule=cfg.primary_rule,
                       best_fixed_scale=m["scales"][best], best_fixed_hm=float(fixed[:, best].mean()),
                       best_minus_zero_shot=float(np.mean(fixed[:, best] - _hm(m, "zero-shot"))),
                       **_rule_numbers(m, fixed[:, best], "vs_best"))  # fmt: skip
    control = decide.paired(fixed[:, best], _hm(m, "zero-shot"), below=cfg.track_tol)
    return _gated(_unless_control_passes(ev, control), m, cfg, headroom=True)


def check_plugin(m: Mapping[str, Any], cfg: Any):
    """The paper's headline as a plug-in: the same learner with levelling (from its default weights) beats it
    with those fixed default weights on HM."""
    ref = f"{cfg.ref_scale:g}"
    lev, fixed = f"{cfg.primary_rule}@{ref}", f"fixed@{ref}"
    others = {f"vs_default_{r}": _mean_diff(_hm(m, f"{r}@{ref}"), _hm(m, fixed)) for r in cfg.rules}
    ev = decide.paired(_hm(m, lev), _hm(m, fixed), above=cfg.plugin_margin, rule=cfg.primary_rule,
                       levelled_hm=float(_hm(m, lev).mean()), zero_shot_hm=float(_hm(m, "zero-shot").mean()),
                       unseen_style_hm_gain=_mean_diff(m["acc"][lev]["dg_hm"], m["acc"][fixed]["dg_hm"]),
                       **others)  # fmt: skip
    return _gated(ev, m, cfg, headroom=True)


def check_beats_sum(m: Mapping[str, Any], cfg: Any):
    """Levelling (primary rule, averaged over its initial weights) against the naive sum of the four objectives
    (every weight 1): the baseline a levelling rule is meant to replace."""
    lev = _sweep(m, cfg.primary_rule).mean(1)
    ev = decide.paired(lev, _hm(m, "sum"), above=cfg.plugin_margin, rule=cfg.primary_rule,
                       levelled_hm=float(lev.mean()), sum_hm=float(_hm(m, "sum").mean()),
                       zero_shot_hm=float(_hm(m, "zero-shot").mean()),
                       **_rule_numbers(m, _hm(m, "sum"), "vs_sum"))  # fmt: skip
    return _gated(ev, m, cfg, headroom=True)


def check_sensitivity(m: Mapping[str, Any], cfg: Any):
    """Identity: levelling relaxes the weights to a target that does not depend on the initial weights, so its
    mean HM range over the initial weights is smaller than the fixed weights' by construction (not evidence)."""
    left = (1 - cfg.level_rate) ** cfg.steps  # the part of the initial weights not yet relaxed away
    if left > 0.05:
        return evidence(None, f"the relaxation has not run: {left:.2f} of the initial weights remain after "
                              f"{cfg.steps} steps at rate {cfg.level_rate}")  # fmt: skip
    spread_fixed = float(np.ptp(_sweep(m, "fixed"), 1).mean())
    spread_lev = float(np.ptp(_sweep(m, cfg.primary_rule), 1).mean())
    return evidence(spread_lev < spread_fixed, rule=cfg.primary_rule, fixed_hm_spread=spread_fixed,
                    levelled_hm_spread=spread_lev)


# -- the study ------------------------------------------------------------------------------------------------


@register
class LepaPromptLearning(Study):
    name = "lepa-prompt-learning"
    accelerated = True  # models and batches go to ctx.device
    paper = Paper(
        "LePa: levelling the objectives of multi-objective CLIP prompt learning (title and id not confirmed)",
        "unconfirmed (no arXiv id found)",
    )
    summary = (
        "Mechanism study (LePa-style levelling, reconstructed): on a frozen mini-CLIP, CE-only prompt learning "
        "trades novel for base accuracy, PromptSRC-style consistency recovers novel accuracy, and levelling rules "
        "are compared with a two-decade sweep of fixed weights."
    )

    @dataclass
    class Config:
        seeds: int = 5  # independent mini-CLIPs, splits and prompt learners (>= 5 units to decide)
        workers: int = 2  # processes for the seeds (results do not depend on it)
        # data
        image_size: int = 8
        pretrain_fraction: float = 0.5
        # issue 33 (chosen in pilots): the few-shot style is one the mini-CLIP never saw (domain shift), so prompt
        # learning has headroom over zero-shot; with every style in pre-training the best fixed weight was within
        # 0.007 HM of zero-shot, with 'noisy' held out within 0.008
        train_style: str = "rotated"  # the style of the few-shot images; the other four are unseen by prompt learning
        pretrain_styles: tuple[str, ...] = ("plain", "inverted", "outlined", "noisy")  # the mini-CLIP's styles
        shots: int = 32  # per base class
        unlabelled: int = 50  # images of any class, labels unused: the image consistency loss runs on them (0: shots)
        # the mini-CLIP (ignored when clip_path is given)
        clip_steps: int = 150
        clip_batch: int = 256
        clip_lr: float = 3e-3
        clip_dim: int = 32
        clip_width: int = 32
        cnn_width: int = 16
        clip_path: str = ""  # a local directory with a transformers CLIPModel + tokenizer: replaces the mini-CLIP
        # prompt learning
        n_ctx: int = 4
        steps: int = 200
        lr: float = 0.01
        weights: tuple[float, ...] = (25.0, 10.0, 1.0)  # text L1, image L1, KL at scale 1 (PromptSRC's defaults)
        scales: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0, 10.0)  # the fixed-weight sweep = levelling's initial weights
        ref_scale: float = 1.0
        rules: tuple[str, ...] = RULES
        primary_rule: str = "loss"  # the rule the claims are decided on (fixed before the decisive runs)
        level_every_init: bool = True  # every rule from every initial weight (else only the primary rule)
        level_rate: float = 0.1
        level_ema: float = 0.9
        dwa_temperature: float = 2.0
        pcgrad: bool = True
        max_arms: int = 0  # arms trained together per group (0 = all; bound it for a real CLIP's memory)
        trace_every: int = 5
        # claim thresholds (accuracies and HM are fractions)
        min_zero_shot: float = 0.4  # 5-way chance is 0.2 (was 0.5; lowered after pilots for the rotated regime)
        recover_margin: float = 0.0
        median_tol: float = 0.01
        track_tol: float = 0.01
        plugin_margin: float = 0.0
        headroom_margin: float = 0.01  # best fixed − zero-shot HM must exceed it (= track_tol; set after pilots)

        def validate(self) -> None:
            _validate(self)

    presets = {
        "smoke": {
            "seeds": 2,
            "workers": 1,
            "clip_steps": 20,
            "clip_batch": 64,
            "shots": 4,
            "steps": 6,
            "scales": (0.1, 1.0),
            "trace_every": 2,
        },
        # quick: 7 seeds; the primary levelling rule from every weight, dwa from the default weights only, no
        # gradnorm and no PCGrad (they need a backward pass per objective; CPU budget)
        "quick": {"seeds": 7, "rules": ("loss", "dwa"), "level_every_init": False, "pcgrad": False},
        # full: ten seeds and a three-decade sweep on the mini-CLIP; add --set clip_path=DIR for a real CLIP
        "full": {"seeds": 10, "scales": (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)},
    }

    claims = [
        Claim(
            "coop-tradeoff",
            "precondition: the mini-CLIP's zero-shot novel accuracy is >= {min_zero_shot}, and CE-only prompt "
            "learning raises base accuracy and lowers novel accuracy below zero-shot (t and paired t over seeds, "
            "all three must hold)",
            check_tradeoff,
        ),
        Claim(
            "prompt-learning-headroom",
            "precondition of the levelling claims: the best fixed consistency weight (an oracle picked on test HM) "
            "beats zero-shot HM by more than {headroom_margin} (paired t over seeds)",
            check_headroom,
        ),
        Claim(
            "consistency-recovers-novel",
            "PromptSRC-style consistency with fixed weights (scale {ref_scale}) raises novel accuracy over CE-only "
            "by more than {recover_margin} (paired t over seeds)",
            check_recovers,
            requires=("coop-tradeoff",),
        ),
        Claim(
            "levelling-reaches-median",
            "levelling ({primary_rule} rule, averaged over its initial weights) reaches at least the median "
            "fixed-weight HM (not below it by more than {median_tol}, paired t over seeds)",
            check_median,
            requires=("prompt-learning-headroom",),
        ),
        Claim(
            "levelling-tracks-best",
            "levelling ({primary_rule} rule) tracks the best fixed weight (an oracle picked on test HM): "
            "best − levelled HM < {track_tol} (paired t over seeds)",
            check_tracks_best,
            requires=("prompt-learning-headroom",),
        ),
        Claim(
            "levelling-beats-default",
            "as a plug-in, levelling ({primary_rule} rule, started from the default weights, scale {ref_scale}) "
            "raises HM over the same learner with those fixed weights by more than {plugin_margin} "
            "(paired t over seeds)",
            check_plugin,
            requires=("prompt-learning-headroom",),
        ),
        Claim(
            "levelling-beats-sum",
            "levelling ({primary_rule} rule, averaged over its initial weights) raises HM over the naive sum of the "
            "four objectives (every weight 1) by more than {plugin_margin} (paired t over seeds)",
            check_beats_sum,
            requires=("prompt-learning-headroom",),
        ),
        Claim(
            "levelling-less-sensitive",
            "levelling ({primary_rule} rule) is less sensitive to the initial weights: its HM range over the sweep "
            "is smaller than the fixed weights' range (mean over seeds; holds by construction: the rule relaxes the "
            "weights to a target that ignores the initial weights)",
            check_sensitivity,
            kind="identity",
        ),
    ]

    def run(self, cfg: Config, ctx: RunContext) -> dict[str, Any]:
        from dataclasses import asdict

        from genlab.harness.torch_setup import setup_torch

        setup_torch(1)  # small models: one thread (workers do this themselves)
        jobs = [{"cfg": asdict(cfg), "seed": ctx.seed_for("seed", s), "device": ctx.device} for s in range(cfg.seeds)]
        with ctx.timer("seeds"):
            results = ctx.map(run_seed, jobs, processes=cfg.workers, desc="seeds")
        acc = summarise([r["eval"] for r in results], cfg.train_style)
        every_init = [r for r in cfg.rules if cfg.level_every_init or r == cfg.primary_rule]
        zs = acc["zero-shot"]
        ctx.log(f"zero-shot base {np.mean(zs['base']):.3f} novel {np.mean(zs['novel']):.3f} ({LABEL})")
        return {
            "label": LABEL,
            "backend": "transformers CLIPModel" if cfg.clip_path else "mini-CLIP",
            "scales": list(cfg.scales),
            "rules_every_init": every_init,
            "arms": list(acc),
            "acc": acc,
            "weights_seed0": results[0]["weights"],
            "trace_every": cfg.trace_every,
            "final_losses_seed0": results[0]["losses"],
        }

    def figures(self, metrics: Mapping[str, Any], ctx: RunContext) -> list[Path]:
        from genlab.studies.lepa_prompt_learning.figure import lepa_figure

        return [lepa_figure(metrics, ctx)]


def _validate(cfg: Any) -> None:
    from genlab.studies.lepa_prompt_learning.train import OBJECTIVES

    def positive(**kv: float) -> None:
        for k, v in kv.items():
            if not (isinstance(v, int | float) and np.isfinite(v) and v > 0):
                raise ValueError(f"{k} must be a positive finite number, got {v!r}")

    positive(seeds=cfg.seeds, workers=cfg.workers, shots=cfg.shots, clip_steps=cfg.clip_steps)
    positive(clip_batch=cfg.clip_batch, clip_lr=cfg.clip_lr, clip_dim=cfg.clip_dim, clip_width=cfg.clip_width)
    positive(cnn_width=cfg.cnn_width, n_ctx=cfg.n_ctx, steps=cfg.steps, lr=cfg.lr, ref_scale=cfg.ref_scale)
    positive(dwa_temperature=cfg.dwa_temperature, level_rate=cfg.level_rate)
    if cfg.image_size < 8 or cfg.image_size % 4:
        raise ValueError(f"image_size must be a multiple of 4 and >= 8, got {cfg.image_size}")
    if not 0.1 <= cfg.pretrain_fraction <= 0.8:
        raise ValueError("pretrain_fraction must lie in [0.1, 0.8] (the rest is the few-shot pool and test set)")
    if not 0 <= cfg.unlabelled <= 300:
        raise ValueError("unlabelled must lie in [0, 300] (taken from the downstream pool before the test set)")
    if cfg.shots > 60:
        raise ValueError("shots must be <= 60 (digits has ~180 images per class, half go to pre-training)")
    if not cfg.pretrain_styles or set(cfg.pretrain_styles) - set(STYLES):
        raise ValueError(f"pretrain_styles must be a non-empty subset of {', '.join(STYLES)}")
    if cfg.train_style not in STYLES:
        raise ValueError(f"train_style must be one of {', '.join(STYLES)}")
    if len(cfg.weights) != len(OBJECTIVES) - 1 or any(not np.isfinite(w) or w <= 0 for w in cfg.weights):
        raise ValueError("weights must be three positive numbers (text L1, image L1, KL)")
    scales = [float(s) for s in cfg.scales]
    if len(scales) < 2 or any(not np.isfinite(s) or s <= 0 for s in scales) or len(set(scales)) != len(scales):
        raise ValueError("scales must be at least two distinct positive numbers")
    if cfg.ref_scale not in scales:
        raise ValueError(f"ref_scale {cfg.ref_scale} must be one of the scales {scales}")
    if not cfg.rules or set(cfg.rules) - set(RULES) or len(set(cfg.rules)) != len(cfg.rules):
        raise ValueError(f"rules must be distinct names among {', '.join(RULES)}")
    if cfg.primary_rule not in cfg.rules:
        raise ValueError(f"primary_rule must be one of rules {cfg.rules}")
    if not 0 < cfg.level_rate <= 1 or not 0 <= cfg.level_ema < 1:
        raise ValueError("need 0 < level_rate <= 1 and 0 <= level_ema < 1")
    if cfg.max_arms < 0 or cfg.trace_every < 0:
        raise ValueError("max_arms and trace_every must be >= 0")
    if not 0 <= cfg.min_zero_shot <= 1:
        raise ValueError("min_zero_shot must lie in [0, 1]")
    for k in ("recover_margin", "median_tol", "track_tol", "plugin_margin", "headroom_margin"):
        v = getattr(cfg, k)
        if not (np.isfinite(v) and -1 < v < 1):
            raise ValueError(f"{k} must be a finite number in (-1, 1)")
    if cfg.clip_path and not Path(cfg.clip_path).is_dir():
        raise ValueError(f"clip_path {cfg.clip_path!r} is not a directory (a saved transformers CLIPModel)")
