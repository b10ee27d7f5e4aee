"""lepa-prompt-learning on a real transformers CLIPModel from a local path: a tiny randomly initialised CLIP and a
character-level CLIP tokenizer are built here and saved to a temporary folder (no hub access)."""

import json
import string

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from genlab.data.styled_digits import CLASS_NAMES, STYLES  # noqa: E402
from genlab.harness.runner import run_study  # noqa: E402
from genlab.studies.lepa_prompt_learning import LepaPromptLearning  # noqa: E402
from genlab.studies.lepa_prompt_learning.hf import HFClipBackend  # noqa: E402
from genlab.studies.lepa_prompt_learning.train import Arm, TrainSpec, learn_prompts  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A CLIPModel (1 text and 1 vision layer, width 16, 16x16 images in 8x8 patches) and a CLIPTokenizer whose
    vocabulary is single characters (no merges), both saved to a folder."""
    path = tmp_path_factory.mktemp("tiny-clip")
    vocab: dict[str, int] = {}
    for ch in string.ascii_lowercase + ".":
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = len(vocab), len(vocab) + 1
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("#version: 0.2\n")
    tok = transformers.CLIPTokenizer(str(path / "vocab.json"), str(path / "merges.txt"))
    tok.save_pretrained(path)
    torch.manual_seed(0)
    text = dict(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=40, eos_token_id=vocab["<|endoftext|>"],
                bos_token_id=vocab["<|startoftext|>"], pad_token_id=vocab["<|endoftext|>"])  # fmt: skip
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16,
                  patch_size=8)  # fmt: skip
    config = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=8)
    transformers.CLIPModel(config).save_pretrained(path)
    return path


def test_context_path_equals_the_models_own_text_features(tiny_clip):
    backend = HFClipBackend(tiny_clip)
    model, tok = backend.model, backend.tokenizer
    words = "a x a x".split()  # four single-token words
    ids = tok(" ".join(words))["input_ids"][1:-1]
    assert len(ids) == 4
    ctx = model.text_model.embeddings.token_embedding(torch.tensor(ids))
    classes = [0, 3, 7]
    ours = backend.prompted_text(ctx, classes)
    texts = [f"a x a x {CLASS_NAMES[c]}." for c in classes]
    inputs = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.get_text_features(input_ids=inputs["input_ids"])
    ref = torch.nn.functional.normalize((out if torch.is_tensor(out) else out.pooler_output).float(), dim=-1)
    assert torch.allclose(ours, ref, atol=1e-6)
    shifted = ctx + torch.randn(ctx.shape, generator=torch.Generator().manual_seed(0))  # (a constant shift is
    stacked = backend.prompted_text(torch.stack([ctx, shifted]), classes)  # invisible through LayerNorm)
    assert stacked.shape == (2, 3, 8) and torch.allclose(stacked[0], ref, atol=1e-6)
    assert not torch.allclose(stacked[1], ref, atol=1e-3)  # the context does reach the features


def test_images_and_visual_prompt(tiny_clip):
    backend = HFClipBackend(tiny_clip)
    x = backend.inputs(np.random.default_rng(0).random((5, 8, 8)).astype(np.float32))
    assert x.shape == (5, 3, 16, 16)
    p = torch.randn(2, 3, 16, 16)
    stacked = backend.image_features(x, p)
    assert stacked.shape == (2, 5, 8)
    assert torch.allclose(stacked[1], backend.image_features(x, p[1]), atol=1e-6)
    assert torch.allclose(backend.image_features(x + p[0]), stacked[0], atol=1e-6)


def test_prompt_learning_moves_the_prompts_on_a_real_clip(tiny_clip):
    backend = HFClipBackend(tiny_clip)
    x = backend.inputs(np.random.default_rng(1).random((10, 8, 8)).astype(np.float32))
    y = torch.arange(10) % 5
    spec = TrainSpec(4, 3, 0.05, (25.0, 10.0, 1.0), 0.3, 0.5, 2.0, 1)
    arms = [Arm("coop"), Arm("fixed", 1.0), Arm("level", 1.0, "gradnorm"), Arm("pcgrad", 1.0)]
    res = learn_prompts(backend, x, y, (0, 1, 2, 3, 4), arms, spec, seed=0)
    ctx0 = backend.ctx_init(4, torch.Generator().manual_seed(0))
    for arm, r in zip(arms, res):
        assert r["ctx"].shape == ctx0.shape and not torch.allclose(r["ctx"], ctx0), arm.name
        assert r["prompt"].shape == (3, 16, 16)
    assert torch.equal(res[0]["prompt"], torch.zeros(3, 16, 16))


@pytest.mark.slow
def test_study_runs_every_arm_on_a_local_clip(tiny_clip, tmp_path):
    overrides = {"clip_path": str(tiny_clip), "seeds": 2, "steps": 2, "scales": (0.1, 1.0)}
    first = run_study("lepa-prompt-learning", "smoke", overrides, seed=0, root=tmp_path / "a")
    m = first.metrics
    assert m["backend"] == "transformers CLIPModel"
    arms = {"zero-shot", "coop", "ce", "sum", "fixed@0.1", "fixed@1", "pcgrad@1"} | {
        f"{r}@{s}" for r in ("loss", "gradnorm", "dwa") for s in ("0.1", "1")
    }
    assert set(m["acc"]) == arms
    assert all(len(v) == 2 and all(0.0 <= a <= 1.0 for a in v) for r in m["acc"].values() for v in r.values())
    assert len(first.verdicts) == len(LepaPromptLearning.claims) and all(v.verdict != "error" for v in first.verdicts)
    assert len(STYLES) == 5 and sorted((first.run_dir / "figures").glob("*.png"))
    second = run_study("lepa-prompt-learning", "smoke", overrides, seed=0, root=tmp_path / "b")
    assert second.metrics["acc"] == m["acc"]
