"""MS-UDG study: minimal semantic sufficiency for unsupervised domain generalisation (mechanism study).

Pan et al., *Minimal Semantic Sufficiency Meets Unsupervised Domain Generalization*, NeurIPS 2025 (arXiv 2509.15791).
Without class or domain labels, learn a semantic code s that keeps what augmented views share (sufficiency: InfoNCE)
and drops the rest (minimality: a semantic/variation disentanglement loss and a reconstruction branch through a
variation code v); then linear-probe s with 1%, 5%, 10% of the source labels and test on an unseen domain.

Stand-ins (our reconstruction; the paper's exact estimators are not in hand): scikit-learn digits rendered in four
domains (:mod:`genlab.data.udg_domains`: original, inverted, tinted, and ``edge``, a map the augmentations do not
cover and where even supervised ERM reaches only ~0.3), a small CNN (:mod:`genlab.nn.udg_cnn`), L_dis = α × squared
cross-correlation of s and v plus the variation terms (v predicts the augmentation parameters; a variance hinge
on v), L_rec = self- and cross-view reconstruction d(s, v). Leave-one-domain-out over the targets where a supervised
reference clears a floor (the precondition, per target). Loss weights (α, β) are picked per arm on a held-out split
of the SOURCE domains (probe accuracy there); the target domain is only ever evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genlab.harness import Claim, Paper, RunContext, Study, decide, evidence, register
from genlab.harness.decision import mean_se
from genlab.harness.torch_setup import module_device

UNSUP = ("simclr", "nce_dis", "nce_rec", "full", "ae")
ARMS = (*UNSUP, "erm")
LABELS = {"simclr": "contrastive only (SimCLR)", "nce_dis": "+ disentanglement", "nce_rec": "+ reconstruction",
          "full": "full (MS-UDG)", "ae": "autoencoder only", "erm": "supervised ERM (all source labels)"}  # fmt: skip


# -- losses -----------------------------------------------------------------------------------------------------


def info_nce(z1, z2, tau: float):
    """SimCLR's NT-Xent: each of the 2N unit-norm embeddings picks its partner among the other 2N - 1."""
    import torch

    z = torch.cat([z1, z2])
    n = len(z1)
    sim = z @ z.T / tau
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n, device=z.device), torch.arange(n, device=z.device)])
    return torch.nn.functional.cross_entropy(sim, target)


def cross_corr_penalty(s, v, floor: float = 0.1):
    """Mean over the (dim s) x (dim v) pairs of the squared batch correlation of s and v, times dim s.

    ~0 for independent codes. Each code's per-dimension std is floored at ``floor`` before standardising: without
    the floor a collapsing v (std -> 0) turns the correlation into amplified noise with exploding gradients (seen in
    the first quick run); with it, a collapsed dimension contributes its (small) covariance instead.
    """
    sc = (s - s.mean(0)) / s.std(0).clamp_min(floor)
    vc = (v - v.mean(0)) / v.std(0).clamp_min(floor)
    corr = sc.T @ vc / (len(s) - 1)
    return (corr**2).mean() * s.shape[1]


def variation_floor(v, floor: float = 1.0):
    """VICReg's variance hinge on the variation code: mean over dimensions of relu(floor − batch std). Zero once
    every dimension of v varies by at least ``floor``; without it v can collapse to a constant and the
    decorrelation penalty is met trivially (issue 33: v_std 0.002)."""
    import torch

    return torch.relu(floor - v.std(0)).mean()


# -- training ---------------------------------------------------------------------------------------------------


def variation_terms(net, h, v, params, cfg):
    """What makes v carry the variation (weights independent of α): ``v_var`` × the variance hinge on v (through the
    shared encoder) plus ``v_aug`` × MSE of the augmentation parameters predicted from v — read from the encoder
    output with its gradient stopped, so the prediction shapes the variation head but cannot pull the encoder
    (through the encoder it wrecked the semantic code in the first quick run)."""
    out = cfg.v_var * variation_floor(v)
    if cfg.v_aug > 0:
        out = out + cfg.v_aug * ((net.aug(net.g_v(h.detach())) - params) ** 2).mean()
    return out


