"""The mini-CLIP: normalised features, <eos> pooling under a causal mask, the multi-positive InfoNCE loss."""

import math

import torch

from genlab.nn.mini_clip import MiniCLIP, clip_loss


def _model():
    torch.manual_seed(0)
    return MiniCLIP(vocab_size=20, max_len=7, image_size=8, dim=16, width=16, cnn_width=4).eval()


def test_features_are_unit_norm_and_text_paths_agree():
    m = _model()
    ids = torch.tensor([[1, 5, 6, 2, 0, 0, 0], [1, 7, 8, 9, 2, 0, 0]])
    eos = torch.tensor([3, 4])
    t = m.encode_text(ids, eos)
    assert torch.allclose(t.norm(dim=-1), torch.ones(2))
    assert torch.allclose(t, m.encode_embeddings(m.embed_tokens(ids), eos))
    img = m.encode_image(torch.randn(3, 1, 8, 8))
    assert img.shape == (3, 16) and torch.allclose(img.norm(dim=-1), torch.ones(3))


def test_eos_pooling_is_causal_padding_after_eos_is_ignored():
    m = _model()
    a = torch.tensor([[1, 5, 6, 2, 0, 0, 0]])
    b = torch.tensor([[1, 5, 6, 2, 11, 12, 13]])
    eos = torch.tensor([3])
    assert torch.allclose(m.encode_text(a, eos), m.encode_text(b, eos), atol=1e-6)
    c = torch.tensor([[1, 5, 7, 2, 0, 0, 0]])  # a token before <eos> does matter
    assert not torch.allclose(m.encode_text(a, eos), m.encode_text(c, eos))


def test_image_prompt_is_additive():
    m = _model()
    x, p = torch.randn(4, 1, 8, 8), torch.randn(1, 8, 8)
    assert torch.allclose(m.encode_image(x, p), m.encode_image(x + p))


def test_clip_loss_known_values():
    eye = torch.eye(4)
    same = torch.eye(4, dtype=torch.bool)
    scale = torch.tensor(10.0)
    perfect = clip_loss(eye, eye, scale, same)
    expected = -math.log(math.exp(10) / (math.exp(10) + 3))  # one positive at cosine 1, three negatives at 0
    assert abs(float(perfect) - expected) < 1e-5
    shuffled = clip_loss(eye, eye[[1, 0, 3, 2]], scale, same)
    assert float(shuffled) > float(perfect) + 5
    # duplicated captions: rows 0 and 1 share a caption, so both columns are positives for both images and
    # swapping those two texts changes nothing; with single positives it costs
    dup = same.clone()
    dup[0, 1] = dup[1, 0] = True
    swapped = eye[[1, 0, 2, 3]]
    assert abs(float(clip_loss(eye, swapped, scale, dup)) - float(clip_loss(eye, eye, scale, dup))) < 1e-6
    assert float(clip_loss(eye, swapped, scale, same)) > float(clip_loss(eye, eye, scale, same)) + 4
