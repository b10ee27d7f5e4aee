import json
import subprocess
import sys

import pytest

from genlab.cli import main


def run_cli(capsys, *args):
    with pytest.raises(SystemExit) as info:
        main([*args])
        raise SystemExit(0)
    out = capsys.readouterr()
    return info.value.code or 0, out.out, out.err


def test_run_json_and_skip(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "run", "toy-mean", "-p", "smoke", "--set", "n=20", "--root", str(tmp_path), "--json")
    first = json.loads(out)
    assert code == 0 and first["skipped"] is False and len(first["claims"]) == 2
    code, out, _ = run_cli(capsys, "run", "toy-mean", "-p", "smoke", "--set", "n=20", "--root", str(tmp_path), "--json")
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
def test_errors_are_one_sentence_and_nonzero(tmp_path, capsys, args, code, message):
    got, _, err = run_cli(capsys, *args, "--root", str(tmp_path))
    assert got == code
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_debug_shows_the_traceback(tmp_path, capsys):
    with pytest.raises(Exception, match="no study named"):
        main(["run", "nope", "--debug", "--root", str(tmp_path)])


def test_reproduce_writes_report_and_sweep_tabulates(tmp_path, capsys):
    code, out, _ = run_cli(
        capsys, "reproduce", "toy-mean", "-p", "smoke", "--seeds", "2", "--backend", "serial",
        "--root", str(tmp_path), "--json",
    )  # fmt: skip
    payload = json.loads(out)
    assert code == 0 and len(payload["runs"]) == 2
    html = (tmp_path / "report.html").read_text()
    assert "the sample mean is within 4.0/sqrt(n) of mu" in html and "data:image/png;base64," in html
    code, out, _ = run_cli(
        capsys, "sweep", "toy-mean", "-p", "smoke", "--grid", "n=20,40", "--seeds", "3", "--backend", "serial",
        "--metric", "mean", "--root", str(tmp_path), "--json",
    )  # fmt: skip
    rows = json.loads(out)["rows"]
    assert [r["n"] for r in rows] == [20, 40]
    assert all(r["mean"][2] == 3 for r in rows)


def test_failed_run_in_reproduce_exits_nonzero(tmp_path, capsys):
    code, _, err = run_cli(capsys, "sweep", "toy-mean", "--grid", "fail=true", "--root", str(tmp_path), "-q")
    assert code == 1 and "asked to fail" in err


def test_console_script_starts_fast_enough_to_be_light():
    """`genlab --help` must not import torch (tools rely on a light CLI)."""
    code = "import sys; from genlab.cli import app; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_typer_bad_parameter_is_a_usage_error_with_exit_2(tmp_path, capsys):
    code, _, err = run_cli(capsys, "ifbench", "generate", "--prompts", str(tmp_path / "missing.jsonl"), "--out", "x")
    assert code == 2 and "missing.jsonl" in err and "Traceback" not in err
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "x", "instruction_id_list": [], "kwargs": []}\n')
    code, _, err = run_cli(capsys, "ifbench", "generate", "--prompts", str(prompts), "--out", "x", "--backend", "nope")
    assert code == 2 and "unknown backend 'nope'" in err
