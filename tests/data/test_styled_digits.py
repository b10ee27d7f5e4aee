"""Styled digits: exact style transforms, ranges, captions and their encoding."""

import numpy as np
import pytest

from genlab.data.styled_digits import (
    CLASS_NAMES,
    STYLES,
    Vocab,
    base_digits,
    captions,
    render,
    render_styles,
)


@pytest.fixture(scope="module")
def digits():
    x, y = base_digits(8)
    return x[:60], y[:60]


def test_base_digits_are_unit_range_images(digits):
    x, _y = digits
    assert x.shape == (60, 8, 8) and x.dtype == np.float32 and x.min() >= 0 and x.max() <= 1
    up, _ = base_digits(16)
    assert up.shape[1:] == (16, 16) and up.min() >= 0 and up.max() <= 1
    with pytest.raises(ValueError):
        base_digits(4)


def test_styles_are_what_they_say(digits):
    x, _ = digits
    rng = np.random.default_rng(0)
    assert np.array_equal(render(x, "plain", rng), x)
    assert np.allclose(render(x, "inverted", rng), 1 - x)
    flat = np.full((2, 8, 8), 0.4, np.float32)
    assert np.allclose(render(flat, "outlined", rng), 0.0)  # a constant image has no edges
    out = render(x, "outlined", rng)
    assert np.allclose(out.max(axis=(1, 2)), 1.0)
    noisy = render(x, "noisy", rng, noise=0.3)
    assert noisy.min() >= 0 and noisy.max() <= 1 and 0.05 < np.abs(noisy - x).mean() < 0.3
    still = render(x, "rotated", rng, min_angle=0.0, max_angle=0.0)
    assert np.allclose(still, x, atol=1e-5)  # a zero rotation is the identity
    rot = render(x, "rotated", rng)
    assert rot.shape == x.shape and not np.allclose(rot, x)
    # a 90° rotation moves the mass of a vertical bar into a horizontal one
    bar = np.zeros((1, 8, 8), np.float32)
    bar[0, :, 3:5] = 1.0
    turned = render(bar, "rotated", rng, min_angle=90.0, max_angle=90.0)
    assert turned[0, 3:5, :].sum() > 12  # now horizontal ...
    assert turned[0, :3, 3:5].sum() + turned[0, 5:, 3:5].sum() < 1  # ... and no longer vertical
    with pytest.raises(ValueError):
        render(x, "sepia", rng)


def test_rendering_is_seeded(digits):
    x, _ = digits
    a = render_styles(x, STYLES, np.random.default_rng(5))
    b = render_styles(x, STYLES, np.random.default_rng(5))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert a[0].shape == (len(STYLES) * len(x), 8, 8)
    assert np.array_equal(a[1], np.repeat(np.arange(len(STYLES)), len(x)))


def test_captions_name_the_class_and_style_and_encode_with_eos(digits):
    _, y = digits
    rng = np.random.default_rng(1)
    style = rng.integers(0, len(STYLES), len(y))
    texts = captions(y, style, rng)
    assert all(CLASS_NAMES[c] in t.split() for c, t in zip(y, texts))
    vocab = Vocab.build()
    ids, eos = vocab.encode(texts)
    assert ids.shape == (len(y), vocab.max_len)
    for row, e, t in zip(ids, eos, texts):
        assert row[0] == vocab.index("<sos>") and row[e] == vocab.index("<eos>")
        assert e == len(t.split()) + 1 and (row[e + 1 :] == vocab.index("<pad>")).all()
        assert [vocab.words[i] for i in row[1:e]] == t.split()
    with pytest.raises(KeyError):
        vocab.encode(["a photo of a cat"])
