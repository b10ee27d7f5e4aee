"""Grokking as a probe: relative flatness vs neural collapse (Han et al., arXiv 2509.17738).

Modular arithmetic (``a ∘ b mod p``) trained to memorisation and beyond with AdamW + weight decay groks: the test
accuracy jumps long after the training accuracy. Along the way we log the relative flatness κ of the classifier
layer (:mod:`genlab.measures.flatness`) and the neural-collapse metrics NC1–NC4 / NCC of its input features
(:mod:`genlab.measures.neural_collapse`), mark the onset of generalisation, and run two interventions against an
unregularised baseline with the same seed and split:

- *flatness ascent*: loss − λ·‖W‖²·mean Σ_c p_c(1 − p_c) (φ normalised, softmax temperature τ, ‖W‖_F capped),
  switched off at a given step;
- *collapse suppression*: loss − λ·NCC (never switched off).

The same two interventions run on a classifier that does not grok (an MLP on scikit-learn's digits, SGD).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from genlab.data.digits import digits_split
from genlab.data.modular import OPERATIONS, modular_split, one_hot_pairs, token_sequences, vocab_size
from genlab.harness import Claim, Paper, RunContext, Study, decide, register
from genlab.harness.torch_setup import setup_torch
from genlab.measures.flatness import flatness_penalty, softmax_ce_flatness_terms
from genlab.measures.neural_collapse import nc1, nc2, nc3, nc4, ncc
from genlab.nn.mlp import MLP
from genlab.nn.transformer import TinyTransformer

ARMS = ("baseline", "ascent", "suppress", "encourage", "control")
DIGITS_ARMS = ("baseline", "ascent", "suppress")
SERIES_KEYS = (
    "step",
    "train_acc",
    "test_acc",
    "train_loss",
    "kappa_bound",
    "kappa",
    "kappa_norm",
    "trace_h",
    "w2",
    "feat_norm",
    "param_norm",
    "reg_term",
    "ncc",
    "nc1",
    "nc2",
    "nc3",
    "nc4",
)


# -- pure helpers (tested) ----------------------------------------------------------------------------------


def first_crossing(steps: list[int] | np.ndarray, values: list[float] | np.ndarray, threshold: float) -> int | None:
    """The first logged step whose value is >= threshold, or None if it never gets there."""
    v = np.asarray(values, dtype=float)
    idx = np.flatnonzero(v >= threshold)
    return int(np.asarray(steps)[idx[0]]) if idx.size else None


def value_at(steps: list[int] | np.ndarray, values: list[float] | np.ndarray, step: float) -> float:
    """Log-linear interpolation of a positive series at ``step`` (clamped to the logged range)."""
    s = np.asarray(steps, dtype=float)
    v = np.log(np.maximum(np.asarray(values, dtype=float), 1e-300))
    return float(np.exp(np.interp(step, s, v)))


def late_mean(values: list[float] | np.ndarray, fraction: float = 0.25) -> float:
    """Geometric mean of the last ``fraction`` of a positive series (robust to end-point oscillations)."""
    v = np.asarray(values, dtype=float)
    tail = v[-max(1, int(round(fraction * len(v)))) :]
    return float(np.exp(np.mean(np.log(np.maximum(tail, 1e-300)))))


# -- training ------------------------------------------------------------------------------------------------


@dataclass
class Regime:
    """One training run: optimiser, regulariser and logging knobs."""

    steps: int
    lr: float
    optimizer: Literal["adamw", "sgd"] = "adamw"
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.98)
    momentum: float = 0.9
    warmup: int = 0
    batch_size: int = 0  # 0 = full batch
    log_every: int = 50
    reg: Literal["none", "ascent", "suppress", "encourage", "normpen", "headpull"] = "none"
    lam: float = 0.0
    reg_off: int | None = None  # step at which the regulariser is removed (None = never)
    start_at_mem: bool = False  # switch the regulariser on at memorisation (batch accuracy >= 0.99), not step 0
    ramp: int = 0  # then raise λ linearly from 0 to ``lam`` over this many steps (0 = at once)
    target_sizes: tuple[float, ...] | None = None  # control: per step, the ascent run's |term| (normpen) or the
    # gradient norm of its λ·term w.r.t. all parameters (headpull)
    control_sign: float = 1.0  # normpen: +1 penalises the hidden-feature norm, −1 rewards it
    anchor: torch.Tensor | None = None  # headpull: the fixed random matrix R the head is pulled towards
    record_grad: bool = False  # record ‖∇ λ·term‖ over all parameters at every step (an extra backward)
    temperature: float = 2.0
    normalize_features: bool = True
    weight_cap: float = 50.0
    ncc_cap: float = 0.0  # suppress: −c·tanh(NCC / c), bounded below by −c (0 = the unbounded −NCC)


@torch.no_grad()
def measure(model: nn.Module, x: torch.Tensor, y: torch.Tensor, num_classes: int) -> dict[str, float]:
    """Train-set flatness of ``model.head`` and collapse metrics of its input features."""
    logits, feats = model.forward_with_features(x)
    out = measure_outputs(logits, feats, model.head.weight, y, num_classes)
    out["param_norm"] = float(sum((p.detach().double() ** 2).sum() for p in model.parameters()))
    return out


@torch.no_grad()
def measure_outputs(
    logits: torch.Tensor, feats: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, num_classes: int
) -> dict[str, float]:
    """:func:`measure` from one model's logits, head features and head weight (no ``param_norm``)."""
    f64, w64, l64 = feats.double(), weight.double(), logits.double()
    kap_i, tr_i, _ = softmax_ce_flatness_terms(f64, w64, l64)
    fn = f64 / f64.norm(dim=1, keepdim=True).clamp_min(1e-12)
    kap_n, _, _ = softmax_ce_flatness_terms(fn, w64, l64)
    w2 = float((w64**2).sum())
    out = {
        "train_acc": float((logits.argmax(1) == y).double().mean()),
        "train_loss": float(F.cross_entropy(logits, y)),
        "kappa": float(kap_i.mean()),
        "kappa_bound": w2 * float(tr_i.mean()),
        "kappa_norm": float(kap_n.mean()),
        "trace_h": float(tr_i.mean()),
        "w2": w2,
        "feat_norm": float(f64.norm(dim=1).mean()),
    }
    try:
        out["ncc"] = float(ncc(f64, y, num_classes))
        out["nc1"] = nc1(f64, y, num_classes)
        out["nc2"] = nc2(f64, y, num_classes)["max_angle"]
        out["nc3"] = nc3(f64, y, w64, num_classes)
        out["nc4"] = nc4(f64, y, l64, num_classes)
    except (ValueError, torch.linalg.LinAlgError):  # one class left, or NaN features (a diverged run): undefined
        out.update({k: float("nan") for k in ("ncc", "nc1", "nc2", "nc3", "nc4")})
    return out


def regularizer_lambda(regime: Regime, step: int, t_on: int | None) -> float:
    """λ at ``step``: 0 before the start ``t_on`` (None = not started) and from ``reg_off`` on; in between a linear
    ramp over ``regime.ramp`` steps from the start, then ``regime.lam``."""
    if regime.reg == "none" or t_on is None or step < t_on:
        return 0.0
    if regime.reg_off is not None and step >= regime.reg_off:
        return 0.0
    if regime.ramp > 0:
        return regime.lam * min(1.0, (step - t_on + 1) / regime.ramp)
    return regime.lam


