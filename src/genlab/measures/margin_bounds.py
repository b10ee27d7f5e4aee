"""Margin-based generalization bounds for halfspaces (Larsen & Schalburg, arXiv:2502.13692, and predecessors).

Setting (all functions here): a distribution over the unit ball B₂ᵈ × {−1, +1}, a unit vector w, the population
error L_D(w) = P[sign⟨w, x⟩ ≠ y] and the empirical margin loss L_S^γ(w) = |{(x, y) ∈ S : y⟨w, x⟩ ≤ γ}| / n.
Inputs of radius R: replace γ by γ/R (``normalized_margins`` does this); a bias: append a constant feature.

Two kinds of functions:

* **Shapes** (``certified=False``): the theorems state their bounds up to an unspecified universal constant c.
  The functions below take c as a parameter (default 1). The values are the *shape* of each bound: they can be
  compared with one another, but they are **not** valid numerical certificates.
* **Certificates** (``certified=True``): :func:`certified_margin_bound`, the uniform-over-margin Rademacher
  bound with explicit constants (Mohri, Rostamizadeh, Talwalkar, *Foundations of Machine Learning*, 2nd ed.,
  Cor. 5.11). It holds with probability ≥ 1 − δ for every margin at once, so the best margin may be chosen after
  looking at the data.

Outside a theorem's range of γ the shape functions return ``nan`` (never a number that looks like a bound).
All functions broadcast over numpy arrays. L·ln(e/L) is taken as its limit 0 at L = 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

ArrayLike = float | np.ndarray

__all__ = [
    "BestMargin",
    "best_margin",
    "bound_table",
    "certified_margin_bound",
    "classic_hard_margin",
    "classic_soft_margin",
    "clopper_pearson",
    "gkl20_upper",
    "lower_bound",
    "margin_loss",
    "mcallester_upper",
    "normalized_margins",
    "tight_upper",
]


def _check(gamma: ArrayLike, frac: ArrayLike, n: ArrayLike, delta: float) -> tuple[np.ndarray, ...]:
    g = np.asarray(gamma, dtype=float)
    f = np.asarray(frac, dtype=float)
    nn = np.asarray(n, dtype=float)
    if np.any(~(g > 0)) or np.any(g > 1):
        raise ValueError("gamma must lie in (0, 1] (normalize inputs into the unit ball first)")
    if np.any(~((f >= 0) & (f <= 1))):
        raise ValueError("frac (fraction of training points with margin <= gamma) must lie in [0, 1]")
    if np.any(~(nn >= 1)):
        raise ValueError("n (number of training points) must be >= 1")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return g, f, nn


def _lln(frac: np.ndarray) -> np.ndarray:
    """frac · ln(e/frac), with its limit 0 at frac = 0."""
    safe = np.where(frac > 0, frac, 1.0)
    return np.where(frac > 0, frac * np.log(np.e / safe), 0.0)


def _in_domain(g: np.ndarray, nn: np.ndarray) -> np.ndarray:
    return g * g * nn >= 1.0 - 1e-12


def tight_upper(gamma: ArrayLike, frac: ArrayLike, n: ArrayLike, delta: float = 0.05, c: float = 1.0):
    """Larsen & Schalburg 2025, Theorem 2 (shape; not certified).

    With probability ≥ 1 − δ over S ~ Dⁿ, for all unit w and all n^{−1/2} ≤ γ ≤ 1 simultaneously,

        L_D(w) ≤ L + c·( sqrt( L·( ln(e/L)/(γ²n) + ln(e/δ)/n ) ) + ln(eγ²n)/(γ²n) + ln(e/δ)/n ),  L = L_S^γ(w),

    for an unspecified universal constant c. Returns nan where γ < n^{−1/2}.
    """
    g, f, nn = _check(gamma, frac, n, delta)
    g2n = g * g * nn
    ld = np.log(np.e / delta)
    gap = np.sqrt(_lln(f) / g2n + f * ld / nn) + np.log(np.e * g2n) / g2n + ld / nn
    return np.where(_in_domain(g, nn), f + c * gap, np.nan)


def gkl20_upper(gamma: ArrayLike, frac: ArrayLike, n: ArrayLike, delta: float = 0.05, c: float = 1.0):
    """Grønlund, Kamma & Larsen 2020 (ICML, arXiv:2006.02175), the near-tight bound (shape; not certified).

        L_D(w) ≤ L + c·( sqrt( L·( ln n/(γ²n) + ln(e/δ)/n ) ) + ln n/(γ²n) + ln(e/δ)/n ),  n^{−1/2} ≤ γ ≤ 1.

    It exceeds the lower bound by a factor up to ln n / ln(e/L), which Theorem 2 removes.
    """
    g, f, nn = _check(gamma, frac, n, delta)
    g2n = g * g * nn
    ld = np.log(np.e / delta)
    ln_n = np.log(np.maximum(nn, np.e))
    gap = np.sqrt(f * (ln_n / g2n + ld / nn)) + ln_n / g2n + ld / nn
    return np.where(_in_domain(g, nn), f + c * gap, np.nan)


def mcallester_upper(gamma: ArrayLike, frac: ArrayLike, n: ArrayLike, delta: float = 0.05, c: float = 1.0):
    """McAllester 2003 PAC-Bayes margin bound, in the form quoted by Larsen & Schalburg (shape; not certified).

        L_D(w) ≤ L + c·( sqrt(L·ln n/(γ²n)) + ln n/(γ²n) + (ln n + ln(e/δ))/n ).

    The placement of the δ term follows the research brief and is not verified against the original.
    """
    g, f, nn = _check(gamma, frac, n, delta)
    g2n = g * g * nn
    ln_n = np.log(np.maximum(nn, np.e))
    gap = np.sqrt(f * ln_n / g2n) + ln_n / g2n + (ln_n + np.log(np.e / delta)) / nn
    return np.where(_in_domain(g, nn), f + c * gap, np.nan)


def classic_hard_margin(gamma: ArrayLike, n: ArrayLike, delta: float = 0.05, c: float = 1.0):
    """Bartlett & Shawe-Taylor 1999, hard margin (every training point has margin > γ; shape; not certified).

    L_D(w) ≤ c·( ln²n/(γ²n) + ln(e/δ)/n ).
    """
    g, _, nn = _check(gamma, 0.0, n, delta)
    g2n = g * g * nn
    ln_n = np.log(np.maximum(nn, np.e))
    return np.where(_in_domain(g, nn), c * (ln_n**2 / g2n + np.log(np.e / delta) / nn), np.nan)


def classic_soft_margin(gamma: ArrayLike, frac: ArrayLike, n: ArrayLike, delta: float = 0.05, c: float = 1.0):
    """The classic soft-margin (Rademacher, Bartlett & Mendelson 2002) bound (shape; not certified).

        L_D(w) ≤ L + c·( sqrt(1/(γ²n)) + sqrt(ln(e/δ)/n) ).

    Tight for constant L, loose by a square root when L is small.
    """
    g, f, nn = _check(gamma, frac, n, delta)
    gap = np.sqrt(1.0 / (g * g * nn)) + np.sqrt(np.log(np.e / delta) / nn)
    return np.where(_in_domain(g, nn), f + c * gap, np.nan)


def lower_bound(gamma: ArrayLike, frac: ArrayLike, n: ArrayLike, c: float = 1.0):
    """Theorem 1 of Larsen & Schalburg (the GKL'20 lower bound; shape).

    For c·n^{−1/2} < γ < 1/c and 0 ≤ τ ≤ 1 there is a distribution for which, with constant probability, some w has
    L_S^γ(w) ≤ τ and

        L_D(w) ≥ L_S^γ(w) + c·( sqrt(τ ln(e/τ)/(γ²n)) + ln(γ²n)/(γ²n) ).

    Here ``frac`` plays τ and L_S^γ; the value returned is frac + c·(...). nan where γ²n ≤ 1 (ln(γ²n) ≤ 0).
    """
    g, f, nn = _check(gamma, frac, n, 0.5)
    g2n = g * g * nn
    ok = g2n > 1.0
    safe = np.where(ok, g2n, np.e)
    gap = np.sqrt(_lln(f) / safe) + np.log(safe) / safe
    return np.where(ok, f + c * gap, np.nan)


def certified_margin_bound(
    gamma: ArrayLike, frac: ArrayLike, n: ArrayLike, delta: float = 0.05, radius: float = 1.0, norm: float = 1.0
):
    """A valid certificate with explicit constants (certified=True).

    Mohri, Rostamizadeh & Talwalkar, *Foundations of Machine Learning* (2nd ed.), Cor. 5.11: if ‖x‖ ≤ r almost
    surely and ‖w‖ ≤ Λ, then with probability ≥ 1 − δ over S ~ Dⁿ, for every ρ ∈ (0, r] simultaneously,

        P[y⟨w, x⟩ ≤ 0] ≤ R̂_ρ + 4·sqrt(r²Λ²/(ρ²n)) + sqrt(ln log₂(2r/ρ) / n) + sqrt(ln(2/δ)/(2n)),

    where R̂_ρ ≤ ``frac`` (the empirical ρ-margin ramp loss is at most the fraction with margin ≤ ρ).
    Requires 0 < γ ≤ radius; the user is responsible for ‖x‖ ≤ radius holding a priori (not estimated from S).
    """
    g = np.asarray(gamma, dtype=float)
    if np.any(~(g > 0)) or np.any(g > radius):
        raise ValueError(f"gamma must lie in (0, radius={radius}]")
    _, f, nn = _check(np.clip(g / radius, 1e-300, 1.0), frac, n, delta)
    loglog = np.log(np.maximum(np.log2(2.0 * radius / g), 1.0))
    return (
        f
        + 4.0 * np.sqrt(radius**2 * norm**2 / (g * g * nn))
        + np.sqrt(loglog / nn)
        + np.sqrt(np.log(2.0 / delta) / (2.0 * nn))
    )


SHAPES: dict[str, Callable[..., np.ndarray]] = {
    "tight": tight_upper,
    "gkl20": gkl20_upper,
    "mcallester": mcallester_upper,
    "classic_soft": classic_soft_margin,
}


def bound_table(gamma: float, frac: float, n: int, delta: float = 0.05, c: float = 1.0) -> dict[str, dict]:
    """Every bound at one (γ, L_S^γ, n, δ) as ``{name: {"value", "certified", "what"}}`` (the CLI prints it)."""
    rows = {
        "tight (Larsen-Schalburg'25 Thm 2)": (tight_upper(gamma, frac, n, delta, c), False),
        "near-tight (Gronlund-Kamma-Larsen'20)": (gkl20_upper(gamma, frac, n, delta, c), False),
        "McAllester'03": (mcallester_upper(gamma, frac, n, delta, c), False),
        "classic soft margin (Rademacher)": (classic_soft_margin(gamma, frac, n, delta, c), False),
        "lower bound (Thm 1)": (lower_bound(gamma, frac, n, c), False),
        "certified (Mohri et al. Cor 5.11, r=1, Lambda=1)": (certified_margin_bound(gamma, frac, n, delta), True),
    }
    if frac == 0:
        rows["classic hard margin (Bartlett-Shawe-Taylor'99)"] = (classic_hard_margin(gamma, n, delta, c), False)
    return {
        k: {"value": float(v), "certified": cert, "what": "certificate" if cert else f"shape with c={c}"}
        for k, (v, cert) in rows.items()
    }


# -- using the bounds on a trained linear model -------------------------------------------------------


def normalized_margins(
    w: np.ndarray, x: np.ndarray, y: np.ndarray, b: float | None = None, per_point: bool = True
) -> np.ndarray:
    """Margins y⟨w', x'⟩ of a halfspace after mapping the problem into the unit ball.

    x' = [x, 1] (when a bias b is given; w' = [w, b]) divided by ‖x'‖ when ``per_point`` (a fixed per-point
    rescaling: the predicted signs are unchanged and ‖x'‖ = 1 holds a priori, so certificates stay valid), or
    by max‖x'‖ over the given points otherwise (data dependent). w' is divided by ‖w'‖. Labels must be ±1.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.asarray(w, dtype=float).ravel()
    if x.ndim != 2 or x.shape[1] != w.shape[0] or y.shape != (x.shape[0],):
        raise ValueError(f"shapes do not match: x {x.shape}, w {w.shape}, y {y.shape}")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("labels y must be -1 or +1")
    if b is not None:
        x = np.hstack([x, np.ones((x.shape[0], 1))])
        w = np.append(w, b)
    wn = np.linalg.norm(w)
    if wn == 0:
        raise ValueError("w is zero")
    xn = np.linalg.norm(x, axis=1)
    scale = np.where(xn > 0, xn, 1.0) if per_point else max(float(xn.max()), 1e-300)
    return y * (x @ w) / (wn * scale)


