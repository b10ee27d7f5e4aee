"""K seed-copies of the GIN classifier and edge scorer equal K plain PyG models on each seed's own padded batch, and
the seeds never share a gradient."""

import numpy as np
import pytest
import torch

from genlab.data.motif_graphs import MotifSpec, make_split, to_pyg
from genlab.nn.graph import EdgeScorer, GraphClassifier
from genlab.nn.seed_graph import PaddedBatches, SeedEdgeScorer, SeedGraphClassifier, load_seed


@pytest.fixture(scope="module")
def padded():
    sets = [make_split("covariate", 40, 20, MotifSpec(), s)["train"] for s in range(3)]
    batches = [[np.arange(0, 16), np.arange(16, 32), np.arange(32, 40)] for _ in sets]
    batches[1] = [np.arange(24, 40), np.arange(0, 16), np.arange(16, 24)]  # other sizes at the same step
    return sets, batches, PaddedBatches(sets, batches).to_torch()


def test_seed_models_equal_plain_models(padded):
    from torch_geometric.loader import DataLoader

    sets, batches, pb = padded
    torch.manual_seed(0)
    clf, scorer = SeedGraphClassifier(3, 8, 3, 3), SeedEdgeScorer(3, 8, 2, 2)
    plain = [(GraphClassifier(1, 8, 3, 3), EdgeScorer(1, 8, 2, 2)) for _ in sets]
    for k, (c, s) in enumerate(plain):
        load_seed(clf, k, c)
        load_seed(scorer, k, s)
    for train in (True, False):  # train: batch statistics over real nodes; eval: the running statistics kept
        for idx in ([0, 1, 2], [2, 0, 1]):
            for m in (clf, scorer, *(x for pair in plain for x in pair)):
                m.train(train)
            b = pb.step(np.array(idx))
            w = torch.rand(b.edge_mask.shape)
            out, logits = clf(b, w.reshape(-1)), scorer(b)
            for k, (c, s) in enumerate(plain):
                ids = batches[k][idx[k]]
                ref = next(iter(DataLoader([to_pyg(sets[k])[i] for i in ids], batch_size=len(ids))))
                e = int(b.n_edges[k])
                assert b.edge_mask[k].sum() == e == ref.edge_index.shape[1]
                want = c(ref.x, ref.edge_index, ref.batch, w[k, :e])
                torch.testing.assert_close(out[k, : len(ids)], want, rtol=1e-4, atol=1e-4)
                torch.testing.assert_close(logits[k, :e], s(ref.x, ref.edge_index), rtol=1e-4, atol=1e-4)


def test_seeds_do_not_share_gradients(padded):
    _, _, pb = padded
    clf = SeedGraphClassifier(3, 8, 3, 3)
    out = clf(pb.step(np.array([0, 0, 0])))
    out[1].sum().backward()
    for name, p in clf.named_parameters():
        assert p.grad[[0, 2]].abs().max() == 0, name
        assert p.grad[1].abs().max() > 0 or "eps" in name or name.endswith("norm.bias"), name
