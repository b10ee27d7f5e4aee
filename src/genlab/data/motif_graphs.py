"""GOOD-Motif / Spurious-Motif graphs, generated offline with networkx.

Each graph is a *base* (wheel, tree, ladder, star or path) with one *motif* (house, cycle or crane) attached by a
single edge at a random base node; the label is the motif. Ground truth: ``node_gt`` marks motif nodes and
``edge_gt`` marks edges whose two endpoints are motif nodes (the attaching edge and every base edge are not motif
edges). Node features are all ones, so a classifier must recognise the motif from structure alone.

Re-implemented from the GOOD benchmark's description and generator (Gui et al., NeurIPS 2022 Datasets track,
``divelab/GOOD``: ``good_motif.py`` and ``synthetic_structsim.py``), written independently:

* base widths 10 ± 5 (a tree of width w has height ⌊log2 w⌋ − 1, at least 1);
* motifs of 5 nodes: house (a 4-cycle with a roof node, 6 edges), cycle (a 5-cycle, 5 edges), crane (K_{2,3}, 6 edges);
* 5 % perturbation: ⌊0.05·|E|⌋ attempts to add a random non-edge, kept only when at least one endpoint has GOOD's
  base role 0 (:func:`role_zero`: every wheel, tree and ladder node, the centre of a star — not its leaves —, the
  interior of a path — not its two ends); no edge is removed, none is added between two motif nodes;
* label noise: with probability ``label_noise`` the label is redrawn uniformly from the 3 classes (GOOD: 0.1).

GOOD's two domains × two shifts, as its ``good_motif.py`` draws them (each graph's distribution; the split sizes are
ours): **basis** — covariate (:func:`covariate_split`: train on wheel/tree/ladder, OOD val on star, OOD test on
path) and concept (:func:`concept_split`: with probability b the base is the motif's paired base, else one of the
three training bases uniformly — GOOD's rule, so b = 0 is independence; b = 0.99/0.97/0.95 in training, 0.3 in OOD
val, 0 in OOD test) —; **size** — covariate (:func:`size_covariate_split`: base widths 6/10/15 (± 5) in training,
30 in OOD val, 70 in OOD test, any of the five bases) and concept (:func:`size_concept_split`: width 10/40/70 (± 5)
is the motif's paired width with probability b, else uniform). Each returns train / id_val / id_test / ood_val /
ood_test :class:`GraphSet` s; the ID splits are drawn as the training set.

Graphs are stored packed in numpy arrays (fast to build, to cache as ``.npz`` without pickle,
and to turn into PyG ``Data`` with :func:`to_pyg`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import networkx as nx
import numpy as np

BASES = ("wheel", "tree", "ladder", "star", "path")
MOTIFS = ("house", "cycle", "crane")
SPLITS = ("train", "id_val", "id_test", "ood_val", "ood_test")

# motif edges on local nodes 0..4; node 0 is the one attached to the base
_MOTIF_EDGES = {
    "house": [(0, 1), (0, 4), (1, 2), (2, 3), (3, 4), (4, 1)],  # square 1-2-3-4 with roof 0 on 1 and 4
    "cycle": [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)],  # 5-cycle
    "crane": [(0, 1), (0, 3), (2, 1), (2, 3), (4, 1), (4, 3)],  # K_{2,3}: {1, 3} x {0, 2, 4}
}
MOTIF_NODES = 5


@dataclass(frozen=True)
class MotifSpec:
    """How single graphs are drawn."""

    width: int = 10  # base width (GOOD: 10)
    width_jitter: int = 5  # width drawn uniformly from width ± jitter
    perturb: float = 0.05  # fraction of |E| of random base edges to try to add
    label_noise: float = 0.1  # probability that the label is redrawn uniformly

    def validate(self) -> None:
        if self.width - self.width_jitter < 1:
            raise ValueError("width - width_jitter must be >= 1 (GOOD's size domain reaches width 1)")
        if self.width_jitter < 0:
            raise ValueError("width_jitter must be >= 0")
        if not 0.0 <= self.perturb <= 1.0:
            raise ValueError("perturb must be in [0, 1]")
        if not 0.0 <= self.label_noise <= 1.0:
            raise ValueError("label_noise must be in [0, 1]")


# ---------------------------------------------------------------------------------------------------------------
# single graphs
# ---------------------------------------------------------------------------------------------------------------
def base_graph(base: str, width: int) -> nx.Graph:
    """The base graph of the given type and width, nodes 0..n-1."""
    if base == "wheel":
        return nx.wheel_graph(width)
    if base == "tree":
        return nx.balanced_tree(2, max(1, int(math.log2(width)) - 1))
    if base == "ladder":
        return nx.ladder_graph(width)
    if base == "star":
        return nx.star_graph(width)  # a centre and `width` leaves
    if base == "path":
        return nx.path_graph(width)
    raise ValueError(f"unknown base {base!r}; known: {', '.join(BASES)}")


def motif_graph(motif: str) -> nx.Graph:
    """The motif on nodes 0..4 (node 0 is the attachment node)."""
    if motif not in _MOTIF_EDGES:
        raise ValueError(f"unknown motif {motif!r}; known: {', '.join(MOTIFS)}")
    g = nx.Graph()
    g.add_nodes_from(range(MOTIF_NODES))
    g.add_edges_from(_MOTIF_EDGES[motif])
    return g


def role_zero(base: str, n_base: int) -> np.ndarray:
    """(n_base,) bool: the base nodes GOOD gives role 0, the only ones its perturbation may attach an edge to
    (``synthetic_structsim``: a star's leaves and a path's two ends have role 1)."""
    zero = np.ones(n_base, dtype=bool)
    if base == "star":
        zero[1:] = False  # networkx's star: node 0 is the centre
    elif base == "path":
        zero[[0, n_base - 1]] = False
    return zero


def build_graph(base: str, motif: str, width: int, perturb: float, rng: np.random.Generator) -> tuple[nx.Graph, int]:
    """Base + motif attached at a random base node + random extra edges that touch a role-0 base node. Returns the
    graph and the number of base nodes (nodes >= that number are motif nodes)."""
    g = base_graph(base, width)
    n_base = g.number_of_nodes()
    zero = np.concatenate([role_zero(base, n_base), np.zeros(MOTIF_NODES, dtype=bool)])
    g = nx.disjoint_union(g, motif_graph(motif))  # motif nodes become n_base .. n_base + 4
    g.add_edge(n_base, int(rng.integers(n_base)))
    n = g.number_of_nodes()
    for _ in range(int(g.number_of_edges() * perturb)):
        while True:  # a random non-edge
            u, v = (int(a) for a in rng.integers(n, size=2))
            if u != v and not g.has_edge(u, v):
                break
        if zero[u] or zero[v]:
            g.add_edge(u, v)
    return g, n_base


# ---------------------------------------------------------------------------------------------------------------
# packed sets of graphs
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class GraphSet:
    """Graphs packed in flat arrays. Graph g has nodes ``node_ptr[g]:node_ptr[g+1]`` and directed edges
    ``edge_ptr[g]:edge_ptr[g+1]`` (each undirected edge appears in both directions, as PyG stores it);
    ``edge_index`` holds node ids local to each graph."""

    node_ptr: np.ndarray  # (G+1,) int64
    edge_ptr: np.ndarray  # (G+1,) int64
    edge_index: np.ndarray  # (2, E) int64, local ids
    edge_gt: np.ndarray  # (E,) bool: both endpoints are motif nodes
    node_gt: np.ndarray  # (N,) bool: motif node
    y: np.ndarray  # (G,) int64 label (motif id after label noise)
    motif: np.ndarray  # (G,) int64 true motif id
    base: np.ndarray  # (G,) int64 base id (index into BASES)
    env: np.ndarray  # (G,) int64 training environment id

    ARRAYS = ("node_ptr", "edge_ptr", "edge_index", "edge_gt", "node_gt", "y", "motif", "base", "env")

    def __len__(self) -> int:
        return len(self.y)

    @property
    def num_nodes(self) -> np.ndarray:
        return np.diff(self.node_ptr)

    @property
    def num_edges(self) -> np.ndarray:
        return np.diff(self.edge_ptr)

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, **{k: getattr(self, k) for k in self.ARRAYS})
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> GraphSet:
        with np.load(path, allow_pickle=False) as z:  # no pickle: a cache file never executes code
            return cls(**{k: z[k] for k in cls.ARRAYS})


def pack(graphs: Sequence[tuple[nx.Graph, int]], y, motif, base, env) -> GraphSet:
    """Pack (graph, n_base) pairs into a :class:`GraphSet`."""
    n_nodes = np.array([g.number_of_nodes() for g, _ in graphs], dtype=np.int64)
    edges, node_gt = [], []
    for g, n_base in graphs:
        e = np.array(g.edges(), dtype=np.int64).reshape(-1, 2).T
        edges.append(np.concatenate([e, e[::-1]], axis=1))  # both directions
        node_gt.append(np.arange(g.number_of_nodes()) >= n_base)
    n_edges = np.array([e.shape[1] for e in edges], dtype=np.int64)
    edge_index = np.concatenate(edges, axis=1)
    node_ptr = np.concatenate([[0], np.cumsum(n_nodes)])
    edge_ptr = np.concatenate([[0], np.cumsum(n_edges)])
    node_gt_flat = np.concatenate(node_gt)
    offset = np.repeat(node_ptr[:-1], n_edges)  # global ids to read node_gt of both endpoints at once
    edge_gt = node_gt_flat[edge_index[0] + offset] & node_gt_flat[edge_index[1] + offset]
    as_int = [np.asarray(a, dtype=np.int64) for a in (y, motif, base, env)]
    return GraphSet(node_ptr, edge_ptr, edge_index, edge_gt, node_gt_flat, *as_int)


def generate(
    bases: np.ndarray, motifs: np.ndarray, env: np.ndarray, spec: MotifSpec, rng: np.random.Generator,
    centres: np.ndarray | None = None,
) -> GraphSet:
    """One graph per (base id, motif id) pair, widths (``centres`` ± ``spec.width_jitter``, default ``spec.width``)
    and noise drawn from ``rng``."""
    centre = np.full(len(bases), spec.width) if centres is None else np.asarray(centres)
    widths = centre + rng.integers(-spec.width_jitter, spec.width_jitter + 1, size=len(bases))
    graphs = [build_graph(BASES[b], MOTIFS[m], int(w), spec.perturb, rng) for b, m, w in zip(bases, motifs, widths)]
    noisy = rng.random(len(motifs)) < spec.label_noise
    y = np.where(noisy, rng.integers(len(MOTIFS), size=len(motifs)), motifs)
    return pack(graphs, y, motifs, bases, env)


# ---------------------------------------------------------------------------------------------------------------
# splits
# ---------------------------------------------------------------------------------------------------------------
TRAIN_BASES = (0, 1, 2)  # wheel, tree, ladder
COVARIATE_OOD = {"ood_val": 3, "ood_test": 4}  # star, path: bases never seen in training


def covariate_split(n_train: int, n_eval: int, spec: MotifSpec, seed: int) -> dict[str, GraphSet]:
    """GOOD-Motif basis/covariate: train, id_val, id_test on wheel/tree/ladder (environment = base); ood_val on
    star, ood_test on path. Motifs uniform and independent of the base everywhere."""
    rng = np.random.default_rng(seed)
    out = {}
    for split in SPLITS:
        n = n_train if split == "train" else n_eval
        motifs = rng.integers(len(MOTIFS), size=n)
        if split in COVARIATE_OOD:
            bases = np.full(n, COVARIATE_OOD[split])
        else:
            bases = rng.choice(TRAIN_BASES, size=n)
        out[split] = generate(bases, motifs, bases.copy(), spec, rng)
    return out


def biased_choice(motifs: np.ndarray, bias: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """GOOD's concept-shift rule: index = the motif's own index (wheel-house, tree-cycle, ladder-crane; or the
    motif's width) with probability ``bias``, else one of the three uniformly (the motif's own included): P(paired)
    = b + (1 − b)/3, and b = 0 makes them independent."""
    other = rng.integers(len(MOTIFS), size=len(motifs))
    return np.where(rng.random(len(motifs)) < bias, motifs, other)


GOOD_TRAIN_BIAS = (0.99, 0.97, 0.95)  # GOOD-Motif's train_spurious_ratio
GOOD_VAL_BIAS, GOOD_TEST_BIAS = 0.3, 0.0
SIZE_COVARIATE_WIDTHS = {"train": (6, 10, 15), "ood_val": (30,), "ood_test": (70,)}  # GOOD: all_width_basis
SIZE_CONCEPT_WIDTHS = (10, 40, 70)


def _concept_envs(split: str, n: int, train_bias, val_bias, test_bias) -> tuple[np.ndarray, np.ndarray]:
    """(env, bias) per graph: training environments of equal size (ID splits drawn the same way), else env 0."""
    if split in ("train", "id_val", "id_test"):
        env = np.arange(n) % len(train_bias)
        return env, np.asarray(train_bias, dtype=float)[env]
    return np.zeros(n, dtype=np.int64), np.full(n, val_bias if split == "ood_val" else test_bias)


def concept_split(
    n_train: int,
    n_eval: int,
    spec: MotifSpec,
    seed: int,
    train_bias: Sequence[float] = GOOD_TRAIN_BIAS,
    val_bias: float = GOOD_VAL_BIAS,
    test_bias: float = GOOD_TEST_BIAS,
) -> dict[str, GraphSet]:
    """GOOD-Motif basis/concept on wheel/tree/ladder: training environments e with spurious ratio
    ``train_bias[e]``, ood_val with ``val_bias``, ood_test with ``test_bias`` (:func:`biased_choice`)."""
    rng = np.random.default_rng(seed)
    out = {}
    for split in SPLITS:
        n = n_train if split == "train" else n_eval
        motifs = rng.integers(len(MOTIFS), size=n)
        env, bias = _concept_envs(split, n, train_bias, val_bias, test_bias)
        bases = np.asarray(TRAIN_BASES)[biased_choice(motifs, bias, rng)]
        out[split] = generate(bases, motifs, env, spec, rng)
    return out


def size_covariate_split(n_train: int, n_eval: int, spec: MotifSpec, seed: int) -> dict[str, GraphSet]:
    """GOOD-Motif size/covariate: any of the five bases, width 6, 10 or 15 (± jitter) in train / id_val / id_test
    (environment = the width's index), 30 in ood_val, 70 in ood_test."""
    rng = np.random.default_rng(seed)
    out = {}
    for split in SPLITS:
        n = n_train if split == "train" else n_eval
        table = SIZE_COVARIATE_WIDTHS.get(split, SIZE_COVARIATE_WIDTHS["train"])
        width_id = rng.integers(len(table), size=n)
        bases, motifs = rng.integers(len(BASES), size=n), rng.integers(len(MOTIFS), size=n)
        env = width_id if split not in COVARIATE_OOD else np.zeros(n, dtype=np.int64)
        out[split] = generate(bases, motifs, env, spec, rng, centres=np.asarray(table)[width_id])
    return out


def size_concept_split(
    n_train: int,
    n_eval: int,
    spec: MotifSpec,
    seed: int,
    train_bias: Sequence[float] = GOOD_TRAIN_BIAS,
    val_bias: float = GOOD_VAL_BIAS,
    test_bias: float = GOOD_TEST_BIAS,
) -> dict[str, GraphSet]:
    """GOOD-Motif size/concept: any of the five bases; the width (10, 40 or 70, ± jitter) is the motif's own with
    the environment's spurious ratio (:func:`biased_choice`)."""
    rng = np.random.default_rng(seed)
    out = {}
    for split in SPLITS:
        n = n_train if split == "train" else n_eval
        bases, motifs = rng.integers(len(BASES), size=n), rng.integers(len(MOTIFS), size=n)
        env, bias = _concept_envs(split, n, train_bias, val_bias, test_bias)
        centres = np.asarray(SIZE_CONCEPT_WIDTHS)[biased_choice(motifs, bias, rng)]
        out[split] = generate(bases, motifs, env, spec, rng, centres=centres)
    return out


SPLIT_MAKERS = {"covariate": covariate_split, "concept": concept_split, "size-covariate": size_covariate_split,
                "size-concept": size_concept_split}
CONCEPT_KINDS = ("concept", "size-concept")


def make_split(kind: str, n_train: int, n_eval: int, spec: MotifSpec, seed: int, **kw) -> dict[str, GraphSet]:
    if kind not in SPLIT_MAKERS:
        raise ValueError(f"unknown split {kind!r}; known: {', '.join(SPLIT_MAKERS)}")
    return SPLIT_MAKERS[kind](n_train, n_eval, spec, seed, **kw)


def cache_folder(cache_dir: Path, kind: str, n_train: int, n_eval: int, spec: MotifSpec, seed: int, **kw) -> Path:
    """The folder under ``cache_dir`` that holds the split made by these arguments (a hash of all of them)."""
    key = _cache_key(kind, n_train, n_eval, spec, seed, kw)
    return Path(cache_dir) / f"motif-{kind}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _cache_key(kind: str, n_train: int, n_eval: int, spec: MotifSpec, seed: int, kw: dict) -> str:
    kw = {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(kw.items())}
    return json.dumps({"kind": kind, "n_train": n_train, "n_eval": n_eval, "spec": asdict(spec), "seed": seed,
                       "kw": kw}, sort_keys=True)


def cached_split(
    cache_dir: Path, kind: str, n_train: int, n_eval: int, spec: MotifSpec, seed: int, **kw
) -> dict[str, GraphSet]:
    """:func:`make_split`, cached as one ``.npz`` per split in :func:`cache_folder` (loaded without pickle)."""
    folder = cache_folder(cache_dir, kind, n_train, n_eval, spec, seed, **kw)
    paths = {s: folder / f"{s}.npz" for s in SPLITS}
    if all(p.exists() for p in paths.values()):
        return {s: GraphSet.load(p) for s, p in paths.items()}
    sets = make_split(kind, n_train, n_eval, spec, seed, **kw)
    folder.mkdir(parents=True, exist_ok=True)
    for s, p in paths.items():
        sets[s].save(p)
    (folder / "key.json").write_text(_cache_key(kind, n_train, n_eval, spec, seed, kw))
    return sets


# ---------------------------------------------------------------------------------------------------------------
# PyG
# ---------------------------------------------------------------------------------------------------------------
def to_pyg(gs: GraphSet) -> list:
    """A list of ``torch_geometric.data.Data`` (x = ones, edge_index, y, edge_gt, node_gt, base, env)."""
    import torch
    from torch_geometric.data import Data

    edge_index = torch.from_numpy(gs.edge_index)
    edge_gt = torch.from_numpy(gs.edge_gt)
    node_gt = torch.from_numpy(gs.node_gt)
    out = []
    for g in range(len(gs)):
        e0, e1 = int(gs.edge_ptr[g]), int(gs.edge_ptr[g + 1])
        n0, n1 = int(gs.node_ptr[g]), int(gs.node_ptr[g + 1])
        out.append(
            Data(
                x=torch.ones(n1 - n0, 1),
                edge_index=edge_index[:, e0:e1],
                y=torch.tensor([int(gs.y[g])]),
                edge_gt=edge_gt[e0:e1],
                node_gt=node_gt[n0:n1],
                base=torch.tensor([int(gs.base[g])]),
                env=torch.tensor([int(gs.env[g])]),
            )
        )
    return out
