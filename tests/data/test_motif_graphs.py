"""GOOD-Motif generator: motif shapes, exact ground-truth edge masks, splits, caching, PyG conversion."""

import networkx as nx
import numpy as np
import pytest

from genlab.data.motif_graphs import (
    BASES,
    MOTIFS,
    SPLITS,
    GraphSet,
    MotifSpec,
    build_graph,
    cached_split,
    concept_split,
    covariate_split,
    generate,
    motif_graph,
    role_zero,
    size_concept_split,
    size_covariate_split,
    to_pyg,
)

REFERENCE = {
    "house": nx.house_graph(),
    "cycle": nx.cycle_graph(5),
    "crane": nx.complete_bipartite_graph(2, 3),
}


@pytest.mark.parametrize("motif", MOTIFS)
def test_motifs_have_their_shape(motif):
    assert nx.is_isomorphic(motif_graph(motif), REFERENCE[motif])


def _graph(gs: GraphSet, g: int) -> tuple[nx.Graph, np.ndarray, np.ndarray]:
    e = gs.edge_index[:, gs.edge_ptr[g] : gs.edge_ptr[g + 1]]
    gt = gs.edge_gt[gs.edge_ptr[g] : gs.edge_ptr[g + 1]]
    node_gt = gs.node_gt[gs.node_ptr[g] : gs.node_ptr[g + 1]]
    graph = nx.Graph()
    graph.add_nodes_from(range(len(node_gt)))
    graph.add_edges_from(e.T.tolist())
    return graph, e, gt, node_gt


def test_edge_masks_mark_exactly_the_motif_edges():
    rng = np.random.default_rng(0)
    n = 150
    bases, motifs = rng.integers(len(BASES), size=n), rng.integers(len(MOTIFS), size=n)
    gs = generate(bases, motifs, np.zeros(n), MotifSpec(perturb=0.2), rng)  # heavy perturbation: more base edges
    for g in range(n):
        graph, e, gt, node_gt = _graph(gs, g)
        motif_nodes = set(np.flatnonzero(node_gt).tolist())
        assert len(motif_nodes) == 5
        # the marked edges are exactly the edges inside the motif, and they form the motif's shape
        inside = {tuple(sorted(x)) for x in e.T.tolist() if x[0] in motif_nodes and x[1] in motif_nodes}
        marked = {tuple(sorted(x)) for x in e[:, gt].T.tolist()}
        assert marked == inside
        assert nx.is_isomorphic(graph.subgraph(motif_nodes), REFERENCE[MOTIFS[gs.motif[g]]])
        # both directions of every edge are stored, with the same mark
        assert e.shape[1] == 2 * graph.number_of_edges()
        assert gt.sum() == 2 * REFERENCE[MOTIFS[gs.motif[g]]].number_of_edges()
        assert nx.is_connected(graph)


def test_perturbation_only_adds_edges_touching_a_role_zero_base_node():
    """GOOD's ``perturb`` keeps an added edge only when an endpoint has role 0: any wheel/tree/ladder node, a star's
    centre (never a leaf), a path's interior (never its ends)."""
    for base in BASES:
        kept_by_leaf_or_end = 0
        for seed in range(20):
            g0, nb = build_graph(base, "house", 12, 0.0, np.random.default_rng(seed))
            g1, _ = build_graph(base, "house", 12, 0.5, np.random.default_rng(seed))
            assert set(g0.edges()) <= set(g1.edges())
            zero = set(np.flatnonzero(role_zero(base, nb)).tolist())
            added = set(g1.edges()) - set(g0.edges())
            assert all(u in zero or v in zero for u, v in added), (base, added)
            kept_by_leaf_or_end += sum(u < nb and v < nb and u not in zero and v not in zero for u, v in added)
        assert kept_by_leaf_or_end == 0
    assert role_zero("star", 5).tolist() == [True, False, False, False, False]
    assert role_zero("path", 4).tolist() == [False, True, True, False]
    assert role_zero("ladder", 4).all()


def test_covariate_split_bases_and_balance():
    sets = covariate_split(300, 120, MotifSpec(), seed=3)
    assert set(sets) == set(SPLITS)
    for s in ("train", "id_val", "id_test"):
        assert set(np.unique(sets[s].base)) == {0, 1, 2}
        assert np.array_equal(sets[s].env, sets[s].base)
    assert set(np.unique(sets["ood_val"].base)) == {BASES.index("star")}
    assert set(np.unique(sets["ood_test"].base)) == {BASES.index("path")}
    counts = np.bincount(sets["train"].motif, minlength=3)
    assert counts.min() > 70  # about 100 each


def _near(values, p, sigmas=4.5):
    """The share of True in ``values`` is within ``sigmas`` binomial standard errors of ``p``."""
    n = len(values)
    return abs(np.mean(values) - p) <= sigmas * np.sqrt(p * (1 - p) / n) + 1e-12


def test_concept_split_follows_goods_rule():
    """good_motif.py, basis/concept: with probability b the base is the motif's (wheel-house, tree-cycle,
    ladder-crane), else ``random.randint(0, 2)`` — uniform over the three, the motif's own included; b = 0.99, 0.97,
    0.95 in the training environments, 0.3 in OOD val, 0.0 in OOD test."""
    spec = MotifSpec(label_noise=0.0)
    sets = concept_split(3000, 1500, spec, seed=4)
    tr = sets["train"]
    match = tr.base == tr.motif
    for e, b in enumerate((0.99, 0.97, 0.95)):
        assert _near(match[tr.env == e], b + (1 - b) / 3)
    for split, b in (("ood_val", 0.3), ("ood_test", 0.0)):
        gs = sets[split]
        assert _near(gs.base == gs.motif, b + (1 - b) / 3)
        other = gs.base[gs.base != gs.motif] - gs.motif[gs.base != gs.motif]
        assert abs(np.mean(other % 3 == 1) - 0.5) < 0.06  # the two other bases equally often
    assert set(np.unique(tr.base)) == {0, 1, 2} and np.array_equal(tr.y, tr.motif)


