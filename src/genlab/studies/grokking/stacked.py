"""The seeds of one grokking arm trained side by side as one stacked MLP (a leading member dimension, ``torch.bmm``).

Member s of a :class:`StackedMLP` is an ordinary :class:`~genlab.nn.mlp.MLP` (it is built from one, so it keeps its
own initialisation); the loss is the sum of the members' losses, so each member's gradient is its own, and Adam /
AdamW / SGD over the stacked tensors is elementwise, i.e. S separate optimisers. Everything that is per run in
:func:`genlab.studies.grokking.train` stays per member here: the data split and batch order (one generator each),
the step at which a regulariser starts (memorisation), its λ, the ascent's head-norm cap, the control's matched
size and anchor, the recorded gradient norm, the logged measures. A member that diverges turns NaN on its own
slices only (no operation mixes members), and stays a failed unit.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from genlab.nn.mlp import MLP


class StackedMLP(nn.Module):
    """S ReLU MLPs of the same sizes as one module: hidden layer j has weight (S, d_in, d_out) and bias
    (S, 1, d_out); the bias-free head is (S, k, d) in ``nn.Linear``'s layout (row c is class c)."""

    def __init__(self, models: Sequence[MLP]):
        super().__init__()
        if not models:
            raise ValueError("no models to stack")
        layers = []
        for m in models:
            lin = [mod for mod in m.body if isinstance(mod, nn.Linear)]
            acts = [mod for mod in m.body if not isinstance(mod, nn.Linear)]
            if not all(isinstance(a, nn.ReLU) for a in acts) or m.head.bias is not None:
                raise ValueError("StackedMLP stacks ReLU MLPs with a bias-free head")
            layers.append(lin)
        if len({tuple(tuple(x.weight.shape) for x in lin) for lin in layers}) != 1:
            raise ValueError("all stacked models must have the same layer sizes")
        self.weights = nn.ParameterList(
            nn.Parameter(torch.stack([lin[j].weight.detach().T for lin in layers]).contiguous())
            for j in range(len(layers[0]))
        )
        self.biases = nn.ParameterList(
            nn.Parameter(torch.stack([lin[j].bias.detach()[None] for lin in layers]).clone())
            for j in range(len(layers[0]))
        )
        self.head = nn.Parameter(torch.stack([m.head.weight.detach() for m in models]).clone())

    @property
    def members(self) -> int:
        return self.head.shape[0]

    def forward_with_features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits (S, n, k), features (S, n, d))`` for inputs ``x`` (S, n, d_in)."""
        h = x
        for w, b in zip(self.weights, self.biases):
            h = torch.baddbmm(b, h, w).relu_()  # in place: one temporary less per layer (autograd allows it)
        return torch.bmm(h, self.head.transpose(1, 2)), h

    def member_params(self, s: int) -> list[torch.Tensor]:
        """Member s's parameters in :class:`MLP`'s order (weights as (d_out, d_in))."""
        out: list[torch.Tensor] = []
        for w, b in zip(self.weights, self.biases):
            out += [w[s].T, b[s, 0]]
        return [*out, self.head[s]]


def stacked_ncc(features: torch.Tensor, labels: torch.Tensor, k: int) -> torch.Tensor:
    """NCC of every member, (S,): :func:`genlab.measures.neural_collapse.ncc` on each (S, n, d) slice, over the
    classes present in that member's labels (S, n); differentiable."""
    onehot = F.one_hot(labels, k).to(features.dtype)  # (S, n, k)
    counts = onehot.sum(1)  # (S, k)
    present = counts > 0
    mu = torch.bmm(onehot.transpose(1, 2), features) / counts.clamp_min(1)[..., None]  # (S, k, d)
    centred = features - torch.bmm(onehot, mu)
    var = torch.bmm(onehot.transpose(1, 2), (centred * centred).sum(2, keepdim=True))[..., 0] / counts.clamp_min(1)
    sq = (mu * mu).sum(2)
    dist2 = (sq[:, :, None] + sq[:, None, :] - 2 * torch.bmm(mu, mu.transpose(1, 2))).clamp_min(1e-30)
    ratio = (var[:, :, None] + var[:, None, :]) / (2 * dist2)
    eye = torch.eye(k, dtype=torch.bool, device=features.device)
    pairs = present[:, :, None] & present[:, None, :] & ~eye
    if bool((pairs.sum((1, 2)) == 0).any()):
        raise ValueError("NCC needs at least two classes with samples")
    return torch.where(pairs, ratio, torch.zeros_like(ratio)).sum((1, 2)) / pairs.sum((1, 2))


