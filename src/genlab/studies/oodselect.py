"""OODSelect study: accuracy-on-the-line holds on a full OOD set but breaks on selected subsets.

Salaudeen et al., *Aggregation Hides Out-of-Distribution Generalization Failures from Spurious Correlations*,
arXiv:2510.24884 (NeurIPS 2025). A pool of small models (linear, 1- and 2-hidden-layer MLPs of widths 16-256,
L2, data fractions, colour-randomisation rates that set how much each model relies on a planted spurious colour,
several checkpoints per run) is trained on spurious-feature digits (:func:`genlab.data.shifts.spurious_digits`).
The OOD set hides a reversed subgroup. The tool :mod:`genlab.measures.oodselect` then selects subsets on 60% of
the *runs* and every correlation in the claims is read on held-out runs.

The independent pools (each with its null twin and all its selections) run on ``workers`` spawned processes, one
torch thread each; a pool trains in shards (one per architecture), each shard all its models at once as a batched
ensemble. The pool is cached on disk under
``cache_dir`` (default: the run directory) in a file named by the hash of the pool's config and seed.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register

# ---------------------------------------------------------------------------------------------------------------
# the model pool
# ---------------------------------------------------------------------------------------------------------------
FAMILIES = ("linear", "mlp1", "mlp2")


@dataclass(frozen=True)
class PoolConfig:
    runs: int = 100
    checkpoints: tuple[int, ...] = (100, 300)
    batch: int = 64
    lr: float = 1e-2
    widths: tuple[int, ...] = (16, 32, 64)
    pixel_noise: float = 0.7
    p_neutral: float = 0.85  # < 0: the colour channel is absent on neutral OOD examples
    spurious_scale: float = 2.0
    seed: int = 0
    ood_mix: tuple[float, float, float] = (0.6, 0.25, 0.15)  # neutral, reversed (planted), covariate

    def key(self) -> str:
        payload = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


def draw_runs(pc: PoolConfig) -> list[dict[str, Any]]:
    """Per-run hyper-parameters (seeded): family, width, L2, data fraction and colour-randomisation rate q."""
    rng = np.random.default_rng(np.random.SeedSequence([pc.seed, 0xB001]))
    runs = []
    for i in range(pc.runs):
        family = FAMILIES[i % len(FAMILIES)]
        runs.append(
            {
                "run": i,
                "family": family,
                "width": 0 if family == "linear" else int(rng.choice(pc.widths)),
                "l2": float(rng.choice([0.0, 1e-4, 1e-3])),
                "frac": float(rng.choice([0.5, 0.75, 1.0])),
                "q": float(rng.uniform(0.0, 1.0)),  # probability that the colour is replaced by a random one
                "seed": int(rng.integers(2**31)),
            }
        )
    return runs


def _shards(runs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    by: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["family"], r["width"]), []).append(r)
    return [by[k] for k in sorted(by)]


def train_shard(
    runs: list[dict[str, Any]], data: dict[str, np.ndarray], pc: PoolConfig, device: str = "cpu"
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Train a shard of same-architecture models as one batched ensemble (bmm over models).

    Each model has its own init, data subset (fraction ``frac`` of the training set), L2 and colour-randomisation
    rate ``q`` (per example and step the colour one-hot is replaced by a uniformly random class with
    probability q, so q sets how predictive - and so how relied upon - the colour is in that model's training).
    Returns (run ids, correct (B, C, N_ood) bool at each checkpoint, ID accuracy (B, C)). Trains on ``device``;
    every random draw comes from a CPU generator, so a seed gives the same pool on any device up to rounding.
    """
    import torch

    from genlab.harness.torch_setup import setup_torch

    setup_torch(1)
    b = len(runs)
    family, width = runs[0]["family"], runs[0]["width"]
    xtr, ytr, xid, yid, xood, yood = (
        torch.as_tensor(data[key], device=device) for key in ("x_train", "y_train", "x_id", "y_id", "x_ood", "y_ood")
    )
    n, d = xtr.shape
    n_core, k = int(data["n_core"]), int(data["n_classes"])
    gen = torch.Generator().manual_seed(int(runs[0]["seed"]))
    sizes = [d] + ([width] if family == "mlp1" else [width, width] if family == "mlp2" else []) + [k]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        w = (torch.rand(b, fan_in, fan_out, generator=gen) * 2 - 1).mul_(bound)
        params.append(w.to(device).requires_grad_(True))
        params.append(torch.zeros(b, 1, fan_out, device=device, requires_grad=True))
    opt = torch.optim.Adam(params, lr=pc.lr)
    l2 = torch.tensor([r["l2"] for r in runs], device=device)
    q = torch.tensor([r["q"] for r in runs], device=device)[:, None]
    sub = torch.stack([torch.randperm(n, generator=gen) for _ in range(b)]).to(device)  # model i: sub[i, :n_i]
    n_sub = torch.tensor([max(k, round(r["frac"] * n)) for r in runs], device=device)[:, None]
    onehot = torch.eye(k, device=device) * float(data["spurious_scale"])

    def forward(x: torch.Tensor) -> torch.Tensor:  # x (b, m, d) -> logits (b, m, k)
        h = x
        for i in range(0, len(params), 2):
            h = torch.baddbmm(params[i + 1], h, params[i])
            if i + 2 < len(params):
                h = torch.relu(h)
        return h

    def evaluate() -> tuple[np.ndarray, np.ndarray]:
        with torch.no_grad():
            acc_id = (forward(xid.expand(b, -1, -1)).argmax(-1) == yid).float().mean(1)
            cor = forward(xood.expand(b, -1, -1)).argmax(-1) == yood
        return cor.cpu().numpy(), acc_id.cpu().numpy()

    cors, accs = [], []
    last = max(pc.checkpoints)
    for step in range(1, last + 1):
        pos = (torch.rand(b, pc.batch, generator=gen).to(device) * n_sub).long()
        idx = sub.gather(1, pos)  # (b, batch)
        xb = xtr[idx].clone()
        swap = torch.rand(b, pc.batch, generator=gen).to(device) < q
        rand_col = onehot[torch.randint(0, k, (b, pc.batch), generator=gen).to(device)]
        xb[..., n_core:] = torch.where(swap[..., None], rand_col, xb[..., n_core:])
        logits = forward(xb)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, k), ytr[idx].reshape(-1), reduction="none")
        reg = sum((p * p).sum((1, 2)) for p in params[0::2])
        loss = (ce.reshape(b, -1).mean(1) + l2 * reg).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step in pc.checkpoints:
            c, a = evaluate()
            cors.append(c)
            accs.append(a)
    return [r["run"] for r in runs], np.stack(cors, 1), np.stack(accs, 1)


