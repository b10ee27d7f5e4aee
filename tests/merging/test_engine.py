"""The merge engine on checkpoints: streaming equals in-memory bit for bit, sharded inputs and outputs, parameter
resolution (filters, gradients), atomic output, and one clear error for every bad input."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from genlab.merging import (
    CheckpointError,
    MergeConfigError,
    MergeError,
    SafetensorsSource,
    load_config,
    merge_state_dicts,
    merge_to_folder,
    parse_config,
)


def _state(seed, layers=3, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    sd = {"embed.weight": torch.randn(11, 8, generator=g), "norm.weight": torch.randn(8, generator=g)}
    for i in range(layers):
        sd[f"layers.{i}.mlp.weight"] = torch.randn(16, 8, generator=g)
        sd[f"layers.{i}.attn.weight"] = torch.randn(8, 8, generator=g)
    sd = {k: v.to(dtype) for k, v in sd.items()}
    sd["position_ids"] = torch.arange(5)  # a non-floating buffer: copied
    return sd


def _save_folder(path, sd, shard_bytes=None):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "toy", "torch_dtype": "float32"}))
    if shard_bytes is None:
        save_file(sd, str(path / "model.safetensors"), metadata={"format": "pt"})
        return path
    shards, cur, size = [], {}, 0
    for k, v in sd.items():
        if cur and size + v.numel() * v.element_size() > shard_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = v
        size += v.numel() * v.element_size()
    shards.append(cur)
    weight_map = {}
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(path / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, name))
    (path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return path


@pytest.fixture
def models(tmp_path):
    sds = {name: _state(seed) for name, seed in (("base", 0), ("a", 1), ("b", 2), ("c", 3))}
    paths = {
        name: _save_folder(tmp_path / name, sd, shard_bytes=1500 if name == "b" else None) for name, sd in sds.items()
    }
    return sds, paths


def _config(paths, method="dare_ties", **extra):
    cfg = {
        "merge_method": method,
        "base_model": str(paths["base"]),
        "models": [
            {"model": str(paths["a"]), "parameters": {"weight": 0.5, "density": [0.2, 0.9]}},
            {"model": str(paths["b"]), "parameters": {"weight": [{"filter": "mlp", "value": 1.0}, {"value": 0.3}]}},
            {"model": str(paths["c"]), "parameters": {"weight": 0.7}},
        ],
        "parameters": {"density": 0.5},
    }
    cfg.update(extra)
    return cfg


def _read_folder(path):
    out = {}
    for f in sorted(path.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


@pytest.mark.parametrize("method", ["dare_ties", "ties", "linear", "cmm"])
def test_streaming_equals_in_memory_bit_for_bit(models, tmp_path, method):
    sds, paths = models
    cfg = _config(paths, method)
    if method == "linear":
        cfg["parameters"] = {"weight": 1.0}
        cfg["models"][0]["parameters"].pop("density")
    if method == "cmm":
        for m in cfg["models"]:
            m["parameters"].pop("weight")
        cfg["parameters"] = {"order": "conflict", "schedule": "constant", "alpha": 0.6, "step": "dare_ties"}
    summary = merge_to_folder(parse_config(cfg), tmp_path / "out", seed=3, max_shard_bytes=2000)
    streamed = _read_folder(tmp_path / "out")
    by_name = {str(paths[k]): sd for k, sd in sds.items()}
    in_memory = merge_state_dicts(by_name, parse_config(cfg), seed=3)
    assert list(streamed) != [] and set(streamed) == set(in_memory) == set(sds["base"])
    for k in in_memory:
        assert streamed[k].dtype == in_memory[k].dtype and torch.equal(streamed[k], in_memory[k]), k
    assert summary.shards > 1 and (tmp_path / "out" / "model.safetensors.index.json").exists()
    assert torch.equal(streamed["position_ids"], torch.arange(5))
    if method == "cmm":
        assert summary.order is not None and sorted(summary.order) == sorted(str(paths[k]) for k in "abc")


def test_filters_and_gradients_resolve_per_tensor(models):
    sds, paths = models
    cfg = _config(paths, "task_arithmetic")
    cfg["parameters"] = {"lambda": 1.0}
    got = merge_state_dicts({str(p): sds[k] for k, p in paths.items()}, cfg)
    base = sds["base"]
    for i, t in enumerate([0.0, 0.5, 1.0]):  # 3 layers: t = i / 2; weight of a is 0.5 everywhere
        for part, wb in (("mlp", 1.0), ("attn", 0.3)):
            name = f"layers.{i}.{part}.weight"
            want = base[name] + (
                (sds["a"][name] - base[name]) * 0.5
                + (sds["b"][name] - base[name]) * wb
                + (sds["c"][name] - base[name]) * 0.7
            )
            assert torch.allclose(got[name], want, atol=1e-6), (name, t)


def test_sharded_inputs_read_like_single_files(models):
    sds, paths = models
    src = SafetensorsSource(paths["b"])
    assert len({f.name for f in src.file_of.values()}) > 1
    mm = SafetensorsSource(paths["b"], mmap=True)
    for k, v in sds["b"].items():
        assert torch.equal(src.load(k), v) and torch.equal(mm.load(k), v)


def test_output_folder_has_config_dtype_and_the_yaml(models, tmp_path):
    _, paths = models
    (paths["base"] / "tokenizer_config.json").write_text("{}")
    (paths["base"] / "tokenizer.json").write_text('{"model": {}}')
    cfg_path = tmp_path / "merge.yml"
    import yaml

    cfg_path.write_text(yaml.safe_dump(_config(paths, "ties", dtype="bfloat16")))
    merge_to_folder(cfg_path, tmp_path / "out")
    out = tmp_path / "out"
    assert json.loads((out / "config.json").read_text())["torch_dtype"] == "bfloat16"
    assert (out / "tokenizer.json").read_text() == '{"model": {}}'
    assert (out / "genlab_merge.yml").read_text() == cfg_path.read_text()
    assert _read_folder(out)["norm.weight"].dtype == torch.bfloat16


def test_failure_mid_merge_leaves_nothing(models, tmp_path):
    sds, paths = models
    bad = dict(sds["c"])
    bad["position_ids"] = torch.arange(5) + 1  # buffers must agree: found only when the data is read
    (paths["c"] / "model.safetensors").unlink()
    save_file(bad, str(paths["c"] / "model.safetensors"))
    with pytest.raises(CheckpointError, match="position_ids"):
        merge_to_folder(parse_config(_config(paths, "ties")), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_existing_output_needs_force(models, tmp_path):
    _, paths = models
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    with pytest.raises(MergeError, match="not empty"):
        merge_to_folder(parse_config(_config(paths, "ties")), tmp_path / "out")
    assert (tmp_path / "out" / "keep.txt").exists()
    merge_to_folder(parse_config(_config(paths, "ties")), tmp_path / "out", force=True)
    assert not (tmp_path / "out" / "keep.txt").exists() and (tmp_path / "out" / "model.safetensors").exists()


def _expect(exc, pattern, fn):
    with pytest.raises(exc, match=pattern):
        fn()


def test_bad_configurations_are_clear_errors(models):
    _, paths = models
    good = _config(paths, "ties")
    bare = {**good, "models": [str(paths[k]) for k in ("a", "b", "c")], "parameters": {}}
    cases = [
        ({**good, "slices": [{"sources": []}]}, "exactly one of"),
        ({**good, "modules": {"default": {"models": good["models"]}}}, "exactly one of 'models', 'slices' or"),
        ({k: v for k, v in good.items() if k != "models"} | {"modules": {"text": {"models": good["models"]}}},
         "single-module models, whose one module mergekit names 'default'"),
        ({k: v for k, v in good.items() if k != "models"} | {"modules": {"default": {"modles": []}}},
         "modules.default: unknown key 'modles' \\(did you mean 'models'\\?\\)"),
        ({**good, "foo": 1}, "unknown key 'foo'"),
        ({**good, "merge_mthod": 1}, "did you mean 'merge_method'"),
        ({**good, "tokenizer": {"sorce": "base"}}, "tokenizer: unknown key 'sorce' \\(did you mean 'source'\\?\\)"),
        (
            {"merge_method": "passthrough", "slices": [{"sources": [{"model": "a", "layer_range": [0.5, 2]}]}]},
            r"slices\[0\].sources\[0\].layer_range\[0\]: input should be a valid integer",
        ),
        (
            {"merge_method": "passthrough", "slices": [{"sources": [{"model": "a", "layer_rang": [0, 2]}]}]},
            "did you mean 'layer_range'",
        ),
        ({**good, "merge_method": "ram"}, "does not implement"),
        ({**bare, "merge_method": "slerp"}, "slerp takes exactly 2 inputs, got 4"),
        ({**bare, "merge_method": "passthrough"}, "passthrough takes exactly 1 inputs, got 4"),
        ({**good, "parameters": {"densty": 0.5}}, "no parameter 'densty'"),
        ({**good, "parameters": {"density": 1.5}}, r"density must lie in \[0, 1\]"),
        ({**good, "parameters": {"lambda": "abc"}}, "expected a number"),
        ({**good, "parameters": {"normalize": "maybe"}}, "expected true or false"),
        ({**good, "dtype": "float8"}, "unknown dtype"),
        ({**good, "tokenizer_source": "somewhere"}, "not one of the input models"),
        ({k: v for k, v in good.items() if k != "base_model"}, "needs base_model"),
        ({**good, "models": [{"model": str(paths["a"]), "parameters": {"normalize": True}}]}, "top-level parameters"),
        ({**good, "models": [{"model": str(paths["a"]), "weights": 1}]}, "unknown key 'weights'"),
        ({**good, "models": [{"model": str(paths["a"])}, {"model": str(paths["a"])}]}, "listed twice"),
        ({**good, "parameters": {"density": [{"filter": 3, "value": 1}]}}, "filter must be text"),
    ]
    for cfg, pattern in cases:
        _expect(MergeConfigError, pattern, lambda cfg=cfg: parse_config(cfg))


def test_bad_checkpoints_are_clear_errors(models, tmp_path):
    sds, paths = models
    by_path = {str(p): sds[k] for k, p in paths.items()}

    def run(sd_b=None, cfg=None):
        data = dict(by_path)
        if sd_b is not None:
            data[str(paths["b"])] = sd_b
        return merge_state_dicts(data, cfg or _config(paths, "ties"))

    _expect(
        CheckpointError, "missing from model", lambda: run({k: v for k, v in sds["b"].items() if k != "norm.weight"})
    )
    _expect(CheckpointError, "different shapes", lambda: run({**sds["b"], "norm.weight": torch.zeros(9)}))
    no_weight = _config(paths, "task_arithmetic")
    no_weight["models"][2]["parameters"] = {}
    _expect(MergeConfigError, "required parameter 'weight'", lambda: run(cfg=no_weight))
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    _expect(CheckpointError, "not a safetensors file", lambda: SafetensorsSource(garbage))
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes((paths["a"] / "model.safetensors").read_bytes()[:-10])
    _expect(CheckpointError, "inconsistent offsets", lambda: SafetensorsSource(truncated))
    _expect(CheckpointError, "no such file", lambda: SafetensorsSource(tmp_path / "nowhere"))
    pickle_only = tmp_path / "pickle"
    pickle_only.mkdir()
    (pickle_only / "pytorch_model.bin").write_bytes(b"")
    _expect(CheckpointError, "pickle", lambda: SafetensorsSource(pickle_only))
    _expect(MergeConfigError, "not valid YAML", lambda: load_config(_write(tmp_path / "bad.yml", "a: [1,")))


def _write(path, text):
    path.write_text(text)
    return path


def test_background_writer_reports_in_order_and_raises_a_failed_write(models, tmp_path):
    """Writes run on a helper thread (io.merge_to_folder): on_tensor still sees every tensor once, in plan order,
    after it is written; a write that fails on that thread raises on the caller's next call."""
    from genlab.merging.checkpoint import TensorInfo
    from genlab.merging.errors import MergeError
    from genlab.merging.writer import BackgroundWriter, ShardedWriter, plan_shards

    sds, paths = models
    seen = []
    summary = merge_to_folder(parse_config(_config(paths, "ties")), tmp_path / "out", max_shard_bytes=2000,
                              on_tensor=lambda name, done, total: seen.append((name, done, total)))  # fmt: skip
    assert [d for _, d, _ in seen] == list(range(1, summary.tensors + 1))
    assert {t for _, _, t in seen} == {summary.tensors} and {n for n, _, _ in seen} == set(sds["base"])

    infos = [TensorInfo("x", torch.float32, (2,)), TensorInfo("y", torch.float32, (2,))]
    (tmp_path / "w").mkdir()
    writer = BackgroundWriter(ShardedWriter(tmp_path / "w", plan_shards(infos)))
    writer.write("x", torch.zeros(2))
    writer.write("z", torch.zeros(2))  # not planned: fails on the helper thread
    with pytest.raises(MergeError, match="'z' was not planned|does not match the plan"):
        writer.finish()
    writer.abort()


@pytest.mark.parametrize("method", ["linear", "ties"])
def test_reading_through_safe_open_or_into_buffers_gives_the_same_merge(models, tmp_path, method):
    """merge_to_folder reads through safe_open by default (mmap=True); mmap=False (--no-mmap) reads each tensor's
    bytes into a buffer: the outputs are the same bits."""
    _, paths = models
    cfg = _config(paths, method)
    if method == "linear":
        cfg["parameters"] = {"weight": 1.0}
        cfg["models"][0]["parameters"].pop("density")
    merge_to_folder(parse_config(cfg), tmp_path / "mapped", seed=5)
    merge_to_folder(parse_config(cfg), tmp_path / "read", seed=5, mmap=False)
    mapped, read = _read_folder(tmp_path / "mapped"), _read_folder(tmp_path / "read")
    assert mapped and set(mapped) == set(read)
    assert all(mapped[k].dtype == read[k].dtype and torch.equal(mapped[k], read[k]) for k in read)
