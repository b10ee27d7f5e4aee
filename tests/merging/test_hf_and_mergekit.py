"""End to end on Hugging Face model folders: merge tiny random Llamas saved with ``save_pretrained`` and load the
result with ``from_pretrained``; and parity with mergekit's own merges of the same folders (bit for bit, random
methods included, when mergekit is importable — it is not a genlab dependency)."""

import json

import pytest
import torch
import yaml
from safetensors.torch import load_file

transformers = pytest.importorskip("transformers")

from genlab.merging import merge_state_dicts, merge_to_folder, parse_config  # noqa: E402


def _llama(path, seed, tie=False, dtype=torch.float32, shard=None):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(
        vocab_size=48,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=3,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=tie,
    )
    model = transformers.LlamaForCausalLM(cfg).to(dtype)
    model.save_pretrained(path, **({"max_shard_size": shard} if shard else {}))
    return model


@pytest.fixture(scope="module")
def llamas(tmp_path_factory):
    root = tmp_path_factory.mktemp("llamas")
    specs = {
        "base": (0, False, torch.float32, None),
        "a": (1, False, torch.float32, "20KB"),
        "b": (2, True, torch.bfloat16, None),
        "c": (3, False, torch.float32, None),
    }
    return {name: (root / name, _llama(root / name, *spec)) for name, spec in specs.items()}


def _folder_tensors(path):
    out = {}
    for f in sorted(path.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def test_merged_hf_folder_loads_with_from_pretrained(llamas, tmp_path):
    base_path, base = llamas["base"]
    a_path, a = llamas["a"]
    cfg = {
        "merge_method": "task_arithmetic",
        "base_model": str(base_path),
        "models": [{"model": str(a_path), "parameters": {"weight": 0.5}}],
    }
    merge_to_folder(parse_config(cfg), tmp_path / "merged", max_shard_bytes=10_000)
    assert (tmp_path / "merged" / "model.safetensors.index.json").exists()  # sharded output
    merged = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged")
    sd_base, sd_a, sd_m = base.state_dict(), a.state_dict(), merged.state_dict()
    for k in sd_m:
        assert torch.allclose(sd_m[k], sd_base[k] + 0.5 * (sd_a[k] - sd_base[k]), atol=1e-6), k
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        out = merged(ids).logits
    assert out.shape == (1, 4, 48) and torch.isfinite(out).all()


def _mergekit():
    try:
        from mergekit.config import MergeConfiguration
        from mergekit.merge import MergeOptions, run_merge
    except Exception:  # not installed, or an incompatible transformers
        pytest.skip("mergekit is not importable")
    return MergeConfiguration, MergeOptions, run_merge


CASES = {
    "linear": {"merge_method": "linear", "models": [("a", {"weight": 0.3}), ("c", {"weight": [0.2, 0.9]})]},
    "task_arithmetic": {
        "merge_method": "task_arithmetic",
        "parameters": {"lambda": 0.8},
        "models": [("a", {"weight": 0.3}), ("b", {"weight": [{"filter": "mlp", "value": 0.9}, {"value": -0.2}]})],
    },
    "task_arithmetic_bf16_3": {  # block-wise with a float32 accumulator (three experts), normalize and lambda
        "merge_method": "task_arithmetic",
        "dtype": "bfloat16",
        "parameters": {"lambda": 0.7, "normalize": True},
        "models": [("a", {"weight": 0.3}), ("b", {"weight": 0.9}), ("c", {"weight": -0.45})],
    },
    "ties_bf16": {
        "merge_method": "ties",
        "dtype": "bfloat16",
        "models": [
            ("a", {"weight": 0.5, "density": 0.3}),
            ("b", {"weight": 0.7, "density": [0.2, 0.8]}),
            ("c", {"weight": 1.0, "density": 0.5}),
        ],
    },
    "dare_ties": {
        "merge_method": "dare_ties",
        "out_dtype": "bfloat16",
        "models": [("a", {"weight": 0.5, "density": 0.3}), ("b", {"weight": 0.7, "density": 0.6})],
    },
    "dare_linear": {
        "merge_method": "dare_linear",
        "models": [("a", {"weight": 0.5, "density": 0.4}), ("c", {"weight": 0.4, "density": 0.7})],
    },
    "della": {
        "merge_method": "della",
        "models": [("a", {"weight": 0.5, "density": 0.4, "epsilon": 0.1}), ("c", {"weight": 1.0, "density": 0.6})],
    },
}


@pytest.mark.slow
def test_bit_for_bit_parity_with_mergekit(llamas, tmp_path):
    MergeConfiguration, MergeOptions, run_merge = _mergekit()
    for name, case in CASES.items():
        cfg = {k: v for k, v in case.items() if k != "models"}
        cfg["models"] = [{"model": str(llamas[m][0]), "parameters": p} for m, p in case["models"]]
        if name != "linear":
            cfg["base_model"] = str(llamas["base"][0])
        options = MergeOptions(random_seed=11, quiet=True, copy_tokenizer=False, write_model_card=False)
        run_merge(MergeConfiguration.model_validate(cfg), str(tmp_path / f"mk_{name}"), options)
        (tmp_path / f"{name}.yml").write_text(yaml.safe_dump(cfg))
        merge_to_folder(tmp_path / f"{name}.yml", tmp_path / f"gl_{name}", seed=11)
        ours, theirs = _folder_tensors(tmp_path / f"gl_{name}"), _folder_tensors(tmp_path / f"mk_{name}")
        assert set(ours) == set(theirs), name
        differ = [k for k in theirs if ours[k].dtype != theirs[k].dtype or not torch.equal(ours[k], theirs[k])]
        assert not differ, f"{name}: {differ[:3]}"
        mk_cfg = json.loads((tmp_path / f"mk_{name}" / "config.json").read_text())
        gl_cfg = json.loads((tmp_path / f"gl_{name}" / "config.json").read_text())
        assert mk_cfg["num_hidden_layers"] == gl_cfg["num_hidden_layers"]


def test_state_dict_api_matches_mergekit_state_dict_api(llamas):
    """The in-memory path agrees with mergekit's ``merge_state_dicts`` (no architecture needed)."""
    try:
        from mergekit.merge_methods import merge_state_dicts as mk_merge
    except Exception:
        pytest.skip("mergekit is not importable")
    sds = {k: m.state_dict() for k, (_, m) in llamas.items() if k != "b"}
    cfg = {
        "merge_method": "ties",
        "base_model": "base",
        "models": [{"model": k, "parameters": {"weight": w, "density": 0.4}} for k, w in (("a", 0.6), ("c", 0.9))],
    }
    ours = merge_state_dicts(sds, cfg)
    theirs = mk_merge(
        {k: sds[k] for k in ("base", "a", "c")},
        "ties",
        base="base",
        parameters={"weight": {"a": 0.6, "c": 0.9}, "density": 0.4},
    )
    assert all(torch.equal(ours[k], theirs[k]) for k in theirs)