def _train_shard_job(job: tuple[list[dict[str, Any]], dict[str, np.ndarray], PoolConfig, str]) -> Any:
    return train_shard(*job)


def build_pool(
    pc: PoolConfig, map_jobs: Any = None, cache_dir: Path | None = None, log: Any = None, device: str = "cpu"
) -> dict[str, np.ndarray]:
    """Train (or load from cache) the model pool. Returns arrays: correct (M, N) bool, id_acc (M,), run (M,) group
    ids, step (M,), q (M,) colour-randomisation rate, group_ood (N,) and the run table as JSON."""
    from genlab.data.shifts import spurious_digits

    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"oodselect_pool_{pc.key()}.npz"
        if path.exists():
            with np.load(path, allow_pickle=False) as f:
                if log:
                    log(f"model pool loaded from cache {path}")
                return {k: f[k] for k in f.files}
    sd = spurious_digits(seed=pc.seed, pixel_noise=pc.pixel_noise, spurious_scale=pc.spurious_scale,
                         p_neutral=None if pc.p_neutral < 0 else pc.p_neutral, ood_mix=tuple(pc.ood_mix))
    data = {
        "x_train": sd.x_train, "y_train": sd.y_train, "x_id": sd.x_id, "y_id": sd.y_id,
        "x_ood": sd.x_ood, "y_ood": sd.y_ood, "n_core": np.int64(sd.n_core), "n_classes": np.int64(sd.n_classes),
        "spurious_scale": np.float64(pc.spurious_scale),
    }
    runs = draw_runs(pc)
    shards = _shards(runs)
    jobs = [(shard, data, pc, device) for shard in shards]
    results = map_jobs(_train_shard_job, jobs) if map_jobs else [_train_shard_job(j) for j in jobs]
    ids = np.concatenate([np.asarray(r[0]) for r in results])
    cor = np.concatenate([r[1] for r in results])  # (runs, C, N)
    acc = np.concatenate([r[2] for r in results])  # (runs, C)
    order = np.argsort(ids)
    ids, cor, acc = ids[order], cor[order], acc[order]
    n_c = len(pc.checkpoints)
    qs = np.array([runs[i]["q"] for i in ids])
    pool = {
        "correct": cor.reshape(-1, cor.shape[-1]),
        "id_acc": acc.reshape(-1),
        "run": np.repeat(ids, n_c),
        "step": np.tile(np.asarray(sorted(pc.checkpoints)), len(ids)),
        "q": np.repeat(qs, n_c),
        "group_ood": sd.group_ood,
        "misleading_ood": sd.misleading_ood,
        "runs_json": np.asarray(json.dumps(runs)),
    }
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".tmp.npz")
        np.savez_compressed(tmp, **pool)
        tmp.replace(path)
    return pool