def _widths(gs: GraphSet) -> tuple[np.ndarray, np.ndarray]:
    """(base id, base width) per graph, the width read back from the number of base nodes (wheel and path: w nodes,
    star w + 1, ladder 2w; trees are left out: their size is 2^(h+1) − 1)."""
    n_base = np.add.reduceat((~gs.node_gt).astype(int), gs.node_ptr[:-1])
    from_nodes = {"wheel": lambda n: n, "path": lambda n: n, "star": lambda n: n - 1, "ladder": lambda n: n // 2}
    width = np.array([from_nodes[BASES[b]](n) if BASES[b] in from_nodes else -1 for b, n in zip(gs.base, n_base)])
    return gs.base, width


def test_size_covariate_split_follows_goods_rule():
    """good_motif.py, size/covariate: base uniform over the five; width 6, 10 or 15 (uniformly) + randint(−5, 5) in
    training, 30 ± 5 in OOD val, 70 ± 5 in OOD test."""
    sets = size_covariate_split(1500, 300, MotifSpec(), seed=5)
    for split, centres in (("train", (6, 10, 15)), ("ood_val", (30,)), ("ood_test", (70,))):
        base, width = _widths(sets[split])
        assert set(np.unique(base)) == set(range(len(BASES)))
        assert abs(np.bincount(base, minlength=5) / len(base) - 0.2).max() < 0.06
        w = width[width >= 0]
        assert w.min() >= min(centres) - 5 and w.max() <= max(centres) + 5
        assert abs(w.mean() - np.mean(centres)) < 0.6
    _, width = _widths(sets["train"])
    assert width[width >= 0].min() <= 2  # 6 − 5 = 1: GOOD's size domain reaches one-node bases
    assert set(np.unique(sets["train"].env)) == {0, 1, 2}  # environment = the width's index


def test_size_concept_split_follows_goods_rule():
    """good_motif.py, size/concept: base uniform over the five; the width centre (10, 40, 70) is the motif's with
    probability b, else uniform; b as for the basis concept split."""
    sets = size_concept_split(3000, 1500, MotifSpec(label_noise=0.0), seed=6)
    for split, biases in (("train", (0.99, 0.97, 0.95)), ("ood_val", (0.3,)), ("ood_test", (0.0,))):
        gs = sets[split]
        _, width = _widths(gs)
        ok = width >= 0
        centre = np.digitize(width[ok], [25, 55])  # 10 ± 5, 40 ± 5, 70 ± 5 are disjoint
        assert np.all(np.abs(width[ok] - np.array([10, 40, 70])[centre]) <= 5)
        env = gs.env[ok]
        for e, b in enumerate(biases):
            assert _near((centre == gs.motif[ok])[env == e], b + (1 - b) / 3)


def test_label_noise_rate():
    rng = np.random.default_rng(2)
    n = 2000
    gs = generate(np.zeros(n, dtype=int), rng.integers(3, size=n), np.zeros(n), MotifSpec(label_noise=0.3), rng)
    assert abs(np.mean(gs.y != gs.motif) - 0.3 * 2 / 3) < 0.03  # a redraw keeps the label 1/3 of the time


def test_same_seed_same_graphs_and_cache_roundtrip(tmp_path):
    a = cached_split(tmp_path, "covariate", 40, 20, MotifSpec(), seed=7)
    files = sorted(tmp_path.rglob("*.npz"))
    assert len(files) == len(SPLITS)
    b = cached_split(tmp_path, "covariate", 40, 20, MotifSpec(), seed=7)  # loaded from disk
    c = covariate_split(40, 20, MotifSpec(), seed=7)
    for s in SPLITS:
        for k in GraphSet.ARRAYS:
            assert np.array_equal(getattr(a[s], k), getattr(b[s], k))
            assert np.array_equal(getattr(a[s], k), getattr(c[s], k))
    d = cached_split(tmp_path, "covariate", 40, 20, MotifSpec(), seed=8)
    same = np.array_equal(d["train"].y, a["train"].y) and np.array_equal(d["train"].edge_ptr, a["train"].edge_ptr)
    assert not same


def test_to_pyg_matches_arrays():
    gs = covariate_split(30, 10, MotifSpec(), seed=0)["train"]
    data = to_pyg(gs)
    assert len(data) == 30
    for g in (0, 17):
        d = data[g]
        assert d.num_nodes == gs.num_nodes[g] and d.edge_index.shape[1] == gs.num_edges[g]
        assert int(d.edge_gt.sum()) == int(gs.edge_gt[gs.edge_ptr[g] : gs.edge_ptr[g + 1]].sum())
        assert int(d.y) == gs.y[g] and d.x.shape == (d.num_nodes, 1)
        assert int(d.edge_index.max()) < d.num_nodes


def test_spec_validation():
    with pytest.raises(ValueError):
        MotifSpec(width=4, width_jitter=4).validate()
    with pytest.raises(ValueError):
        MotifSpec(label_noise=1.5).validate()