def margin_loss(margins: np.ndarray, gamma: ArrayLike) -> np.ndarray:
    """L_S^γ: the fraction of margins ≤ γ, for each γ (vectorized with a sorted search)."""
    m = np.sort(np.asarray(margins, dtype=float))
    return np.searchsorted(m, np.asarray(gamma, dtype=float), side="right") / m.size


@dataclass(frozen=True)
class BestMargin:
    gamma: float
    frac: float
    value: float


def best_margin(
    margins: np.ndarray,
    bound: str | Callable[..., np.ndarray] = "tight",
    delta: float = 0.05,
    c: float = 1.0,
    grid: np.ndarray | None = None,
) -> BestMargin:
    """The margin γ that minimises a bound for one model (all bounds here hold uniformly over γ).

    ``bound`` is "tight", "gkl20", "mcallester", "classic_soft", "certified" or a callable
    (gamma, frac, n, delta) -> value. The default grid is 400 log-spaced γ in [n^{−1/2}, 1] (the theorems' range).
    """
    margins = np.asarray(margins, dtype=float)
    n = margins.size
    if n == 0:
        raise ValueError("no margins given")
    if grid is None:
        grid = np.geomspace(n**-0.5, 1.0, 400)
    grid = np.asarray(grid, dtype=float)
    frac = margin_loss(margins, grid)
    if callable(bound):
        vals = bound(grid, frac, n, delta)
    elif bound == "certified":
        vals = certified_margin_bound(grid, frac, n, delta)
    elif bound in SHAPES:
        vals = SHAPES[bound](grid, frac, n, delta, c)
    else:
        raise ValueError(f"unknown bound {bound!r}; choose from {', '.join([*SHAPES, 'certified'])}")
    vals = np.asarray(vals, dtype=float)
    if not np.any(np.isfinite(vals)):
        raise ValueError("the bound is undefined on the whole grid (n too small for any gamma >= n^-1/2?)")
    i = int(np.nanargmin(vals))
    return BestMargin(float(grid[i]), float(frac[i]), float(vals[i]))


def clopper_pearson(errors: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact two-sided (1 − α) Clopper–Pearson interval for a binomial proportion errors/n."""
    from scipy.stats import beta

    if n < 1 or not 0 <= errors <= n:
        raise ValueError(f"need 0 <= errors <= n and n >= 1, got errors={errors}, n={n}")
    lo = 0.0 if errors == 0 else float(beta.ppf(alpha / 2, errors, n - errors + 1))
    hi = 1.0 if errors == n else float(beta.ppf(1 - alpha / 2, errors + 1, n - errors))
    return lo, hi