# ---------------------------------------------------------------------------------------------------------------
# the study
# ---------------------------------------------------------------------------------------------------------------
def _seed_rows(m: Any) -> list[dict[str, Any]]:
    return m["seeds"]


def _small_ks(m: Any) -> list[int]:
    """Indices of subset sizes at or below the planted subgroup's size."""
    return [i for i, f in enumerate(m["k_fractions"]) if f <= m["planted_fraction"] + 1e-9]


def _claim_full(m: Any, cfg):
    rs = [s["r_full_test"] for s in _seed_rows(m)]
    return decide.mean(rs, above=cfg.r_on_line, r_full_test=rs)


def _claim_selected(m: Any, cfg):
    small = _small_ks(m)
    worst = [max(s["r_selected_test"][i] for i in small) for s in _seed_rows(m)]
    return decide.mean(worst, below=cfg.r_below_line, max_r_selected_test_up_to_planted=worst,
                       ks=[m["ks"][i] for i in small])


def _claim_random(m: Any, cfg):
    lo = [min(s["r_random_mean"]) for s in _seed_rows(m)]
    return decide.mean(lo, above=cfg.r_on_line, min_mean_r_random=lo)


def _claim_precision(m: Any, cfg):
    small = _small_ks(m)
    enr = [min(s["precision"][i] for i in small) / m["planted_fraction"] for s in _seed_rows(m)]
    return decide.mean(enr, above=cfg.min_enrichment, min_enrichment=enr, base_rate=m["planted_fraction"])


def _null_control(cor: np.ndarray, acc: np.ndarray, fractions: list[float], groups: np.ndarray, seed: int,
                  cfg: Any, rng: np.random.Generator) -> list[float]:
    """OODSelect on the same pool with every OOD column shuffled across models (nothing to find): the held-out r
    of its subsets at the given sizes. A selection that overfits the training models would look reversed here."""
    from genlab.measures.oodselect import run_oodselect

    if not fractions:
        return []
    rep = run_oodselect(rng.permuted(cor, axis=0), acc, fractions, groups=groups, seed=seed, lrs=cfg.lrs,
                        lams=cfg.lams, steps=cfg.steps, n_random=1, greedy=False)
    return [rep.r_selected[k]["test"] for k in rep.ks]


