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


def test_sparse_aggregation_equals_gathered_messages(padded):
    """The CSR product and its hand-written backward give the sums (and gradients for nodes and edge weights) of
    gathering every message and ``index_add_``-ing it, padding included."""
    from genlab.nn.seed_graph import _Aggregate

    _, _, pb = padded
    b = pb.step(np.array([2, 0, 1]))
    gen = torch.Generator().manual_seed(0)
    k, n, _, e = b.shape
    h0 = torch.randn(k * n, 5, generator=gen, dtype=torch.float64)
    w0 = torch.rand(k * e, generator=gen, dtype=torch.float64)
    g = torch.randn(k * n, 5, generator=gen, dtype=torch.float64)
    for weighted in (False, True):
        h, w = h0.clone().requires_grad_(), w0.clone().requires_grad_()
        ours = _Aggregate.apply(h, w if weighted else None, b)
        (ours * g).sum().backward()
        h_ref, w_ref = h0.clone().requires_grad_(), w0.clone().requires_grad_()
        msg = h_ref[b.edge_index[0]] * (w_ref if weighted else torch.ones_like(w_ref)).view(-1, 1)
        ref = torch.zeros_like(h_ref).index_add(0, b.edge_index[1], msg)
        (ref * g).sum().backward()
        torch.testing.assert_close(ours, ref)
        torch.testing.assert_close(h.grad, h_ref.grad)
        if weighted:
            torch.testing.assert_close(w.grad, w_ref.grad)
        else:
            assert w.grad is None


@pytest.mark.parametrize("relu", [False, True])
def test_fused_masked_norm_equals_autograd(relu):
    """The hand-written backward of the masked batch norm (+ ReLU) equals autograd through the plain formula; running
    statistics move as before."""
    from genlab.nn.seed_graph import SeedBatchNorm

    gen = torch.Generator().manual_seed(1)
    k, m, d = 3, 11, 4
    x0 = torch.randn(k, m, d, generator=gen, dtype=torch.float64)
    mask = torch.arange(m).view(1, -1, 1) < torch.tensor([11, 7, 3]).view(-1, 1, 1)
    g = torch.randn(k, m, d, generator=gen, dtype=torch.float64)
    bn = SeedBatchNorm(k, d).double()
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5, generator=gen)
        bn.bias.normal_(generator=gen)
    x = x0.clone().requires_grad_()
    (bn(x, mask, relu=relu) * g).sum().backward()
    xr, wr, br = x0.clone().requires_grad_(), bn.weight.detach().clone().requires_grad_(), \
        bn.bias.detach().clone().requires_grad_()
    mf = mask.double()
    cnt = mf.sum(1, keepdim=True)
    mean = (xr * mf).sum(1, keepdim=True) / cnt
    var = (((xr - mean) ** 2) * mf).sum(1, keepdim=True) / cnt
    ref = (xr - mean) / torch.sqrt(var + bn.eps) * wr.unsqueeze(1) + br.unsqueeze(1)
    ref = torch.relu(ref) if relu else ref
    (ref * g).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    torch.testing.assert_close(bn.weight.grad, wr.grad)
    torch.testing.assert_close(bn.bias.grad, br.grad)
    unbiased = var * cnt / (cnt - 1)
    torch.testing.assert_close(bn.running_mean, 0.1 * mean[:, 0].detach())
    torch.testing.assert_close(bn.running_var, 0.9 + 0.1 * unbiased[:, 0].detach())


def test_reverse_edges_and_sparse_orders(padded):
    """Each real directed edge's precomputed reverse is (v, u) (padding edges map to themselves); the CSR structures
    list every edge once, grouped by target (by source), with row pointers that count them."""
    _, _, pb = padded
    b = pb.step(np.array([1, 2, 0]))
    src, dst = b.edge_index
    real = b.edge_mask.reshape(-1)
    assert torch.equal(src[b.edge_rev][real], dst[real]) and torch.equal(dst[b.edge_rev][real], src[real])
    assert torch.equal(b.edge_rev[~real], torch.nonzero(~real).flatten())
    for (ptr, cols, order), rows, other in ((b.by_dst, dst, src), (b.by_src, src, dst)):
        assert torch.equal(torch.sort(order).values, torch.arange(len(order)))
        assert torch.equal(rows[order], torch.sort(rows).values) and torch.equal(cols, other[order])
        assert torch.equal(ptr[1:] - ptr[:-1], torch.bincount(rows, minlength=len(ptr) - 1))
