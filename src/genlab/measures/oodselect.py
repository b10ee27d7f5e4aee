"""OODSelect: find OOD subsets on which in-distribution accuracy predicts *lower* OOD accuracy.

Salaudeen et al., *Aggregation Hides Out-of-Distribution Generalization Failures from Spurious Correlations*
(arXiv:2510.24884). Inputs are a model pool's correctness matrix ``correct`` (models x OOD examples, 0/1) and the
models' in-distribution accuracies ``id_acc`` (measured on held-out ID data). Everything is on the probit scale:

    a_m(s) = (correct_m . s) / sum_j s_j                  soft subset accuracy of model m, s = sigmoid(theta)
    rho(s) = Pearson_m( probit(a_m(s)), probit(id_acc_m) )
    L(theta) = rho(s) + lambda_t * softplus(k - sum_j s_j)
    lambda_t = lambda * (1 - cos(pi * min(t / T_anneal, 1))) / 2          (cosine warm-up of the size penalty)

Adam on theta (full batch over the training models, cosine-annealed learning rate), hard selection = top-k of theta,
validation correlation (on held-out *models*) picks the checkpoint and the hyper-parameters, and the claim is read
on a third set of test models. ``loss="r2"`` minimises rho^2 instead (subsets with no relation).

Public API: :func:`probit`, :func:`subset_correlation`, :func:`split_models`, :func:`soft_select`,
:func:`greedy_path`, :func:`random_subset_correlations`, :func:`run_oodselect` (all of it, returning an
:class:`OODSelectReport`) and :func:`scatter_plot`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

PROBIT_EPS = 1e-6
VAR_EPS = 1e-6
AOTL, AOTIL = 0.3, -0.3  # the paper's thresholds: r > 0.3 accuracy-on-the-line, r < -0.3 on the inverse line


# ---------------------------------------------------------------------------------------------------------------
# probit-scale correlation
# ---------------------------------------------------------------------------------------------------------------
def probit(p: Any, eps: float = PROBIT_EPS) -> Any:
    """Phi^{-1}(p) = sqrt(2) erfinv(2p - 1) with p clamped to [eps, 1 - eps]; numpy arrays or torch tensors."""
    if hasattr(p, "detach"):
        import torch

        return math.sqrt(2.0) * torch.erfinv(2.0 * p.clamp(eps, 1.0 - eps) - 1.0)
    from scipy.special import erfinv

    return math.sqrt(2.0) * erfinv(2.0 * np.clip(np.asarray(p, dtype=np.float64), eps, 1.0 - eps) - 1.0)


def _pearson_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of every column of ``a`` (M, B) with ``b`` (M,), variances + VAR_EPS."""
    a = a - a.mean(0, keepdims=True)
    b = b - b.mean()
    return (a * b[:, None]).sum(0) / np.sqrt(((a * a).sum(0) + VAR_EPS) * ((b * b).sum() + VAR_EPS))


def _pearson_torch(a: Any, b: Any) -> Any:
    """Torch twin of :func:`_pearson_np` (differentiable)."""
    a = a - a.mean(0, keepdim=True)
    b = b - b.mean()
    return (a * b[:, None]).sum(0) / (((a * a).sum(0) + VAR_EPS) * ((b * b).sum() + VAR_EPS)).sqrt()


def _as_masks(subsets: Any, n: int) -> np.ndarray:
    """(B, N) float masks from a bool mask, a (B, N) bool array or a list of index arrays."""
    if isinstance(subsets, np.ndarray) and subsets.dtype == bool:
        masks = subsets[None] if subsets.ndim == 1 else subsets
        if masks.shape[1] != n:
            raise ValueError(f"subset masks have {masks.shape[1]} columns but there are {n} examples")
        return masks.astype(np.float64)
    if isinstance(subsets, np.ndarray) and subsets.ndim == 1:
        subsets = [subsets]
    masks = np.zeros((len(subsets), n))
    for b, idx in enumerate(subsets):
        masks[b, np.asarray(idx, dtype=np.int64)] = 1.0
    return masks


