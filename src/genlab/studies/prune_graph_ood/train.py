"""Training and evaluation of the arms of the ``prune-graph-ood`` study (one job = one split × arm × seed).

Arms share one GIN classifier (:class:`genlab.nn.graph.GraphClassifier`); the edge-based arms add an
:class:`genlab.nn.graph.EdgeScorer`:

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
too, reported as a sensitivity check); test splits are evaluated only for the chosen checkpoints. The training
batches are collated once per run with PyG's ``DataLoader`` (a seeded shuffle) and visited in a fresh random order
every epoch: collating a new shuffle every epoch would cost as much as the training itself at this scale.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genlab.data.motif_graphs import MOTIFS, GraphSet, to_pyg

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


@dataclass(frozen=True)
class HParams:
    hidden: int = 32
    layers: int = 3
    scorer_layers: int = 2
    epochs: int = 30
    batch_size: int = 64
    lr: float = 3e-3
    warmup_epochs: int = 5
    eta: float = 0.85
    k_percent: float = 90.0
    lam_size: float = 10.0
    lam_align_paper: float = 1.0
    lam_align_code: float = 1e-3
    tau: float = 0.2
    primary_form: str = "paper"
    gsat_final_r: float = 0.5
    gsat_decay_every: int = 3
    gsat_coef: float = 1.0
    vrex_penalty: float = 100.0
    eval_samples: int = 1


# ---------------------------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------------------------
class ArmModel:
    """A classifier and, for edge-based arms, an edge scorer; ``loss`` for a training batch, ``keep`` for the
    edge weights and keep probabilities used at evaluation."""

    def __init__(self, arm: dict[str, Any], hp: HParams) -> None:
        import torch

        from genlab.nn.graph import EdgeScorer, GraphClassifier

        self.arm, self.hp = arm, hp
        self.method = arm["method"]
        self.form = hp.primary_form if arm.get("form") == "primary" else arm.get("form")
        self.classifier = GraphClassifier(1, hp.hidden, hp.layers, len(MOTIFS))
        if self.method == "gsat":
            self.scorer = gsat_extractor(hp.hidden)
        else:
            self.scorer = EdgeScorer(1, hp.hidden, hp.scorer_layers, 2) if self.method == "prune" else None
        self.modules = torch.nn.ModuleList([m for m in (self.classifier, self.scorer) if m is not None])

    def prunes(self, epoch: int) -> bool:
        return self.method == "prune" and epoch >= self.hp.warmup_epochs

    @property
    def warms_up(self) -> bool:
        """PrunE (ERM warm-up, as its code) and V-REx (penalty annealing, as in Krueger et al.) start as ERM."""
        return self.method in ("prune", "vrex")

    def loss(self, b, epoch: int, gen) -> tuple[Any, dict[str, float]]:
        import torch.nn.functional as F

        if self.method == "gsat":
            return self._gsat_loss(b, epoch, gen)
        if self.prunes(epoch):
            return self._prune_loss(b, gen)
        per_graph = F.cross_entropy(self.classifier(b.x, b.edge_index, b.batch), b.y, reduction="none")
        if self.method == "vrex" and epoch >= self.hp.warmup_epochs:
            return per_graph.mean() + self.hp.vrex_penalty * env_risk_variance(per_graph, b.env), {}
        return per_graph.mean(), {}

    def _prune_loss(self, b, gen):
        import torch.nn.functional as F

        from genlab.nn import edge_masks as em

        logits = self.scorer(b.x, b.edge_index)
        mask = em.straight_through_gumbel(logits, self.hp.tau, gen)
        p = em.keep_probability(logits)
        ce = F.cross_entropy(self.classifier(b.x, b.edge_index, b.batch, mask), b.y)
        edge_graph, n_graphs = b.batch[b.edge_index[0]], int(b.num_graphs)
        if self.form == "paper":
            l_e = em.size_loss_paper(mask, edge_graph, n_graphs, self.hp.eta)
            l_s = em.alignment_loss_paper(p, edge_graph, n_graphs, self.hp.k_percent)
            lam_s = self.hp.lam_align_paper
        else:
            l_e = em.size_loss_code(mask, self.hp.eta)
            l_s = em.alignment_loss_code(p, self.hp.k_percent)
            lam_s = self.hp.lam_align_code
        lam_e = self.hp.lam_size if self.arm["size"] else 0.0
        lam_s = lam_s if self.arm["align"] else 0.0
        return ce + lam_e * l_e + lam_s * l_s, {"kept": float(mask.detach().mean())}

    def _gsat_loss(self, b, epoch: int, gen):
        import torch.nn.functional as F

        from genlab.nn import edge_masks as em

        logits = self._gsat_logits(b)
        att = em.concrete_sample(logits, 1.0, gen)
        att = (att + att[reverse_edges(b.edge_index, b.num_nodes)]) / 2  # GSAT's symmetrised edge attention
        ce = F.cross_entropy(self.classifier(b.x, b.edge_index, b.batch, att), b.y)
        r = em.gsat_r(epoch, self.hp.gsat_decay_every, final_r=self.hp.gsat_final_r)
        return ce + self.hp.gsat_coef * em.bernoulli_kl(torch_sigmoid(logits), r), {"kept": float(att.detach().mean())}

    def keep(self, b, epoch: int, gen) -> tuple[Any, Any]:
        """(edge weights for the classifier or None, keep probability per edge) at evaluation."""
        import torch

        from genlab.nn import edge_masks as em

        if self.method == "gsat":
            p = torch.sigmoid(self._gsat_logits(b))
            p = (p + p[reverse_edges(b.edge_index, b.num_nodes)]) / 2
            return p, p
        if self.prunes(epoch):
            logits = self.scorer(b.x, b.edge_index)
            masks = [em.straight_through_gumbel(logits, self.hp.tau, gen) for _ in range(self.hp.eval_samples)]
            return torch.stack(masks).mean(0), em.keep_probability(logits)
        return None, torch.ones(b.edge_index.shape[1], device=b.edge_index.device)


    def _gsat_logits(self, b):
        """GSAT's attention logits: the extractor on the classifier GIN's node embeddings (no mask)."""
        import torch

        h = self.classifier.gnn(b.x, b.edge_index)
        return self.scorer(torch.cat([h[b.edge_index[0]], h[b.edge_index[1]]], dim=-1))[:, 0]


def gsat_extractor(hidden: int):
    """GSAT's ``ExtractorMLP`` with ``learn_edge_att``: an MLP 2h → 4h → h → 1 of [h_i, h_j] per directed edge."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(2 * hidden, 4 * hidden), torch.nn.ReLU(),
                               torch.nn.Linear(4 * hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))


