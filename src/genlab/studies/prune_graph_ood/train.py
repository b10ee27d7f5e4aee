"""Training and evaluation of the arms of the ``prune-graph-ood`` study (one job = one split × group of arms, all
seeds at once).

Arms share one GIN classifier (:class:`genlab.nn.graph.GraphClassifier`); the edge-based arms add an
:class:`genlab.nn.graph.EdgeScorer`. The K seeds of a job are K copies of these models trained as one
(:mod:`genlab.nn.seed_graph`: weights with a leading seed dimension, each copy on its own seed's graphs and batch
order; the losses are per seed and summed, so each copy gets exactly its own gradient and Adam state):

* ``erm`` — cross-entropy on the full graphs;
* ``vrex`` — cross-entropy + λ·Var over the training environments present in the batch of their mean risks (V-REx),
  the penalty switched on after ``warmup_epochs`` of ERM (V-REx's penalty annealing);
* ``gsat`` — GSAT as GSAT (and GOOD's ``GSATGIN``) trains it: the attention logits come from an MLP
  (2h → 4h → h → 1) of the concatenated endpoint embeddings of the *classifier's own* GIN (``learn_edge_att``), are
  averaged with the reverse edge's, and a relaxed Bernoulli sample (temperature 1; sigmoid(logit) at evaluation)
  weights the messages of a second pass of the same GIN; loss CE + KL(Bern(a) ‖ Bern(r)) with r decayed from 0.9 by
  0.1 every ``gsat_decay_every`` epochs to ``gsat_final_r`` (coefficient 1, as GOOD). Until 2026-12-04 the attention
  came from a separate 2-layer edge scorer, which did not learn to find the motif (edge AUC 0.47);
* ``prune-paper`` / ``prune-code`` — PrunE: a hard straight-through Gumbel mask (τ = 0.2) on the classifier's
  messages, cross-entropy + λ1·L_e + λ2·L_s with the paper's or the official code's form of the two regularisers,
  the first ``warmup_epochs`` without pruning (ERM warm-up, as the official code);
* ``prune-no-size`` / ``prune-no-align`` — the primary PrunE form without L_e (λ1 = 0) or without L_s (λ2 = 0).

Checkpoints are chosen on a validation split (``ood_val`` as GOOD's leaderboard and PrunE's ``run.py``; ``id_val``
too, reported as a sensitivity check), per seed; test splits are evaluated only for the chosen checkpoints. Each
seed's training graphs are shuffled once with its seed, cut into batches and padded once
(:class:`genlab.nn.seed_graph.PaddedBatches`); every epoch each seed visits its batches in a fresh random order of
its own (as PyG's ``DataLoader`` collated once did before 2026-12-05).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from genlab.data.motif_graphs import MOTIFS, GraphSet

ARMS: dict[str, dict[str, Any]] = {
    "erm": {"method": "erm"},
    "vrex": {"method": "vrex"},
    "gsat": {"method": "gsat"},
    "prune-paper": {"method": "prune", "form": "paper", "size": True, "align": True},
    "prune-code": {"method": "prune", "form": "code", "size": True, "align": True},
    "prune-no-size": {"method": "prune", "form": "primary", "size": False, "align": True},
    "prune-no-align": {"method": "prune", "form": "primary", "size": True, "align": False},
}
EVAL_SPLITS = ("id_val", "ood_val", "id_test", "ood_test")
SELECTIONS = ("ood_val", "id_val")


@dataclass
class HParams:
    """Model and training settings of every arm: the single source of their defaults (the study's ``Config``
    extends this class). PrunE README values where they exist: η, K, λ1, λ2 (code form), τ."""

    hidden: int = 32
    layers: int = 3
    scorer_layers: int = 2
    epochs: int = 50
    batch_size: int = 32
    lr: float = 3e-3
    warmup_epochs: int = 15
    eta: float = 0.85
    k_percent: float = 90.0
    lam_size: float = 10.0
    lam_align_paper: float = 1.0
    lam_align_code: float = 1e-3
    tau: float = 0.2
    primary_form: Literal["paper", "code"] = "code"
    gsat_final_r: float = 0.5  # GOOD's GSAT on GOOD-Motif covariate splits
    gsat_decay_every: int = 5
    gsat_coef: float = 1.0
    vrex_penalty: float = 100.0
    eval_samples: int = 1


# ---------------------------------------------------------------------------------------------------------------
# models (K seed-copies trained as one)
# ---------------------------------------------------------------------------------------------------------------
class ArmModel:
    """K seed-copies of an arm's classifier and, for edge-based arms, its edge scorer (:mod:`genlab.nn.seed_graph`);
    ``loss`` gives each seed's loss on its own batch, ``keep`` the edge weights and keep probabilities used at
    evaluation."""

    def __init__(self, arm: dict[str, Any], hp: HParams, k: int) -> None:
        import torch

        from genlab.nn.seed_graph import SeedEdgeScorer, SeedGraphClassifier, SeedHead

        self.arm, self.hp, self.k = arm, hp, k
        self.method = arm["method"]
        self.form = hp.primary_form if arm.get("form") == "primary" else arm.get("form")
        self.classifier = SeedGraphClassifier(k, hp.hidden, hp.layers, len(MOTIFS))
        if self.method == "gsat":  # GSAT's ExtractorMLP with learn_edge_att: 2h -> 4h -> h -> 1 of [h_i, h_j]
            self.scorer = SeedHead(k, [2 * hp.hidden, 4 * hp.hidden, hp.hidden, 1])
        else:
            self.scorer = SeedEdgeScorer(k, hp.hidden, hp.scorer_layers, 2) if self.method == "prune" else None
        self.modules = torch.nn.ModuleList([m for m in (self.classifier, self.scorer) if m is not None])

    def prunes(self, epoch: int) -> bool:
        return self.method == "prune" and epoch >= self.hp.warmup_epochs

    @property
    def warms_up(self) -> bool:
        """PrunE (ERM warm-up, as its code) and V-REx (penalty annealing, as in Krueger et al.) start as ERM."""
        return self.method in ("prune", "vrex")

    def loss(self, b, epoch: int, gen) -> tuple[Any, Any]:
        """(per-seed loss (K,), per-seed kept fraction (K,) or None)."""
        if self.method == "gsat":
            return self._gsat_loss(b, epoch, gen)
        if self.prunes(epoch):
            return self._prune_loss(b, gen)
        per_graph = graph_ce(self.classifier(b), b)
        loss = seed_mean(per_graph, b.graph_mask)
        if self.method == "vrex" and epoch >= self.hp.warmup_epochs:
            loss = loss + self.hp.vrex_penalty * per_seed(
                lambda k, g, _e: env_risk_variance(per_graph[k, :g], b.env[k, :g]), b)
        return loss, None

    def _prune_loss(self, b, gen):
        import torch

        from genlab.nn import edge_masks as em

        logits = self.scorer(b)
        mask = em.straight_through_gumbel(logits, self.hp.tau, gen)
        p = em.keep_probability(logits)
        ce = seed_mean(graph_ce(self.classifier(b, mask), b), b.graph_mask)
        hp = self.hp
        if self.form == "paper":
            l_e = per_seed(lambda k, g, e: em.size_loss_paper(mask[k, :e], b.edge_graph[k, :e], g, hp.eta), b)
            l_s = per_seed(lambda k, g, e: em.alignment_loss_paper(p[k, :e], b.edge_graph[k, :e], g, hp.k_percent), b)
            lam_s = hp.lam_align_paper
        else:  # the official code's batch-level forms, on every seed's batch at once
            n_edges = torch.from_numpy(b.n_edges).to(mask.device)
            l_e = em.size_loss_code_rows(mask, n_edges, hp.eta)
            l_s = em.alignment_loss_code_rows(p, n_edges, hp.k_percent)
            lam_s = hp.lam_align_code
        lam_e = hp.lam_size if self.arm["size"] else 0.0
        lam_s = lam_s if self.arm["align"] else 0.0
        return ce + lam_e * l_e + lam_s * l_s, seed_mean(mask.detach(), b.edge_mask)

    def _gsat_loss(self, b, epoch: int, gen):
        import torch

        from genlab.nn import edge_masks as em

        logits = self._gsat_logits(b)
        att = symmetrise(em.concrete_sample(logits, 1.0, gen), b)  # GSAT's symmetrised edge attention
        ce = seed_mean(graph_ce(self.classifier(b, att), b), b.graph_mask)
        r = em.gsat_r(epoch, self.hp.gsat_decay_every, final_r=self.hp.gsat_final_r)
        prob = torch.sigmoid(logits)
        kl = seed_mean(em.bernoulli_kl_terms(prob, r), b.edge_mask)
        return ce + self.hp.gsat_coef * kl, seed_mean(att.detach(), b.edge_mask)

    def keep(self, b, epoch: int, gen) -> tuple[Any, Any]:
        """(edge weights (K, E) for the classifier or None, keep probability per edge (K, E)) at evaluation."""
        import torch

        from genlab.nn import edge_masks as em

        if self.method == "gsat":
            p = symmetrise(torch.sigmoid(self._gsat_logits(b)), b)
            return p, p
        if self.prunes(epoch):
            logits = self.scorer(b)
            masks = [em.straight_through_gumbel(logits, self.hp.tau, gen) for _ in range(self.hp.eval_samples)]
            return torch.stack(masks).mean(0), em.keep_probability(logits)
        return None, torch.ones(b.edge_mask.shape, device=b.edge_mask.device)

    def _gsat_logits(self, b):
        """GSAT's attention logits (K, E): the extractor on the classifier GIN's node embeddings (no mask)."""
        import torch

        from genlab.nn.seed_graph import endpoint_pairs

        return self.scorer(torch.cat(endpoint_pairs(self.classifier.gnn(b), b), dim=-1))[..., 0]

    # -- one seed's weights in and out ----------------------------------------------------------------------------
    def seed_state(self, k: int) -> dict[str, Any]:
        return {key: v[k].clone() for key, v in self.modules.state_dict().items()}

    def load_seed_states(self, states: list[dict[str, Any]]) -> None:
        import torch

        self.modules.load_state_dict({key: torch.stack([s[key] for s in states]) for key in states[0]})


def graph_ce(logits, b):
    """Cross-entropy per graph slot (K, G) (padding slots hold label 0; :func:`seed_mean` drops them)."""
    import torch.nn.functional as F

    k, g, c = logits.shape
    return F.cross_entropy(logits.reshape(k * g, c), b.y.reshape(-1), reduction="none").view(k, g)


def seed_mean(values, mask):
    """Mean over the real entries of each seed's row: (K, M) -> (K,)."""
    return (values * mask).sum(1) / mask.sum(1)


