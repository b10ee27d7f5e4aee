"""``genlab merge CONFIG.yaml --out DIR``: a working merge, JSON summary, and one line + exit code 2 + nothing
written for every bad input."""

import json

import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from genlab.cli import app
from genlab.merging.cli import parse_size


def _folder(path, seed, shape=(6, 4)):
    path.mkdir()
    g = torch.Generator().manual_seed(seed)
    save_file(
        {"w": torch.randn(*shape, generator=g), "b": torch.randn(shape[0], generator=g)},
        str(path / "model.safetensors"),
    )
    (path / "config.json").write_text('{"model_type": "toy"}')
    return path


@pytest.fixture
def setup(tmp_path):
    base, a, b = (_folder(tmp_path / n, s) for n, s in (("base", 0), ("a", 1), ("b", 2)))
    cfg = {
        "merge_method": "ties",
        "base_model": str(base),
        "models": [
            {"model": str(a), "parameters": {"weight": 1.0, "density": 0.5}},
            {"model": str(b), "parameters": {"weight": 1.0, "density": 0.5}},
        ],
    }
    return tmp_path, cfg


def _invoke(tmp_path, cfg, *extra):
    path = tmp_path / "merge.yml"
    path.write_text(cfg if isinstance(cfg, str) else yaml.safe_dump(cfg))
    return CliRunner().invoke(app, ["merge", str(path), "--out", str(tmp_path / "out"), *extra])


def test_cli_merges_and_prints_a_summary(setup):
    tmp_path, cfg = setup
    res = _invoke(tmp_path, cfg, "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["tensors"] == 2 and summary["shards"] == 1 and summary["method"] == "ties"
    merged = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert merged["w"].shape == (6, 4)
    assert (tmp_path / "out" / "config.json").exists()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda c, t: {"modules": {"vision": {}, "text": {}}, "merge_method": "ties"}, "single-module models"),
        (lambda c, t: {**c, "merge_method": "ram"}, "does not implement"),
        (lambda c, t: {**c, "parameters": {"rescale": 2}}, "expected true or false"),
        (lambda c, t: {**c, "base_model": str(t / "missing")}, "no such file or folder"),
        (lambda c, t: {**c, "base_model": str(_folder(t / "small", 3, shape=(5, 4)))}, "different shapes"),
        (lambda c, t: "merge_method: [ties", "not valid YAML"),
    ],
)
def test_cli_errors_are_one_line_exit_2_and_write_nothing(setup, mutate, message):
    tmp_path, cfg = setup
    res = _invoke(tmp_path, mutate(cfg, tmp_path))
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], res.stderr
    assert not (tmp_path / "out").exists()


def test_unreadable_weights_file_is_exit_2(setup):
    tmp_path, cfg = setup
    (tmp_path / "a" / "model.safetensors").write_bytes(b"\xff" * 40)
    res = _invoke(tmp_path, cfg)
    assert res.exit_code == 2 and "not a safetensors file" in res.stderr
    assert not (tmp_path / "out").exists()


def test_genlab_main_maps_merge_errors_to_exit_2(setup, capsys):
    from genlab.cli import main

    tmp_path, cfg = setup
    path = tmp_path / "merge.yml"
    path.write_text(yaml.safe_dump({**cfg, "unknown": 1}))
    with pytest.raises(SystemExit) as exc:
        main(["merge", str(path), "--out", str(tmp_path / "out")])
    assert exc.value.code == 2 and "unknown key 'unknown'" in capsys.readouterr().err


def test_parse_size():
    assert parse_size("5B") == 5_000_000_000 and parse_size("500m") == 500_000_000 and parse_size("1234") == 1234
    with pytest.raises(ValueError):
        parse_size("5X")


def _one_line_exit_2(res, message):
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], res.stderr


