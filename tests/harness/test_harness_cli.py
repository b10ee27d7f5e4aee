import json
import subprocess
import sys

import pytest

from genlab.cli import main


def test_run_json_and_skip(tmp_path, cli):
    code, out, _ = cli("run", "toy-mean", "-p", "smoke", "--set", "n=20", "--root", str(tmp_path), "--json")
    first = json.loads(out)
    assert code == 0 and first["skipped"] is False and len(first["claims"]) == 2
    code, out, _ = cli("run", "toy-mean", "-p", "smoke", "--set", "n=20", "--root", str(tmp_path), "--json")
    assert json.loads(out)["skipped"] is True and json.loads(out)["hash"] == first["hash"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["run", "nope"], 2, "no study named 'nope'"),
        (["run", "toy-mean", "--set", "bogus=1"], 2, "unknown config key 'bogus'"),
        (["run", "toy-mean", "--set", "n=abc"], 2, "n: 'abc' is not a valid int"),
        (["run", "toy-mean", "--preset", "huge"], 2, "no preset 'huge'"),
        (["sweep", "toy-mean", "--grid", "n"], 2, "--grid expects key=v1,v2"),
        (["reproduce", "toy-mean", "--backend", "slurm"], 2, "unknown backend 'slurm'"),
    ],
)
def test_errors_are_one_sentence_and_nonzero(tmp_path, cli, args, code, message):
    got, _, err = cli(*args, "--root", str(tmp_path))
    assert got == code
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_debug_shows_the_traceback(tmp_path, cli):
    with pytest.raises(Exception, match="no study named"):
        main(["run", "nope", "--debug", "--root", str(tmp_path)])


def test_reproduce_writes_report_and_sweep_tabulates(tmp_path, cli):
    code, out, _ = cli(
        "reproduce", "toy-mean", "-p", "smoke", "--seeds", "2", "--backend", "serial",
        "--root", str(tmp_path), "--json",
    )  # fmt: skip
    payload = json.loads(out)
    assert code == 0 and len(payload["runs"]) == 2
    html = (tmp_path / "report.html").read_text()
    assert "the sample mean is within 4.0/sqrt(n) of mu" in html and "data:image/png;base64," in html
    code, out, _ = cli(
        "sweep", "toy-mean", "-p", "smoke", "--grid", "n=20,40", "--seeds", "3", "--backend", "serial",
        "--metric", "mean", "--root", str(tmp_path), "--json",
    )  # fmt: skip
    rows = json.loads(out)["rows"]
    assert [r["n"] for r in rows] == [20, 40]
    assert all(r["mean"][2] == 3 for r in rows)


def test_failed_run_in_reproduce_exits_nonzero(tmp_path, cli):
    code, _, err = cli("sweep", "toy-mean", "--grid", "fail=true", "--root", str(tmp_path), "-q")
    assert code == 1 and "asked to fail" in err


def test_console_script_starts_fast_enough_to_be_light():
    """`genlab --help` must not import torch (tools rely on a light CLI)."""
    code = "import sys; from genlab.cli import app; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_typer_bad_parameter_is_a_usage_error_with_exit_2(tmp_path, cli):
    code, _, err = cli("ifbench", "generate", "--prompts", str(tmp_path / "missing.jsonl"), "--out", "x")
    assert code == 2 and "missing.jsonl" in err and "Traceback" not in err
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "x", "instruction_id_list": [], "kwargs": []}\n')
    code, _, err = cli("ifbench", "generate", "--prompts", str(prompts), "--out", "x", "--backend", "nope")
    assert code == 2 and "unknown backend 'nope'" in err


def test_version_and_show(cli):
    from genlab import __version__

    code, out, _ = cli("--version")
    assert code == 0 and out.strip() == f"genlab {__version__}"
    code, out, _ = cli("show", "toy-mean", "--json")
    info = json.loads(out)
    assert code == 0 and info["name"] == "toy-mean"
    n = next(f for f in info["config"] if f["key"] == "n")
    assert n["default"] == "1000" and n["presets"] == {"smoke": "50", "full": "100000"} and n["allowed"] == ">= 0"
    close = next(c for c in info["claims"] if c["key"] == "mean-close")
    assert close["text"] == "the sample mean is within 4.0/sqrt(n) of mu" and close["thresholds"] == ["tolerance=4.0"]