def stacked_flatness(features: torch.Tensor, weight: torch.Tensor, logits: torch.Tensor, temperature: float,
                     normalize_features: bool) -> torch.Tensor:  # fmt: skip
    """:func:`genlab.measures.flatness.flatness_penalty` of every member, (S,)."""
    p = torch.softmax(logits / temperature, dim=2)
    spread = (p * (1 - p)).sum(2)
    if not normalize_features:
        spread = spread * (features * features).sum(2)
    return (weight * weight).sum((1, 2)) * spread.mean(1)


def stacked_term(
    regime,
    feats: torch.Tensor,
    weight: torch.Tensor,
    logits: torch.Tensor,
    y: torch.Tensor,
    k: int,
    size: torch.Tensor | None = None,
    anchor: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`genlab.studies.grokking.regularizer_term` for every member (S,); ``size`` and ``anchor`` per member."""
    if regime.reg == "ascent":
        return -stacked_flatness(feats, weight, logits, regime.temperature, regime.normalize_features)
    if regime.reg in ("suppress", "encourage"):
        value = stacked_ncc(feats, y, k)
        if regime.reg == "encourage":
            return value
        return -regime.ncc_cap * torch.tanh(value / regime.ncc_cap) if regime.ncc_cap > 0 else -value
    if regime.reg == "normpen":
        sq = (feats * feats).sum(2).mean(1)
        with torch.no_grad():
            if size is None:
                size = stacked_flatness(feats, weight, logits, regime.temperature, regime.normalize_features)
            scale = size / sq.clamp_min(1e-12)
        return regime.control_sign * scale * sq
    if regime.reg == "headpull":
        if anchor is None or size is None:
            raise ValueError("headpull needs an anchor and a target gradient norm (size) per member")
        d = weight - anchor.to(weight)
        sq = (d * d).sum((1, 2))
        with torch.no_grad():
            scale = size / (2 * sq.sqrt().clamp_min(1e-12))
        return scale * sq
    raise ValueError(f"no regulariser {regime.reg!r}")


def train_stacked(
    model: StackedMLP,
    data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    num_classes: int,
    regime,
    gens: Sequence[torch.Generator],
    targets: Sequence[Sequence[float] | None] | None = None,
    anchors: torch.Tensor | None = None,
) -> tuple[list[dict[str, list[float]]], list[list[float]], list[list[float]]]:
    """:func:`genlab.studies.grokking.train` for every member at once: ``data`` has a leading member dimension,
    ``gens`` is one batch-order generator per member, ``targets`` the control's per-step sizes per member and
    ``anchors`` (S, k, d) its head anchors (``regime.target_sizes`` / ``regime.anchor`` are not used). Returns
    per member: the logged series, |λ·term| at every step, and (``regime.record_grad``) ‖∇ λ·term‖ at every step."""
    from genlab.studies.grokking import SERIES_KEYS, measure_outputs, regularizer_lambda

    x_tr, y_tr, x_te, y_te = data
    S, k = model.members, num_classes
    if len(gens) != S or x_tr.shape[0] != S:
        raise ValueError(f"{S} members need {S} generators and data with a leading dimension of {S}")
    params = list(model.parameters())
    if regime.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=regime.lr, betas=regime.betas, weight_decay=regime.weight_decay,
                                fused=True)  # fmt: skip
    else:
        opt = torch.optim.SGD(params, lr=regime.lr, momentum=regime.momentum, weight_decay=regime.weight_decay,
                              foreach=True)  # fmt: skip
    warm = max(regime.warmup, 0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
    n = x_tr.shape[1]
    bs = n if regime.batch_size <= 0 else min(regime.batch_size, n)
    series: list[dict[str, list[float]]] = [{key: [] for key in SERIES_KEYS} for _ in range(S)]
    orders = [torch.randperm(n, generator=g).to(x_tr.device) for g in gens]  # shuffles draw on CPU generators
    rows = torch.arange(S, device=x_tr.device)[:, None]
    pos = 0
    t_on: list[int | None] = [None if regime.start_at_mem else 0] * S
    terms = [0.0] * S
    sizes: list[list[float]] = [[] for _ in range(S)]
    grads: list[list[float]] = [[] for _ in range(S)]
    for step in range(regime.steps + 1):
        logging = step % regime.log_every == 0 or step == regime.steps
        if logging:
            with torch.no_grad():
                logits, feats = model.forward_with_features(x_tr)
                test_pred = model.forward_with_features(x_te)[0].argmax(2)
                for s in range(S):
                    m = measure_outputs(logits[s], feats[s], model.head[s], y_tr[s], k)
                    m["param_norm"] = float(sum((p.double() ** 2).sum() for p in model.member_params(s)))
                    m["test_acc"] = float((test_pred[s] == y_te[s]).double().mean())
                    m["step"] = step
                    for key in SERIES_KEYS:
                        if key != "reg_term":
                            series[s][key].append(m[key])
        if step == regime.steps:
            for s in range(S):
                series[s]["reg_term"].append(terms[s])
            break
        if bs == n:
            xb, yb = x_tr, y_tr
        else:
            if pos + bs > n:
                orders, pos = [torch.randperm(n, generator=g).to(x_tr.device) for g in gens], 0
            idx = torch.stack([o[pos : pos + bs] for o in orders])
            pos += bs
            xb, yb = x_tr[rows, idx], y_tr[rows, idx]
        logits, feats = model.forward_with_features(xb)
        ce = F.cross_entropy(logits.reshape(-1, k), yb.reshape(-1), reduction="none").view(S, -1).mean(1)
        loss = ce.sum()
        if any(t is None for t in t_on):
            acc = (logits.argmax(2) == yb).double().mean(1).tolist()
            t_on = [step if t is None and a >= 0.99 else t for t, a in zip(t_on, acc)]  # memorisation
        lams = [regularizer_lambda(regime, step, t) for t in t_on]
        on = [s for s in range(S) if lams[s] > 0]
        terms = [0.0] * S
        if on:
            sel = torch.tensor(on, device=x_tr.device)
            lam = torch.tensor([lams[s] for s in on], dtype=logits.dtype, device=logits.device)
            size = None
            if targets is not None:
                size = torch.tensor([targets[s][step] / lams[s] if targets[s] is not None and step < len(targets[s])
                                     else 0.0 for s in on], dtype=logits.dtype, device=logits.device)  # fmt: skip
            anchor = None if anchors is None else anchors[sel]
            reg = lam * stacked_term(regime, feats[sel], model.head[sel], logits[sel], yb[sel], k, size, anchor)
            loss = loss + reg.sum()
            for s, v in zip(on, reg.detach().tolist()):
                terms[s] = v
            if regime.record_grad:  # same graph, retained: the update below is unchanged by this
                g = torch.autograd.grad(reg.sum(), params, retain_graph=True, allow_unused=True)
                norms = torch.sqrt(sum((gi.double() ** 2).flatten(1).sum(1) for gi in g if gi is not None))
                for s, v in enumerate(norms.tolist()):
                    grads[s].append(v if lams[s] > 0 else 0.0)
        elif regime.record_grad:
            for s in range(S):
                grads[s].append(0.0)
        for s in range(S):
            sizes[s].append(abs(terms[s]))
            if logging:
                series[s]["reg_term"].append(terms[s])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if on and regime.reg == "ascent" and regime.weight_cap > 0:
            with torch.no_grad():
                for s in on:
                    norm = model.head[s].norm()
                    if norm > regime.weight_cap:
                        model.head[s].mul_(regime.weight_cap / norm)
    return series, sizes, grads