@pytest.mark.parametrize("where, what", [("base", "is"), (".", "contains"), ("base/sub", "is inside")])
def test_out_that_is_contains_or_is_inside_an_input_is_refused(setup, where, what):
    tmp_path, cfg = setup
    before = (tmp_path / "base" / "model.safetensors").read_bytes()
    path = tmp_path / "merge.yml"
    path.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["merge", str(path), "--out", str(tmp_path / where), "--force"])
    _one_line_exit_2(res, f"{what} the input")
    assert (tmp_path / "base" / "model.safetensors").read_bytes() == before


def _raw_safetensors(path, header, data=b"\0" * 64):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)


@pytest.mark.parametrize(
    "header, message",
    [
        ({"w": {"dtype": "F32", "shape": [4], "data_offsets": ["0", "16"]}}, "two whole numbers"),
        ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0.5, 16.5]}}, "two whole numbers"),
        ({"w": {"dtype": "F32", "shape": [4.7], "data_offsets": [0, 16]}}, "list of whole numbers"),
        ({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, "list of whole numbers"),
        ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16], "x": 1}}, "needs exactly"),
        (b"{" + b'"a":' * 1 + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
    ],
)
def test_malformed_safetensors_headers_are_exit_2(setup, header, message):
    tmp_path, cfg = setup
    _raw_safetensors(tmp_path / "a" / "model.safetensors", header)
    _one_line_exit_2(_invoke(tmp_path, cfg), message)
    assert not (tmp_path / "out").exists()


def test_yaml_nested_5000_deep_is_exit_2(setup):
    tmp_path, _ = setup
    _one_line_exit_2(_invoke(tmp_path, "merge_method: " + "[" * 5000 + "]" * 5000), "nested too deeply")


@pytest.mark.parametrize("weights", [(0, 0), (-1, 1)])
def test_linear_weights_that_cancel_are_refused(setup, weights):
    tmp_path, cfg = setup
    cfg = {"merge_method": "linear", "models": [
        {"model": m["model"], "parameters": {"weight": w}} for m, w in zip(cfg["models"], weights)]}  # fmt: skip
    _one_line_exit_2(_invoke(tmp_path, cfg), "which is 0")
    assert not (tmp_path / "out").exists()