def subset_correlation(correct: np.ndarray, id_acc: np.ndarray, subsets: Any = None) -> np.ndarray | float:
    """Probit-scale Pearson r between ID accuracy and accuracy on each subset, across the models (rows).

    ``subsets``: None (the full OOD set), a bool mask (N,), a bool array (B, N) or a list of index arrays.
    Returns a float for a single subset, else an array (B,). Needs at least 3 models.
    """
    correct = np.asarray(correct, dtype=np.float64)
    id_acc = np.asarray(id_acc, dtype=np.float64)
    if correct.shape[0] != id_acc.shape[0]:
        raise ValueError(f"correct has {correct.shape[0]} models (rows) but id_acc has {id_acc.shape[0]}")
    if correct.shape[0] < 3:
        raise ValueError(f"a correlation across models needs at least 3 models, got {correct.shape[0]}")
    single = subsets is None or (isinstance(subsets, np.ndarray) and subsets.ndim == 1)
    masks = np.ones((1, correct.shape[1])) if subsets is None else _as_masks(subsets, correct.shape[1])
    size = masks.sum(1)
    if np.any(size == 0):
        raise ValueError("an empty subset has no accuracy")
    acc = correct @ masks.T / size
    r = _pearson_np(probit(acc), probit(id_acc))
    return float(r[0]) if single else r


def bootstrap_subset_r(
    correct: np.ndarray, id_acc: np.ndarray, idx: Any, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of one subset's probit r when the models (rows) are resampled with replacement."""
    correct = np.asarray(correct, dtype=np.float64)
    pa = probit(correct[:, np.asarray(idx)].mean(1))
    pi = probit(np.asarray(id_acc, dtype=np.float64))
    rows = np.random.default_rng(seed).integers(0, len(pa), size=(n_boot, len(pa)))
    a = pa[rows] - pa[rows].mean(1, keepdims=True)
    b = pi[rows] - pi[rows].mean(1, keepdims=True)
    r = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + VAR_EPS) * ((b * b).sum(1) + VAR_EPS))
    alpha = (1 - level) / 2
    return float(np.quantile(r, alpha)), float(np.quantile(r, 1 - alpha))


