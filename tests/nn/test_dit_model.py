"""Tests for genlab.nn.dit: window masks, masked attention, equivalence with global attention, attention
distance, ensemble members."""

from __future__ import annotations

import torch

from genlab.nn.dit import DiT, attention_distance, token_distances, window_mask


def test_window_mask_counts_neighbours_and_self():
    m = window_mask((8, 8), 3)
    counts = m.sum(1).reshape(8, 8)
    assert counts[3, 3] == 9 and counts[0, 0] == 4 and counts[0, 3] == 6
    assert m.diagonal().all() and torch.equal(m, m.T)
    assert window_mask((8, 8), 5).sum(1).reshape(8, 8)[4, 4] == 25
    assert window_mask((4, 4), 7).all()
    assert window_mask((1, 10), 3).sum(1).tolist() == [2] + [3] * 8 + [2]


def _model(**kw):
    torch.manual_seed(0)
    net = DiT((1, 8, 8), patch=2, dim=16, depth=2, heads=2, **kw)
    # adaLN-Zero starts every block as the identity; perturb the zero-initialised layers so attention matters
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1 * torch.randn(p.shape))
    return net


def test_large_window_equals_global_bit_for_bit_and_masks_zero_weights():
    x, t = torch.randn(5, 64), torch.rand(5)
    glob = _model()
    big = _model(window=7, window_layers=(0, 1))  # 4x4 grid: k = 7 covers everything
    assert torch.equal(glob(x, t), big(x, t))
    local = _model(window=3, window_layers=(0,))
    assert not torch.allclose(glob(x, t), local(x, t))
    maps = local.attention_maps(x, t)
    mask = window_mask(local.grid, 3)
    assert float(maps[0][..., ~mask].abs().max()) == 0.0
    torch.testing.assert_close(maps[0].sum(-1), torch.ones(5, 2, 16))
    assert float(maps[1][..., ~mask].abs().max()) > 0  # layer 1 stays global


def test_attention_distance_known_answers():
    d = token_distances((1, 3))
    assert d.tolist() == [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    self_attn = torch.eye(3)[None, None]
    assert float(attention_distance(self_attn, d)) == 0.0
    uniform = torch.full((1, 1, 3, 3), 1 / 3)
    assert abs(float(attention_distance(uniform, d)) - 8 / 9) < 1e-6
    local = _model(window=3, window_layers=(0, 1))
    glob = _model()
    x, t = torch.randn(8, 64), torch.rand(8)
    assert (local.attention_distances(x, t) <= glob.attention_distances(x, t)).all()


def test_adaln_zero_init_is_zero_output_and_shapes():
    net = DiT((1, 8, 8), patch=2, dim=16, depth=2, heads=2)
    assert torch.equal(net(torch.randn(3, 64), torch.rand(3)), torch.zeros(3, 64))
    one_d = _model_1d()
    assert one_d(torch.randn(2, 40), torch.rand(2)).shape == (2, 40) and one_d.grid == (1, 40)


def _model_1d():
    return DiT((40,), patch=1, dim=8, depth=2, heads=2, pos="sincos", window=5, window_layers=(0,))


def test_ensemble_member_equals_single_model_with_same_weights_and_own_window():
    ens = DiT((1, 8, 8), patch=2, dim=16, depth=2, heads=2, members=3, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        for p in ens.parameters():
            p.add_(0.1 * torch.randn(p.shape))
    ens.set_window(3, (0,), member=1)
    single = DiT((1, 8, 8), patch=2, dim=16, depth=2, heads=2, window=3, window_layers=(0,))
    with torch.no_grad():
        for ps, pe in zip(single.parameters(), ens.parameters()):
            ps.copy_(pe[1])
    x, t = torch.randn(4, 64), torch.rand(4)
    torch.testing.assert_close(ens.member(1)(x, t), single(x, t), rtol=1e-5, atol=1e-6)
    assert ens.blocks[0].mask[0].all() and not ens.blocks[0].mask[1].all()


def test_attention_mass_inside_a_mask_known_answers():
    model = DiT((1, 8, 8), 2, 16, 2, 2, members=1, generator=torch.Generator().manual_seed(0))
    x, t = torch.randn(5, 64, generator=torch.Generator().manual_seed(1)), torch.full((5,), 0.5)
    every = torch.ones(16, 16, dtype=torch.bool)
    assert torch.allclose(model.attention_mass(x, t, every), torch.ones(2))
    w = window_mask(model.grid, 3)
    model.set_mask(w, (0,))  # block 0 can only attend inside the window: all its mass is there
    mass = model.attention_mass(x, t, w)
    assert torch.allclose(mass[0], torch.tensor(1.0)) and 0 < mass[1] < 1


def test_fused_attention_path_matches_the_explicit_softmax():
    """Training uses torch's fused attention (no weights); the explicit softmax (weights returned) is the
    reference: same outputs and gradients up to float rounding, windowed or not."""
    from genlab.nn.dit import Attention

    torch.manual_seed(0)
    att = Attention(members=2, dim=8, heads=2)
    x = torch.randn(2, 3, 16, 8, requires_grad=True)
    mask = torch.stack([window_mask((4, 4), 3), torch.ones(16, 16, dtype=torch.bool)])
    fused, none = att(x, mask, weights=False)
    explicit, w = att(x, mask, weights=True)
    assert none is None and w.shape == (2, 3, 2, 16, 16)
    torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=1e-5)
    g1 = torch.autograd.grad(fused.square().sum(), x)[0]
    g2 = torch.autograd.grad(explicit.square().sum(), x)[0]
    torch.testing.assert_close(g1, g2, atol=1e-5, rtol=1e-4)