def regularizer_term(
    regime: Regime,
    feats: torch.Tensor,
    weight: torch.Tensor,
    logits: torch.Tensor,
    y: torch.Tensor,
    k: int,
    size: float | None = None,
) -> torch.Tensor:
    """The term added to the loss, to be multiplied by λ (its sign is part of the term).

    ascent: −flatness (pushes away from flat solutions); suppress: −c·tanh(NCC / c) with c = ``regime.ncc_cap``
    (≈ −NCC while NCC ≪ c, never below −c, so the push fades instead of running away; −NCC when c = 0);
    encourage: +NCC; normpen: the control,
    c·mean‖φ‖² on the hidden (penultimate) features with c = size / mean‖φ‖² held fixed (no gradient) at this step,
    so the term's value is ``size`` (in the study: the ascent run's |λ·term| at the same step; by default the
    flatness term on this model and batch) but its gradient targets only the hidden-layer norm. headpull: the
    control as run — c·‖W − R‖², a pull of the head towards the fixed random matrix ``regime.anchor``, with
    c = size / (2‖W − R‖) held fixed (no gradient), so the term's gradient norm (it touches only W) is ``size``.
    """
    if regime.reg == "ascent":
        return -flatness_penalty(feats, weight, logits, regime.temperature, regime.normalize_features)
    if regime.reg == "suppress":
        value = ncc(feats, y, k)
        return -regime.ncc_cap * torch.tanh(value / regime.ncc_cap) if regime.ncc_cap > 0 else -value
    if regime.reg == "encourage":
        return ncc(feats, y, k)
    if regime.reg == "normpen":
        sq = (feats * feats).sum(1).mean()
        with torch.no_grad():
            if size is None:
                size = flatness_penalty(feats, weight, logits, regime.temperature, regime.normalize_features)
            scale = size / sq.clamp_min(1e-12)
        return regime.control_sign * scale * sq
    if regime.reg == "headpull":
        if regime.anchor is None or size is None:
            raise ValueError("headpull needs regime.anchor and a target gradient norm (size)")
        d = weight - regime.anchor.to(weight)
        sq = (d * d).sum()
        with torch.no_grad():
            scale = size / (2 * sq.sqrt().clamp_min(1e-12))
        return scale * sq
    raise ValueError(f"no regulariser {regime.reg!r}")