def per_seed(fn, b):
    """``fn(k, n_graphs_k, n_edges_k)`` for every seed, stacked (K,): the regularisers whose batch-level form is
    a function of one seed's whole batch, applied to each seed's batch exactly as to a lone batch."""
    import torch

    return torch.stack([fn(k, int(g), int(e)) for k, (g, e) in enumerate(zip(b.n_graphs, b.n_edges))])


def symmetrise(att, b):
    """(a_uv + a_vu) / 2 for every directed edge (padding edges keep theirs); reverse edges precomputed per batch."""
    flat = att.reshape(-1)
    return ((flat + flat.index_select(0, b.edge_rev)) / 2).view_as(att)


def env_risk_variance(per_graph_loss, env):
    """Variance (unbiased, as torch.var) of the mean risk of each environment present in the batch; 0 with one."""
    import torch

    envs = torch.unique(env)
    if len(envs) < 2:
        return per_graph_loss.sum() * 0.0
    risks = torch.stack([per_graph_loss[env == e].mean() for e in envs])
    return risks.var()


# ---------------------------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------------------------
def evaluate(model: ArmModel, b, epoch: int, seed: int, mode: bool = False, edges: bool = True) -> list[dict]:
    """Per seed: accuracy and (``edges``) edge statistics on one collated split. PrunE is evaluated as the official
    code does, on one sampled hard mask (``eval_samples`` averaged); with ``mode`` also on the most likely mask
    (keep iff p >= 1/2), reported as ``acc_mode`` (the accuracy otherwise). Keep probabilities p give expected
    statistics of the sampled mask: motif-edge recall = Σ p·gt / Σ gt, spurious removed = Σ (1 − p)(1 − gt) /
    Σ (1 − gt), kept = mean p, and the AUC of p separating motif from other edges."""
    import torch

    gen = torch.Generator().manual_seed(seed)  # the same checkpoint always sees the same evaluation mask
    model.modules.eval()
    with torch.no_grad():
        weight, p = model.keep(b, epoch, gen)
        acc = seed_mean((model.classifier(b, weight).argmax(-1) == b.y).double(), b.graph_mask).tolist()
        acc_mode = acc
        if mode and model.prunes(epoch):
            pred = model.classifier(b, (p >= 0.5).to(p.dtype)).argmax(-1)
            acc_mode = seed_mean((pred == b.y).double(), b.graph_mask).tolist()
    model.modules.train()
    out = [{"acc": a} for a in acc]
    if edges:
        gt_all, p_all = b.edge_gt.cpu().numpy(), p.double().cpu().numpy()
        for k, (row, e) in enumerate(zip(out, b.n_edges)):
            gt, pk = gt_all[k, :e], p_all[k, :e]
            row["recall"] = float((pk * gt).sum() / max(gt.sum(), 1))
            row["spurious_removed"] = float(((1 - pk) * ~gt).sum() / max((~gt).sum(), 1))
            row["kept"] = float(pk.mean())
            row["edge_auc"] = auc(pk, gt)
    if mode:
        for row, a in zip(out, acc_mode):
            row["acc_mode"] = a
    return out


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count 1/2; the Mann–Whitney U of
    scipy.stats over the two groups); nan if a class is empty."""
    from scipy.stats import mannwhitneyu

    pos, neg = score[positive], score[~positive]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    return float(mannwhitneyu(pos, neg, method="asymptotic").statistic / (len(pos) * len(neg)))


# ---------------------------------------------------------------------------------------------------------------
# one job: one split, a group of arms, K seeds at once
# ---------------------------------------------------------------------------------------------------------------
def load_sets(folder: Path) -> dict[str, GraphSet]:
    return {s: GraphSet.load(Path(folder) / f"{s}.npz") for s in ("train", *EVAL_SPLITS)}


def train_batches(train_sets: list[GraphSet], batch_size: int, seeds: list[int], device: str):
    """Each seed's training graphs shuffled once with its seed and cut into batches of ``batch_size`` (the last one
    smaller), padded into one :class:`genlab.nn.seed_graph.PaddedBatches`."""
    import torch

    from genlab.nn.seed_graph import PaddedBatches

    per_seed_batches = []
    for gs, seed in zip(train_sets, seeds):
        perm = torch.randperm(len(gs), generator=torch.Generator().manual_seed(seed)).numpy()
        per_seed_batches.append([perm[i: i + batch_size] for i in range(0, len(gs), batch_size)])
    return PaddedBatches(train_sets, per_seed_batches).to_torch(device)


def eval_batch(sets: list[GraphSet], device: str):
    """One padded batch holding each seed's whole split."""
    from genlab.nn.seed_graph import PaddedBatches

    return PaddedBatches(sets, [[np.arange(len(gs))] for gs in sets]).to_torch(device).step(np.zeros(len(sets), int))