def _losses(net, x, gen, cfg, arm: str, alpha: float, beta: float):
    import torch

    from genlab.data.udg_domains import augment

    dev = module_device(net)  # views are drawn on the CPU (like a data loader), the network runs on its device
    x1, p1 = augment(x, gen, cfg.aug_strength)
    x2, p2 = augment(x, gen, cfg.aug_strength)
    x1, x2, p1, p2 = (t.to(dev) for t in (x1, x2, p1, p2))
    h = net.encode(torch.cat([x1, x2]))
    s, v = net.heads(h)
    n = len(x)
    s1, s2, v1 = s[:n], s[n:], v[:n]
    if arm == "ae":
        return ((net.decode(s, v) - torch.cat([x1, x2])) ** 2).mean()
    loss = info_nce(s1, s2, cfg.tau)
    if arm in ("nce_dis", "full"):
        loss = loss + alpha * cross_corr_penalty(s, v) + variation_terms(net, h, v, torch.cat([p1, p2]), cfg)
    if arm in ("nce_rec", "full"):  # self-reconstruction and cross-reconstruction (content of view 2, style of view 1)
        rec = ((net.decode(s1, v1) - x1) ** 2).mean() + ((net.decode(s2, v1) - x1) ** 2).mean()
        loss = loss + beta * rec
    return loss



def train(arm: str, x: np.ndarray, y: np.ndarray | None, cfg: Any, seed: int, alpha: float = 0.0, beta: float = 0.0,
          device: str = "cpu"):
    """Train one arm on unlabelled source images ``x`` (ERM uses the labels ``y``) on ``device``; returns the
    network. Minibatches and augmentations are drawn on the CPU generator."""
    import torch

    from genlab.data.udg_domains import AUG_PARAMS, augment
    from genlab.nn.udg_cnn import UDGNet

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = UDGNet(cfg.size, cfg.width, cfg.hidden, cfg.ds, cfg.dv, AUG_PARAMS).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    xt = torch.as_tensor(x)
    yt = None if y is None else torch.as_tensor(y)
    n = len(xt)
    for _ in range(cfg.steps):
        idx = torch.randint(0, n, (min(cfg.batch, n),), generator=gen)
        if arm == "erm":
            xa, _ = augment(xt[idx], gen, cfg.aug_strength)
            loss = torch.nn.functional.cross_entropy(net.classify(net.encode(xa.to(device))), yt[idx].to(device))
        else:
            loss = _losses(net, xt[idx], gen, cfg, arm, alpha, beta)
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    return net


def features(net, x: np.ndarray, arm: str) -> np.ndarray:
    """The probed representation: the semantic code s (contrastive arms), (s, v) for the autoencoder."""
    import torch

    with torch.no_grad():
        s, v = net.heads(net.encode(torch.as_tensor(x, device=module_device(net))))
        return (torch.cat([s, v], 1) if arm == "ae" else s).cpu().numpy()


def erm_accuracy(net, x: np.ndarray, y: np.ndarray) -> float:
    import torch

    with torch.no_grad():
        pred = net.classify(net.encode(torch.as_tensor(x, device=module_device(net)))).argmax(1).cpu().numpy()
        return float((pred == y).mean())


# -- probing ----------------------------------------------------------------------------------------------------


def label_subset(y: np.ndarray, frac: float, rng: np.random.Generator) -> np.ndarray:
    """round(frac·n) labelled indices (at least one per class): one per class first, the rest uniformly."""
    classes = np.unique(y)
    k = max(len(classes), round(frac * len(y)))
    first = np.array([rng.choice(np.flatnonzero(y == c)) for c in classes])
    rest = rng.permutation(np.setdiff1d(np.arange(len(y)), first))[: k - len(first)]
    return np.concatenate([first, rest])