def train(
    model: nn.Module,
    data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    num_classes: int,
    regime: Regime,
    gen: torch.Generator,
    sizes_out: list[float] | None = None,
    grads_out: list[float] | None = None,
) -> dict[str, list[float]]:
    """Train ``model`` under ``regime``; returns the logged time series (keys: SERIES_KEYS). ``sizes_out``, if
    given, receives |λ·term| of the regulariser at every step; ``grads_out`` (with ``regime.record_grad``) the
    norm of the gradient of λ·term w.r.t. all parameters at every step (0 where the regulariser is off)."""
    x_tr, y_tr, x_te, y_te = data
    params = list(model.parameters())
    if regime.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=regime.lr, betas=regime.betas, weight_decay=regime.weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=regime.lr, momentum=regime.momentum, weight_decay=regime.weight_decay)
    warm = max(regime.warmup, 0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
    n = x_tr.shape[0]
    bs = n if regime.batch_size <= 0 else min(regime.batch_size, n)
    series: dict[str, list[float]] = {k: [] for k in SERIES_KEYS}
    order = torch.randperm(n, generator=gen).to(x_tr.device)  # shuffles draw on the CPU generator
    pos = 0
    t_on = None if regime.start_at_mem else 0  # step at which the regulariser starts
    term = 0.0
    sizes: list[float] = []  # |λ·term| at every step
    grads: list[float] = []  # ‖∇ λ·term‖ at every step (record_grad; the control arm is matched to the ascent's)
    for step in range(regime.steps + 1):
        logging = step % regime.log_every == 0 or step == regime.steps
        if logging:
            model.eval()
            m = measure(model, x_tr, y_tr, num_classes)
            with torch.no_grad():
                m["test_acc"] = float((model(x_te).argmax(1) == y_te).double().mean())
            m["step"] = step
            for k in SERIES_KEYS:
                if k != "reg_term":
                    series[k].append(m[k])
            model.train()
        if step == regime.steps:
            series["reg_term"].append(term)
            if sizes_out is not None:
                sizes_out.extend(sizes)
            if grads_out is not None:
                grads_out.extend(grads)
            break
        if bs == n:
            xb, yb = x_tr, y_tr
        else:
            if pos + bs > n:
                order, pos = torch.randperm(n, generator=gen).to(x_tr.device), 0
            idx = order[pos : pos + bs]
            pos += bs
            xb, yb = x_tr[idx], y_tr[idx]
        logits, feats = model.forward_with_features(xb)
        loss = F.cross_entropy(logits, yb)
        if t_on is None and float((logits.argmax(1) == yb).double().mean()) >= 0.99:
            t_on = step  # memorisation: the regulariser starts with this step
        lam = regularizer_lambda(regime, step, t_on)
        term = 0.0
        if lam > 0:
            target = None
            if regime.target_sizes is not None:
                target = regime.target_sizes[step] / lam if step < len(regime.target_sizes) else 0.0
            reg = regularizer_term(regime, feats, model.head.weight, logits, yb, num_classes, target)
            loss = loss + lam * reg
            term = float(lam * reg.detach())
            if regime.record_grad:  # same graph, retained: the update below is unchanged by this
                g = torch.autograd.grad(lam * reg, params, retain_graph=True, allow_unused=True)
                grads.append(float(torch.sqrt(sum((gi.double() ** 2).sum() for gi in g if gi is not None))))
        elif regime.record_grad:
            grads.append(0.0)
        sizes.append(abs(term))
        if logging:
            series["reg_term"].append(term)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if lam > 0 and regime.reg == "ascent" and regime.weight_cap > 0:
            with torch.no_grad():
                norm = model.head.weight.norm()
                if norm > regime.weight_cap:
                    model.head.weight.mul_(regime.weight_cap / norm)
    return series


# -- per-run summaries and claims ----------------------------------------------------------------------------


def summarise(series: dict[str, list[float]], onset_threshold: float, gen_threshold: float, window: int) -> dict:
    """Memorisation / onset / generalisation steps and the metric values the claims use."""
    s = series["step"]
    t_mem = first_crossing(s, series["train_acc"], 0.99)
    onset = first_crossing(s, series["test_acc"], onset_threshold)
    out: dict[str, Any] = {
        "t_mem": t_mem,
        "onset": onset,
        "t_gen": first_crossing(s, series["test_acc"], gen_threshold),
        "final_test_acc": series["test_acc"][-1],
        "final_ncc": series["ncc"][-1],
        "late_ncc": late_mean(series["ncc"]),
    }
    if onset is not None and t_mem is not None:
        lo, hi = max(onset - window, t_mem), onset + window
        out["window"] = [lo, hi]
        for key in ("kappa_bound", "kappa_norm", "kappa", "ncc", "nc1"):
            out[f"{key}_mem"] = value_at(s, series[key], t_mem)
            out[f"{key}_lo"] = value_at(s, series[key], lo)
            out[f"{key}_hi"] = value_at(s, series[key], hi)
    return out


def _modular_seeds(m: dict, arm: str, op: str | None = None) -> list[dict]:
    op = op or m["intervention_op"]
    return m["modular"][op][arm]


def _num(v: Any) -> float:
    """A stored number as a float: a diverged run's NaN comes back from JSON as None."""
    return math.nan if v is None else float(v)


def _log_ratio(a: Any, b: Any) -> float:
    """log(a / b), NaN where either is missing, non-finite or not positive (a failed unit, never an error)."""
    a, b = _num(a), _num(b)
    return math.log(a / b) if a > 0 and b > 0 and math.isfinite(a / b) else math.nan


def _held_out(m: dict, cfg) -> list[int]:
    """Seed indices of the intervention arms that were not used to pilot a λ (``pilot_seeds``)."""
    n = len(_modular_seeds(m, "baseline"))
    return [i for i in range(n) if i not in cfg.pilot_seeds]


def _baseline_runs(m: dict) -> list[tuple[str, int, dict]]:
    return [(op, i, r) for op in m["modular"] for i, r in enumerate(m["modular"][op]["baseline"])]


def check_kappa_window(m: dict, cfg) -> Any:
    """κ (bound form) falls ≥ ``kappa_drop``-fold across [onset − w, onset + w]: the mean over baseline runs (the
    units: every op and seed) of log κ(window end)/κ(window start) below −log ``kappa_drop`` (Student-t). A run
    with no onset within the budget has no window: a failed unit."""
    runs = _baseline_runs(m)
    logs = [_log_ratio(r.get("kappa_bound_hi"), r.get("kappa_bound_lo")) if r["onset"] is not None else math.nan
            for _, _, r in runs]  # fmt: skip
    before = [_log_ratio(r.get("kappa_bound_lo"), r.get("kappa_bound_mem")) for _, _, r in runs]
    return decide.mean(logs, below=-math.log(cfg.kappa_drop),
                       note="units: baseline runs; a run without an onset is a failed unit",
                       kappa_hi_over_lo=[round(math.exp(v), 4) for v in logs if math.isfinite(v)],
                       kappa_lo_over_mem=[round(math.exp(v), 4) for v in before if math.isfinite(v)])  # fmt: skip


def check_nc_early(m: dict, cfg) -> Any:
    """NCC has already fallen ≥ ``nc_drop``-fold from memorisation to the start of the onset window: mean log
    ratio over baseline runs below −log ``nc_drop`` (Student-t)."""
    runs = _baseline_runs(m)
    logs = [_log_ratio(r.get("ncc_lo"), r.get("ncc_mem")) if r["onset"] is not None else math.nan
            for _, _, r in runs]  # fmt: skip
    nc1 = [_log_ratio(r.get("nc1_lo"), r.get("nc1_mem")) for _, _, r in runs]
    return decide.mean(logs, below=-math.log(cfg.nc_drop),
                       ncc_lo_over_mem=[round(math.exp(v), 4) for v in logs if math.isfinite(v)],
                       nc1_lo_over_mem=[round(math.exp(v), 4) for v in nc1 if math.isfinite(v)])  # fmt: skip


def window_shares(m: dict) -> dict[str, list[float]]:
    """Per baseline run: the share of each quantity's log-decrease (memorisation → end) that falls inside the onset
    window, and the share a log-linear decay would have (window / span). NaN where a run has no onset or a
    quantity does not decrease."""
    keys = ("kappa_bound", "ncc", "train_loss")
    shares: dict[str, list[float]] = {k: [] for k in (*keys, "null")}
    for op, i, r in _baseline_runs(m):
        s = m["series"][f"modular/{op}/baseline/{i}"]
        if r["onset"] is None or r["t_mem"] is None:
            for k in shares:
                shares[k].append(math.nan)
            continue
        lo, hi = r["window"]
        for key in keys:
            total = _log_ratio(value_at(s["step"], s[key], r["t_mem"]), s[key][-1])
            inside = _log_ratio(value_at(s["step"], s[key], lo), value_at(s["step"], s[key], hi))
            shares[key].append(inside / total if total > 0 else math.nan)
        shares["null"].append((hi - lo) / (s["step"][-1] - r["t_mem"]))
    return shares


def check_kappa_times_onset(m: dict, cfg) -> Any:
    """κ loses a larger share of its log-decrease (memorisation → end) inside the onset window than NCC does, than
    a placebo — the training loss, which also falls monotonically — does, and than a log-linear decay would:
    three paired Student-t tests over baseline runs, each above ``share_margin``; all three must hold."""
    sh = window_shares(m)
    k = sh["kappa_bound"]
    parts = [decide.paired(k, sh[other], above=cfg.share_margin) for other in ("ncc", "train_loss", "null")]
    return decide.all_of(
        *parts,
        note="share of each quantity's log-decrease (memorisation → end) inside the onset window; paired over runs",
        kappa_share_in_window=[round(v, 3) for v in k],
        ncc_share_in_window=[round(v, 3) for v in sh["ncc"]],
        placebo_train_loss_share=[round(v, 3) for v in sh["train_loss"]],
        loglinear_null_share=[round(v, 3) for v in sh["null"]],
        **{f"kappa_minus_{name}": round(float(p.test.effect), 4)
           for name, p in zip(("ncc", "loss_placebo", "loglinear_null"), parts)},
    )  # fmt: skip


def onset_log_ratio(arm_run: dict, base_run: dict, m: dict) -> float:
    """log(onset_arm / onset_baseline) of one seed; an arm that never reaches the onset counts as onset = its last
    step + log_every (a lower bound on its delay); NaN where the baseline has no onset."""
    if base_run["onset"] is None:
        return math.nan
    return _log_ratio(_censored_onset(arm_run, m), base_run["onset"])


def _on_phase_ratio(m: dict, arm: str, i: int, key: str, t0: int, t1: int) -> float:
    """Median over logged steps in [t0, t1) of series[key](arm) / series[key](baseline), same seed."""
    op = m["intervention_op"]
    b, a = m["series"][f"modular/{op}/baseline/{i}"], m["series"][f"modular/{op}/{arm}/{i}"]
    r = [_num(va) / _num(vb) for st, va, vb in zip(b["step"], a[key], b[key]) if t0 <= st < t1 and _num(vb) > 0]
    return float(np.nanmedian(r)) if r and not np.all(np.isnan(r)) else math.nan


def _gate(ev: Any, pre: Any, reason: str) -> Any:
    """Withhold ``ev``'s decision unless the precondition test ``pre`` holds; the precondition's numbers join."""
    ev = ev.with_numbers(precondition=pre.test.summary())
    return ev if pre.held is True else ev.withheld(f"precondition not shown ({reason}): {pre.test.summary()}")


def check_ascent(m: dict, cfg) -> Any:
    """Over the held-out seeds: the ascent's onset comes after switch-off (mean log(onset_ascent / switch-off) > 0)
    and the baseline's before it (mean log(switch-off / onset_baseline) > 0), both Student-t. Withheld unless the
    ascent really raised flatness: the mean over seeds of log median-over-the-on-phase κ_norm(ascent)/κ_norm(baseline)
    above log ``kappa_raise`` (κ φ-normalised, the quantity the regulariser pushes)."""
    off, held = cfg.ascent_off, _held_out(m, cfg)
    base, asc = _modular_seeds(m, "baseline"), _modular_seeds(m, "ascent")
    after = [onset_log_ratio(asc[i], {"onset": off}, m) for i in held]
    before = [_log_ratio(off, base[i]["onset"]) for i in held]
    raised = [math.log(r) if r > 0 else math.nan for r in
              (_on_phase_ratio(m, "ascent", i, "kappa_norm", base[i]["t_mem"] or 0, off) for i in held)]
    k_bound = [_on_phase_ratio(m, "ascent", i, "kappa_bound", base[i]["t_mem"] or 0, off) for i in held]
    ev = decide.all_of(decide.mean(after, above=0.0), decide.mean(before, above=0.0),
                       note="units: held-out seeds (not used to pilot λ)", switch_off=off,
                       baseline_onset=[base[i]["onset"] for i in held], ascent_onset=[asc[i]["onset"] for i in held],
                       max_test_acc_while_on=[round(_num(asc[i]["max_test_acc_reg_on"]), 4) for i in held],
                       kappa_norm_ratio_on=[round(math.exp(v), 2) for v in raised if math.isfinite(v)],
                       kappa_bound_ratio_on=[round(v, 3) for v in k_bound])  # fmt: skip
    return _gate(ev, decide.mean(raised, above=math.log(cfg.kappa_raise)), "κ_norm raised ≥ kappa_raise×")


def _censored_onset(run: dict, m: dict) -> float:
    """A run's onset step; one that never got there counts as its last step + log_every (a lower bound)."""
    return float(run["onset"]) if run["onset"] is not None else float(run.get("last_step", m.get("steps", 0))
                                                                        + m.get("log_every", 0))  # fmt: skip


def check_control(m: dict, cfg) -> Any:
    """Flatness ascent delays the onset more than a non-flatness control of the same strength (by default a pull
    of the head towards a fixed random matrix whose gradient norm equals the ascent term's at every step): paired
    Student-t over the held-out seeds of the two arms (``max(seeds, control_seeds)``) on log onset, ascent − control,
    above ``control_margin``. That is the difference of the two log onset ratios against the baseline (the
    baseline's onset cancels), so seeds run for this claim alone need no baseline. A seed whose control did not
    memorise by switch-off (train accuracy < 0.99) says nothing about what delays generalisation: a failed unit."""
    op = m["intervention_op"]
    asc, ctl = _modular_seeds(m, "ascent"), _modular_seeds(m, "control")
    held = [i for i in range(min(len(asc), len(ctl))) if i not in cfg.pilot_seeds]
    la = [math.log(_censored_onset(asc[i], m)) for i in held]
    lc = [math.log(_censored_onset(ctl[i], m)) if _num(ctl[i]["train_acc_at_off"]) >= 0.99 else math.nan
          for i in held]  # fmt: skip
    size, grad = [], []
    for i in held:
        sa, sc = m["series"][f"modular/{op}/ascent/{i}"], m["series"][f"modular/{op}/control/{i}"]
        ta = [abs(_num(v)) for st, v in zip(sa["step"], sa["reg_term"]) if st < cfg.ascent_off]
        tc = [abs(_num(v)) for st, v in zip(sc["step"], sc["reg_term"]) if st < cfg.ascent_off]
        size.append(round(float(np.mean(tc) / np.mean(ta)), 4) if ta and np.mean(ta) > 0 else None)
        ga, gc = asc[i].get("reg_grad_on_mean"), ctl[i].get("reg_grad_on_mean")
        grad.append(round(gc / ga, 4) if ga and gc is not None else None)
    return decide.paired(
        la, lc, above=cfg.control_margin,
        note="units: held-out seeds of the ascent and control arms; log onset, ascent − control (= the difference "
             "of their log onset ratios to the baseline); a seed whose control did not memorise by switch-off is a "
             "failed unit",
        ascent_onset=[asc[i]["onset"] for i in held], control_onset=[ctl[i]["onset"] for i in held],
        control_train_acc_at_off=[round(_num(ctl[i]["train_acc_at_off"]), 4) for i in held],
        control_max_test_acc_while_on=[round(_num(ctl[i]["max_test_acc_reg_on"]), 4) for i in held],
        control_term_size_over_ascent_term=size, control_grad_norm_over_ascent_grad_norm=grad,
    )  # fmt: skip


def _log_ncc_ratio_at(m: dict, op: str, arm: str, seed: int, step: int | None) -> float:
    """log NCC of ``arm`` over NCC of the baseline (same seed) at ``step``; NaN without a step or a finite NCC."""
    if step is None:
        return math.nan
    sb, sa = m["series"][f"modular/{op}/baseline/{seed}"], m["series"][f"modular/{op}/{arm}/{seed}"]
    nums = [[_num(v) for v in s["ncc"]] for s in (sa, sb)]
    return _log_ratio(value_at(sa["step"], nums[0], step), value_at(sb["step"], nums[1], step))


def _onset_band(m: dict, cfg, arm: str) -> tuple[list[int], list[float], Any]:
    """Held-out seeds, their log onset ratios, and the equivalence test: mean within ±log ``suppress_tolerance``."""
    held = _held_out(m, cfg)
    base, run = _modular_seeds(m, "baseline"), _modular_seeds(m, arm)
    logs = [onset_log_ratio(run[i], base[i], m) for i in held]
    tol = math.log(cfg.suppress_tolerance)
    return held, logs, decide.mean(logs, within=(-tol, tol), note="units: held-out seeds (not used to pilot λ)")


def check_suppress(m: dict, cfg) -> Any:
    """Collapse suppression leaves the onset within ``suppress_tolerance``× the baseline's: equivalence (TOST) of
    the mean log onset ratio over held-out seeds within ±log tolerance. Withheld unless collapse was really
    suppressed while the model generalised: mean log NCC ratio at the baseline's onset above log
    ``ncc_raise_onset`` and over the last quarter above log ``ncc_raise``."""
    op = m["intervention_op"]
    held, logs, ev = _onset_band(m, cfg, "suppress")
    base, sup = _modular_seeds(m, "baseline"), _modular_seeds(m, "suppress")
    at_onset = [_log_ncc_ratio_at(m, op, "suppress", i, base[i]["onset"]) for i in held]
    late = [_log_ratio(sup[i]["late_ncc"], base[i]["late_ncc"]) for i in held]
    ev = ev.with_numbers(onset_ratio=[round(math.exp(v), 3) for v in logs if math.isfinite(v)],
                         ncc_ratio_at_onset=[round(math.exp(v), 3) for v in at_onset if math.isfinite(v)],
                         late_ncc_ratio=[round(math.exp(v), 3) for v in late if math.isfinite(v)],
                         final_test_acc=[round(_num(sup[i]["final_test_acc"]), 4) for i in held])  # fmt: skip
    pre = decide.all_of(decide.mean(at_onset, above=math.log(cfg.ncc_raise_onset)),
                        decide.mean(late, above=math.log(cfg.ncc_raise)))  # fmt: skip
    return _gate(ev, pre, "NCC raised at the onset and late")


def check_suppress_accuracy(m: dict, cfg) -> Any:
    """Under collapse suppression the final test accuracy stays within ``final_tol`` of the baseline's: paired
    Student-t over held-out seeds, baseline − suppressed below ``final_tol`` (the paper: at λ = 1e-3 validation
    accuracy unaffected). A diverged run is a failed unit."""
    held = _held_out(m, cfg)
    base, sup = _modular_seeds(m, "baseline"), _modular_seeds(m, "suppress")
    b = [_num(base[i]["final_test_acc"]) for i in held]
    s = [_num(sup[i]["final_test_acc"]) for i in held]
    return decide.paired(b, s, below=cfg.final_tol, final_gap=[round(x - y, 4) for x, y in zip(b, s)])


def check_encourage(m: dict, cfg) -> Any:
    """Collapse encouragement leaves the onset within ``suppress_tolerance``× the baseline's either way (the paper:
    models encouraged to collapse generalise equally well): TOST over held-out seeds as for suppression, withheld
    unless NCC at the baseline's onset fell ≥ ``ncc_raise_onset``× (mean log ratio below −log of it)."""
    op = m["intervention_op"]
    held, logs, ev = _onset_band(m, cfg, "encourage")
    base, enc = _modular_seeds(m, "baseline"), _modular_seeds(m, "encourage")
    down = [_log_ncc_ratio_at(m, op, "encourage", i, base[i]["onset"]) for i in held]
    gen = [round(enc[i]["t_gen"] / base[i]["t_gen"], 3) for i in held if base[i]["t_gen"] and enc[i]["t_gen"]]
    ev = ev.with_numbers(onset_ratio=[round(math.exp(v), 3) for v in logs if math.isfinite(v)],
                         gen_time_ratio=gen,
                         ncc_ratio_at_onset=[round(math.exp(v), 4) for v in down if math.isfinite(v)])  # fmt: skip
    return _gate(ev, decide.mean(down, below=-math.log(cfg.ncc_raise_onset)), "NCC lowered at the onset")


def check_digits_ascent(m: dict, cfg) -> Any:
    """Digits: test accuracy at switch-off ≥ ``digits_margin`` below the baseline's and, at the end, less than
    ``digits_final_tol`` below it: two paired Student-t tests over seeds; both must hold."""
    b, a = m["digits"]["baseline"], m["digits"]["ascent"]
    at_off = decide.paired([_num(r["acc_at_off"]) for r in b], [_num(r["acc_at_off"]) for r in a],
                           above=cfg.digits_margin)  # fmt: skip
    final = decide.paired([_num(r["final_test_acc"]) for r in b], [_num(r["final_test_acc"]) for r in a],
                          below=cfg.digits_final_tol)  # fmt: skip
    return decide.all_of(at_off, final, gap_at_switch_off=at_off.test.units, final_gap=final.test.units)


def check_digits_suppress(m: dict, cfg) -> Any:
    """Digits: final test accuracy under collapse suppression less than ``digits_final_tol`` below the baseline's
    (paired Student-t over seeds; a diverged run is a failed unit), withheld unless the late NCC was raised ≥
    ``ncc_raise``× (mean log ratio)."""
    b, s = m["digits"]["baseline"], m["digits"]["suppress"]
    raised = [_log_ratio(x["late_ncc"], y["late_ncc"]) for x, y in zip(s, b)]
    ev = decide.paired([_num(r["final_test_acc"]) for r in b], [_num(r["final_test_acc"]) for r in s],
                       below=cfg.digits_final_tol,
                       late_ncc_ratio=[round(math.exp(v), 3) for v in raised if math.isfinite(v)])  # fmt: skip
    return _gate(ev, decide.mean(raised, above=math.log(cfg.ncc_raise)), "late NCC raised ≥ ncc_raise×")


# -- jobs (top level, so a process pool can run them) ---------------------------------------------------------


def _modular_lambda(cfg, arm: str) -> float:
    return {"baseline": 0.0, "ascent": cfg.ascent_lambda, "control": cfg.ascent_lambda,
            "suppress": cfg.suppress_lambda, "encourage": cfg.encourage_lambda}[arm]


def _arm_seeds(cfg, arm: str) -> int:
    """The ascent and the control run ``max(seeds, control_seeds)`` seeds (claim 5's units); other arms ``seeds``."""
    return max(cfg.seeds, cfg.control_seeds) if arm in ("ascent", "control") else cfg.seeds


def _arm_steps(cfg, arm: str) -> int:
    """Encouragement and the control only need the early phase (onset / the on-phase): shorter runs."""
    n = {"encourage": cfg.encourage_steps, "control": cfg.control_steps}.get(arm, 0)
    return min(n, cfg.steps) if n > 0 else cfg.steps


def _modular_member(cfg, op: str, arm: str, seeds: tuple[int, int, int], device: str) -> tuple:
    """One seed's model (its own init), data (its own split) and, for the head-pull control, its anchor R."""
    data_seed, init_seed, _ = seeds
    split = modular_split(cfg.p, op, cfg.train_fraction, data_seed)
    if cfg.model == "mlp":
        x = torch.from_numpy(one_hot_pairs(split.a, split.b, cfg.p))
    else:
        x = torch.from_numpy(token_sequences(split.a, split.b, cfg.p, op))
    y = torch.from_numpy(split.c)
    tr, te = torch.from_numpy(split.train), torch.from_numpy(split.test)
    torch.manual_seed(init_seed)  # same init for every arm of a seed
    if cfg.model == "mlp":
        model: nn.Module = MLP(2 * cfg.p, (cfg.hidden, cfg.hidden), cfg.p)
    else:
        model = TinyTransformer(vocab_size(cfg.p), cfg.p, cfg.d_model, cfg.n_heads, cfg.n_layers, max_len=4)
    anchor = None
    if arm == "control" and cfg.control_kind == "headpull":
        w0 = model.head.weight.detach()  # R: a fixed random matrix with the head's initial norm
        r = torch.randn(w0.shape, generator=torch.Generator().manual_seed(init_seed + 1), dtype=w0.dtype)
        anchor = (r * (w0.norm() / r.norm())).to(device)
    data = tuple(a.to(device) for a in (x[tr], y[tr], x[te], y[te]))
    return model, data, anchor


def _modular_regime(cfg, arm: str, anchor: torch.Tensor | None = None, target: list[float] | None = None) -> Regime:
    return Regime(
        steps=_arm_steps(cfg, arm),
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        warmup=cfg.warmup,
        log_every=cfg.log_every,
        reg="none" if arm == "baseline" else (cfg.control_kind if arm == "control" else arm),
        lam=_modular_lambda(cfg, arm),
        reg_off=cfg.ascent_off if arm in ("ascent", "control") else None,
        start_at_mem=arm in ("suppress", "encourage") and cfg.collapse_start_at_mem,
        ramp=cfg.collapse_ramp if arm in ("suppress", "encourage") else 0,
        temperature=cfg.ascent_temperature,
        weight_cap=cfg.ascent_cap,
        ncc_cap=cfg.suppress_cap,
        target_sizes=None if target is None else tuple(target),
        control_sign=cfg.control_sign,
        anchor=anchor,
        record_grad=arm in ("ascent", "control") and cfg.control_kind == "headpull",
    )


def _modular_result(cfg, arm: str, series: dict, sizes: list[float], grads: list[float]) -> tuple:
    summ = summarise(series, cfg.onset_threshold, cfg.gen_threshold, cfg.window)
    on = [a for st, a in zip(series["step"], series["test_acc"]) if st < cfg.ascent_off]
    tr_on = [a for st, a in zip(series["step"], series["train_acc"]) if st < cfg.ascent_off]
    summ["max_test_acc_reg_on"] = max(on)
    summ["train_acc_at_off"] = tr_on[-1]
    summ["last_step"] = series["step"][-1]
    if grads:
        on_g = grads[: cfg.ascent_off]
        summ["reg_grad_on_mean"] = float(np.mean(on_g))
        summ["reg_grad_on_median"] = float(np.median(on_g))
    return series, summ, ({"sizes": sizes, "grads": grads} if arm == "ascent" else None)


def _digits_member(cfg, seeds: tuple[int, int, int], device: str) -> tuple:
    data_seed, init_seed, _ = seeds
    split = digits_split(test_fraction=1 - cfg.digits_train / 1797, seed=data_seed)
    data = tuple(torch.from_numpy(a).to(device) for a in (split.x_train, split.y_train, split.x_test, split.y_test))
    torch.manual_seed(init_seed)
    return MLP(64, (cfg.digits_hidden, cfg.digits_hidden), 10), data


def _digits_regime(cfg, arm: str, per_epoch: int) -> Regime:
    return Regime(
        steps=cfg.digits_epochs * per_epoch,
        lr=cfg.digits_lr,
        optimizer="sgd",
        batch_size=cfg.digits_batch,
        log_every=per_epoch * max(1, cfg.digits_epochs // 30),
        reg="none" if arm == "baseline" else arm,
        lam=cfg.digits_ascent_lambda if arm == "ascent" else cfg.digits_suppress_lambda,
        reg_off=cfg.digits_off * per_epoch if arm == "ascent" else None,
        temperature=cfg.ascent_temperature,
        weight_cap=cfg.ascent_cap,
        ncc_cap=cfg.suppress_cap,
    )


def _digits_result(cfg, series: dict, per_epoch: int) -> tuple:
    off = cfg.digits_off * per_epoch
    series["epoch"] = [st / per_epoch for st in series["step"]]
    summ = {
        "acc_at_off": value_at(series["step"], series["test_acc"], off),
        "final_test_acc": series["test_acc"][-1],
        "final_ncc": series["ncc"][-1],
        "late_ncc": late_mean(series["ncc"]),
        "kappa_bound_at_off": value_at(series["step"], series["kappa_bound"], off),
        "final_kappa_bound": series["kappa_bound"][-1],
    }
    return series, summ, None


def _run_job(job: tuple) -> list[tuple[dict, dict, dict | None]]:
    """Train the seeds of one arm: as one :class:`StackedMLP` (MLPs with ``cfg.stack``), else one by one. Returns,
    per seed in order, (series, summary, the ascent's per-step term sizes and gradient norms or None)."""
    from genlab.harness.torch_setup import keep_freed_memory
    from genlab.studies.grokking.stacked import StackedMLP, train_stacked

    cfg_d, (task, op, arm, _idx, seeds), device, targets = job
    cfg = Grokking.Config(**cfg_d)
    setup_torch(cfg.threads)
    if cfg.stack:
        keep_freed_memory()
    targets = targets or [None] * len(seeds)
    gens = [torch.Generator().manual_seed(sd[2]) for sd in seeds]
    if task == "modular":
        members = [_modular_member(cfg, op, arm, sd, device) for sd in seeds]
        if cfg.model == "mlp" and cfg.stack:
            model = StackedMLP([m for m, _, _ in members]).to(device)
            data = tuple(torch.stack([d[j] for _, d, _ in members]) for j in range(4))
            anchors = torch.stack([a for _, _, a in members]) if members[0][2] is not None else None
            regime = _modular_regime(cfg, arm)
            tgt = targets if any(t is not None for t in targets) else None
            out = train_stacked(model, data, cfg.p, regime, gens, tgt, anchors)
            return [_modular_result(cfg, arm, *r) for r in zip(*out)]
        results = []
        for (model, data, anchor), gen, target in zip(members, gens, targets):
            sizes: list[float] = []
            grads: list[float] = []
            series = train(model.to(device), data, cfg.p, _modular_regime(cfg, arm, anchor, target), gen,
                           sizes_out=sizes, grads_out=grads)  # fmt: skip
            results.append(_modular_result(cfg, arm, series, sizes, grads))
        return results
    members = [_digits_member(cfg, sd, device) for sd in seeds]
    per_epoch = math.ceil(len(members[0][1][1]) / cfg.digits_batch)
    regime = _digits_regime(cfg, arm, per_epoch)
    if cfg.stack:
        model = StackedMLP([m for m, _ in members]).to(device)
        data = tuple(torch.stack([d[j] for _, d in members]) for j in range(4))
        series_list = train_stacked(model, data, 10, regime, gens)[0]
    else:
        series_list = [train(m.to(device), d, 10, regime, g) for (m, d), g in zip(members, gens)]
    return [_digits_result(cfg, series, per_epoch) for series in series_list]


# -- the study -----------------------------------------------------------------------------------------------


@register
class Grokking(Study):
    name = "grokking"
    paper = Paper(
        "Flatness is Necessary, Neural Collapse is Not: Rethinking Generalization via Grokking",
        "arXiv:2509.17738",
        "Han, Adilova, Petzka, Kleesiek, Kamp",
    )
    summary = (
        "In grokking, relative flatness of the last layer drops around the onset of generalisation while neural "
        "collapse progresses earlier; pushing away from flatness delays generalisation, suppressing collapse does not."
    )
    accelerated = True  # models and data go to ctx.device; batch shuffles draw on CPU generators

    @dataclass
    class Config:
        # modular arithmetic
        modular: bool = True
        p: int = 31
        ops: tuple[str, ...] = ("add",)  # quick: `a+b` only (smoke and full add `a−b`)
        train_fraction: float = 0.6
        model: Literal["mlp", "transformer"] = "mlp"
        hidden: int = 128  # MLP width (two hidden layers) on one-hot pairs
        d_model: int = 128  # transformer
        n_heads: int = 4
        n_layers: int = 2
        lr: float = 3e-3
        weight_decay: float = 2.0
        warmup: int = 0
        steps: int = 2000
        log_every: int = 50
        seeds: int = 8
        control_seeds: int = 14  # seeds of the ascent and control arms, for claim 5 (0 = seeds; power: docs)
        pilot_seeds: tuple[int, ...] = (0,)  # seeds the λ values were piloted on: left out of claims 4-8
        # interventions (run on ops[0])
        ascent_lambda: float = 10.0
        ascent_off: int = 1000
        ascent_temperature: float = 2.0
        ascent_cap: float = 50.0
        suppress_lambda: float = 7e-4  # chosen in a one-seed pilot (docs)
        suppress_cap: float = 3.0  # the suppression term is −c·tanh(NCC / c): bounded (0 = unbounded −NCC; docs)
        encourage_lambda: float = 1e-2  # chosen in a one-seed pilot (docs)
        collapse_start_at_mem: bool = True  # suppression / encouragement start at memorisation ...
        collapse_ramp: int = 300  # ... with λ ramped linearly over this many steps
        encourage_steps: int = 1000  # encouragement run length (0 = steps): only its onset is used
        control_steps: int = 0  # the control's run length (0 = steps): its onset is compared with the ascent's
        control_kind: Literal["headpull", "normpen"] = "headpull"  # headpull: gradient-norm-matched pull of the
        # head towards a fixed random matrix; normpen: the earlier value-matched hidden-norm penalty (docs)
        control_sign: float = 1.0  # normpen only: +1 penalises the hidden-feature norm; −1 rewards it (docs)
        # digits (a classifier that does not grok)
        digits: bool = True
        digits_train: int = 500
        digits_hidden: int = 256
        digits_epochs: int = 90
        digits_off: int = 60
        digits_lr: float = 0.01
        digits_batch: int = 64
        digits_ascent_lambda: float = 0.7
        digits_suppress_lambda: float = 0.2
        # onset detection and claim thresholds
        onset_threshold: float = 0.5
        gen_threshold: float = 0.95
        window: int = 250
        kappa_drop: float = 2.0
        nc_drop: float = 2.0
        ncc_raise: float = 10.0
        ncc_raise_onset: float = 2.0
        kappa_raise: float = 5.0  # ascent precondition: κ (φ-normalised) ≥ this × baseline's while the ascent is on
        share_margin: float = 0.0  # claim 3: κ's window share must beat each comparison's by more than this
        control_margin: float = 0.0  # claim 5: log onset delay, ascent − control, must exceed this
        final_tol: float = 0.05  # modular: final test accuracy "unaffected" (suppression arm)
        suppress_tolerance: float = 1.5
        digits_margin: float = 0.1
        digits_final_tol: float = 0.02  # final test accuracy "unchanged": within this of the baseline
        threads: int = 1
        stack: bool = True  # train an arm's seeds side by side as one stacked MLP (results as if one by one)
        workers: int = 2  # processes for independent runs (1 = in this process); results do not depend on it
        arms: tuple[str, ...] = ARMS

        def validate(self) -> None:
            if self.p < 3:
                raise ValueError("p must be >= 3")
            bad = [o for o in self.ops if o not in OPERATIONS]
            if bad or not self.ops:
                raise ValueError(f"ops must be a non-empty subset of {OPERATIONS}, got {self.ops}")
            if not 0 < self.train_fraction < 1:
                raise ValueError("train_fraction must be in (0, 1)")
            if self.steps < 1 or self.log_every < 1 or self.seeds < 1:
                raise ValueError("steps, log_every and seeds must be >= 1")
            if not 0 < self.ascent_off <= self.steps:
                raise ValueError("ascent_off must be in (0, steps]")
            if not 0 < self.digits_off <= self.digits_epochs:
                raise ValueError("digits_off must be in (0, digits_epochs]")
            if 0 < self.control_steps <= self.ascent_off:
                raise ValueError("control_steps must be 0 (= steps) or > ascent_off")
            if set(self.arms) - set(ARMS) or "baseline" not in self.arms:
                raise ValueError(f"arms must include 'baseline' and be a subset of {ARMS}")

    presets = {
        "smoke": {
            "p": 11,
            "ops": ("add", "sub"),
            "hidden": 32,
            "steps": 60,
            "log_every": 20,
            "ascent_off": 40,
            "seeds": 1,
            "pilot_seeds": (),  # smoke decides nothing; its one seed exercises every check
            "control_seeds": 0,
            "digits_train": 100,
            "digits_hidden": 32,
            "digits_epochs": 4,
            "digits_off": 2,
            "workers": 1,
        },
        "quick": {},
        "full": {
            # the paper's grokking setting (official script): 2-layer decoder transformer, d 128, 4 heads,
            # AdamW (0.9, 0.98), wd 1.0, mod 97; lr 1e-3 and a 30% split instead of 1e-4 / 20% to fit 30k steps
            "p": 97,
            "ops": ("add", "sub", "div"),
            "train_fraction": 0.3,
            "model": "transformer",
            "lr": 1e-3,
            "weight_decay": 1.0,
            "warmup": 10,
            "steps": 30_000,
            "log_every": 250,
            "seeds": 6,  # 5 held out from the pilot seed
            "control_seeds": 0,  # the transformer is not stacked: no extra claim-5 seeds (hours each on CPU)
            "ascent_lambda": 0.01,
            "ascent_off": 15_000,
            "encourage_steps": 0,
            "control_steps": 0,
            "window": 2000,
            "digits_epochs": 200,
            "digits_off": 100,
        },
    }

    claims = [
        Claim(
            "kappa-drops-at-onset",
            "κ (relative flatness, bound form) drops ≥ {kappa_drop}× within the window around the onset (mean log "
            "ratio over baseline runs, t-test)", check_kappa_window),
        Claim(
            "ncc-falls-before-onset",
            "NCC has already fallen ≥ {nc_drop}× from memorisation before the onset window (NC does not time it)",
            check_nc_early),
        Claim(
            "kappa-concentrated-at-onset",
            "κ's log-decrease is more concentrated in the onset window than NCC's, the training loss's (placebo) and a "
            "log-linear decay's (paired over baseline runs, margin {share_margin})", check_kappa_times_onset),
        Claim(
            "ascent-delays",
            "flatness ascent (κ_norm ≥ {kappa_raise}× baseline while on) delays the onset until after switch-off "
            "(step {ascent_off}), on seeds not used to pilot λ", check_ascent),
        Claim(
            "delay-beyond-control",
            "flatness ascent delays the onset more (log onset ratio, margin {control_margin}) than a non-flatness "
            "control with the ascent term's gradient norm (head pulled towards a fixed random matrix), on held-out "
            "seeds", check_control),
        Claim(
            "suppression-leaves-onset",
            "bounded collapse suppression from memorisation (NCC ≥ {ncc_raise_onset}× at onset, ≥ {ncc_raise}× late) "
            "leaves the onset within {suppress_tolerance}× baseline (equivalence, held-out seeds)", check_suppress),
        Claim(
            "suppression-keeps-accuracy",
            "under collapse suppression the final test accuracy stays within {final_tol} of the baseline's",
            check_suppress_accuracy),
        Claim(
            "encouragement-leaves-onset",
            "collapse encouragement from memorisation (NCC ≤ 1/{ncc_raise_onset} at onset) leaves the onset within "
            "{suppress_tolerance}× baseline either way (equivalence, held-out seeds)", check_encourage),
        Claim(
            "digits-ascent",
            "digits: flatness ascent keeps test accuracy ≥ {digits_margin} below baseline until switch-off, then it "
            "recovers (within {digits_final_tol})",
            check_digits_ascent),
        Claim(
            "digits-suppression",
            "digits: collapse suppression (late NCC ≥ {ncc_raise}×) leaves final test accuracy within "
            "{digits_final_tol}", check_digits_suppress),
    ]

    # -- run ------------------------------------------------------------------------------------------------
    def run(self, cfg: Grokking.Config, ctx: RunContext) -> dict:
        setup_torch(cfg.threads)
        metrics: dict[str, Any] = {"intervention_op": cfg.ops[0], "ascent_off": cfg.ascent_off, "modular": {},
                                   "series": {}, "steps": cfg.steps, "log_every": cfg.log_every}
        groups = []  # one job per (task, op, arm): its seeds are trained side by side
        for op in cfg.ops if cfg.modular else ():
            for arm in ARMS:
                if arm in cfg.arms and (arm == "baseline" or op == cfg.ops[0]):
                    idx = list(range(_arm_seeds(cfg, arm)))
                    seeds = [tuple(ctx.seed_for(kind, op, i) for kind in ("split", "init", "batch")) for i in idx]
                    groups.append(("modular", op, arm, idx, seeds))
        if cfg.digits:
            for arm in DIGITS_ARMS:
                if arm in cfg.arms:
                    idx = list(range(cfg.seeds))
                    kinds = ("digits", "digits-init", "digits-b")
                    seeds = [tuple(ctx.seed_for(kind, i) for kind in kinds) for i in idx]
                    groups.append(("digits", "digits", arm, idx, seeds))
        cfg_dict = dataclasses.asdict(cfg)
        # the control is matched step by step to the size of its seed's ascent term, so it runs after the ascent
        first = [g for g in groups if g[2] != "control"]
        results = ctx.map(_run_job, [(cfg_dict, g, ctx.device, None) for g in first], processes=cfg.workers,
                          desc="grokking")
        key = "sizes" if cfg.control_kind == "normpen" else "grads"  # match the term's size or its gradient norm
        targets = {i: r[2][key] for g, rs in zip(first, results) if g[0] == "modular" and g[2] == "ascent"
                   for i, r in zip(g[3], rs)}  # fmt: skip
        second = [g for g in groups if g[2] == "control"]
        if second:
            results += ctx.map(_run_job, [(cfg_dict, g, ctx.device, [targets.get(i) for i in g[3]]) for g in second],
                               processes=cfg.workers, desc="grokking control")
        specs = [(task, op, arm, i) for task, op, arm, idx, _ in first + second for i in idx]
        results = [r for rs in results for r in rs]
        for (task, op, arm, i), (series, summ, _sizes) in zip(specs, results):
            if task == "modular":
                metrics["series"][f"modular/{op}/{arm}/{i}"] = series
                metrics["modular"].setdefault(op, {}).setdefault(arm, []).append(summ)
                ctx.log(f"{op} {arm} seed {i}: mem {summ['t_mem']} onset {summ['onset']} gen {summ['t_gen']} "
                        f"final test {summ['final_test_acc']:.3f}")
            else:
                metrics["series"][f"digits/{arm}/{i}"] = series
                metrics.setdefault("digits", {}).setdefault(arm, []).append(summ)
                ctx.log(f"digits {arm} seed {i}: test at switch-off {summ['acc_at_off']:.3f} "
                        f"final {summ['final_test_acc']:.3f}")
            ctx.record(task=task, op=op, arm=arm, seed=i, **{k: v for k, v in summ.items() if k != "window"})
        return metrics

    # -- figures ----------------------------------------------------------------------------------------------
    def figures(self, metrics: dict, ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        if not metrics.get("modular"):
            return []
        series, op = metrics["series"], metrics["intervention_op"]
        off = metrics["ascent_off"]
        seeds = sorted({int(k.rsplit("/", 1)[1]) for k in series if k.startswith(f"modular/{op}/baseline/")})
        fig, axes = plt.subplots(2, 3, figsize=(13, 7))
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]

        def onset_lines(ax, i):
            r = metrics["modular"][op]["baseline"][i]
            if r["onset"] is not None:
                ax.axvline(r["onset"], color=colors[i % len(colors)], ls=":", lw=1)

        ax = axes[0, 0]
        for i in seeds:
            s = series[f"modular/{op}/baseline/{i}"]
            ax.plot(s["step"], s["train_acc"], color=colors[i % len(colors)], ls="--", lw=1)
            ax.plot(s["step"], s["test_acc"], color=colors[i % len(colors)], lw=1.5, label=f"seed {i}")
            onset_lines(ax, i)
        ax.set(title=f"{op} mod p baseline: train (--) / test (—), onset (:)", xlabel="step", ylabel="accuracy")
        ax.legend(fontsize=7)
        ax = axes[0, 1]
        for i in seeds:
            s = series[f"modular/{op}/baseline/{i}"]
            c = colors[i % len(colors)]
            ax.plot(s["step"], s["kappa_bound"], color=c, lw=1.5, label="κ bound ‖W‖²Tr H" if i == 0 else None)
            ax.plot(s["step"], s["kappa_norm"], color=c, lw=1, ls="--", label="κ, φ normalised" if i == 0 else None)
            onset_lines(ax, i)
        ax.set(yscale="log", title="relative flatness (train)", xlabel="step")
        ax.legend(fontsize=7)
        ax = axes[0, 2]
        for i in seeds:
            s = series[f"modular/{op}/baseline/{i}"]
            c = colors[i % len(colors)]
            for key, ls in (("ncc", "-"), ("nc1", "--"), ("nc3", ":")):
                ax.plot(s["step"], s[key], color=c, ls=ls, lw=1.2, label=key.upper() if i == 0 else None)
            onset_lines(ax, i)
        ax.set(yscale="log", title="neural collapse (train features)", xlabel="step")
        ax.legend(fontsize=7)
        def arm_curves(ax, arms, ncc_ax=None):
            """Test accuracy of each seed (colour) and arm (line style); NCC on ``ncc_ax`` too when given."""
            for i in seeds:
                c = colors[i % len(colors)]
                for arm, ls in arms:
                    if (s := series.get(f"modular/{op}/{arm}/{i}")) is not None:
                        ax.plot(s["step"], s["test_acc"], color=c, ls=ls, lw=1.3)
                        if ncc_ax is not None:
                            ncc_ax.plot(s["step"], s["ncc"], color=c, ls=ls, lw=0.7, alpha=0.5)

        ax = axes[1, 0]
        arm_curves(ax, (("baseline", ":"), ("ascent", "-"), ("control", "-.")))
        ax.axvline(off, color="k", lw=1)
        ax.set(title="ascent (—), head-pull control (-.), baseline (:)", xlabel="step", ylabel="test accuracy")
        ax = axes[1, 1]
        ax2 = ax.twinx()
        arm_curves(ax, (("baseline", ":"), ("suppress", "-"), ("encourage", "-.")), ncc_ax=ax2)
        ax2.set(yscale="log", ylabel="NCC (thin)")
        ax.set(title="NC suppress (—), encourage (-.), baseline (:)", xlabel="step", ylabel="test accuracy")
        ax = axes[1, 2]
        if "digits" in metrics:
            for arm, ls in (("baseline", ":"), ("ascent", "-"), ("suppress", "--")):
                for i in seeds:
                    key = f"digits/{arm}/{i}"
                    if key in series:
                        ax.plot(series[key]["epoch"], series[key]["test_acc"], color=colors[DIGITS_ARMS.index(arm)],
                                ls=ls, lw=1.2, label=arm if i == seeds[0] else None)
            cfg = ctx.cfg
            if cfg is not None:
                ax.axvline(cfg.digits_off, color="k", lw=1)
            ax.set(title="digits MLP (SGD): test accuracy", xlabel="epoch", ylim=(0, 1))
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "grokking", dpi=70,
            caption=(
                "Train and test accuracy, relative flatness κ and neural collapse (NCC) over training"
                " for the baseline; flatness ascent vs a gradient-norm-matched head-pull control; collapse suppression "
                "and encouragement (from memorisation, ramped λ); digits"
            ),
        )
        return [path]
