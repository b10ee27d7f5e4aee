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
        (lambda c, t: {**c, "modules": {}}, "mergekit key 'modules' is not supported"),
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