def test_sweep_tabulates_claims_by_default_and_rejects_unknown_metrics(tmp_path, cli):
    args = ["sweep", "toy-mean", "-p", "smoke", "--grid", "n=20,40", "--seeds", "5", "--backend", "serial"]
    code, out, err = cli(*args, "--root", str(tmp_path), "--json")
    payload = json.loads(out)
    assert code == 0 and payload["columns"] == ["claim:mean-close", "claim:mean-negative"]
    assert all(r["claim:mean-close"].startswith("reproduced (5/5)") for r in payload["rows"])
    code, out, _ = cli(*args, "--metric", "claim:mean-close/err", "--root", str(tmp_path), "--json")
    assert code == 0 and all(r["claim:mean-close/err"][2] == 5 for r in json.loads(out)["rows"])
    code, _, err = cli(*args, "--metric", "mean_typo", "--root", str(tmp_path))
    assert code == 2 and "unknown --metric 'mean_typo'" in err and "mean" in err
    code, _, err = cli(*args, "--root", str(tmp_path))
    assert code == 0 and "n=20 seed 1: cached" in err  # progress lines name the grid cell


def test_the_report_shows_a_sweep_as_one_table_not_as_superseded_runs(tmp_path, cli):
    args = ["sweep", "toy-mean", "-p", "smoke", "--grid", "n=20,40", "--seeds", "2", "--backend", "serial"]
    assert cli(*args, "--root", str(tmp_path), "--quiet")[0] == 0
    assert cli("run", "toy-mean", "-p", "smoke", "--root", str(tmp_path), "--quiet")[0] == 0
    assert cli("report", str(tmp_path), "--preset", "smoke")[0] == 0
    html = (tmp_path / "report.html").read_text()
    sweeps = html[html.index('id="sweeps"'):]
    assert "toy-mean" in sweeps and "<th>n</th>" in sweeps and "<th>mean-close</th>" in sweeps
    assert sweeps.count("/2)</td>") >= 4 and 'id="superseded"' not in html  # cells are not superseded runs
    assert 'id="toy-mean--smoke"' in html  # the plain run keeps its own section


def test_reproduce_ends_with_a_compact_table(tmp_path, cli):
    args = ["reproduce", "toy-mean", "-p", "smoke", "--backend", "serial", "--root", str(tmp_path)]
    code, out, _ = cli(*args)
    assert code == 0 and "report:" in out and "toy-mean" in out
    assert "the sample mean is within" not in out  # claim-by-claim detail stays in the report and --json


def test_python_api_returns_a_result_with_claims_and_figures(tmp_path):
    import genlab

    r = genlab.run("toy-mean", preset="smoke", seed=2, root=tmp_path, n=60)
    assert r.config["n"] == 60 and r.claims["mean-close"].verdict == "reproduced" and not r.cached
    assert r.figures and r.figures[0].exists() and "<table>" in r._repr_html_()
    assert genlab.run("toy-mean", preset="smoke", seed=2, root=tmp_path, n=60).cached


def test_device_must_exist(tmp_path, cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = cli("run", "toy-mean", "-p", "smoke", "--device", "cuda", "--root", str(tmp_path))
    assert code == 2 and "no CUDA device" in err


def test_tables_are_readable_at_80_columns(tmp_path, cli, monkeypatch):
    """No name or number is broken mid-token: a wide sweep folds into one block per grid cell."""
    monkeypatch.setenv("COLUMNS", "40")
    args = ["sweep", "toy-mean", "-p", "smoke", "--grid", "n=20,40", "--seeds", "5", "--backend", "serial"]
    code, out, _ = cli(*args, "--root", str(tmp_path))
    assert code == 0 and "n=20\n  mean-close     reproduced (5/5)" in out
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("show", "phi-curve")
    assert code == 0 and "digits_test_fraction" in out and "digits_input_scale" in out  # keys never folded
    code, out, _ = cli("run", "toy-mean", "-p", "smoke", "--root", str(tmp_path))
    assert code == 0 and "mean-close" in out and "(exact, n=1, p=" in out  # the test that decided each claim
