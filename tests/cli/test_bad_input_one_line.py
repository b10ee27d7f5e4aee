"""Bad input anywhere on the command line is one line naming what is wrong, exit code 2, nothing written (issue 37,
items 7, 9, 12, 14, 15, 16): sizes beyond a named limit are refused up front, messages name the file asked for
(never a temp file), unknown values are refused, Ctrl-C at any moment is no traceback, and JSON is strict."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest


def _one_line(err: str) -> bool:
    return err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "args, words",
    [
        (["reproduce", "--seeds", "1000000000000"], "at most 10,000"),
        (["sweep", "margin-bounds", "-p", "smoke", "--grid", "signal=" + ",".join(f"{i / 1e4}" for i in range(1, 1001)),
          "--grid", "delta=" + ",".join(f"{i / 1e4}" for i in range(1, 501))], "500,000 cells"),
        (["run", "margin-bounds", "-p", "smoke", "--set", "n_train=,"], "n_train: ',' holds no values"),
        (["report", "{root}", "--preset", "bogus"], "--preset 'bogus' is no preset"),
        (["list", "--root", "{file}"], "is a file, not a run store"),
        (["show", "margin-bounds", "--root", "{file}"], "is a file, not a run store"),
    ],
)
def test_sizes_and_unknown_values_are_refused_up_front(tmp_path, cli, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "root").mkdir()
    (tmp_path / "file").write_text("x")
    args = [a.format(root=tmp_path / "root", file=tmp_path / "file") for a in args]
    t0 = time.perf_counter()
    code, _, err = cli(*args, *(["--root", tmp_path / "root"] if args[0] in ("reproduce", "sweep", "run")
                                         else []))  # fmt: skip
    assert code == 2 and _one_line(err) and words in err, err
    assert time.perf_counter() - t0 < 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "root"] and not any((tmp_path / "root").iterdir())


def test_an_empty_tuple_is_still_writable_explicitly():
    from genlab.harness.config import parse_value

    assert parse_value("()", tuple[int, ...], "k") == () and parse_value("1,2", tuple[int, ...], "k") == (1, 2)


@pytest.mark.parametrize("failure", ["read-only", "full disk"])
def test_write_errors_name_the_file_asked_for(tmp_path, cli, monkeypatch, failure):
    import tempfile

    from genlab.harness import io

    def read_only(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / ".r.html.5glzd702.tmp"))

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    if failure == "read-only":
        monkeypatch.setattr(tempfile, "mkstemp", read_only)
    else:
        monkeypatch.setattr(io.os, "fsync", full)
    (tmp_path / "runs").mkdir()
    out = tmp_path / "r.html"
    code, _, err = cli("report", tmp_path / "runs", "--out", out)
    reason = "Permission denied" if failure == "read-only" else "No space left on device"
    assert code == 2 and _one_line(err) and f"{out}: {reason}" in err and ".tmp" not in err and "Errno" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]


def _oodselect_inputs(tmp: Path, columns: int = 30) -> list[str]:
    rng = np.random.default_rng(0)
    (tmp / "id.csv").write_text("model,id_acc\n" + "".join(f"m{i},{0.5 + i / 100:.3f}\n" for i in range(20)))
    np.save(tmp / "c.npy", (rng.random((20, columns)) < 0.6).astype(np.int8))
    return ["oodselect", "--id-acc", str(tmp / "id.csv"), "--correct", str(tmp / "c.npy"), "--k", "5", "--steps", "5",
            "--lrs", "0.1", "--lams", "1"]  # fmt: skip


@pytest.mark.parametrize("extra, words", [(["--n-random", "1000000000"], "100,000"),
                                          (["--steps", "1000000000"], "1,000,000")])  # fmt: skip
def test_oodselect_sizes_are_refused_up_front(tmp_path, cli, extra, words):
    code, _, err = cli(*_oodselect_inputs(tmp_path), "--out", tmp_path / "o", *extra)
    assert code == 2 and _one_line(err) and words in err and not (tmp_path / "o").exists()


def test_oodselect_zero_columns(tmp_path, cli):
    code, _, err = cli(*_oodselect_inputs(tmp_path, columns=0), "--out", tmp_path / "o")
    assert code == 2 and _one_line(err) and "no OOD examples" in err and not (tmp_path / "o").exists()


def test_oodselect_leaves_no_empty_out_on_failure(tmp_path, cli, monkeypatch):
    import genlab.measures.oodselect as measures

    def broken_plot(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "o" / "scatter.png"))

    monkeypatch.setattr(measures, "scatter_plot", broken_plot)
    code, _, err = cli(*_oodselect_inputs(tmp_path), "--n-random", "2", "--out", tmp_path / "o")
    assert code == 2 and _one_line(err) and not (tmp_path / "o").exists()


def test_bound_margin_json_is_strict_and_tiny_gamma_is_quiet(cli):
    code, out, err = cli("bound", "margin", "--gamma", "0.01", "--n", "100", "--json")
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    assert code == 0 and data["bounds"]["McAllester'03"]["value"] is None
    with _no_warnings():
        code, out, err = cli("bound", "margin", "--gamma", "1e-320", "--n", "100")
    assert code == 0 and err == "" and "Warning" not in out


class _no_warnings:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        return False


@pytest.mark.parametrize(
    "args, words",
    [
        (["ifbench", "make-train", "--min-constraints", "5", "--max-constraints", "2", "--out", "t"],
         "--min-constraints"),
        (["ifbench", "make-train", "--base", "{bin}", "--out", "t"], "not UTF-8"),
        (["ifbench", "generate", "--backend", "hf", "--model", "./missing", "--prompts", "{prompts}", "--out", "g"],
         "no model directory"),
        (["ifbench", "generate", "--backend", "hf", "--model", ".", "--prompts", "{bin}", "--out", "g"], "not UTF-8"),
    ],
)
def test_ifbench_tool_inputs_are_exit_2(tmp_path, cli, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bin.txt").write_bytes(bytes(range(128, 256)) * 3)
    (tmp_path / "p.jsonl").write_text('{"key": 1, "prompt": "hi", "instruction_id_list": [], "kwargs": []}\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    args = [a.format(bin=tmp_path / "bin.txt", prompts=tmp_path / "p.jsonl") for a in args]
    code, _, err = cli(*args)
    assert code == 2 and _one_line(err) and words in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.15, 0.3, 0.45])
def test_ctrl_c_while_starting_is_one_line(delay):
    """SIGINT during the imports of `genlab list` (the first ~0.4 s): 'interrupted', exit 130, no traceback.
    The clock starts when the child is about to enter ``main`` (it writes one byte then), not at spawn: on a
    loaded machine the interpreter's own start-up, before genlab's handler exists, can take longer than ``delay``."""
    script = "import sys; from genlab.launch import main; sys.argv = ['genlab', 'list']; print('>', flush=True); main()"
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ})
    assert proc.stdout.read(1) == b">"
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1].decode()
    assert "Traceback" not in err and proc.returncode in (0, 130, -signal.SIGINT), err


def test_a_group_without_a_command_prints_its_help_and_no_empty_error(cli):
    _, out, err = cli("ifbench")
    assert "eval" in out + err and "error:  " not in err and "error: (" not in err