class Tracker:
    """Per-epoch validation of one arm's K seeds: keeps, for each seed and selection split, the best epoch's state
    of that seed (first best on ties) and a per-seed trace of validation accuracies."""

    def __init__(self, evals: dict, seeds: list[int], first: int) -> None:
        self.evals, self.seeds, self.first = evals, seeds, first
        self.best: list[dict[str, tuple[float, int, Any]]] = [{} for _ in seeds]
        self.trace: list[list[dict[str, Any]]] = [[] for _ in seeds]

    def update(self, model: ArmModel, epoch: int, stats: list[dict[str, float]]) -> None:
        if epoch < self.first:
            return
        rows = [{"epoch": epoch, **s} for s in stats]
        for sel in SELECTIONS:
            accs = [r["acc"] for r in evaluate(model, self.evals[sel], epoch, self.seeds[0], edges=False)]
            for k, acc in enumerate(accs):
                rows[k][f"{sel}_acc"] = acc
                if sel not in self.best[k] or acc > self.best[k][sel][0]:
                    self.best[k][sel] = (acc, epoch, model.seed_state(k))
        for trace, row in zip(self.trace, rows):
            trace.append(row)

    def result(self, model: ArmModel, arm: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"arm": arm, "seed": s, "trace": t} for s, t in zip(self.seeds, self.trace)]
        for sel in SELECTIONS:
            model.load_seed_states([best[sel][2] for best in self.best])
            epoch = self.best[0][sel][1]  # evaluation depends on the epoch only through ``prunes`` (same for all)
            tests = {split: evaluate(model, self.evals[split], epoch, self.seeds[0], mode=True)
                     for split in ("id_test", "ood_test")}
            for k, row in enumerate(out):
                val_acc, ep, _ = self.best[k][sel]
                row[sel] = {"val_acc": val_acc, "epoch": ep, **{split: tests[split][k] for split in tests}}
        return out


