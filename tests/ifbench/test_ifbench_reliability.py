"""``genlab ifbench`` on hostile input (issue 37, items 6, 13, 18, 19): one line on stderr, exit code 2, nothing
written; never a traceback, never a silent 0 %."""

from __future__ import annotations

import errno
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genlab.ifbench.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ifbench_testutil import IFBENCH_FILE, IFEVAL_FILE, NLTK_DIR


@pytest.fixture(autouse=True)
def shipped_nltk_data(monkeypatch):
    """The genuine NLTK data (so no offline-rules warning mixes into stderr)."""
    from genlab.ifbench import nlp

    monkeypatch.setenv("NLTK_DATA", str(NLTK_DIR))
    nlp.reset()
    yield
    nlp.reset()


def _run(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # --help
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(err: str) -> bool:
    return err.startswith("error: ") and len(err.strip().splitlines()) == 1


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    rows = [json.loads(x) for x in IFEVAL_FILE.read_text().splitlines()[:12]]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps({"prompt": r["prompt"], "response": "Fine."}) + "\n" for r in rows))
    return {"prompts": prompts, "responses": responses}


def test_out_at_an_existing_file(files, tmp_path, capsys):
    (tmp_path / "f").write_text("mine")
    code, _, err = _run(capsys, "eval", "-p", files["prompts"], "-r", files["responses"], "--out", tmp_path / "f")
    assert code == 2 and _one_line(err) and "a file, not a folder" in err
    assert (tmp_path / "f").read_text() == "mine"


@pytest.mark.parametrize("fresh", [True, False])
def test_a_full_disk_leaves_no_partial_result_file(files, tmp_path, capsys, monkeypatch, fresh):
    import genlab.ifbench.outputs as outputs

    def full_disk(res, out_dir, **kw):
        path = Path(out_dir) / "eval_results_strict.jsonl"
        path.write_text("")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(outputs, "write_outputs", full_disk)
    out = tmp_path / "out"
    if not fresh:
        out.mkdir()
        (out / "keep.txt").write_text("x")
    code, _, err = _run(capsys, "eval", "-p", files["prompts"], "-r", files["responses"], "--out", out)
    assert code == 2 and _one_line(err) and f"--out {out}" in err and "No space left" in err and ".tmp" not in err
    assert (not out.exists()) if fresh else sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_results_are_written_whole(files, tmp_path, capsys):
    code, _, _ = _run(capsys, "eval", "-p", files["prompts"], "-r", files["responses"], "--out", tmp_path / "o")
    names = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert code == 0 and "eval_results_strict.jsonl" in names and not any(n.startswith(".") for n in names)
    assert len((tmp_path / "o" / "eval_results_strict.jsonl").read_text().splitlines()) == 12


def test_absurd_bootstrap_is_refused_up_front(files, capsys):
    code, _, err = _run(capsys, "eval", "-p", files["prompts"], "-r", files["responses"], "--bootstrap", 10**9)
    assert code == 2 and _one_line(err) and "100,000" in err


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def test_deep_json_in_prompts_and_kwargs(tmp_path, files, capsys):
    deep = tmp_path / "deep.jsonl"
    deep.write_text(json.dumps({"key": 1, "prompt": "x", "instruction_id_list": [], "kwargs": []})[:-1]
                    + ', "deep": ' + _deep(100_000) + "}\n")  # fmt: skip
    code, _, err = _run(capsys, "eval", "-p", deep, "-r", files["responses"])
    assert code == 2 and _one_line(err) and str(deep) in err and "nested too deeply" in err
    code, _, err = _run(capsys, "check", "--id", "punctuation:no_comma", "--kwargs", _deep(100_000), "--text", "hi")
    assert code == 2 and _one_line(err) and "--kwargs" in err


def test_setup_from_an_archive_holding_dotdot(tmp_path, capsys):
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        data = b"pwned"
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    code, _, err = _run(capsys, "setup", "--from", archive, "--dir", tmp_path / "target")
    assert code == 2 and _one_line(err) and str(archive) in err
    assert not any(p.name == "escaped.txt" for p in tmp_path.parent.parent.rglob("escaped.txt"))


def test_an_inspect_zip_bomb_is_capped(tmp_path, capsys, monkeypatch):
    import genlab.ifbench.readers as readers

    monkeypatch.setattr(readers, "MAX_MEMBER_BYTES", 2**20)  # the same code path at 1 MiB instead of 256 MiB
    bomb = tmp_path / "bomb.eval"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "ifeval"}}))
        z.writestr("samples/1_epoch_1.json", b'{"input": "' + b" " * (8 * 2**20) + b'"}')
    assert bomb.stat().st_size < 2**16
    code, _, err = _run(capsys, "eval", "-r", bomb)
    assert code == 2 and _one_line(err) and "decompresses to more than 1 MiB" in err


def test_an_empty_responses_file_is_never_a_silent_zero(files, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _, err = _run(capsys, "eval", "-p", files["prompts"], "-r", empty)
    assert code == 0 and "warning:" in err and "no responses" in err
    code, _, err = _run(capsys, "eval", "-p", files["prompts"], "-r", empty, "--strict", "--out", tmp_path / "o")
    assert code == 2 and _one_line(err) and not (tmp_path / "o").exists()


def test_responses_to_other_prompts_are_said_so(files, capsys):
    code, _, err = _run(capsys, "eval", "-p", IFBENCH_FILE, "-r", files["responses"])
    assert code == 0 and "300 of 300 prompts have no response" in err and "matches a prompt" in err
    code, _, err = _run(capsys, "eval", "-p", IFBENCH_FILE, "-r", files["responses"], "--strict")
    assert code == 2 and _one_line(err)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(st.sampled_from(["eval", "list", "check", "setup", "--bogus", "--id", "-p", "--compare",
                                      "--format", "xml", "--bootstrap", "-3", "x", "--family", "--json"]),
                     min_size=0, max_size=5))
def test_usage_errors_are_one_line(capsys, args):
    """Whatever the argument soup, an error is one line and exit 2 (a usage block never shows); no command at all
    prints the group's help."""
    code, out, err = _run(capsys, *args)
    if code == 2 and args:
        assert _one_line(err), err
    if not args:
        assert "eval" in out and not err
    assert "Traceback" not in err and "usage:" not in err


def test_setup_fails_when_every_download_fails(tmp_path, capsys, monkeypatch):
    nltk = pytest.importorskip("nltk")
    monkeypatch.setattr(nltk, "download", lambda *a, **k: False)
    code, out, err = _run(capsys, "setup", "--dir", tmp_path / "d")
    assert code == 1 and "FAILED" in out and "could not be downloaded" in err


def test_list_into_a_closed_pipe_is_quiet(tmp_path):
    import subprocess

    cmd = [sys.executable, "-c", "import sys; from genlab.ifbench.cli import main; sys.exit(main(['list']))"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err
