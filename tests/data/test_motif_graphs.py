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


def test_perturbation_only_adds_edges_touching_the_base():
    rng = np.random.default_rng(1)
    for base in ("wheel", "ladder", "star", "path"):
        g0, nb = build_graph(base, "house", 12, 0.0, np.random.default_rng(5))
        g1, _ = build_graph(base, "house", 12, 0.5, np.random.default_rng(5))
        assert set(g0.edges()) <= set(g1.edges())
        added = set(g1.edges()) - set(g0.edges())
        assert added and all(min(u, v) < nb for u, v in added)
    del rng


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


def test_concept_split_spurious_correlation():
    spec = MotifSpec(label_noise=0.0)
    sets = concept_split(2400, 900, spec, seed=4, train_bias=(0.95, 0.9, 0.85), val_bias=0.5)
    tr = sets["train"]
    match = tr.base == tr.motif  # wheel-house, tree-cycle, ladder-crane are pairs 0-0, 1-1, 2-2
    for e, b in enumerate((0.95, 0.9, 0.85)):
        assert abs(match[tr.env == e].mean() - b) < 0.04
    assert abs(np.mean(sets["ood_val"].base == sets["ood_val"].motif) - 0.5) < 0.05
    test = sets["ood_test"]
    assert abs(np.mean(test.base == test.motif) - 1 / 3) < 0.05
    assert np.array_equal(tr.y, tr.motif)  # no label noise asked for


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
        MotifSpec(width=4, width_jitter=3).validate()
    with pytest.raises(ValueError):
        MotifSpec(label_noise=1.5).validate()
