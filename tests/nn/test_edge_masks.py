"""Edge masks and PrunE / GSAT regularisers: straight-through gradients, sampling rates, the size constraint's fixed
point, the alignment losses against brute force, and the weighted GIN convolution."""

import math

import pytest
import torch
from torch_geometric.nn import GINConv

from genlab.nn import edge_masks as em
from genlab.nn.graph import EdgeScorer, WeightedGINConv


def test_straight_through_mask_is_hard_and_passes_gradients():
    torch.manual_seed(0)
    logits = torch.randn(200, 2, requires_grad=True)
    mask = em.straight_through_gumbel(logits, tau=0.2, generator=torch.Generator().manual_seed(1))
    assert set(mask.detach().unique().tolist()) <= {0.0, 1.0}
    (mask * torch.linspace(-1, 1, 200)).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    # d mask / d keep-logit is positive for every edge (the relaxed sample increases with its own logit)
    logits.grad = None
    em.straight_through_gumbel(logits, 0.2, torch.Generator().manual_seed(1)).sum().backward()
    assert (logits.grad[:, 1] >= 0).all() and (logits.grad[:, 1] > 0).any()


def test_hard_samples_keep_each_edge_with_its_probability():
    logits = torch.tensor([[0.0, 2.0], [1.0, 0.0], [0.0, 0.0]]).repeat(20_000, 1)
    mask = em.straight_through_gumbel(logits, 0.2, torch.Generator().manual_seed(3)).view(-1, 3)
    expected = em.keep_probability(logits[:3])
    assert torch.allclose(mask.mean(0), expected, atol=0.012)


def test_weighted_gin_equals_gin_with_unit_weights_and_drops_zero_weight_edges():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8))
    ours, ref = WeightedGINConv(mlp, train_eps=True), GINConv(mlp, train_eps=True)
    ours.eps.data.fill_(0.3)
    ref.eps.data.fill_(0.3)
    x = torch.randn(6, 4)
    ei = torch.tensor([[0, 1, 1, 2, 3, 4, 4, 5], [1, 0, 2, 1, 4, 3, 5, 4]])
    assert torch.allclose(ours(x, ei), ref(x, ei), atol=1e-6)
    assert torch.allclose(ours(x, ei, torch.ones(8)), ref(x, ei), atol=1e-6)
    w = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])  # remove edge 1-2 in both directions
    assert torch.allclose(ours(x, ei, w), ref(x, ei[:, w > 0]), atol=1e-6)


@pytest.mark.parametrize("form", ["paper", "code"])
def test_kept_fraction_converges_to_eta_under_the_size_loss_alone(form):
    """Only L_e is optimised, through hard straight-through masks from an edge scorer on random features: the
    kept fraction (mean keep probability) goes to η from a start far above it."""
    from genlab.harness.torch_setup import setup_torch

    setup_torch(1)  # small tensors: extra threads only spin on shared cores
    torch.manual_seed(0)
    n_graphs, nodes = 16, 12
    ei = torch.cat([torch.randint(0, nodes, (2, 30)) + g * nodes for g in range(n_graphs)], 1)
    ei = torch.cat([ei, ei.flip(0)], 1)
    x = torch.randn(n_graphs * nodes, 4)
    edge_graph = ei[0] // nodes
    scorer = EdgeScorer(4, 8, 1, out=2)
    with torch.no_grad():
        scorer.mlp[-1].bias.copy_(torch.tensor([-2.0, 2.0]))  # start at p ≈ 0.98
    opt = torch.optim.Adam(scorer.parameters(), lr=0.02)
    gen = torch.Generator().manual_seed(0)
    eta = 0.6
    for _ in range(150):
        logits = scorer(x, ei)
        mask = em.straight_through_gumbel(logits, 0.2, gen)
        if form == "paper":
            loss = em.size_loss_paper(mask, edge_graph, n_graphs, eta)
        else:
            loss = em.size_loss_code(mask, eta)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        kept = em.keep_probability(scorer(x, ei)).mean().item()
    assert abs(kept - eta) < 0.05


def test_size_losses_closed_forms():
    mask = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    edge_graph = torch.tensor([0, 0, 0, 1, 1, 1])
    # graph 0 keeps 2/3, graph 1 keeps 1/3
    assert em.size_loss_paper(mask, edge_graph, 2, 0.5).item() == pytest.approx(1 / 36, rel=1e-5)
    assert math.isclose(em.size_loss_code(mask, 0.4).item(), 4 * 0.1, rel_tol=1e-6)
    assert math.isclose(em.size_loss_code(mask, 0.6).item(), 0.1, rel_tol=1e-6)