def random_subset_correlations(
    correct: np.ndarray, id_acc: np.ndarray, k: int, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Probit r of ``n_draws`` uniformly random k-subsets (without replacement), vectorized over draws."""
    n = correct.shape[1]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    order = np.argsort(rng.random((n_draws, n)), axis=1)[:, :k]
    masks = np.zeros((n_draws, n), dtype=bool)
    np.put_along_axis(masks, order, True, axis=1)
    return np.atleast_1d(subset_correlation(correct, id_acc, masks))


def exact_select(
    correct: np.ndarray, id_acc: np.ndarray, k: int, max_subsets: int = 2_000_000, chunk: int = 50_000
) -> tuple[np.ndarray, float]:
    """The k-subset with the lowest probit r, by enumerating every subset (exact; for small N only: at most
    ``max_subsets`` of them). Returns (indices, r)."""
    from itertools import combinations, islice

    n = correct.shape[1]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    if math.comb(n, k) > max_subsets:
        raise ValueError(f"C({n}, {k}) = {math.comb(n, k)} subsets exceed max_subsets={max_subsets}")
    best_r, best = math.inf, np.arange(k)
    combos = combinations(range(n), k)
    while (block := np.array(list(islice(combos, chunk)), dtype=np.int64).reshape(-1, k)).size:
        masks = np.zeros((len(block), n), dtype=bool)
        np.put_along_axis(masks, block, True, axis=1)
        r = np.atleast_1d(subset_correlation(correct, id_acc, masks))
        i = int(np.argmin(r))
        if r[i] < best_r:
            best_r, best = float(r[i]), block[i]
    return best, best_r


# ---------------------------------------------------------------------------------------------------------------
# held-out split of the models
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSplit:
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def split_models(
    n_models: int,
    fractions: Sequence[float] = (0.6, 0.2, 0.2),
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> ModelSplit:
    """Seeded train/val/test split of model indices (default 60/20/20, as in the paper).

    ``groups`` (one id per model, e.g. the training run a checkpoint came from) keeps every group on one side,
    so checkpoints of one run never leak between training and test models. Each part is sorted.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not math.isclose(sum(fractions), 1.0, abs_tol=1e-6):
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {tuple(fractions)}")
    groups = np.arange(n_models) if groups is None else np.asarray(groups)
    if groups.shape != (n_models,):
        raise ValueError(f"groups must have one entry per model ({n_models}), got shape {groups.shape}")
    uniq = np.unique(groups)
    rng = np.random.default_rng(seed)
    uniq = uniq[rng.permutation(len(uniq))]
    n_test = round(fractions[2] * len(uniq))
    n_val = round(fractions[1] * len(uniq))
    parts = uniq[:n_test], uniq[n_test : n_test + n_val], uniq[n_test + n_val :]
    test, val, train = (np.flatnonzero(np.isin(groups, p)) for p in parts)
    return ModelSplit(train=train, val=val, test=test)


# ---------------------------------------------------------------------------------------------------------------
# soft (gradient-based) selection
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Selection:
    """One hard-selected subset: example indices (best top-k by validation), and how it was found."""

    k: int
    indices: np.ndarray
    val_r: float
    train_r: float
    hparams: dict[str, float] = field(default_factory=dict)
    step: int = 0


def soft_select(
    correct_train: np.ndarray,
    acc_train: np.ndarray,
    ks: Sequence[int],
    correct_val: np.ndarray | None = None,
    acc_val: np.ndarray | None = None,
    *,
    lrs: Sequence[float] = (0.1,),
    lams: Sequence[float] = (1.0,),
    steps: int = 1500,
    t_anneal: int = 300,
    t_max: int = 100,
    eta_min: float = 1e-3,
    loss: Literal["r", "r2"] = "r",
    eval_every: int = 25,
    seed: int = 0,
) -> list[Selection]:
    """OODSelect's soft subset search, batched over every (k, lr, lambda) combination at once.

    For each k the returned :class:`Selection` is the hard top-k mask with the lowest validation objective (r, or
    r^2 for ``loss="r2"``) over all checkpoints (every ``eval_every`` steps) and hyper-parameters; with no
    validation models the training objective is used. Adam is written out so each row has its own learning rate.
    """
    import torch

    x = torch.as_tensor(np.asarray(correct_train, dtype=np.float32))
    n = x.shape[1]
    ks = [int(k) for k in ks]
    if any(not 1 <= k <= n for k in ks):
        raise ValueError(f"every k must be in [1, {n}], got {ks}")
    if loss not in ("r", "r2"):
        raise ValueError(f"loss must be 'r' or 'r2', got {loss!r}")
    py = probit(torch.as_tensor(np.asarray(acc_train, dtype=np.float32)))
    has_val = correct_val is not None and acc_val is not None and len(acc_val) >= 3
    if has_val:
        xv = torch.as_tensor(np.asarray(correct_val, dtype=np.float32))
        pyv = probit(torch.as_tensor(np.asarray(acc_val, dtype=np.float32)))
    else:
        xv, pyv = x, py

    combos = list(itertools.product(ks, lrs, lams))
    b = len(combos)
    kk = torch.tensor([c[0] for c in combos], dtype=torch.float32)
    lr0 = torch.tensor([c[1] for c in combos], dtype=torch.float32)[:, None]
    lam = torch.tensor([c[2] for c in combos], dtype=torch.float32)
    gen = torch.Generator().manual_seed(int(seed))
    theta = torch.randn(b, n, generator=gen).requires_grad_(True)
    mom = torch.zeros(b, n)
    var = torch.zeros(b, n)
    beta1, beta2, adam_eps = 0.9, 0.999, 1e-8
    kmax = max(ks)
    rank_ok = torch.arange(kmax)[None, :] < kk[:, None]  # (b, kmax): which of the top-kmax slots belong to row b

    def hard_objective(th: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        top = th.topk(kmax, dim=1).indices
        masks = torch.zeros(b, n)
        masks.scatter_(1, top, rank_ok.float())
        acc = xv @ masks.T / kk
        r = _pearson_torch(probit(acc), pyv)
        return (r if loss == "r" else r * r), masks

    best_obj = torch.full((b,), float("inf"))
    best_masks = torch.zeros(b, n)
    best_step = torch.zeros(b, dtype=torch.long)
    for t in range(1, steps + 1):
        s = torch.sigmoid(theta)
        size = s.sum(1)
        acc = x @ s.T / size
        r = _pearson_torch(probit(acc), py)
        obj = r if loss == "r" else r * r
        lam_t = lam * 0.5 * (1.0 - math.cos(math.pi * min(t / max(t_anneal, 1), 1.0)))
        total = (obj + lam_t * torch.nn.functional.softplus(kk - size)).sum()
        (grad,) = torch.autograd.grad(total, theta)
        with torch.no_grad():
            lr_t = eta_min + (lr0 - eta_min) * 0.5 * (1.0 + math.cos(math.pi * t / t_max))
            mom.mul_(beta1).add_(grad, alpha=1 - beta1)
            var.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            mhat = mom / (1 - beta1**t)
            vhat = var / (1 - beta2**t)
            theta -= lr_t * mhat / (vhat.sqrt() + adam_eps)
            if t % eval_every == 0 or t == steps:
                hobj, masks = hard_objective(theta)
                better = hobj < best_obj
                best_obj = torch.where(better, hobj, best_obj)
                best_masks[better] = masks[better]
                best_step[better] = t

    # per k: the best (lr, lambda) by the validation objective
    train_r = _pearson_torch(probit(x @ best_masks.T / kk), py)
    val_r = _pearson_torch(probit(xv @ best_masks.T / kk), pyv)
    out = []
    for k in ks:
        rows = [i for i, c in enumerate(combos) if c[0] == k]
        i = min(rows, key=lambda j: float(best_obj[j]))
        out.append(
            Selection(
                k=k,
                indices=np.flatnonzero(best_masks[i].numpy() > 0.5),
                val_r=float(val_r[i]),
                train_r=float(train_r[i]),
                hparams={"lr": combos[i][1], "lam": combos[i][2]},
                step=int(best_step[i]),
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------------------
# greedy baseline
# ---------------------------------------------------------------------------------------------------------------
def greedy_path(correct: np.ndarray, id_acc: np.ndarray, k_max: int, seed_size: int = 10) -> np.ndarray:
    """Greedy forward selection: the order in which examples join; the subset of size k is ``order[:k]``.

    Starts from the ``seed_size`` examples whose correctness is most negatively correlated with probit(ID
    accuracy), then repeatedly adds the example that makes the subset's probit r lowest (vectorized over all
    candidates, O(M N) per step).
    """
    x = np.asarray(correct, dtype=np.float64)
    n = x.shape[1]
    if not 1 <= k_max <= n:
        raise ValueError(f"k_max must be in [1, {n}], got {k_max}")
    py = probit(np.asarray(id_acc, dtype=np.float64))
    seed_size = max(1, min(seed_size, k_max))
    single = _pearson_np(x, py)
    single = np.where(x.std(0) > 0, single, np.inf)  # constant columns carry no signal
    order = list(np.argsort(single, kind="stable")[:seed_size])
    chosen = np.zeros(n, dtype=bool)
    chosen[order] = True
    sums = x[:, order].sum(1)
    for size in range(seed_size, k_max):
        cand = (sums[:, None] + x) / (size + 1)
        r = _pearson_np(probit(cand), py)
        r[chosen] = np.inf
        j = int(np.argmin(r))
        order.append(j)
        chosen[j] = True
        sums += x[:, j]
    return np.asarray(order, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------------------
# the whole tool
# ---------------------------------------------------------------------------------------------------------------
def resolve_ks(ks: Sequence[float], n: int) -> list[int]:
    """Subset sizes: integers as given, fractions in (0, 1) as round(fraction * n); sorted, unique."""
    out = []
    for k in ks:
        if isinstance(k, float) and 0.0 < k < 1.0:
            v = max(1, round(k * n))
        elif float(k).is_integer() and 1 <= k <= n:
            v = int(k)
        else:
            raise ValueError(f"k={k!r} is neither a fraction in (0, 1) nor an integer in [1, {n}]")
        out.append(v)
    return sorted(set(out))


@dataclass
class OODSelectReport:
    """Everything the tool computes. Correlations are probit-scale Pearson r; *test* = held-out models."""

    n_models: int
    n_examples: int
    split: ModelSplit
    r_full: dict[str, float]
    ks: list[int]
    selections: list[Selection]
    r_selected: dict[int, dict[str, float]]
    r_greedy: dict[int, dict[str, float]]
    greedy_indices: dict[int, np.ndarray]
    r_random: dict[int, dict[str, float]]
    warnings: list[str]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (subset indices included)."""
        per_k = []
        for sel in self.selections:
            k = sel.k
            row: dict[str, Any] = {
                "k": k,
                "fraction": k / self.n_examples,
                "selected": {**self.r_selected[k], "hparams": sel.hparams, "step": sel.step},
                "random": self.r_random[k],
                "indices": sel.indices.tolist(),
            }
            if k in self.r_greedy:
                row["greedy"] = self.r_greedy[k]
                row["greedy_indices"] = self.greedy_indices[k].tolist()
            per_k.append(row)
        return {
            "n_models": self.n_models,
            "n_examples": self.n_examples,
            "n_train_models": len(self.split.train),
            "n_val_models": len(self.split.val),
            "n_test_models": len(self.split.test),
            "split": {"train": self.split.train.tolist(), "val": self.split.val.tolist(),
                      "test": self.split.test.tolist()},
            "r_full": self.r_full,
            "per_k": per_k,
            "warnings": self.warnings,
        }


def _r_on_splits(correct: np.ndarray, id_acc: np.ndarray, split: ModelSplit, idx: Any) -> dict[str, float]:
    out = {}
    for name in ("train", "val", "test"):
        rows = getattr(split, name)
        if len(rows) >= 3:
            out[name] = float(subset_correlation(correct[rows], id_acc[rows], idx))
    return out


def run_oodselect(
    correct: np.ndarray,
    id_acc: np.ndarray,
    ks: Sequence[float] = (0.05, 0.1, 0.25, 0.5, 0.75),
    *,
    fractions: Sequence[float] = (0.6, 0.2, 0.2),
    groups: np.ndarray | None = None,
    seed: int = 0,
    lrs: Sequence[float] = (0.03, 0.1, 0.3),
    lams: Sequence[float] = (0.1, 1.0, 10.0),
    steps: int = 1500,
    t_anneal: int = 300,
    t_max: int = 100,
    eta_min: float = 1e-3,
    loss: Literal["r", "r2"] = "r",
    n_random: int = 100,
    greedy: bool = True,
) -> OODSelectReport:
    """Run OODSelect end to end on a correctness matrix (M models x N OOD examples) and ID accuracies (M,).

    Splits the models (train/val/test), selects subsets on the training models with the soft search (and the
    greedy baseline), and reports probit r on every split for the full OOD set, each selected subset, the greedy
    subset and ``n_random`` random subsets of the same size (mean, sd, fraction above the 0.3 AoTL threshold).
    """
    correct, id_acc = validate_inputs(correct, id_acc)
    m, n = correct.shape
    warnings = []
    if m < 60:
        warnings.append(f"only {m} models: held-out correlations on ~{round(0.2 * m)} test models are noisy (< 60)")
    split = split_models(m, fractions, seed=seed, groups=groups)
    if len(split.test) < 3 or len(split.train) < 3:
        raise ValueError(
            f"{m} models leave {len(split.train)} training and {len(split.test)} test models; need >= 3 each"
        )
    kk = resolve_ks(ks, n)
    tr, va = split.train, split.val
    sels = soft_select(
        correct[tr], id_acc[tr], kk,
        correct[va] if len(va) >= 3 else None, id_acc[va] if len(va) >= 3 else None,
        lrs=lrs, lams=lams, steps=steps, t_anneal=t_anneal, t_max=t_max, eta_min=eta_min, loss=loss, seed=seed,
    )
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x0D5E]))
    r_full = _r_on_splits(correct, id_acc, split, None)
    r_sel, r_rand, r_greedy, g_idx = {}, {}, {}, {}
    order = greedy_path(correct[tr], id_acc[tr], max(kk)) if greedy and loss == "r" else None
    te = split.test
    for sel in sels:
        r_sel[sel.k] = _r_on_splits(correct, id_acc, split, sel.indices)
        rr = random_subset_correlations(correct[te], id_acc[te], sel.k, n_random, rng)
        r_rand[sel.k] = {"mean": float(rr.mean()), "sd": float(rr.std()), "frac_aotl": float(np.mean(rr > AOTL))}
        if order is not None:
            g_idx[sel.k] = np.sort(order[: sel.k])
            r_greedy[sel.k] = _r_on_splits(correct, id_acc, split, g_idx[sel.k])
    return OODSelectReport(m, n, split, r_full, kk, sels, r_sel, r_greedy, g_idx, r_rand, warnings)


def validate_inputs(correct: Any, id_acc: Any) -> tuple[np.ndarray, np.ndarray]:
    """Check shapes and ranges; returns float arrays. Raises ValueError with one clear sentence."""
    correct = np.asarray(correct)
    id_acc = np.asarray(id_acc, dtype=np.float64).reshape(-1) if np.ndim(id_acc) else np.asarray([id_acc])
    if correct.ndim != 2:
        raise ValueError(f"the correctness matrix must be 2-D (models x OOD examples), got shape {correct.shape}")
    if correct.shape[0] != id_acc.shape[0]:
        raise ValueError(
            f"the correctness matrix has {correct.shape[0]} models (rows) but there are {id_acc.shape[0]} ID accuracies"
        )
    correct = correct.astype(np.float64)
    if not np.all(np.isfinite(correct)) or not np.all(np.isin(correct, (0.0, 1.0))):
        raise ValueError("the correctness matrix must contain only 0/1 (or true/false) entries")
    if not np.all(np.isfinite(id_acc)) or np.any((id_acc < 0) | (id_acc > 1)):
        raise ValueError("ID accuracies must be numbers in [0, 1]")
    return correct, id_acc


# ---------------------------------------------------------------------------------------------------------------
# figure
# ---------------------------------------------------------------------------------------------------------------
def scatter_plot(
    report: OODSelectReport,
    correct: np.ndarray,
    id_acc: np.ndarray,
    path: Path,
    ks: Sequence[int] | None = None,
    title: str = "",
    seed: int = 0,
) -> Path:
    """Probit-axis scatter of held-out models: ID accuracy vs accuracy on the full set, the selected subset and
    one random subset of the same size, one panel per k (at most four)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    correct = np.asarray(correct, dtype=np.float64)
    ks = list(ks or report.ks)[:4]
    te = report.split.test
    py = probit(id_acc[te])
    rng = np.random.default_rng(seed)
    fig, axes = plt.subplots(1, len(ks), figsize=(3.3 * len(ks), 3.2), squeeze=False)
    by_k = {s.k: s for s in report.selections}
    for ax, k in zip(axes[0], ks):
        rand = rng.permutation(report.n_examples)[:k]
        series = [
            ("full set", np.arange(report.n_examples), "tab:gray"),
            (f"random {k}", rand, "tab:blue"),
            (f"OODSelect {k}", by_k[k].indices, "tab:red"),
        ]
        for label, idx, color in series:
            px = probit(correct[np.ix_(te, idx)].mean(1))
            r = float(subset_correlation(correct[te], id_acc[te], idx))
            ax.scatter(py, px, s=9, color=color, alpha=0.7, label=f"{label}: r={r:+.2f}")
            if np.ptp(py) > 0:
                a, c = np.polyfit(py, px, 1)
                xs = np.linspace(py.min(), py.max(), 2)
                ax.plot(xs, a * xs + c, color=color, lw=1)
        ax.set_title(f"k = {k} ({k / report.n_examples:.0%} of OOD)", fontsize=9)
        ax.set_xlabel("probit(ID accuracy)", fontsize=8)
        ax.legend(fontsize=6, loc="best")
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("probit(OOD accuracy)", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