def _soft_vs_exact(cor: np.ndarray, acc: np.ndarray, cfg: Any, rng: np.random.Generator, seed: int) -> dict:
    """How far the soft search is from the optimum: on ``exact_problems`` random sub-problems of ``exact_n`` OOD
    examples (selection models only), the soft search's best k-subset r (selected on the same models) against the
    exact minimum over all C(exact_n, exact_k) subsets, found by enumeration."""
    from genlab.measures.oodselect import exact_select, random_subset_correlations, soft_select

    soft, best, rand = [], [], []
    for _ in range(cfg.exact_problems):
        cols = np.sort(rng.choice(cor.shape[1], cfg.exact_n, replace=False))
        sub = cor[:, cols]
        (sel,) = soft_select(sub, acc, [cfg.exact_k], lrs=cfg.lrs, lams=cfg.lams, steps=cfg.steps, seed=seed)
        soft.append(float(sel.train_r))
        best.append(exact_select(sub, acc, cfg.exact_k)[1])
        rand.append(float(np.mean(random_subset_correlations(sub, acc, cfg.exact_k, 200, rng))))
    return {"n": cfg.exact_n, "k": cfg.exact_k, "r_soft": soft, "r_exact": best, "r_random_mean": rand}


def _claim_null(m: Any, cfg):
    nulls = [s["r_null_selected_test"] for s in _seed_rows(m)]
    if not all(nulls):
        return evidence(None, note="no subset size at or below the planted fraction")
    lowest = [min(n) for n in nulls]
    return decide.mean(lowest, above=cfg.r_below_line, min_r_null_selected_test=lowest)


def _claim_null_pool(m: Any, cfg):
    """On pools trained with nothing planted (no reversed subgroup), the lowest held-out r of OODSelect's subsets
    at the planted pool's small sizes, over pools: above r_below_line means the main claim fails there."""
    nulls = [s.get("r_null_pool_selected_test") for s in _seed_rows(m)]
    if not all(nulls):
        return evidence(None, note="the null pool is off (null_pool = False) or no subset size is small enough")
    lowest = [min(n) for n in nulls]
    return decide.mean(lowest, above=cfg.r_below_line, min_r_null_pool_selected_test=lowest,
                       r_full_null_pool_test=[s["r_full_null_pool_test"] for s in _seed_rows(m)])


def _claim_beats_greedy(m: Any, cfg):
    small = _small_ks(m)
    diffs = [float(np.mean([s["r_selected_test"][i] - s["r_greedy_test"][i] for i in small])) for s in _seed_rows(m)]
    return decide.mean(diffs, below=cfg.greedy_margin, mean_r_selected_minus_greedy=float(np.mean(diffs)),
                       per_seed=diffs)