def reverse_edges(edge_index, n_nodes: int):
    """For every directed edge (u, v) the index of (v, u) (every edge is stored in both directions)."""
    import torch

    key = edge_index[0] * n_nodes + edge_index[1]
    order = torch.argsort(key)
    pos = torch.searchsorted(key[order], edge_index[1] * n_nodes + edge_index[0])
    return order[pos]


def torch_sigmoid(x):
    import torch

    return torch.sigmoid(x)


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
def evaluate(model: ArmModel, b, epoch: int, seed: int, mode: bool = False) -> dict[str, float]:
    """Accuracy and edge statistics on one collated split. PrunE is evaluated as the official code does, on one
    sampled hard mask (``eval_samples`` averaged); with ``mode`` also on the most likely mask (keep iff p >= 1/2),
    reported as ``acc_mode`` (the accuracy otherwise). Keep probabilities p give expected statistics of the sampled
    mask: motif-edge recall = Σ p·gt / Σ gt, spurious removed = Σ (1 − p)(1 − gt) / Σ (1 − gt), kept = mean p, and
    the AUC of p separating motif from other edges."""
    import torch

    gen = torch.Generator().manual_seed(seed)  # the same checkpoint always sees the same evaluation mask
    model.modules.eval()
    with torch.no_grad():
        weight, p = model.keep(b, epoch, gen)
        pred = model.classifier(b.x, b.edge_index, b.batch, weight).argmax(1)
        acc = float((pred == b.y).double().mean())
        acc_mode = acc
        if mode and model.prunes(epoch):
            pred_mode = model.classifier(b.x, b.edge_index, b.batch, (p >= 0.5).to(p.dtype)).argmax(1)
            acc_mode = float((pred_mode == b.y).double().mean())
    model.modules.train()
    gt = b.edge_gt.cpu()
    p = p.double().cpu()
    out = {
        "acc": acc,
        "recall": float((p * gt).sum() / gt.sum().clamp_min(1)),
        "spurious_removed": float(((1 - p) * ~gt).sum() / (~gt).sum().clamp_min(1)),
        "kept": float(p.mean()),
        "edge_auc": auc(p.numpy(), gt.numpy()),
    }
    if mode:
        out["acc_mode"] = acc_mode
    return out


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count 1/2); nan if a class is empty."""
    pos, neg = score[positive], score[~positive]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    allv = np.concatenate([pos, neg])
    order = np.argsort(allv, kind="mergesort")
    ranks = np.empty(len(allv))
    sorted_v = allv[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_v, return_index=True, return_counts=True)
    avg = first + (counts - 1) / 2.0 + 1
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


# ---------------------------------------------------------------------------------------------------------------
# one job
# ---------------------------------------------------------------------------------------------------------------
def collate(graphs: list, batch_size: int, seed: int | None) -> list:
    import torch
    from torch_geometric.loader import DataLoader

    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    return list(DataLoader(graphs, batch_size=batch_size, shuffle=seed is not None, generator=gen))


def load_sets(folder: Path) -> dict[str, GraphSet]:
    return {s: GraphSet.load(Path(folder) / f"{s}.npz") for s in ("train", *EVAL_SPLITS)}


class Tracker:
    """Per-epoch validation of one arm: keeps, for each selection split, the best epoch's state (first best on ties)
    and a trace of validation accuracies."""

    def __init__(self, evals: dict, seed: int, first: int) -> None:
        self.evals, self.seed, self.first = evals, seed, first
        self.best: dict[str, tuple[float, int, Any]] = {}
        self.trace: list[dict[str, Any]] = []

    def update(self, model: ArmModel, epoch: int, stats: dict[str, float]) -> None:
        if epoch < self.first:
            return
        row = {"epoch": epoch, **stats}
        for sel in SELECTIONS:
            acc = evaluate(model, self.evals[sel], epoch, self.seed)["acc"]
            row[f"{sel}_acc"] = acc
            if sel not in self.best or acc > self.best[sel][0]:
                self.best[sel] = (acc, epoch, copy.deepcopy(model.modules.state_dict()))
        self.trace.append(row)

    def result(self, model: ArmModel, arm: str) -> dict[str, Any]:
        out: dict[str, Any] = {"arm": arm, "seed": self.seed, "trace": self.trace}
        for sel, (val_acc, epoch, state) in self.best.items():
            model.modules.load_state_dict(state)
            out[sel] = {"val_acc": val_acc, "epoch": epoch}
            for split in ("id_test", "ood_test"):
                out[sel][split] = evaluate(model, self.evals[split], epoch, self.seed, mode=True)
        return out


def _new_model(arm: str, hp: HParams, seed: int, device: str = "cpu"):
    """The arm's model with the seed's initial weights (the classifier is built first, so every arm of a seed starts
    from the same classifier) on ``device``, its Adam optimiser and its Gumbel / concrete noise generator (CPU)."""
    import torch

    torch.manual_seed(seed)
    model = ArmModel(ARMS[arm], hp)
    model.modules.to(device)
    opt = torch.optim.Adam(model.modules.parameters(), lr=hp.lr, foreach=True)
    return model, opt, torch.Generator().manual_seed(seed + 1)


def _fit(model, opt, gen, batches, tracker: Tracker, epochs: range, seed: int) -> None:
    for epoch in epochs:
        tracker.update(model, epoch, train_epoch(model, opt, batches, epoch, gen, seed))


def train_group(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Train ``job["arms"]`` on one cached split with one seed; one result per arm: test metrics of the checkpoints
    chosen on each validation split, and a per-epoch trace. ``job``: arms, seed, data (folder), hp (HParams fields).

    ERM, V-REx and the PrunE arms share one run of the ERM warm-up: with the same seed their first ``warmup_epochs``
    are the same computation (same classifier initialisation and batch order; PrunE's scorer gets no gradient and its
    noise generator is untouched), so each continues from a copy of the warmed-up classifier and its Adam state —
    exactly what a separate run would compute, at a fraction of the cost (tested)."""
    from genlab.harness.torch_setup import setup_torch

    setup_torch(1)  # tiny graphs: more threads only spin, most of all on shared cores
    hp, seed, device = HParams(**job["hp"]), int(job["seed"]), job.get("device", "cpu")
    sets = load_sets(job["data"])
    batches = [b.to(device) for b in collate(to_pyg(sets["train"]), hp.batch_size, seed)]
    evals = {s: collate(to_pyg(sets[s]), len(sets[s]), None)[0].to(device) for s in EVAL_SPLITS}
    results: dict[str, dict[str, Any]] = {}
    share = job.get("share_warmup", True)
    for arm in job["arms"]:
        method = ARMS[arm]["method"]
        if method == "gsat" or (method in ("prune", "vrex") and not share):  # each from its own initialisation
            model, opt, gen = _new_model(arm, hp, seed, device)
            tracker = Tracker(evals, seed, hp.warmup_epochs if model.warms_up else 0)
            _fit(model, opt, gen, batches, tracker, range(hp.epochs), seed)
            results[arm] = tracker.result(model, arm)
    methods = {a: ARMS[a]["method"] for a in job["arms"]}
    shared = [a for a, m in methods.items() if m == "erm" or (m in ("prune", "vrex") and share)]
    if shared:
        erm, erm_opt, erm_gen = _new_model("erm", hp, seed, device)
        erm_tracker = Tracker(evals, seed, 0)
        _fit(erm, erm_opt, erm_gen, batches, erm_tracker, range(hp.warmup_epochs), seed)
        warm_state = copy.deepcopy(erm.classifier.state_dict())
        warm_opt = copy.deepcopy(erm_opt.state_dict()["state"])
        for arm in shared:
            if arm == "erm":
                continue
            model, opt, gen = _new_model(arm, hp, seed, device)
            model.classifier.load_state_dict(warm_state)
            opt_state = opt.state_dict()
            opt_state["state"] = copy.deepcopy(warm_opt)  # classifier parameters come first in both optimisers
            opt.load_state_dict(opt_state)
            tracker = Tracker(evals, seed, hp.warmup_epochs)  # selected among the method's own epochs only
            _fit(model, opt, gen, batches, tracker, range(hp.warmup_epochs, hp.epochs), seed)
            results[arm] = tracker.result(model, arm)
        if "erm" in shared:
            _fit(erm, erm_opt, erm_gen, batches, erm_tracker, range(hp.warmup_epochs, hp.epochs), seed)
            results["erm"] = erm_tracker.result(erm, "erm")
    return [results[a] for a in job["arms"]]


def train_arm(job: dict[str, Any]) -> dict[str, Any]:
    """One arm alone (its own warm-up for PrunE): ``train_group`` with ``arms=[job["arm"]]``."""
    return train_group({**job, "arms": [job["arm"]]})[0]


def train_epoch(model: ArmModel, opt, batches: list, epoch: int, gen, seed: int) -> dict[str, float]:
    import torch

    order = torch.randperm(len(batches), generator=torch.Generator().manual_seed(seed * 1000 + epoch))
    total, kept = 0.0, []
    for i in order.tolist():
        loss, info = model.loss(batches[i], epoch, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += float(loss.detach())
        if "kept" in info:
            kept.append(info["kept"])
    return {"loss": total / len(batches), "train_kept": float(np.mean(kept)) if kept else 1.0}