def test_lowest_k_per_graph_matches_brute_force():
    torch.manual_seed(1)
    edge_graph = torch.sort(torch.randint(0, 7, (120,))).values[torch.randperm(120)]
    p = torch.rand(120)
    sel = em.lowest_k_per_graph(p, edge_graph, 7, 40.0)
    for g in range(7):
        idx = torch.nonzero(edge_graph == g).flatten()
        k = int(math.floor(len(idx) * 0.4))
        lowest = set(idx[torch.argsort(p[idx])[:k]].tolist())
        assert set(torch.nonzero(sel & (edge_graph == g)).flatten().tolist()) == lowest


def test_alignment_losses_vanish_at_epsilon_and_match_hand_values():
    edge_graph = torch.tensor([0] * 10 + [1] * 4)
    p = torch.full((14,), 0.9)
    p[:5] = 1 / 10  # graph 0: its lowest 50 % (5 edges) sit exactly at ε = 1/|E_0|
    p[10:12] = 1 / 4  # graph 1: lowest 50 % (2 edges) at ε = 1/4
    assert em.alignment_loss_paper(p, edge_graph, 2, 50.0).item() == pytest.approx(0.0, abs=1e-7)
    # code form: the batch's lowest k = 7 values, 0.5·Σ|p − 1/7|
    lowest = torch.sort(p).values[:7]
    assert em.alignment_loss_code(p, 50.0).item() == pytest.approx(0.5 * (lowest - 1 / 7).abs().sum().item())
    assert em.alignment_loss_code(p[:1], 50.0).item() == 0.0  # k = 0: guarded, no division by zero


def test_gsat_pieces():
    att = torch.full((5,), 0.7)
    assert em.bernoulli_kl(att, 0.7).item() == pytest.approx(0.0, abs=1e-5)
    assert em.bernoulli_kl(torch.full((5,), 0.2), 0.7).item() > 0.3
    assert [em.gsat_r(e, 3) for e in (0, 3, 6, 9, 12, 30)] == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.5, 0.5])
    s = em.concrete_sample(torch.zeros(20_000), 1.0, torch.Generator().manual_seed(0))
    assert s.min() > 0 and s.max() < 1 and abs(s.mean().item() - 0.5) < 0.01


def test_row_forms_equal_the_per_batch_losses_row_by_row():
    """The code-form losses and GSAT's KL on K padded rows at once equal the per-batch functions applied to each
    row's real entries, in value and gradient (rows of 0, 1, 7, 23 and 40 real edges; padding holds junk)."""
    gen = torch.Generator().manual_seed(2)
    n_edges = torch.tensor([40, 23, 7, 1, 0])
    logits = torch.randn(5, 40, generator=gen, dtype=torch.float64)
    for eta in (0.3, 0.85):  # both sides of the hinge
        lg = logits.clone().requires_grad_()
        p = torch.sigmoid(lg)
        rows_e = em.size_loss_code_rows(p[1:4], n_edges[1:4], eta)  # size form: no empty batch (0/0 in both forms)
        rows_s = em.alignment_loss_code_rows(p, n_edges, 90.0)
        (rows_e.sum() + 3 * rows_s.sum()).backward()
        ref_lg = logits.clone().requires_grad_()
        ref_p = torch.sigmoid(ref_lg)
        ref_e = torch.stack([em.size_loss_code(ref_p[k, :n], eta) for k, n in zip(range(1, 4), n_edges[1:4].tolist())])
        ref_s = torch.stack([em.alignment_loss_code(ref_p[k, :n], 90.0) for k, n in enumerate(n_edges.tolist())])
        (ref_e.sum() + 3 * ref_s.sum()).backward()
        torch.testing.assert_close(rows_e, ref_e)
        torch.testing.assert_close(rows_s, ref_s)
        assert rows_s[3:].abs().max() == 0  # k = ⌊0.9·1⌋ = 0 and an empty row: 0, as the guarded per-batch form
        torch.testing.assert_close(lg.grad, ref_lg.grad)
        assert lg.grad[0].abs().sum() > 0 and lg.grad[1, 23:].abs().max() == 0  # padding gets no gradient
    att = torch.rand(3, 9, generator=gen, dtype=torch.float64)
    terms = em.bernoulli_kl_terms(att, 0.7)
    for k in range(3):
        torch.testing.assert_close(terms[k, : 4 + k].mean(), em.bernoulli_kl(att[k, : 4 + k], 0.7))
    assert em.size_hinge(torch.tensor([0.95, 0.75]), 0.85).tolist() == pytest.approx([0.4, 0.1])
