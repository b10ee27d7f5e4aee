"""Readers of other tools' files, bad input (one line, exit 2, nothing written), data mode and setup."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from genlab.ifbench import nlp
from genlab.ifbench.cli import main
from genlab.ifbench.data import load_prompts, load_responses
from genlab.ifbench.readers import detect_format

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ifbench_testutil import NLTK_DIR

FIX = Path(__file__).parent / "fixtures"
LMEVAL = FIX / "samples_ifeval_2026-12-03T10-00-00.000000.jsonl"
ROWS = [
    {"key": 1, "prompt": "Say hi. No commas.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": 2, "prompt": "Say bye in lowercase.", "instruction_id_list": ["change_case:english_lowercase"],
     "kwargs": [{}]},
]  # fmt: skip
RESP = [
    {"prompt": "Say hi. No commas.", "response": "hi there"},
    {"prompt": "Say bye in lowercase.", "response": "Bye"},
]


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


TOOL_FILES = [("inspect_ifeval.eval", "inspect"), ("inspect_ifeval.json", "inspect"), (LMEVAL.name, "lm-eval")]


@pytest.mark.parametrize(("name", "fmt"), TOOL_FILES)
def test_real_tool_files_are_detected_and_read(name, fmt):
    pytest.importorskip("zstandard") if name.endswith(".eval") else None
    path = FIX / name
    assert detect_format(path) == fmt
    items, resp = load_prompts(path), load_responses(path)
    assert [it.instruction_id_list for it in items] == [["punctuation:no_comma"], [
        "change_case:english_lowercase", "length_constraints:number_words"], ["startend:quotation"]]
    assert items[1].kwargs[1] == {"relation": "at least", "num_words": 5}  # nulls dropped, positional
    assert resp[items[2].prompt] == "Apples and pears."


def test_lm_eval_and_inspect_score_the_same(capsys, tmp_path):
    pytest.importorskip("zstandard")
    summaries = []
    for f in (LMEVAL, FIX / "inspect_ifeval.eval", FIX / "inspect_ifeval.json"):
        code, out, _ = _run(capsys, "eval", "--responses", f, "--json")
        assert code == 0
        summaries.append(json.loads(out))
    assert summaries[0]["strict"] == summaries[1]["strict"] == summaries[2]["strict"]
    assert summaries[0]["strict"]["prompt_level"] == pytest.approx(2 / 3)  # the quotation prompt fails


def test_parquet_arrow_and_dataset_folder(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    padded = [{**r, "kwargs": [{"N": None}]} for r in ROWS]  # as HF's IFEval: every kwarg key, unset ones null
    pq.write_table(pa.Table.from_pylist(padded), tmp_path / "p.parquet")
    pq.write_table(pa.Table.from_pylist(RESP), tmp_path / "r.parquet")
    table = pa.Table.from_pylist(RESP)
    with pa.OSFile(str(tmp_path / "r.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    assert detect_format(tmp_path / "p.parquet") == "parquet" and detect_format(tmp_path / "r.arrow") == "arrow"
    assert [i.key for i in load_prompts(tmp_path / "p.parquet")] == [1, 2]
    assert load_responses(tmp_path / "r.arrow") == load_responses(_jsonl(tmp_path / "r.jsonl", RESP))
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(RESP).save_to_disk(str(tmp_path / "ds"))
    assert detect_format(tmp_path / "ds") == "hf-dataset"
    code, out, _ = _run(capsys, "eval", "--prompts", tmp_path / "p.parquet", "--responses", tmp_path / "ds", "--json")
    assert code == 0 and json.loads(out)["strict"]["prompt_level"] == 0.5


def test_trl_conversational_prompt_rows(tmp_path):
    rows = [{"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": r["prompt"]}],
             "ground_truth": repr([{"instruction_id": r["instruction_id_list"], "kwargs": r["kwargs"]}])} for r in ROWS]
    items = load_prompts(_jsonl(tmp_path / "trl.jsonl", rows))
    assert [i.prompt for i in items] == [r["prompt"] for r in ROWS]


BAD = {
    "empty file": ("", "no prompts"),
    "not utf-8": (b'{"a": 1}\n\xff\xfe\n', ":2: not UTF-8"),
    "id not a string": ({"prompt": "p", "instruction_id_list": [3], "kwargs": [{}]}, "field 'instruction_id_list[0]'"),
    "ids not a list": ({"prompt": "p", "instruction_id_list": "x", "kwargs": [{}]}, "field 'instruction_id_list'"),
    "kwargs entry a list": ({"prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [[1]]},
                            "field 'kwargs[0]'"),
    "kwargs value of the wrong type": ({"prompt": "p", "instruction_id_list": ["count:numbers"], "kwargs": [{"N": []}]},
                                       "field 'kwargs[0]'"),
    "ground truth a number": ({"messages": [{"role": "user", "content": "p"}], "ground_truth": 7},
                              "field 'ground_truth'"),
    "ground truth ids not strings": ({"prompt": "p", "ground_truth": "[{'instruction_id': [1], 'kwargs': [None]}]"},
                                     "field 'ground_truth'"),
    "prompt a number": ({"prompt": 5, "instruction_id_list": [], "kwargs": []}, "field 'prompt'"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_bad_prompt_files_are_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    content, expect = BAD[case]
    f = tmp_path / "prompts.jsonl"
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content if isinstance(content, str) else json.dumps(content) + "\n", encoding="utf-8")
    code, _, err = _run(capsys, "eval", "--prompts", f, "--responses", _jsonl(tmp_path / "r.jsonl", RESP),
                        "--out", tmp_path / "out")
    assert code == 2 and err.count("\n") == 1 and str(f) in err and expect in err, err
    assert not (tmp_path / "out").exists()


def test_random_bytes_and_json_never_crash(tmp_path, capsys):
    rng = random.Random(0)
    for i in range(40):
        f = tmp_path / f"junk{i}.jsonl"
        if i % 2:
            f.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
        else:
            junk = rng.choice([[], {}, 1, "x", None, {"prompt": [1]}, {"instruction_id_list": {"a": 1}},
                               {"doc": 1, "doc_id": 0}, {"eval": 1, "samples": 2}])
            f.write_text(json.dumps(junk) + "\n")
        code, _, err = _run(capsys, "eval", "--prompts", f, "--responses", f, "--out", tmp_path / "out")
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_no_nan_in_json_and_compare_keeps_both_outputs(tmp_path, capsys):
    prompts = _jsonl(tmp_path / "p.jsonl", [{"key": 1, "prompt": "p", "instruction_id_list": [], "kwargs": []}])
    code, _, _ = _run(capsys, "eval", "--prompts", prompts, "--responses", _jsonl(tmp_path / "r.jsonl", []),
                      "--out", tmp_path / "o")
    text = (tmp_path / "o" / "summary.json").read_text()
    assert code == 0 and "NaN" not in text and json.loads(text)["strict"]["prompt_level"] is None
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p = _jsonl(tmp_path / "p2.jsonl", ROWS)
    ra = _jsonl(tmp_path / "a" / "resp.jsonl", RESP)
    rb = _jsonl(tmp_path / "b" / "resp.jsonl", [{**r, "response": "hi, bye"} for r in RESP])
    code, _, _ = _run(capsys, "eval", "--prompts", p, "--compare", ra, rb, "--out", tmp_path / "c")
    a = json.loads((tmp_path / "c" / "A_resp_summary.json").read_text())
    b = json.loads((tmp_path / "c" / "B_resp_summary.json").read_text())
    assert code == 0 and a["strict"]["prompt_level"] == 0.5 and b["strict"]["prompt_level"] == 0.0


def test_check_command_bad_kwargs_is_one_line(capsys):
    for kw in ("[1]", '"x"', "{bad", '{"N": "many"}'):
        code, _, err = _run(capsys, "check", "--id", "count:numbers", "--kwargs", kw, "--text", "1 2")
        assert code == 2 and err.count("\n") == 1, (kw, err)


def test_data_mode_is_recorded_warned_and_can_be_required(tmp_path):
    prompts = _jsonl(tmp_path / "p.jsonl", [{"key": 1, "prompt": "p", "instruction_id_list":
                                              ["length_constraints:number_sentences"],
                                              "kwargs": [{"relation": "less than", "num_sentences": 3}]}])
    resp = _jsonl(tmp_path / "r.jsonl", [{"prompt": "p", "response": "One. Two."}])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NLTK_DATA": str(tmp_path / "none"),
           "GENLAB_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(Path(nlp.__file__).parents[2])}
    cmd = [sys.executable, "-m", "genlab.ifbench.cli", "eval", "--prompts", str(prompts), "--responses", str(resp)]
    r = subprocess.run([*cmd, "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stderr.count(nlp.OFFLINE_WARNING) == 1, r.stderr
    summ = json.loads((tmp_path / "o" / "summary.json").read_text())["text_processing"]
    assert summ["mode"] == "offline" and summ["nltk"] and summ["langdetect"] and summ["genlab"]
    assert "offline rules" in (tmp_path / "o" / "report.html").read_text()
    r = subprocess.run([*cmd, "--require-nltk-data", "--out", str(tmp_path / "o2")], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 2 and "punkt_tab" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "o2").exists()


def test_setup_from_a_local_folder_and_archive(tmp_path, capsys):
    import shutil
    import tarfile


    SHARED_NLTK = NLTK_DIR.resolve()
    shutil.make_archive(str(tmp_path / "nltk"), "gztar", root_dir=SHARED_NLTK.parent, base_dir=SHARED_NLTK.name)
    with tarfile.open(tmp_path / "nltk.tar.gz") as t:
        assert any(n.endswith("abbrev_types.txt") for n in t.getnames())
    for i, src in enumerate((SHARED_NLTK, tmp_path / "nltk.tar.gz")):
        target = tmp_path / f"t{i}"
        code, out, _ = _run(capsys, "setup", "--from", src, "--dir", target)
        assert code == 0 and (target / "tokenizers/punkt_tab/english/abbrev_types.txt").exists()
        assert (target / "taggers/averaged_perceptron_tagger_eng").is_dir() and "installed from" in out
    code, _, err = _run(capsys, "setup", "--from", tmp_path / "missing", "--dir", tmp_path / "x")
    assert code == 2 and "not found" in err
    nlp.reset()


def test_caches_hold_no_pickle():
    src = Path(nlp.__file__).parent
    assert not [p for p in src.rglob("*.py") if "import pickle" in p.read_text() or "pickle.load" in p.read_text()]


def test_shipped_resources_are_the_genuine_files():
    """The NLTK data in tests/resources is byte for byte what its README lists (NLTK's own files, unmodified)."""
    import hashlib
    import re

    readme = (NLTK_DIR.parent / "README.md").read_text()
    listed = re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.M)
    assert len(listed) == 8
    for digest, rel in listed:
        assert hashlib.sha256((NLTK_DIR.parent / rel).read_bytes()).hexdigest() == digest, rel