def test_a_killed_merge_leaves_nothing_the_next_run_keeps(setup):
    import os
    import subprocess
    import sys

    tmp_path, cfg = setup
    code = (
        "import os, signal, sys\n"
        "from genlab.merging.writer import atomic_dir\n"
        "with atomic_dir(sys.argv[1]) as tmp:\n"
        "    (tmp / 'model.safetensors').write_bytes(b'partial')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], env=env)
    assert proc.returncode == -9
    assert len(list(tmp_path.glob(".out.*.tmp"))) == 1  # what kill -9 leaves
    alive = tmp_path / f".out.{os.getpid()}.live.tmp"  # a running merge's folder (this process) is kept
    alive.mkdir()
    res = _invoke(tmp_path, cfg)
    assert res.exit_code == 0, res.output
    assert list(tmp_path.glob(".out.*")) == [alive]


def test_symlinked_out_stays_a_link_to_the_new_merge(setup):
    tmp_path, cfg = setup
    real = tmp_path / "real_out"
    real.mkdir()
    (real / "stale.txt").write_text("old merge")
    link = tmp_path / "out"
    link.symlink_to(real)
    res = _invoke(tmp_path, cfg, "--force")
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and (real / "model.safetensors").exists() and not (real / "stale.txt").exists()
    assert not list(tmp_path.glob(".*.old")) and not list(tmp_path.glob(".*.tmp"))


def test_progress_is_a_plain_line_when_piped(setup):
    tmp_path, cfg = setup
    res = _invoke(tmp_path, cfg)  # CliRunner's stderr is not a terminal
    assert res.exit_code == 0, res.output
    assert "merged 2/2 tensors, ETA 0 s" in res.stderr


def test_threshold_trim_from_the_cli(setup):
    tmp_path, cfg = setup
    assert _invoke(tmp_path, cfg, "--trim", "threshold", "--quiet").exit_code == 0
    res = _invoke(tmp_path, cfg, "--trim", "sorted", "--force")
    _one_line_exit_2(res, "choose one of mergekit, threshold")


def test_model_card_and_chat_template(setup):
    tmp_path, cfg = setup
    tok = {"tokenizer_config.json": json.dumps({"chat_template": "{{ old }}", "model_max_length": 8}),
           "tokenizer.json": '{"version": "1.0"}'}  # fmt: skip
    for name in ("base", "a", "b"):
        for f, text in tok.items():
            (tmp_path / name / f).write_text(text)
    cfg = {**cfg, "chat_template": "{{ messages }}"}
    res = _invoke(tmp_path, cfg, "--quiet")
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    card = (out / "README.md").read_text()
    assert "[TIES](https://arxiv.org/abs/2306.01708) merge method using" in card and "merge_method: ties" in card
    assert (out / "chat_template.jinja").read_text() == "{{ messages }}"
    assert "chat_template" not in json.loads((out / "tokenizer_config.json").read_text())
    assert _invoke(tmp_path, {**cfg, "chat_template": "mistral"}, "--force", "--quiet").exit_code == 0
    assert (out / "chat_template.jinja").read_text().startswith("{%- if messages[0]['role'] == 'system' %}")
    _one_line_exit_2(_invoke(tmp_path, {**cfg, "chat_template": "chatm"}, "--force"), "a template name (alpaca, ")
    # tokenizer_source builds the tokenizer with transformers: an unreadable tokenizer is one line, exit 2
    _one_line_exit_2(_invoke(tmp_path, {**cfg, "tokenizer_source": "union"}, "--force"), "cannot load the tokenizer")


@pytest.mark.parametrize("n_tokens, pad, rows", [(6, None, 6), (5, None, 5), (6, 4, 8), (3, 3, 3)])
def test_tokenizer_source_resizes_embeddings_to_the_vocabulary(tmp_path, n_tokens, pad, rows):
    """The embeddings are laid out on the output vocabulary (extra rows past the tokenizer dropped, padding rows
    the mean of the real ones) and config.json's vocab_size follows."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models

    tk = Tokenizer(models.WordLevel({f"t{i}": i for i in range(n_tokens)}, unk_token="t0"))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="t0")
    emb = {}
    for seed, name in enumerate(("base", "a")):
        (tmp_path / name).mkdir()
        emb[name] = torch.randn(6, 4, generator=torch.Generator().manual_seed(seed))
        save_file({"model.embed_tokens.weight": emb[name]}, str(tmp_path / name / "model.safetensors"))
        (tmp_path / name / "config.json").write_text(json.dumps({"vocab_size": 6}))
        fast.save_pretrained(tmp_path / name)
    tokenizer = {"source": "union", **({"pad_to_multiple_of": pad} if pad else {})}
    cfg = {"merge_method": "task_arithmetic", "base_model": str(tmp_path / "base"), "tokenizer": tokenizer,
           "models": [{"model": str(tmp_path / "a"), "parameters": {"weight": 0.5}}]}  # fmt: skip
    res = _invoke(tmp_path, cfg, "--quiet")
    assert res.exit_code == 0, res.output
    out = load_file(str(tmp_path / "out" / "model.safetensors"))["model.embed_tokens.weight"]
    assert out.shape == (rows, 4)
    real = emb["base"][:n_tokens] + 0.5 * (emb["a"][:n_tokens] - emb["base"][:n_tokens])
    assert torch.allclose(out[:n_tokens], real)
    if rows > n_tokens:
        assert torch.allclose(out[n_tokens:], real.mean(0).expand(rows - n_tokens, 4), atol=1e-6)
    assert json.loads((tmp_path / "out" / "config.json").read_text())["vocab_size"] == rows