def _pool_job(job: dict[str, Any]) -> dict[str, Any]:
    """One independent pool (and its null twin): train or load both, then every split's selections and controls.
    Seeds every draw from the job's seeds, so the result does not depend on which process runs it. The
    descriptive soft-vs-exact sub-problem (no claim reads it) runs in pool 0's first split only."""
    from genlab.data.shifts import REVERSED
    from genlab.harness.torch_setup import setup_torch
    from genlab.measures.oodselect import bootstrap_subset_r, run_oodselect, subset_correlation

    setup_torch(1)  # one thread: extra OpenMP threads only spin on the shared cores
    cfg, ps, cache, device = job["cfg"], job["ps"], Path(job["cache"]), job["device"]
    log: list[str] = []
    pc = PoolConfig(runs=cfg.runs, checkpoints=tuple(sorted(cfg.checkpoints)), pixel_noise=cfg.pixel_noise,
                    p_neutral=cfg.p_neutral, spurious_scale=cfg.spurious_scale, lr=cfg.lr, seed=job["pool_seed"])
    pool = build_pool(pc, cache_dir=cache, log=log.append, device=device)
    cor, acc, grp = pool["correct"].astype(np.float64), pool["id_acc"], pool["group_ood"]
    null_pool = None
    if cfg.null_pool:  # the same pool config and seed with nothing planted: no reversed OOD subgroup
        neutral, _, covariate = pc.ood_mix
        null_pool = build_pool(replace(pc, ood_mix=(neutral + pc.ood_mix[1], 0.0, covariate)), cache_dir=cache,
                               log=log.append, device=device)
    rev = grp == REVERSED
    n = cor.shape[1]
    meta = {  # descriptive: does colour reliance (low q) trade reversed-subgroup accuracy for ID accuracy?
        "n_models": int(cor.shape[0]), "n_runs": int(len(np.unique(pool["run"]))), "n_examples": int(n),
        "id_acc_min": float(acc.min()), "id_acc_max": float(acc.max()),
        "ood_acc_mean": float(cor.mean()), "r_reversed_all_models": float(subset_correlation(cor, acc, rev)),
        "corr_q_id_acc": float(np.corrcoef(pool["q"], acc)[0, 1]),
    }
    log.append(f"pool {ps}: {cor.shape[0]} models x {n} OOD examples; ID acc {acc.min():.2f}-{acc.max():.2f}")
    rows, first, scatter = [], None, None
    for ss, seeds in enumerate(job["splits"]):
        seed = seeds["seed"]
        rep = run_oodselect(cor, acc, cfg.k_fractions, groups=pool["run"], seed=seed, lrs=cfg.lrs,
                            lams=cfg.lams, steps=cfg.steps, n_random=cfg.n_random)
        r2 = run_oodselect(cor, acc, cfg.k_fractions[:3], groups=pool["run"], seed=seed, lrs=cfg.lrs,
                           lams=cfg.lams, steps=cfg.steps, n_random=1, loss="r2", greedy=False)
        small = [f for f in cfg.k_fractions if f <= float(rev.mean()) + 1e-9]
        null = _null_control(cor, acc, small, pool["run"], seed, cfg, np.random.default_rng(seeds["null_seed"]))
        null_sel, null_full = [], None
        if null_pool is not None and small:
            nrep = run_oodselect(null_pool["correct"].astype(np.float64), null_pool["id_acc"], small,
                                 groups=null_pool["run"], seed=seed, lrs=cfg.lrs, lams=cfg.lams,
                                 steps=cfg.steps, n_random=1, greedy=False)
            null_sel, null_full = [nrep.r_selected[k]["test"] for k in nrep.ks], nrep.r_full["test"]
        exact = None
        if ps == 0 and ss == 0:
            exact = _soft_vs_exact(cor[rep.split.train], acc[rep.split.train], cfg,
                                   np.random.default_rng(seeds["exact_seed"]), seed)
        te = rep.split.test
        cis = [bootstrap_subset_r(cor[te], acc[te], s.indices, seed=seed) for s in rep.selections]
        mis = pool["misleading_ood"]
        row = {
            "pool": ps, "split": ss,
            "r_full_test": rep.r_full["test"], "r_full_train": rep.r_full["train"],
            "r_selected_test": [rep.r_selected[k]["test"] for k in rep.ks],
            "r_selected_test_ci95": [list(ci) for ci in cis],
            "r_null_selected_test": null,
            "r_null_pool_selected_test": null_sel,
            "r_full_null_pool_test": null_full,
            "r_selected_val": [rep.r_selected[k].get("val", float("nan")) for k in rep.ks],
            "r_selected_train": [rep.r_selected[k]["train"] for k in rep.ks],
            "r_greedy_test": [rep.r_greedy[k]["test"] for k in rep.ks],
            "r_random_mean": [rep.r_random[k]["mean"] for k in rep.ks],
            "r_random_sd": [rep.r_random[k]["sd"] for k in rep.ks],
            "r_reversed_test": float(subset_correlation(cor[te], acc[te], rev)),
            "r2_selected_test": [r2.r_selected[k]["test"] for k in r2.ks],
            "precision": [float(rev[s.indices].mean()) for s in rep.selections],
            "recall": [float(rev[s.indices].sum() / max(rev.sum(), 1)) for s in rep.selections],
            "precision_misleading": [float(mis[s.indices].mean()) for s in rep.selections],
            "greedy_precision": [float(rev[rep.greedy_indices[k]].mean()) for k in rep.ks],
            "hparams": [s.hparams for s in rep.selections],
            "exact": exact,
            "n_test_models": len(te),
        }
        rows.append(row)
        log.append(f"pool {ps} split {ss}: r_full={row['r_full_test']:+.2f} selected="
                   + " ".join(f"{r:+.2f}" for r in row["r_selected_test"])
                   + " random=" + " ".join(f"{r:+.2f}" for r in row["r_random_mean"]))
        if ss == 0:
            first = rep.to_dict()
            rng = np.random.default_rng(seeds["scatter_seed"])
            scatter = {
                "id_acc": acc[te],
                "full": cor[te].mean(1),
                "selected": {str(s.k): cor[np.ix_(te, s.indices)].mean(1) for s in rep.selections},
                "random": {str(k): cor[np.ix_(te, rng.permutation(n)[:k])].mean(1) for k in rep.ks},
            }
    return {"meta": meta, "rows": rows, "first": first, "scatter": scatter, "log": log,
            "planted": float(np.mean(grp == REVERSED)), "misleading": float(np.mean(pool["misleading_ood"]))}


