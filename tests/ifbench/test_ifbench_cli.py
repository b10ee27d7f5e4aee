"""``genlab ifbench`` is typer commands run through genlab's one error path (issue 38): usage errors are one line
and exit 2 as for every other command, a reader that leaves the pipe stops it quietly (exit 141), ``eval`` imports
neither the harness nor rich, torch or scipy, and kwargs are validated by pydantic models with a "did you mean"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genlab.ifbench import registry
from genlab.ifbench.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ifbench_testutil import NLTK_DIR

SRC = str(Path(registry.__file__).resolve().parents[2])


def _console(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    """``genlab ARGS`` as the console script runs it, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": SRC, "NLTK_DATA": str(NLTK_DIR)}
    return subprocess.run([sys.executable, "-m", "genlab.launch", *args], stdout=stdout, stderr=subprocess.PIPE,
                          env=env, text=True, timeout=120)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--bogus"], "No such option: --bogus"),
        (["--compare", "a.jsonl"], "'--compare' requires 2 arguments"),
        (["--format", "xml"], "'--format'"),
        (["--workers", "0"], "'--workers'"),
        (["--bootstrap", "1000000"], "--bootstrap must be in [0, 100,000]"),
        (["--prompts", "p.jsonl"], "give --responses R or --compare A B"),
    ],
)
def test_a_usage_error_in_eval_is_one_line_exit_2_from_the_shared_path(cli, args, words):
    proc = _console("ifbench", "eval", *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], proc
    assert "Usage:" not in proc.stderr and not proc.stdout
    # the full `genlab` app (every command registered) says the same, in the same words
    code, out, err = cli("ifbench", "eval", *args)
    assert (code, err.strip()) == (2, lines[0]) and not out


def test_list_into_a_closed_pipe_stops_quietly():
    """`genlab ifbench list | head -1`: the reader has left before the first line; no traceback, exit 141."""
    for args in (["list"], ["list", "--json"], ["check", "--id", "punctuation:no_comma", "--text", "hi"]):
        read, write = os.pipe()
        os.close(read)
        proc = _console("ifbench", *args, stdout=write)
        os.close(write)
        assert proc.returncode == 141 and proc.stderr == "", (args, proc.stderr)


def test_list_piped_into_head_in_a_shell():
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m genlab.launch ifbench list --json "
                           "| head -1"], capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert proc.stdout == "[\n" and "Traceback" not in proc.stderr and proc.returncode in (0, 141), proc.stderr


def test_eval_imports_only_what_it_uses(tmp_path):
    """The console script's `genlab ifbench eval` builds only the ifbench group: neither genlab.cli (every other
    command) nor the harness, rich, torch or scipy is imported."""
    script = ("import sys; from genlab import launch; sys.argv = ['genlab', 'ifbench', 'eval', '--json']\n"
              "try:\n    launch.main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
              "heavy = ('genlab.cli', 'genlab.harness', 'rich', 'torch', 'scipy')\n"
              "print(json.dumps(sorted({m.split('.')[0] if not m.startswith('genlab') else m for m in sys.modules "
              "if m.startswith(heavy)})), file=sys.stderr)")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": SRC, "NLTK_DATA": str(NLTK_DIR)}
    proc = subprocess.run([sys.executable, "-c", "import json\n" + script], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []


def test_python_m_genlab_ifbench_cli_is_the_same_path(tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run([sys.executable, "-m", "genlab.ifbench.cli", "eval", "--bogus"], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.startswith("error: No such option: --bogus")
    assert proc.stderr.count("\n") == 1 and "genlab ifbench eval --help" in proc.stderr


# ------------------------------------------------------------------------------------------------ kwargs


def test_kwargs_are_validated_by_a_pydantic_model_built_on_first_use():
    from pydantic import TypeAdapter

    c = registry.get("length_constraints:number_sentences")
    c.__dict__.pop("kwargs_model", None)
    assert "kwargs_model" not in c.__dict__  # nothing built until kwargs are validated
    assert c.normalize({"relation": "less than", "num_sentences": 3.0, "unused": None}) == {
        "relation": "less than", "num_sentences": 3}  # fmt: skip
    assert isinstance(c.__dict__["kwargs_model"], TypeAdapter)
    assert list(c.kwargs_model.json_schema()["properties"]) == [p.name for p in c.params]  # the official names


@pytest.mark.parametrize(
    ("cid", "kwargs", "words"),
    [
        ("length_constraints:number_sentences", {"relation": "less than", "num_sentence": 3},
         "length_constraints:number_sentences: unexpected kwarg 'num_sentence' (did you mean 'num_sentences'?"),
        ("keywords:existence", {"keyword": ["a"]}, "unexpected kwarg 'keyword' (did you mean 'keywords'?"),
        ("count:numbers", {"n": 2}, "unexpected kwarg 'n' (did you mean 'N'?"),
        ("length_constraints:number_sentences", {"relation": "more than", "num_sentences": 3},
         "relation must be one of ['less than', 'at least'], got 'more than'"),
        ("count:numbers", {"N": True}, "count:numbers: N: expected an integer, got True"),
        ("keywords:existence", {"keywords": [1]}, "keywords must be a list of strings"),
        ("detectable_content:postscript", {"postscript_marker": 3}, "postscript_marker must be a string, got int"),
    ],
)
def test_bad_kwargs_are_one_line_naming_the_id_and_the_key(cid, kwargs, words):
    with pytest.raises(registry.KwargsError) as exc:
        registry.get(cid).normalize(kwargs)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_official_coercions_are_kept():
    assert registry.get("count:numbers").normalize({"N": "3"}) == {"N": 3}
    assert registry.get("keywords:existence").normalize({"keywords": "tea"}) == {"keywords": ["tea"]}
    assert registry.get("keywords:existence").normalize({"keywords": ("a", "b")}) == {"keywords": ["a", "b"]}
    assert registry.get("startend:end_checker").normalize({"end_phrase": ["Bye."]}) == {"end_phrase": "Bye."}
    assert registry.get("punctuation:no_comma").normalize(None) == {}
    with pytest.raises(registry.KwargsError, match="kwargs must be an object, got list"):
        registry.get("punctuation:no_comma").normalize([1])  # type: ignore[arg-type]


def test_a_misspelt_kwarg_says_did_you_mean_on_the_command_line(tmp_path, capsys):
    code = main(["check", "--id", "length_constraints:number_words", "--kwargs",
                 '{"relation": "at least", "num_word": 3}', "--text", "one two three"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "did you mean 'num_words'?" in err
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"key": 1, "prompt": "p", "instruction_id_list": ["length_constraints:number_words"],
                                   "kwargs": [{"relation": "at least", "num_word": 3}]}) + "\n")  # fmt: skip
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"prompt": "p", "response": "one two three"}) + "\n")
    code = main(["eval", "--prompts", str(prompts), "--responses", str(responses), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"{prompts}:1" in err and "did you mean 'num_words'?" in err
    assert not (tmp_path / "o").exists()
