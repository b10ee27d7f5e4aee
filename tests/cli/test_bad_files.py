"""Every file reader on the command line meets random bytes and random JSON with one line on stderr, exit code 2,
and nothing written."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genlab.cli import main

# subnormals off: a compiled dependency imported by other tests in the same worker sets flush-to-zero
JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_subnormal=False) | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _good_oodselect(tmp: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    ids = tmp / "id.csv"
    ids.write_text("model,id_acc\n" + "".join(f"m{i},{0.5 + i / 100:.3f}\n" for i in range(20)))
    correct = tmp / "correct.npy"
    np.save(correct, (rng.random((20, 30)) < 0.6).astype(np.int8))
    return {"--id-acc": ids, "--correct": correct}


def _oodselect_args(files: dict[str, Path], out: Path) -> list[str]:
    args = ["oodselect", "--k", "5", "--steps", "5", "--n-random", "2", "--lrs", "0.1", "--lams", "1"]
    args += ["--out", str(out)]
    for flag, path in files.items():
        args += [flag, str(path)]
    return args


def _run(capsys, args: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return exc.value.code, capsys.readouterr().err


READERS = {  # name -> (the file to corrupt, suffix); the other inputs stay valid
    "oodselect --id-acc csv": ("--id-acc", ".csv"),
    "oodselect --correct npy": ("--correct", ".npy"),
    "oodselect --correct csv": ("--correct", ".csv"),
}


@pytest.mark.parametrize("reader", list(READERS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(max_size=200) | JSON.map(lambda v: json.dumps(v).encode()))
def test_bad_input_files_are_one_line_exit_2_and_write_nothing(tmp_path_factory, capsys, reader, payload):
    tmp = tmp_path_factory.mktemp("bad")
    files = _good_oodselect(tmp)
    flag, suffix = READERS[reader]
    bad = tmp / f"bad{suffix}"
    bad.write_bytes(payload)
    files[flag] = bad
    out = tmp / "out"
    code, err = _run(capsys, _oodselect_args(files, out))
    assert code == 2, err
    assert err.startswith("error:") or "Error" in err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_the_valid_inputs_do_run(tmp_path, capsys):
    files = _good_oodselect(tmp_path)
    main(_oodselect_args(files, tmp_path / "out"))  # returns normally on success
    assert json.loads((tmp_path / "out" / "selection.json").read_text())["n_models"] == 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bound", "margin", "--gamma", "0.1", "--n", "1000", "--c", "-1"], "--c"),
        (["bound", "margin", "--gamma", "0.1", "--n", "1000", "--c", "nan"], "finite"),
        (["report", "README.md"], "not a directory"),
        (["run", "toy", "--seed", "-1"], "seed"),
    ],
)
def test_bad_arguments_are_one_line_exit_2(capsys, args, message):
    code, err = _run(capsys, args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_an_npz_archive_given_as_npy_is_one_clear_line(tmp_path, capsys):
    """Found by the property test above: a file that starts like a zip archive is read by numpy as .npz."""
    import numpy as np

    files = _good_oodselect(tmp_path)
    with open(tmp_path / "c.npy", "wb") as f:
        np.savez(f, a=np.zeros(3))
    files["--correct"] = tmp_path / "c.npy"
    (tmp_path / "zip.npy").write_bytes(b"PK\x03\x04")
    for bad in (tmp_path / "c.npy", tmp_path / "zip.npy"):
        code, err = _run(capsys, _oodselect_args(dict(files, **{"--correct": bad}), tmp_path / "out"))
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(bad) in err, err
    assert not (tmp_path / "out").exists()