def probe(f_pool: np.ndarray, y_pool: np.ndarray, evals: dict[str, tuple[np.ndarray, np.ndarray]],
          fracs: tuple[float, ...], draws: int, c: float, seed: int) -> dict[str, dict[str, float]]:  # fmt: skip
    """Linear probe (logistic regression) on ``frac`` of the labelled pool; mean accuracy over ``draws`` label draws.

    Features are standardised with the statistics of the whole (unlabelled) pool. Returns {eval name: {frac: acc}}.
    """
    from sklearn.linear_model import LogisticRegression

    mu, sd = f_pool.mean(0), f_pool.std(0) + 1e-6
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, float]] = {name: {} for name in evals}
    for frac in fracs:
        accs: dict[str, list[float]] = {name: [] for name in evals}
        for _ in range(draws):
            idx = label_subset(y_pool, frac, rng)
            clf = LogisticRegression(C=c, max_iter=2000).fit((f_pool[idx] - mu) / sd, y_pool[idx])
            for name, (f, y) in evals.items():
                accs[name].append(float((clf.predict((f - mu) / sd) == y).mean()))
        for name in evals:
            out[name][str(frac)] = float(np.mean(accs[name]))
    return out


# -- one (target, seed) job ---------------------------------------------------------------------------------------


def source_split(data: Any, sources: tuple[str, ...], val_frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train / held-out-validation indices within the source domains only (stratified by domain)."""
    rng = np.random.default_rng(seed)
    tr, va = [], []
    for name in sources:
        idx = rng.permutation(data.of([name]))
        k = round(val_frac * len(idx))
        va.append(idx[:k])
        tr.append(idx[k:])
    return np.sort(np.concatenate(tr)), np.sort(np.concatenate(va))


def grid(arm: str, cfg: Any) -> list[tuple[float, float]]:
    if arm == "nce_dis":
        return [(a, 0.0) for a in cfg.alphas]
    if arm == "nce_rec":
        return [(0.0, b) for b in cfg.betas]
    if arm == "full":
        return [(a, b) for a in cfg.alphas for b in cfg.betas]
    return [(0.0, 0.0)]


def select(arm: str, x_tr, y_tr, x_va, y_va, cfg: Any, seed: int, device: str = "cpu") -> tuple[Any, dict[str, Any]]:
    """Train every (α, β) candidate of ``arm`` on source-train images; keep the best source-validation probe.

    Only source arrays come in: the target domain cannot influence the choice. Labels of source-train are used
    by the probe (at ``cfg.select_frac``) and by ERM, never by the unsupervised pre-training.
    """
    best = None
    for alpha, beta in grid(arm, cfg):
        net = train(arm, x_tr, y_tr if arm == "erm" else None, cfg, seed, alpha, beta, device)
        if arm == "erm":
            score = erm_accuracy(net, x_va, y_va)
        else:
            f_tr = features(net, x_tr, arm)
            acc = probe(f_tr, y_tr, {"val": (features(net, x_va, arm), y_va)}, (cfg.select_frac,), cfg.probe_draws,
                        cfg.probe_c, seed)  # fmt: skip
            score = acc["val"][str(cfg.select_frac)]
        if best is None or score > best[0]:
            best = (score, net, {"alpha": alpha, "beta": beta, "val_score": score})
    return best[1], best[2]


def variation_monitor(net, x: np.ndarray, cfg: Any, seed: int) -> dict[str, float]:
    """The collapse monitor on source-train images: ``v_std``, v's mean per-dimension std over the clean images, and
    ``v_r2``, the held-out R² (averaged over the augmentation parameters) of a linear read-out of the parameters
    from v, fitted on one augmented copy of the images and scored on another: ~0 when v carries no variation."""
    import torch
    from sklearn.linear_model import LinearRegression

    from genlab.data.udg_domains import augment

    dev = module_device(net)
    gen = torch.Generator().manual_seed(seed + 2)
    xt = torch.as_tensor(x)
    with torch.no_grad():
        v_clean = net.heads(net.encode(xt.to(dev)))[1]
        views = [augment(xt, gen, cfg.aug_strength) for _ in range(2)]
        vs = [(net.heads(net.encode(xa.to(dev)))[1].cpu().numpy(), p.numpy()) for xa, p in views]
    reg = LinearRegression().fit(*vs[0])
    return {"v_std": float(v_clean.std(0).mean()), "v_r2": float(reg.score(*vs[1]))}


def run_job(job: tuple) -> dict[str, Any]:
    """One (target domain, seed, arm): select and train the arm on the sources, then probe source-val and target."""
    import torch

    from genlab.data.udg_domains import DOMAINS, make_domains

    cfg, target, seed, arm, device = job
    torch.set_num_threads(1)
    data = make_domains(cfg.size, seed=cfg.data_seed)
    sources = tuple(d for d in DOMAINS if d != target)
    tr, va = source_split(data, sources, cfg.val_frac, seed)
    te = data.of([target])
    x_tr, y_tr, x_va, y_va = data.x[tr], data.y[tr], data.x[va], data.y[va]
    net, chosen = select(arm, x_tr, y_tr, x_va, y_va, cfg, seed, device)
    if arm == "erm":
        out = {"source": erm_accuracy(net, x_va, y_va), "target": erm_accuracy(net, data.x[te], data.y[te])}
    else:
        f_tr = features(net, x_tr, arm)
        evals = {"source": (features(net, x_va, arm), y_va), "target": (features(net, data.x[te], arm), data.y[te])}
        out = probe(f_tr, y_tr, evals, tuple(cfg.fracs), cfg.probe_draws, cfg.probe_c, seed + 1)
        out.update(variation_monitor(net, x_tr, cfg, seed))
    return {"target": target, "seed": seed, "arm": arm, "sizes": [len(tr), len(va), len(te)],
            "selection_domains": sorted({DOMAINS[d] for d in data.domain[np.concatenate([tr, va])]}),
            "result": {**out, "chosen": chosen}}  # fmt: skip


# -- aggregation and claims ---------------------------------------------------------------------------------------


def aggregate(results: list[dict[str, Any]], cfg: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"targets": {}, "seeds": cfg.seeds, "erm_seeds": n_erm_seeds(cfg),
                         "fracs": [str(f) for f in cfg.fracs]}  # fmt: skip
    for target in cfg.targets:
        rs = [r for r in results if r["target"] == target]
        t: dict[str, Any] = {"sizes": rs[0]["sizes"], "selection_domains": [r["selection_domains"] for r in rs]}
        for arm in cfg.arms:
            a = [r["result"] for r in rs if r["arm"] == arm]  # jobs come back in seed order
            if arm == "erm":
                t[arm] = {"source": [x["source"] for x in a], "target": [x["target"] for x in a]}
            else:
                t[arm] = {part: {f: [x[part][f] for x in a] for f in m["fracs"]} for part in ("source", "target")}
                t[arm]["v_std"] = [x["v_std"] for x in a]
                t[arm]["v_r2"] = [x["v_r2"] for x in a]
            t[arm]["chosen"] = [x["chosen"] for x in a]
        m["targets"][target] = t
    return m


def n_erm_seeds(cfg: Any) -> int:
    """The supervised reference runs on at least ``erm_seeds`` seeds per target (the first ``seeds`` are the
    methods' seeds): enough units for the per-target headroom test."""
    return max(cfg.seeds, cfg.erm_seeds)


def _lo(cfg: Any) -> str:
    return str(min(cfg.fracs))


def _hi(cfg: Any) -> str:
    return str(max(cfg.fracs))


def erm_means(m: dict) -> dict[str, float]:
    return {tg: float(np.mean(t["erm"]["target"])) for tg, t in m["targets"].items()}


def headroom_tests(m: dict, cfg: Any) -> dict[str, Any]:
    """Per left-out domain: does supervised ERM (all source labels) score above ``erm_floor`` there? One t-test per
    target over its ERM seeds — never averaged with another target's."""
    return {tg: decide.mean(t["erm"]["target"], above=cfg.erm_floor) for tg, t in m["targets"].items()}


def headroom_targets(m: dict, cfg: Any) -> list[str]:
    """The left-out domains whose own headroom test holds: only there can a label-efficient method be told apart
    from another (the reference arm decides, never the compared ones)."""
    return [tg for tg, ev in headroom_tests(m, cfg).items() if ev.held is True]


def _units(m: dict, targets: list[str], arm: str, part: str, frac: str) -> list[float]:
    """One value per (target, seed): separately trained models on different source sets."""
    return [x for tg in targets for x in m["targets"][tg][arm][part][frac]]


def _claim_headroom(m: dict, cfg: Any):
    tests = headroom_tests(m, cfg)
    return decide.all_of(*tests.values(), chance=0.1, headroom_targets=headroom_targets(m, cfg),
                         **{f"erm_{tg}": acc for tg, acc in erm_means(m).items()})  # fmt: skip


def _gate(ev: Any, m: dict, cfg: Any):
    """Withhold a method comparison without a target with headroom, or when the full method's variation code
    collapsed to a constant (the collapse monitor: v's spread below ``v_collapse`` on any unit); v's R² for the
    augmentation parameters is reported beside it."""
    targets = headroom_targets(m, cfg)
    if not targets:
        return ev.withheld(f"no left-out domain where supervised ERM is shown above {cfg.erm_floor} (precondition)")
    v_std = [x for tg in targets for x in m["targets"][tg]["full"]["v_std"]]
    v_r2 = [x for tg in targets for x in m["targets"][tg]["full"]["v_r2"]]
    ev = ev.with_numbers(full_v_std_min=min(v_std), full_v_r2_min=min(v_r2), full_v_r2_mean=float(np.mean(v_r2)))
    if min(v_std) < cfg.v_collapse:
        return ev.withheld(f"the full method's variation code collapsed (v_std min {min(v_std):.3g} < "
                           f"{cfg.v_collapse})")  # fmt: skip
    return ev


def _claim_learns(m: dict, cfg: Any):
    targets = list(m["targets"])
    return decide.mean(_units(m, targets, "simclr", "source", _hi(cfg)), above=cfg.source_floor, chance=0.1,
                       simclr_target_acc=float(np.mean(_units(m, targets, "simclr", "target", _hi(cfg)))))  # fmt: skip


def _claim_full_beats(m: dict, cfg: Any):
    targets = headroom_targets(m, cfg)
    full, simclr = _units(m, targets, "full", "target", _lo(cfg)), _units(m, targets, "simclr", "target", _lo(cfg))
    alphas = [c["alpha"] for tg in targets for c in m["targets"][tg]["full"]["chosen"]]
    ev = decide.paired(full, simclr, above=cfg.gain_margin, targets=targets,
                       full=float(np.mean(full)) if full else None, simclr=float(np.mean(simclr)) if simclr else None,
                       chosen_alpha={str(a): alphas.count(a) for a in sorted(set(alphas))})  # fmt: skip
    return _gate(ev, m, cfg)


def _claim_most_at_low(m: dict, cfg: Any):
    targets = headroom_targets(m, cfg)
    gains = {f: np.subtract(_units(m, targets, "full", "target", f), _units(m, targets, "simclr", "target", f))
             for f in m["fracs"]}  # fmt: skip
    larger = decide.paired(gains[_lo(cfg)], gains[_hi(cfg)], above=0.0)
    material = decide.mean(gains[_lo(cfg)], above=cfg.gain_margin)
    ev = decide.all_of(larger, material, **{f"gain_{f}": float(np.mean(g)) if len(g) else None
                                            for f, g in gains.items()})  # fmt: skip
    return _gate(ev, m, cfg)


ORDER_PAIRS = (("full", "nce_dis"), ("full", "nce_rec"), ("nce_dis", "simclr"), ("nce_rec", "simclr"))


def _claim_ordering(m: dict, cfg: Any):
    missing = [a for a in UNSUP[:4] if a not in cfg.arms]
    if missing:
        return evidence(None, f"arms {', '.join(missing)} not run in this preset")
    targets, f = headroom_targets(m, cfg), _lo(cfg)
    parts = [decide.paired(_units(m, targets, a, "target", f), _units(m, targets, b, "target", f),
                           above=cfg.order_margin) for a, b in ORDER_PAIRS]  # fmt: skip
    return _gate(decide.all_of(*parts), m, cfg)


def _claim_selection(m: dict, cfg: Any):
    seen = [d for t in m["targets"].values() for doms in t["selection_domains"] for d in doms]
    leaked = [tg for tg in m["targets"] for doms in m["targets"][tg]["selection_domains"] if tg in doms]
    return evidence(not leaked, domains_seen_by_selection=sorted(set(seen)), leaks=len(leaked))


# -- the study --------------------------------------------------------------------------------------------------


@register
class MSUDG(Study):
    name = "ms-udg"
    paper = Paper(
        "Minimal Semantic Sufficiency Meets Unsupervised Domain Generalization",
        "arXiv:2509.15791",
        "Pan, Guo, Xu, Tan, Jiang, Chen, Guo, Lovell, Han, Cheng, Baktashmotlagh",
    )
    summary = (
        "InfoNCE plus a semantic/variation disentanglement loss and a reconstruction branch vs contrastive-only, "
        "linear-probed with 1-10% labels on an unseen digit domain (leave-one-domain-out over the domains where "
        "supervised ERM has headroom)."
    )
    accelerated = True  # networks and batches on ctx.device; augmented views are drawn on the CPU

    @dataclass
    class Config:
        # leave-one-domain-out over the domains where supervised ERM has headroom (issue 33); ``edge`` (ERM ≈ 0.3,
        # chance 0.1) may be added, and the per-target precondition then keeps it out of the comparisons
        targets: tuple[str, ...] = ("original", "inverted", "tinted")
        arms: tuple[str, ...] = ARMS
        seeds: int = 3  # per target: the units are (target, seed), separately trained on different sources
        erm_seeds: int = 5  # the supervised reference's seeds per target (>= 5: units for the per-target precondition)
        data_seed: int = 0  # the domain partition and rendering (fixed across seeds)
        size: int = 12
        width: int = 16
        hidden: int = 128
        ds: int = 32
        dv: int = 8
        steps: int = 200
        batch: int = 128
        lr: float = 2e-3
        tau: float = 0.1  # 0.3 before issue 33's second pilot
        aug_strength: float = 0.5  # 1.0 before issue 33's second pilot
        v_aug: float = 1.0  # v -> augmentation parameters (encoder gradient stopped), weight independent of α
        v_var: float = 10.0  # the variance hinge on v, weight independent of α (without it v collapses: issue 33)
        alphas: tuple[float, ...] = (0.3, 3.0)  # the independence penalty's weight, a source-only grid
        betas: tuple[float, ...] = (3.0, 30.0)
        val_frac: float = 0.25  # held-out source data for every selection
        fracs: tuple[float, ...] = (0.01, 0.05, 0.1)
        select_frac: float = 0.1
        probe_draws: int = 6
        probe_c: float = 1.0
        workers: int = 2
        source_floor: float = 0.5  # set before the first run (chance 0.1)
        erm_floor: float = 0.5  # headroom: supervised ERM on the left-out domain (chance 0.1), set before the run
        v_collapse: float = 0.1  # the collapse monitor: the full method's v_std below this withholds its claims
        gain_margin: float = 0.02  # set before the first run
        order_margin: float = 0.0  # set before the first run

        def validate(self) -> None:
            from genlab.data.udg_domains import DOMAINS

            if (
                not self.targets
                or any(t not in DOMAINS for t in self.targets)
                or len(set(self.targets)) != len(self.targets)
            ):
                raise ValueError(f"targets: distinct names from {', '.join(DOMAINS)}")
            if any(a not in ARMS for a in self.arms) or not {"simclr", "full", "erm"} <= set(self.arms):
                raise ValueError(f"arms: among {', '.join(ARMS)}, with simclr, full and erm")
            if self.size % 4 or self.size < 8:
                raise ValueError("size: a multiple of 4, at least 8")
            if min(self.seeds, self.erm_seeds, self.steps, self.workers, self.probe_draws) < 1 or self.batch < 2:
                raise ValueError("seeds, erm_seeds, steps, workers, probe_draws >= 1; batch >= 2")
            if min(self.width, self.hidden, self.ds, self.dv) < 1:
                raise ValueError("width, hidden, ds, dv >= 1")
            if not 0 < self.lr < 1 or not self.tau > 0 or not self.probe_c > 0:
                raise ValueError("0 < lr < 1, tau > 0, probe_c > 0")
            if not self.fracs or any(not 0 < f <= 1 for f in self.fracs) or not 0 < self.select_frac <= 1:
                raise ValueError("fracs and select_frac in (0, 1]")
            if not 0 < self.val_frac < 1:
                raise ValueError("val_frac in (0, 1)")
            for name in ("alphas", "betas"):
                if not getattr(self, name) or any(not (np.isfinite(v) and v >= 0) for v in getattr(self, name)):
                    raise ValueError(f"{name}: one or more finite values >= 0")
            if not (self.v_var >= 0 and self.v_aug >= 0):
                raise ValueError("v_var, v_aug >= 0")
            for name in ("source_floor", "gain_margin", "order_margin", "aug_strength", "erm_floor", "v_collapse"):
                if not np.isfinite(getattr(self, name)):
                    raise ValueError(f"{name} must be finite")

    presets = {
        "smoke": {"seeds": 1, "erm_seeds": 1, "steps": 8, "batch": 64, "width": 4, "hidden": 32, "ds": 8, "dv": 4,
                  "alphas": (1.0,), "betas": (3.0,), "probe_draws": 1, "workers": 1, "size": 8,
                  "targets": ("tinted", "edge")},
        # 3 targets x 3 seeds = 9 units for the comparisons, 3 x 5 ERM seeds for the precondition; <= 150 CPU-s
        "quick": {"size": 8, "betas": (3.0,), "arms": ("simclr", "full", "erm")},
        "full": {"seeds": 8, "erm_seeds": 8, "size": 16, "width": 32, "batch": 256,
                 "steps": 1500, "alphas": (0.1, 0.3, 1.0, 3.0), "betas": (1.0, 3.0, 10.0, 30.0),
                 "probe_draws": 20,
                 "workers": 8},
    }  # fmt: skip

    claims = [
        Claim(
            "supervised-headroom",
            "precondition, per target: supervised ERM with all source labels scores above {erm_floor} (chance 0.1) "
            "on each left-out domain of {targets} (t over its {erm_seeds}+ seeds, every target must hold); the "
            "comparisons below use only the targets whose own test holds",
            _claim_headroom,
        ),
        Claim(
            "contrastive-baseline-learns",
            "the contrastive-only baseline's linear probe with the largest label fraction scores above "
            "{source_floor} (chance 0.1) on held-out SOURCE data (t over (target, seed) units)",
            _claim_learns,
        ),
        Claim(
            "full-beats-contrastive",
            "central: on the left-out domains with headroom, at the smallest label fraction of {fracs}, the full "
            "method's probe beats contrastive-only by more than {gain_margin} (paired t over (target, seed) units; "
            "withheld if the full method's variation code collapses, v_std < {v_collapse} on any unit)",
            _claim_full_beats,
        ),
        Claim(
            "gain-largest-at-fewest-labels",
            "on the left-out domains with headroom, the full-minus-contrastive gain is larger at the smallest than at "
            "the largest label fraction, and material (> {gain_margin}) at the smallest",
            _claim_most_at_low,
        ),
        Claim(
            "ablation-ordering",
            "at the smallest label fraction on the left-out domains with headroom: full > each single addition > "
            "contrastive only, each step by more than {order_margin} (paired t, all four must hold)",
            _claim_ordering,
        ),
        Claim(
            "selection-sees-only-sources",
            "every hyper-parameter choice (α, β per arm) was made on source-domain data only: the target domain "
            "never enters selection",
            _claim_selection,
            kind="identity",
        ),
    ]

    def run(self, cfg: Config, ctx: RunContext) -> dict:
        jobs = [
            (cfg, t, ctx.seed_for("seed", t, s), arm, ctx.device)
            for t in cfg.targets
            for s in range(n_erm_seeds(cfg))
            for arm in cfg.arms
            if s < cfg.seeds or arm == "erm"
        ]
        with ctx.timer("jobs"):
            results = ctx.map(run_job, jobs, processes=cfg.workers, desc="seeds x targets")
        metrics = aggregate(results, cfg)
        for tg, t in metrics["targets"].items():
            lo = _lo(cfg)
            arms = [a for a in UNSUP if a in cfg.arms]
            ctx.log(f"target {tg} @ {lo}: " + ", ".join(f"{a}={np.mean(t[a]['target'][lo]):.3f}" for a in arms)
                    + f", erm={np.mean(t['erm']['target']):.3f}")  # fmt: skip
        return metrics

    def figures(self, metrics: dict, ctx: RunContext) -> list[Path]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        targets = list(metrics["targets"])
        fig, axes = plt.subplots(1, len(targets) + 1, figsize=(4.2 * (len(targets) + 1), 3.6), squeeze=False)
        fr = metrics["fracs"]
        xs = [100 * float(f) for f in fr]
        for ax, tg in zip(axes[0], targets):
            t = metrics["targets"][tg]
            for arm in [a for a in UNSUP if a in t]:
                st = [mean_se(t[arm]["target"][f])[:2] for f in fr]
                ax.errorbar(xs, [s[0] for s in st], yerr=[np.nan_to_num(s[1]) for s in st], marker="o", capsize=2,
                            label=LABELS[arm])  # fmt: skip
            ax.axhline(np.mean(t["erm"]["target"]), ls="--", c="gray", lw=1, label=LABELS["erm"])
            ax.axhline(0.1, ls=":", c="k", lw=0.8, label="chance")
            ax.set_xscale("log")
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{x:g}%" for x in xs])
            ax.set_xlabel("source labels for the linear probe")
            ax.set_ylabel(f"accuracy on held-out '{tg}'")
            ax.set_title(f"target: {tg} ({metrics['seeds']} seeds, mean ± s.e.)", fontsize=9)
        ax = axes[0][-1]
        t = metrics["targets"][targets[0]]
        for arm in [a for a in UNSUP if a in t]:
            st = [mean_se(t[arm]["source"][f])[:2] for f in fr]
            ax.errorbar(xs, [s[0] for s in st], yerr=[np.nan_to_num(s[1]) for s in st], marker="o", capsize=2,
                        label=LABELS[arm])  # fmt: skip
        ax.axhline(np.mean(t["erm"]["source"]), ls="--", c="gray", lw=1, label=LABELS["erm"])
        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}%" for x in xs])
        ax.set_xlabel("source labels for the linear probe")
        ax.set_ylabel("accuracy on held-out SOURCE data")
        ax.set_title(f"sources (target {targets[0]} left out)", fontsize=9)
        axes[0][0].legend(fontsize=6)
        fig.tight_layout()
        caption = (
            "linear-probe accuracy vs label fraction per arm on the held-out domain (left) and on held-out "
            "source data (right); mean ± s.e. over seeds; dashed: supervised ERM with all source labels"
        )
        return [ctx.save_figure(fig, "ms-udg", caption=caption)]
