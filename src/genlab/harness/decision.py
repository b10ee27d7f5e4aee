"""The one decision rule for empirical claims: effect, 95 % CI and p over independent units against a margin
declared before the run.

A check hands the per-unit values of its claim (seeds, instances, prompts, pools: independent units) to one of
the tests below, with the claimed direction and margin::

    decide.paired(m["acc_wide"], m["acc_narrow"], above=cfg.min_gain)       # Student-t on the differences
    decide.mean(gaps, below=0.0, method="sign-flip")                          # exact sign-flip test
    decide.two_sample(a, b, above=0.0)                                        # permutation test, unpaired
    decide.proportion(covered, above=0.9, method="wilson")                    # successes out of n
    decide.mean(rel_err, within=(-0.05, 0.05))                                # equivalence (two one-sided tests)
    decide.exact(bound - measured, above=0.0)                                 # a deterministic computation

The verdict follows from the test, never from the check:

* ``reproduced`` iff the two-sided ``1 - alpha`` CI lies wholly on the claimed side of the margin (inside the
  band for ``within``) and, once the study's claims are all decided, the Holm-adjusted p over its empirical
  claims is ``<= alpha`` (:func:`apply_holm`);
* ``not reproduced`` iff the CI lies wholly on the other side (wholly outside the band);
* ``inconclusive`` otherwise, and whenever fewer than :data:`MIN_UNITS` units are valid (except ``exact``).

``p`` is one-sided, for the null "the effect is not on the claimed side" (for ``within``: the larger of the two
one-sided p-values, TOST). A unit whose value is NaN or missing (a diverged seed) is a *failed unit*: it is left
out and counted in ``failed``, and the note says so; it never raises. Every method calls ``scipy.stats``
(``ttest_1samp``, ``permutation_test``, ``bootstrap``, ``binomtest``); the sign-flip and permutation CIs are
the inversions of those tests.

The record of a test (``Verdict.test``, ``claims.json``'s ``"test"``) keeps the units, so the runs of
``genlab reproduce --seeds N`` are combined by pooling their units and testing again (:func:`pool`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from genlab.harness.io import fmt_number, plain

Direction = Literal["above", "below", "within"]
Method = Literal["t", "sign-flip", "permutation", "bootstrap", "wilson", "clopper-pearson", "exact"]
METHODS: tuple[str, ...] = ("t", "sign-flip", "permutation", "bootstrap", "wilson", "clopper-pearson", "exact")
ALPHA = 0.05
MIN_UNITS = 5
_N_RESAMPLES = 9_999
_SEED = 0


@dataclass(frozen=True)
class ClaimTest:
    """One claim's test: what was tested (method, direction, margin), on how many units, and what came out."""

    method: str
    direction: str
    margin: float | tuple[float, float]
    n: int
    effect: float
    ci: tuple[float, float]
    p: float
    alpha: float = ALPHA
    failed: int = 0
    units: Any = None  # the valid unit values (a list; {"a": [...], "b": [...]} for two samples)
    p_holm: float | None = None
    gate: str = ""  # why the check withheld the decision (a failed precondition); the verdict is inconclusive

    @property
    def side(self) -> bool | None:
        """Where the CI lies: True on the claimed side, False wholly on the other, None straddling the margin."""
        lo, hi = self.ci
        if not (math.isfinite(lo) or math.isfinite(hi)) or math.isnan(lo) or math.isnan(hi):
            return None
        if self.direction == "above":
            return True if lo > self.margin else False if hi < self.margin else None
        if self.direction == "below":
            return True if hi < self.margin else False if lo > self.margin else None
        band_lo, band_hi = self.margin  # type: ignore[misc]
        if band_lo < lo and hi < band_hi:
            return True
        return False if hi < band_lo or lo > band_hi else None

    @property
    def held(self) -> bool | None:
        """The verdict this test gives: None when gated, too few units, or when Holm's correction withdraws it."""
        if self.gate or (self.method != "exact" and self.n < MIN_UNITS):
            return None
        side = self.side
        if side is True and self.p_holm is not None and not self.p_holm <= self.alpha:
            return None
        return side

    @property
    def why_undecided(self) -> str:
        if self.gate:
            return self.gate
        if self.method != "exact" and self.n < MIN_UNITS:
            return f"{self.n} valid unit(s) < {MIN_UNITS}: at most inconclusive"
        if self.side is True and self.p_holm is not None and not self.p_holm <= self.alpha:
            return f"Holm-adjusted p = {self.p_holm:.3g} > {self.alpha:g} over the study's empirical claims"
        if self.side is None:
            return "the CI straddles the margin"
        return ""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "method": self.method,
            "n": self.n,
            "effect": self.effect,
            "ci": list(self.ci),
            "margin": list(self.margin) if isinstance(self.margin, tuple) else self.margin,
            "direction": self.direction,
            "p": self.p,
            "alpha": self.alpha,
            "failed": self.failed,
        }
        if self.p_holm is not None:
            out["p_holm"] = self.p_holm
        if self.gate:
            out["gate"] = self.gate
        out["units"] = self.units
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClaimTest:
        """Read a stored test; a malformed one raises ValueError (the store reports the run as damaged)."""
        try:
            margin = d["margin"]
            margin = (float(margin[0]), float(margin[1])) if isinstance(margin, list | tuple) else float(margin)
            lo, hi = d["ci"]
            method, direction = str(d["method"]), str(d["direction"])
            if method not in METHODS or direction not in ("above", "below", "within"):
                raise ValueError(f"unknown method or direction {method!r}/{direction!r}")
            return cls(
                method, direction, margin, int(d["n"]), _float(d["effect"]), (_float(lo), _float(hi)),
                _float(d["p"]), float(d.get("alpha", ALPHA)), int(d.get("failed", 0)), d.get("units"),
                None if d.get("p_holm") is None else _float(d["p_holm"]), str(d.get("gate", "")),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a stored claim test: {exc}") from None

    @property
    def target(self) -> str:
        """The claimed side as people read it: ``> 0.02``, ``< 0`` or ``in [-0.05, 0.05]``."""
        op = {"above": ">", "below": "<"}.get(self.direction)
        return f"{op} {fmt_number(self.margin)}" if op else "in [{}, {}]".format(*map(fmt_number, self.margin))

    def summary(self) -> str:
        """``effect 0.031 [0.012, 0.050] > 0 (t, n=10, p=0.004)`` for tables."""
        target = self.target
        p = f"p={fmt_number(self.p, 2)}" + (f", Holm {fmt_number(self.p_holm, 2)}" if self.p_holm is not None else "")
        ci = f"[{fmt_number(self.ci[0])}, {fmt_number(self.ci[1])}]"
        return f"{fmt_number(self.effect)} {ci} {target} ({self.method}, n={self.n}, {p})"


@dataclass(frozen=True)
class Evidence:
    """What a claim check saw: ``held`` (None = inconclusive), the numbers it was decided on, and for an
    empirical claim the :class:`ClaimTest` the verdict follows from."""

    held: bool | None
    numbers: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    test: ClaimTest | None = None

    def withheld(self, reason: str) -> Evidence:
        """The same test, its decision withheld (a failed precondition): inconclusive, with the reason."""
        if self.test is None:
            return Evidence(None, self.numbers, "; ".join(n for n in (reason, self.note) if n))
        return Evidence(None, self.numbers, "; ".join(n for n in (reason, self.note) if n),
                        replace(self.test, gate=reason))  # fmt: skip

    def with_numbers(self, **numbers: Any) -> Evidence:
        return replace(self, numbers={**self.numbers, **{k: plain(v) for k, v in numbers.items()}})


# -- the tests ---------------------------------------------------------------------------------------------------


def mean(
    units: Iterable[Any],
    *,
    above: float | None = None,
    below: float | None = None,
    within: tuple[float, float] | None = None,
    method: Literal["t", "sign-flip", "bootstrap"] = "t",
    alpha: float = ALPHA,
    note: str = "",
    **numbers: Any,
):
    """The mean of per-unit values against a margin: Student-t (default), exact sign-flip, or BCa bootstrap."""
    direction, margin = _direction(above, below, within)
    values, failed = _valid(units)
    test = _mean_test(values, direction, margin, method, alpha, failed)
    return _evidence(test, note, numbers)


def paired(
    a: Iterable[Any],
    b: Iterable[Any],
    *,
    above: float | None = None,
    below: float | None = None,
    within: tuple[float, float] | None = None,
    method: Literal["t", "sign-flip", "bootstrap"] = "t",
    alpha: float = ALPHA,
    note: str = "",
    **numbers: Any,
):
    """The mean paired difference ``a - b`` over units measured under both arms (same seeds, same instances)."""
    a_arr, b_arr = _floats(a), _floats(b)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1:
        raise ValueError(f"paired() needs two 1-D sequences of equal length, got {a_arr.shape} and {b_arr.shape}")
    return mean(a_arr - b_arr, above=above, below=below, within=within, method=method, alpha=alpha, note=note,
                **numbers)  # fmt: skip


def two_sample(
    a: Iterable[Any],
    b: Iterable[Any],
    *,
    above: float | None = None,
    below: float | None = None,
    within: tuple[float, float] | None = None,
    method: Literal["permutation", "t"] = "permutation",
    alpha: float = ALPHA,
    note: str = "",
    **numbers: Any,
):
    """``mean(a) - mean(b)`` for two independent samples: a permutation test (default) or Welch's t."""
    direction, margin = _direction(above, below, within)
    (va, fa), (vb, fb) = _valid(a), _valid(b)
    test = _two_sample_test(va, vb, direction, margin, method, alpha, fa + fb)
    return _evidence(test, note, numbers)


def proportion(
    successes: Iterable[Any] | tuple[int, int],
    *,
    above: float | None = None,
    below: float | None = None,
    within: tuple[float, float] | None = None,
    method: Literal["wilson", "clopper-pearson"] = "wilson",
    alpha: float = ALPHA,
    note: str = "",
    **numbers: Any,
):
    """A proportion of successes (one bool per unit) against a margin: exact binomial p, Wilson or
    Clopper-Pearson interval (``binomtest``)."""
    direction, margin = _direction(above, below, within)
    values, failed = _valid(successes)
    if np.any((values != 0) & (values != 1)):
        raise ValueError("proportion() takes one success (True/1) or failure (False/0) per unit")
    test = _proportion_test(values, direction, margin, method, alpha, failed)
    return _evidence(test, note, numbers)


def exact(
    value: Any,
    *,
    above: float | None = None,
    below: float | None = None,
    within: tuple[float, float] | None = None,
    note: str = "",
    **numbers: Any,
):
    """A deterministic computation with no sampling (a bound evaluated exactly, a count): its value against the
    margin, CI = [value, value], p = 0 on the claimed side and 1 otherwise."""
    direction, margin = _direction(above, below, within)
    values, failed = _valid([value])
    test = _exact_test(values, direction, margin, failed)
    return _evidence(test, note, numbers)


def all_of(*parts, note: str = "", **numbers: Any):
    """An intersection of claims ("A beats B and A beats C"): reproduced iff every part is, not reproduced iff
    any part is not; the recorded test is the binding one (the part with the largest p; no multiplicity
    correction is needed for an intersection-union test)."""
    tested = [e for e in parts if e.test is not None]
    if len(tested) != len(parts):
        raise ValueError("all_of() takes the evidence of decide.* tests")
    helds = [e.held for e in parts]
    held = False if False in helds else True if all(h is True for h in helds) else None
    binding = max(tested, key=lambda e: (e.held is not False, e.test.p))
    if False in helds:
        binding = next(e for e in tested if e.held is False)
    merged = {k: v for e in parts for k, v in e.numbers.items()}
    merged.update(numbers)
    notes = "; ".join(n for n in [note, *(e.note for e in parts)] if n)
    return Evidence(held, merged, notes, binding.test)


# -- combining -------------------------------------------------------------------------------------------------


def apply_holm(tests: Sequence[ClaimTest | None], alpha: float = ALPHA) -> list[ClaimTest | None]:
    """Holm-adjust the p-values of a study's empirical claims (None entries are passed through)."""
    idx = [i for i, t in enumerate(tests) if t is not None and math.isfinite(t.p)]
    adjusted = holm_adjusted([tests[i].p for i in idx])  # type: ignore[union-attr]
    out = list(tests)
    for i, p in zip(idx, adjusted, strict=True):
        out[i] = replace(tests[i], p_holm=p)  # type: ignore[arg-type]
    return out


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (monotone, capped at 1): reject where the adjusted p <= alpha."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.empty(p.size)
    running = 0.0
    for rank, i in enumerate(np.argsort(p, kind="stable")):
        running = max(running, min(1.0, (p.size - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def pool(tests: Sequence[ClaimTest]) -> ClaimTest:
    """One test over the units of several runs (the runs of ``--seeds N``), by the same method and margin.

    Exact computations from several run seeds are samples of the seed: they are tested again by Student-t over
    the runs' values."""
    first = tests[0]
    if any((t.method, t.direction, t.margin) != (first.method, first.direction, first.margin) for t in tests):
        raise ValueError("runs tested this claim with different methods or margins; they cannot be pooled")
    failed = sum(t.failed for t in tests)
    if first.method in ("permutation", "t") and isinstance(first.units, Mapping):
        a = np.concatenate([_floats(t.units["a"]) for t in tests])
        b = np.concatenate([_floats(t.units["b"]) for t in tests])
        return _two_sample_test(a, b, first.direction, first.margin, first.method, first.alpha, failed)
    values = np.concatenate([_floats(t.units) for t in tests])
    if first.method in ("wilson", "clopper-pearson"):
        return _proportion_test(values, first.direction, first.margin, first.method, first.alpha, failed)
    method = "t" if first.method == "exact" else first.method
    return _mean_test(values, first.direction, first.margin, method, first.alpha, failed)


# -- internals ---------------------------------------------------------------------------------------------------


def _mean_test(values, direction, margin, method, alpha, failed) -> ClaimTest:
    from scipy import stats

    n = values.size
    effect = float(values.mean()) if n else math.nan
    lo = hi = math.nan
    p = math.nan
    if method not in ("t", "sign-flip", "bootstrap"):
        raise ValueError(f"unknown method {method!r} for a mean; use t, sign-flip or bootstrap")
    if n >= 2 and np.ptp(values) == 0:  # no spread: the CI is the value itself
        lo = hi = effect
        p = 0.0 if _on_side(effect, direction, margin) else 1.0
    elif n >= 2 and method == "t":
        lo, hi = stats.ttest_1samp(values, 0.0).confidence_interval(1 - alpha)
        p = _one_sided(lambda m, alt: stats.ttest_1samp(values, m, alternative=alt).pvalue, direction, margin)
    elif n >= 2 and method == "sign-flip":
        lo, hi = _invert(lambda m, alt: _sign_flip_p(values - m, alt), effect, float(np.ptp(values)), alpha)
        p = _one_sided(lambda m, alt: _sign_flip_p(values - m, alt), direction, margin)
    elif n >= 2:
        res = stats.bootstrap((values,), np.mean, confidence_level=1 - alpha, n_resamples=_N_RESAMPLES,
                              method="BCa", rng=np.random.default_rng(_SEED))  # fmt: skip
        lo, hi = res.confidence_interval
        boot = res.bootstrap_distribution
        p = _one_sided(lambda m, alt: (np.sum(boot <= m if alt == "greater" else boot >= m) + 1) / (boot.size + 1),
                       direction, margin)  # fmt: skip
    return ClaimTest(method, direction, margin, n, effect, (float(lo), float(hi)), float(p), alpha, failed,
                     values.tolist())  # fmt: skip


def _two_sample_test(a, b, direction, margin, method, alpha, failed) -> ClaimTest:
    from scipy import stats

    effect = float(a.mean() - b.mean()) if a.size and b.size else math.nan
    n = int(min(a.size, b.size))
    lo = hi = p = math.nan
    if method not in ("permutation", "t"):
        raise ValueError(f"unknown method {method!r} for two samples; use permutation or t")
    if a.size >= 2 and b.size >= 2:
        if method == "t":
            lo, hi = stats.ttest_ind(a, b, equal_var=False).confidence_interval(1 - alpha)
            p = _one_sided(lambda m, alt: stats.ttest_ind(a - m, b, equal_var=False, alternative=alt).pvalue,
                           direction, margin)  # fmt: skip
        else:
            def p_at(m, alt):
                return stats.permutation_test((a - m, b), _mean_diff, vectorized=True, n_resamples=_N_RESAMPLES,
                                              alternative=alt, rng=np.random.default_rng(_SEED)).pvalue  # fmt: skip
            lo, hi = _invert(p_at, effect, float(np.ptp(np.concatenate([a, b]))), alpha)
            p = _one_sided(p_at, direction, margin)
    return ClaimTest(method, direction, margin, n, effect, (float(lo), float(hi)), float(p), alpha, failed,
                     {"a": a.tolist(), "b": b.tolist()})  # fmt: skip


def _proportion_test(values, direction, margin, method, alpha, failed) -> ClaimTest:
    from scipy import stats

    if method not in ("wilson", "clopper-pearson"):
        raise ValueError(f"unknown method {method!r} for a proportion; use wilson or clopper-pearson")
    n, k = int(values.size), int(values.sum())
    if n == 0:
        return ClaimTest(method, direction, margin, 0, math.nan, (math.nan, math.nan), math.nan, alpha, failed, [])
    ci = stats.binomtest(k, n).proportion_ci(1 - alpha, "wilson" if method == "wilson" else "exact")

    def p_at(m, alt):
        if not 0 < m < 1:  # a margin at the boundary: the claimed side is impossible or certain
            return 1.0 if (alt == "greater") == (m >= 1) else 0.0
        return stats.binomtest(k, n, m, alternative=alt).pvalue

    p = _one_sided(p_at, direction, margin)
    return ClaimTest(method, direction, margin, n, k / n, (float(ci.low), float(ci.high)), float(p), alpha,
                     failed, values.astype(int).tolist())  # fmt: skip


def _exact_test(values, direction, margin, failed) -> ClaimTest:
    if values.size == 0:
        return ClaimTest("exact", direction, margin, 0, math.nan, (math.nan, math.nan), math.nan, ALPHA, failed, [])
    v = float(values[0])
    return ClaimTest("exact", direction, margin, 1, v, (v, v), 0.0 if _on_side(v, direction, margin) else 1.0,
                     ALPHA, failed, [v])  # fmt: skip


def _evidence(test: ClaimTest, note: str, numbers: Mapping[str, Any]):
    notes = [note] if note else []
    if test.failed:
        notes.append(f"{test.failed} unit(s) failed (NaN or missing: diverged) and are left out")
    return Evidence(test.held, {k: plain(v) for k, v in numbers.items()}, "; ".join(notes), test)


def _direction(above, below, within) -> tuple[str, float | tuple[float, float]]:
    given = [(name, v) for name, v in (("above", above), ("below", below), ("within", within)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of above=, below= or within=")
    name, value = given[0]
    if name == "within":
        lo, hi = (float(x) for x in value)
        if not lo < hi:
            raise ValueError(f"within=({lo}, {hi}) is not a band")
        return name, (lo, hi)
    return name, float(value)


def _valid(units: Iterable[Any]) -> tuple[np.ndarray, int]:
    """Finite values as floats, and how many units failed (None, NaN or infinite: a diverged seed)."""
    raw = list(units.tolist() if hasattr(units, "tolist") else units)
    values = np.array([np.nan if u is None else float(u) for u in raw], dtype=float).reshape(-1)
    ok = np.isfinite(values)
    return values[ok], int((~ok).sum())


def _floats(x: Any) -> np.ndarray:
    raw = x.tolist() if hasattr(x, "tolist") else list(x)
    return np.array([np.nan if u is None else u for u in raw], dtype=float)


def _float(v: Any) -> float:
    return math.nan if v is None else float(v)


def _on_side(v: float, direction: str, margin) -> bool:
    if direction == "above":
        return v > margin
    if direction == "below":
        return v < margin
    return margin[0] < v < margin[1]


def _one_sided(p_at, direction: str, margin) -> float:
    """One-sided p of the null "not on the claimed side"; for a band, the larger of the two (TOST)."""
    if direction == "above":
        return float(p_at(margin, "greater"))
    if direction == "below":
        return float(p_at(margin, "less"))
    return max(float(p_at(margin[0], "greater")), float(p_at(margin[1], "less")))


def _sign_flip_p(d: np.ndarray, alternative: str) -> float:
    from scipy import stats

    return stats.permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                                  n_resamples=_N_RESAMPLES, alternative=alternative,
                                  rng=np.random.default_rng(_SEED)).pvalue  # fmt: skip


def _invert(p_at, centre: float, width: float, alpha: float) -> tuple[float, float]:
    """The CI of a shift-invariant test by inversion: the margins m at which neither one-sided test rejects at
    alpha/2, found by bisection on each side of the estimate. A test that cannot reject at all with these units
    (a sign-flip over 5 units has no p below 1/32) gives an infinite bound."""
    width = width or 1.0

    def bound(alt: str, sign: float) -> float:
        inside, step = centre, width
        outside = centre - sign * step
        while p_at(outside, alt) > alpha / 2:  # widen until the test rejects
            step *= 2
            if step > 1e6 * width:
                return -sign * math.inf
            inside, outside = outside, centre - sign * step
        while abs(inside - outside) > 1e-6 * width:
            mid = (inside + outside) / 2
            if p_at(mid, alt) > alpha / 2:
                inside = mid
            else:
                outside = mid
        return inside

    return bound("greater", 1.0), bound("less", -1.0)


def _mean_diff(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def mean_se(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean (nan when n < 2) and n of some values, ignoring NaNs: a *description* for
    tables and error bars (sweep cells, figures, summaries), never a decision (claims use the tests above)."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return math.nan, math.nan, 0
    se = float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else math.nan
    return float(arr.mean()), se, int(arr.size)


def t_halfwidth(se: Any, n: int, level: float = 0.95) -> Any:
    """Half-width of the Student-t interval of a mean with standard error ``se`` over ``n`` units (nan when n < 2):
    the error bar a figure should draw, so it matches the claims' t intervals instead of a fixed ± 2 s.e."""
    from scipy import stats

    return np.asarray(se, dtype=float) * (stats.t.ppf(0.5 + level / 2, n - 1) if n > 1 else math.nan)


def spread_from_ci(lo: float, hi: float, n: int, level: float = 0.95) -> float:
    """The per-unit standard deviation behind a Student-t confidence interval [lo, hi] of a mean over n units: what
    a power calculation reads off a pilot's reported CI."""
    from scipy import stats

    return (hi - lo) / 2 * math.sqrt(n) / float(stats.t.ppf(0.5 + level / 2, n - 1))


def units_for_power(sd: float, effect: float, power: float = 0.8, level: float = 0.95, n_max: int = 10_000) -> int:
    """Smallest number of units n at which the ``level`` Student-t CI of a mean lies wholly on one side of a margin
    with probability ≥ ``power``, when the true mean lies ``effect`` > 0 beyond the margin on that side and the
    units spread with s.d. ``sd`` (noncentral t). Plans a run before it is made: "reproduced" (true mean above the
    margin) and "not reproduced" (below it) need the same n at the same distance."""
    from scipy import stats

    if effect <= 0 or sd <= 0:
        raise ValueError("effect and sd must be > 0")
    for n in range(2, n_max + 1):
        crit = stats.t.ppf(0.5 + level / 2, n - 1)
        if stats.nct.sf(crit, n - 1, effect * math.sqrt(n) / sd) >= power:
            return n
    raise ValueError(f"more than {n_max} units needed")