@register
class OODSelectStudy(Study):
    name = "oodselect"
    paper = Paper(
        "Aggregation Hides Out-of-Distribution Generalization Failures from Spurious Correlations",
        "arXiv:2510.24884",
        "Salaudeen, Zhang, Alhamoud, Beery, Ghassemi",
    )
    summary = (
        "A pool of small digit classifiers shows accuracy-on-the-line on a full OOD set, yet OODSelect finds "
        "subsets (enriched in a planted reversed-spurious subgroup) where held-out models fall on the inverse line."
    )
    accelerated = True  # the model pool trains on ctx.device; the subset search is small and runs on the CPU

    @dataclass
    class Config:
        runs: int = 100  # training runs; x len(checkpoints) models
        checkpoints: tuple[int, ...] = (100, 300)
        pixel_noise: float = 0.7
        p_neutral: float = 0.85  # P(colour = label) on neutral OOD examples; < 0: colour absent there
        spurious_scale: float = 2.0  # magnitude of the colour one-hot (larger = learned faster)
        lr: float = 1e-2  # Adam learning rate of the pool
        pool_seeds: int = 5  # independent pools (data + models): the units of every claim
        null_pool: bool = True  # also train each pool's twin with nothing planted (no reversed OOD subgroup)
        split_seeds: int = 1  # model splits (and selection inits) per pool
        k_fractions: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 0.75)
        steps: int = 800
        lrs: tuple[float, ...] = (0.03, 0.3)
        lams: tuple[float, ...] = (0.3, 3.0)
        n_random: int = 100
        workers: int = 2
        cache_dir: str = ""  # "" = the run directory
        # claim thresholds (fixed before the runs)
        r_on_line: float = 0.3  # probit correlation that counts as "on the line"
        r_below_line: float = -0.5  # ... as "below the line" (a reversed trend)
        min_enrichment: float = 2.0  # precision / base rate of the planted subgroup
        greedy_margin: float = 0.05  # how much less negative than greedy OODSelect may be
        exact_problems: int = 1  # small sub-problems per split solved exactly (enumeration) to measure the soft search
        exact_n: int = 20
        exact_k: int = 5

        def validate(self) -> None:
            if self.runs < 10:
                raise ValueError("runs must be >= 10 (the split needs >= 3 test runs)")
            if not self.checkpoints or min(self.checkpoints) < 1:
                raise ValueError("checkpoints must be positive step counts")
            if not all(0 < f < 1 for f in self.k_fractions):
                raise ValueError("k_fractions must lie in (0, 1)")
            if not 1 <= self.exact_k < self.exact_n <= 26 or self.exact_problems < 0:
                raise ValueError("need 1 <= exact_k < exact_n <= 26 (enumerated exactly) and exact_problems >= 0")
            if self.pool_seeds < 1 or self.split_seeds < 1:
                raise ValueError("pool_seeds and split_seeds must be >= 1")

    presets = {
        "smoke": {"runs": 15, "checkpoints": (20, 60), "pool_seeds": 1, "split_seeds": 1, "steps": 60,
                  "n_random": 20, "k_fractions": (0.1, 0.25, 0.5), "workers": 1, "lrs": (0.3,), "lams": (1.0,),
                  "exact_problems": 1, "exact_n": 12, "exact_k": 3},
        "quick": {},
        "full": {"runs": 300, "checkpoints": (100, 300, 1000), "pool_seeds": 5, "split_seeds": 3,
                 "steps": 3000, "lrs": (0.01, 0.03, 0.1, 0.3, 1.0), "lams": (0.1, 1.0, 10.0, 100.0),
                 "n_random": 1000, "workers": 8},
    }

    claims = [
        Claim(
            "full-set-on-the-line",
            "accuracy-on-the-line on the full OOD set: probit r > {r_on_line} on held-out models", _claim_full),
        Claim(
            "selected-below-the-line",
            "OODSelect subsets up to the planted subgroup's size: probit r < {r_below_line} on held-out models",
            _claim_selected),
        Claim(
            "random-subsets-on-the-line",
            "random subsets of the same sizes stay on the line: mean r > {r_on_line} at every k", _claim_random),
        Claim(
            "selection-enriched",
            "the selection is enriched in the planted reversed subgroup: precision >= {min_enrichment}x its base rate",
            _claim_precision),
        Claim(
            "beats-greedy",
            "OODSelect is at least as negative as the greedy baseline on held-out models (within {greedy_margin})",
            _claim_beats_greedy),
        Claim(
            "null-control",
            "control: with every OOD example's correctness shuffled across models (nothing to find), OODSelect's "
            "subsets up to the planted size stay above r = {r_below_line} on held-out models",
            _claim_null),
        Claim(
            "null-pool-control",
            "control: on a pool trained with nothing planted (the OOD set has no reversed subgroup), OODSelect's "
            "subsets up to the planted pool's size stay above r = {r_below_line} on held-out models (the main "
            "claim must fail there)",
            _claim_null_pool),
    ]

    def run(self, cfg: OODSelectStudy.Config, ctx: RunContext) -> dict:
        cache = str(Path(cfg.cache_dir) if cfg.cache_dir else ctx.out_dir)
        jobs = [
            {"cfg": cfg, "ps": ps, "pool_seed": ctx.seed_for("pool", ps), "cache": cache, "device": ctx.device,
             "splits": [{"seed": ctx.seed_for("split", ps, ss), "null_seed": ctx.seed_for("null", ps, ss),
                         "exact_seed": ctx.seed_for("exact", ps, ss), "scatter_seed": ctx.seed_for("scatter")}
                        for ss in range(cfg.split_seeds)]}
            for ps in range(cfg.pool_seeds)
        ]
        # independent pools on cfg.workers processes; each pool trains its shards serially inside its worker
        results = ctx.map(_pool_job, jobs, processes=cfg.workers, desc="pools")
        rows, pools_meta = [], []
        for res in results:
            for line in res["log"]:
                ctx.log(line)
            pools_meta.append(res["meta"])
            for row in res["rows"]:
                rows.append(row)
                ctx.record(**{k: v for k, v in row.items() if k != "hparams"})
        first, scatter = results[0]["first"], results[0]["scatter"]
        planted, misleading_rate = results[-1]["planted"], results[-1]["misleading"]
        ks = first["per_k"]
        return {
            "ks": [r["k"] for r in ks],
            "k_fractions": [r["fraction"] for r in ks],
            "planted_fraction": planted,
            "misleading_fraction": misleading_rate,
            "pools": pools_meta,
            "seeds": rows,
            "mean": {
                key: np.mean([r[key] for r in rows], axis=0).tolist()
                for key in ("r_full_test", "r_selected_test", "r_greedy_test", "r_random_mean", "precision",
                            "precision_misleading",
                            "greedy_precision", "r2_selected_test")
            },
            "example": {
                "indices": {str(r["k"]): r["indices"] for r in ks},
                "test_models": first["split"]["test"],
                "scatter": scatter,
            },
        }

    def figures(self, metrics: dict, ctx: RunContext) -> list[Path]:
        plt = ctx.pyplot()

        fr = np.asarray(metrics["k_fractions"])
        rows = metrics["seeds"]
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        ax = axes[0]
        for key, label, color in (
            ("r_selected_test", "OODSelect (held-out models)", "tab:red"),
            ("r_greedy_test", "greedy (held-out models)", "tab:orange"),
            ("r_random_mean", "random subsets (mean)", "tab:blue"),
            ("r2_selected_test", "OODSelect r² objective", "tab:green"),
        ):
            vals = [np.asarray(r[key]) for r in rows]
            n = min(len(v) for v in vals)
            arr = np.stack([v[:n] for v in vals])
            ax.errorbar(fr[:n], arr.mean(0), yerr=arr.std(0), marker="o", ms=3, capsize=2, label=label, color=color)
        full = np.array([r["r_full_test"] for r in rows])
        ax.axhline(full.mean(), color="gray", ls="--", label=f"full OOD set (r={full.mean():+.2f})")
        ax.axvline(metrics["planted_fraction"], color="k", lw=0.8, ls=":", label="planted subgroup size")
        for y0 in (0.3, -0.3):
            ax.axhline(y0, color="k", lw=0.4)
        ax.set_xlabel("subset size k / N")
        ax.set_ylabel("probit Pearson r (ID vs subset acc.)")
        ax.set_ylim(-1.05, 1.05)
        ax.legend(fontsize=6)
        ax.set_title("held-out models", fontsize=9)
        ax = axes[1]
        prec = np.stack([r["precision"] for r in rows])
        gp = np.stack([r["greedy_precision"] for r in rows])
        ax.errorbar(fr, prec.mean(0), yerr=prec.std(0), marker="o", ms=3, color="tab:red", label="OODSelect")
        ax.errorbar(fr, gp.mean(0), yerr=gp.std(0), marker="s", ms=3, color="tab:orange", label="greedy")
        ax.axhline(metrics["planted_fraction"], color="k", ls=":", label="base rate")
        ax.set_xlabel("subset size k / N")
        ax.set_ylabel("fraction of selection in reversed subgroup")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7)
        ax.set_title("precision for the planted subgroup", fontsize=9)
        fig.tight_layout()
        p1 = ctx.save_figure(
            fig, "oodselect", dpi=100,
            caption=(
                "Probit Pearson r between ID and OOD accuracy on held-out models for the full OOD "
                "set, OODSelect, greedy and random subsets vs subset size, and the selection's "
                "precision for the planted subgroup"
            ),
        )
        return [p1, self._scatter(metrics, ctx)]

    @staticmethod
    def _scatter(metrics: dict, ctx: RunContext) -> Path:
        """Probit-axis scatter of held-out models (first pool and split) for subset sizes up to the planted size."""
        plt = ctx.pyplot()

        from genlab.measures.oodselect import probit

        sc = metrics["example"]["scatter"]
        ks = [str(k) for k, f in zip(metrics["ks"], metrics["k_fractions"])][:4]
        px = probit(np.asarray(sc["id_acc"]))
        fig, axes = plt.subplots(1, len(ks), figsize=(3.0 * len(ks), 3.0), squeeze=False)
        for ax, k in zip(axes[0], ks):
            for label, ys, color in (("full set", sc["full"], "tab:gray"), ("random", sc["random"][k], "tab:blue"),
                                     ("OODSelect", sc["selected"][k], "tab:red")):
                py = probit(np.asarray(ys))
                r = float(np.corrcoef(px, py)[0, 1]) if np.ptp(py) > 0 else float("nan")
                ax.scatter(px, py, s=8, alpha=0.7, color=color, label=f"{label}: r={r:+.2f}")
                if np.ptp(py) > 0:
                    a, c = np.polyfit(px, py, 1)
                    xs = np.linspace(px.min(), px.max(), 2)
                    ax.plot(xs, a * xs + c, color=color, lw=1)
            ax.set_title(f"k = {k}", fontsize=9)
            ax.set_xlabel("probit(ID acc)", fontsize=8)
            ax.legend(fontsize=6)
            ax.tick_params(labelsize=7)
        axes[0][0].set_ylabel("probit(OOD subset acc)", fontsize=8)
        fig.suptitle("held-out models, one pool and split", fontsize=9)
        fig.tight_layout()
        path = ctx.save_figure(
            fig, "oodselect_scatter", dpi=100,
            caption=(
                "ID vs OOD accuracy (probit) of held-out models on the full OOD set and on "
                "OODSelect's subsets of each size"
            ),
        )
        return path