def _new_model(arm: str, hp: HParams, seed: int, k: int, device: str = "cpu"):
    """The arm's K seed-copies with the group seed's initial weights (the classifier is built first, so every arm
    starts from the same classifiers) on ``device``, its Adam optimiser and its Gumbel / concrete noise generator
    (CPU)."""
    import torch

    torch.manual_seed(seed)
    model = ArmModel(ARMS[arm], hp, k)
    model.modules.to(device)
    opt = torch.optim.Adam(model.modules.parameters(), lr=hp.lr, foreach=True)
    return model, opt, torch.Generator().manual_seed(seed + 1)


def _fit(model, opt, gen, batches, tracker: Tracker, epochs: range, seeds: list[int]) -> None:
    for epoch in epochs:
        tracker.update(model, epoch, train_epoch(model, opt, batches, epoch, gen, seeds))


def train_group(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Train ``job["arms"]`` on one split for K seeds at once; one result per arm and seed (arm-major): test
    metrics of the checkpoints chosen on each validation split, and a per-epoch trace. ``job``: arms, seeds (K
    ints: batch order), data (K cached split folders: seed k's own graphs), hp (HParams fields), optionally device
    and seed (initial weights and noise of the whole group; default the first of ``seeds``).

    ERM, V-REx and the PrunE arms share one run of the ERM warm-up: with the same seed their first ``warmup_epochs``
    are the same computation (same classifier initialisation and batch order; PrunE's scorer gets no gradient and its
    noise generator is untouched), so each continues from a copy of the warmed-up classifier and its Adam state —
    exactly what a separate run would compute, at a fraction of the cost (tested)."""
    from genlab.harness.torch_setup import setup_torch

    setup_torch(1)  # small graphs: more threads only spin, most of all on shared cores
    hp, seeds, device = HParams(**job["hp"]), [int(s) for s in job["seeds"]], job.get("device", "cpu")
    group_seed, k = int(job.get("seed", seeds[0])), len(seeds)
    sets = [load_sets(folder) for folder in job["data"]]
    batches = train_batches([s["train"] for s in sets], hp.batch_size, seeds, device)
    evals = {split: eval_batch([s[split] for s in sets], device) for split in EVAL_SPLITS}
    results: dict[str, list[dict[str, Any]]] = {}
    share = job.get("share_warmup", True)
    for arm in job["arms"]:
        method = ARMS[arm]["method"]
        if method == "gsat" or (method in ("prune", "vrex") and not share):  # each from its own initialisation
            model, opt, gen = _new_model(arm, hp, group_seed, k, device)
            tracker = Tracker(evals, seeds, hp.warmup_epochs if model.warms_up else 0)
            _fit(model, opt, gen, batches, tracker, range(hp.epochs), seeds)
            results[arm] = tracker.result(model, arm)
    methods = {a: ARMS[a]["method"] for a in job["arms"]}
    shared = [a for a, m in methods.items() if m == "erm" or (m in ("prune", "vrex") and share)]
    if shared:
        erm, erm_opt, erm_gen = _new_model("erm", hp, group_seed, k, device)
        erm_tracker = Tracker(evals, seeds, 0)
        _fit(erm, erm_opt, erm_gen, batches, erm_tracker, range(hp.warmup_epochs), seeds)
        warm_state = copy.deepcopy(erm.classifier.state_dict())
        warm_opt = copy.deepcopy(erm_opt.state_dict()["state"])
        for arm in shared:
            if arm == "erm":
                continue
            model, opt, gen = _new_model(arm, hp, group_seed, k, device)
            model.classifier.load_state_dict(warm_state)
            opt_state = opt.state_dict()
            opt_state["state"] = copy.deepcopy(warm_opt)  # classifier parameters come first in both optimisers
            opt.load_state_dict(opt_state)
            tracker = Tracker(evals, seeds, hp.warmup_epochs)  # selected among the method's own epochs only
            _fit(model, opt, gen, batches, tracker, range(hp.warmup_epochs, hp.epochs), seeds)
            results[arm] = tracker.result(model, arm)
        if "erm" in shared:
            _fit(erm, erm_opt, erm_gen, batches, erm_tracker, range(hp.warmup_epochs, hp.epochs), seeds)
            results["erm"] = erm_tracker.result(erm, "erm")
    return [res for a in job["arms"] for res in results[a]]


def train_epoch(model: ArmModel, opt, batches, epoch: int, gen, seeds: list[int]) -> list[dict[str, float]]:
    """One epoch: every seed visits its batches in its own fresh random order (seed k's step i trains on its batch
    ``order[k, i]``); the summed loss gives each seed's weights the gradient of its own loss."""
    import torch

    order = np.stack([torch.randperm(batches.shape_b, generator=torch.Generator().manual_seed(s * 1000 + epoch))
                      .numpy() for s in seeds])
    total = torch.zeros(len(seeds), dtype=torch.float64)
    kept = torch.zeros(len(seeds), dtype=torch.float64)
    for i in range(order.shape[1]):
        loss, kept_i = model.loss(batches.step(order[:, i]), epoch, gen)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        total += loss.detach().double().cpu()
        if kept_i is not None:
            kept += kept_i.double().cpu()
    n = order.shape[1]
    train_kept = (kept / n).tolist() if model.prunes(epoch) or model.method == "gsat" else [1.0] * len(seeds)
    return [{"loss": t / n, "train_kept": kk} for t, kk in zip(total.tolist(), train_kept)]
