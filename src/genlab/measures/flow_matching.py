"""Closed-form flow matching (Bertrand et al., arXiv 2506.03719).

Path x_t = (1 - t) x0 + t x1 with x0 ~ N(0, I) (t = 0) and x1 ~ data (t = 1). Over a bank of points b_j the
empirical optimal velocity is

    u*(x, t) = sum_j w_j (b_j - x) / (1 - t),   w = softmax_j( -||x - t b_j||^2 / (2 (1 - t)^2) ).

The weights are computed with the one-matmul expansion ||x||^2 - 2t<x, b> + t^2 ||b||^2 (the ||x||^2 term is the
same for every j and drops out of the softmax), in log space, streamed over chunks of the bank with an online
log-sum-exp so memory stays O(batch x chunk) whatever the bank size.

:func:`efm_target` is the Empirical Flow Matching regression target: the same formula over a bank made of the
point x1 that generated x_t plus M - 1 draws from the training set (unbiased for u*, Prop. 2 of the paper;
M = 1 is exactly the conditional target x1 - x0).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

T_MAX = 1.0 - 1e-6


@dataclass(frozen=True)
class VelocityResult:
    """``velocity`` (B, d); ``max_weight`` (B,): the largest softmax weight (1 = a single bank point decides)."""

    velocity: torch.Tensor
    max_weight: torch.Tensor


def _as_time(t: float | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    tt = torch.as_tensor(t, dtype=x.dtype, device=x.device)
    if tt.ndim == 0:
        tt = tt.expand(x.shape[0])
    if tt.shape != (x.shape[0],):
        raise ValueError(f"t must be a scalar or shape ({x.shape[0]},), got {tuple(tt.shape)}")
    if bool(((tt < 0) | (tt >= 1)).any()):
        raise ValueError("t must lie in [0, 1): the closed-form velocity is singular at t = 1")
    return tt


def _bank_logits(x: torch.Tensor, tt: torch.Tensor, bank: torch.Tensor, bank_sq: torch.Tensor) -> torch.Tensor:
    """-(||x - t b||^2 - ||x||^2) / (2 (1 - t)^2) for all pairs: one matmul."""
    sig2 = (1.0 - tt)[:, None] ** 2
    return (2.0 * tt[:, None] * (x @ bank.T) - tt[:, None] ** 2 * bank_sq[None]) / (2.0 * sig2)


def optimal_velocity(
    x: torch.Tensor, t: float | torch.Tensor, bank: torch.Tensor, chunk: int = 4096
) -> VelocityResult:
    """Empirical optimal velocity u*(x, t) over ``bank`` (n, d) for queries ``x`` (B, d); ``t`` scalar or (B,)
    in [0, 1). Streams the bank in chunks of ``chunk`` rows (online softmax), exact up to float rounding."""
    if x.ndim != 2 or bank.ndim != 2 or x.shape[1] != bank.shape[1]:
        raise ValueError(f"x (B, d) and bank (n, d) must share d; got {tuple(x.shape)} and {tuple(bank.shape)}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    tt = _as_time(t, x)
    run_max = torch.full((x.shape[0],), -torch.inf, dtype=x.dtype, device=x.device)
    run_sum = torch.zeros_like(run_max)
    acc = torch.zeros_like(x)
    for s in range(0, bank.shape[0], chunk):
        b = bank[s : s + chunk]
        logits = _bank_logits(x, tt, b, (b * b).sum(1))
        new_max = torch.maximum(run_max, logits.max(1).values)
        scale = torch.exp(run_max - new_max)
        p = torch.exp(logits - new_max[:, None])
        run_sum = run_sum * scale + p.sum(1)
        acc = acc * scale[:, None] + p @ b
        run_max = new_max
    mean_b = acc / run_sum[:, None]
    velocity = (mean_b - x) / (1.0 - tt)[:, None]
    return VelocityResult(velocity, 1.0 / run_sum)


def optimal_velocity_pairwise(x: torch.Tensor, t: float | torch.Tensor, bank: torch.Tensor) -> VelocityResult:
    """Reference implementation without the expansion: a (B, n) matrix of squared distances ||x - t b||^2 (from
    ``torch.cdist`` when t is one scalar, from explicit (B, n, d) differences when t varies per row), then a
    softmax. Same result as :func:`optimal_velocity`; memory O(B n) or O(B n d). For tests and the benchmark."""
    tt = _as_time(t, x)
    if bool((tt == tt[0]).all()):
        d2 = torch.cdist(x, tt[0] * bank).pow(2)
    else:
        d2 = (x[:, None, :] - tt[:, None, None] * bank[None]).pow(2).sum(-1)
    w = torch.softmax(-d2 / (2.0 * (1.0 - tt)[:, None] ** 2), dim=1)
    return VelocityResult((w @ bank - x) / (1.0 - tt)[:, None], w.max(1).values)


def efm_target(
    x_t: torch.Tensor,
    t: torch.Tensor,
    x1: torch.Tensor,
    extra: torch.Tensor | None,
    include_self: bool = True,
    extra_valid: torch.Tensor | None = None,
) -> torch.Tensor:
    """EFM regression target at (x_t, t): the closed-form velocity over the bank {x1[i]} ∪ ``extra`` for row i.

    Shapes: x_t, x1 (..., B, d); t (..., B); ``extra`` (..., K, d) shared by the B rows (K = M - 1 draws from the
    training set; None or K = 0 gives the conditional target (x1 - x_t) / (1 - t) = x1 - x0). Leading dims
    ``...`` batch independent problems (an ensemble of models). ``extra_valid`` (..., K) bool marks usable bank
    columns (members with smaller M). ``include_self=False`` drops x1 from the bank: a biased estimator, kept
    for the unbiasedness test."""
    if x_t.shape != x1.shape or t.shape != x_t.shape[:-1]:
        raise ValueError(f"x_t {tuple(x_t.shape)}, x1 {tuple(x1.shape)} and t {tuple(t.shape)} do not match")
    if bool(((t < 0) | (t >= 1)).any()):
        raise ValueError("t must lie in [0, 1): the closed-form velocity is singular at t = 1")
    sig2 = (1.0 - t) ** 2
    logit_cols: list[torch.Tensor] = []
    if include_self:
        # the diagonal of the one-matmul expansion: 2t<x_t, x1> - t^2 ||x1||^2 (||x_t||^2 drops out)
        logit_cols.append(((2.0 * t * (x_t * x1).sum(-1) - t**2 * (x1 * x1).sum(-1)) / (2.0 * sig2))[..., None])
    has_extra = extra is not None and extra.shape[-2] > 0
    if has_extra:
        cross = x_t @ extra.transpose(-1, -2)  # (..., B, K)
        ex_sq = (extra * extra).sum(-1)[..., None, :]
        lg = (2.0 * t[..., None] * cross - t[..., None] ** 2 * ex_sq) / (2.0 * sig2[..., None])
        if extra_valid is not None:
            lg = lg.masked_fill(~extra_valid[..., None, :], -torch.inf)
        logit_cols.append(lg)
    if not logit_cols:
        raise ValueError("empty bank: include_self=False needs at least one extra sample")
    w = torch.softmax(torch.cat(logit_cols, -1), dim=-1)
    mean_b = torch.zeros_like(x_t)
    col = 0
    if include_self:
        mean_b = mean_b + w[..., :1] * x1
        col = 1
    if has_extra:
        mean_b = mean_b + w[..., col:] @ extra
    return (mean_b - x_t) / (1.0 - t)[..., None]


def target_collapse(
    x1: torch.Tensor, bank: torch.Tensor, ts: list[float] | torch.Tensor, generator: torch.Generator,
    chunk: int = 4096,
) -> dict[str, list[float]]:
    """How deterministic the flow-matching target is along the path. For each t, with pairs (x0 ~ N(0, I),
    x1 rows), x_t = (1 - t) x0 + t x1: the mean largest softmax weight of u*(x_t, t) over ``bank`` and the
    fraction of pairs with cos(u*(x_t, t), x1 - x0) > 0.9. Returns lists aligned with ``ts``."""
    x0 = torch.randn(x1.shape, generator=generator, dtype=x1.dtype)
    maxw, cos_frac = [], []
    for t in [float(v) for v in ts]:
        xt = (1 - t) * x0 + t * x1
        r = optimal_velocity(xt, t, bank, chunk)
        cos = torch.nn.functional.cosine_similarity(r.velocity, x1 - x0, dim=1)
        maxw.append(float(r.max_weight.mean()))
        cos_frac.append(float((cos > 0.9).float().mean()))
    return {"max_weight": maxw, "cos_frac": cos_frac}
