"""Response files as other tools write them: the common response fields, chat messages, keys, named fields,
a plain list from Python, and lm-eval's metric names in the summary."""

import json
from pathlib import Path

import pytest

from genlab.ifbench.data import DataError, load_prompts, load_responses
from genlab.ifbench.evaluator import evaluate

ROWS = [
    {"key": "a", "prompt": "Say hi. No commas.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": "b", "prompt": "Say bye in lowercase.", "instruction_id_list": ["change_case:english_lowercase"],
     "kwargs": [{}]},
]  # fmt: skip
ANSWERS = ["hi there", "Bye"]  # the first follows its instruction, the second does not


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def prompts(tmp_path):
    return load_prompts(_jsonl(tmp_path / "p.jsonl", ROWS))


@pytest.mark.parametrize("field", ["response", "completion", "output", "generation"])
def test_the_common_response_fields_are_found_and_named(tmp_path, prompts, field):
    rows = [{"prompt": r["prompt"], field: a} for r, a in zip(ROWS, ANSWERS)]
    responses = load_responses(_jsonl(tmp_path / "r.jsonl", rows))
    assert responses.field == field
    assert evaluate(prompts, responses).accuracy("strict")["prompt_level"] == 0.5


def test_the_last_assistant_turn_of_messages(tmp_path, prompts):
    rows = [{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": r["prompt"]},
                          {"role": "assistant", "content": [{"type": "text", "text": a}]}]}
            for r, a in zip(ROWS, ANSWERS)]  # fmt: skip
    responses = load_responses(_jsonl(tmp_path / "r.jsonl", rows))
    assert responses.field == "messages" and responses["Say bye in lowercase."] == "Bye"


def test_named_fields_and_rows_matched_by_key(tmp_path, prompts):
    rows = [{"question": r["prompt"], "pred": a} for r, a in zip(ROWS, ANSWERS)]
    path = _jsonl(tmp_path / "r.jsonl", rows)
    responses = load_responses(path, response_field="pred", prompt_field="question")
    assert responses.field == "pred" and evaluate(prompts, responses).accuracy("strict")["prompt_level"] == 0.5
    with pytest.raises(DataError, match="'answer_text' \\(--response-field\\) missing"):
        load_responses(path, response_field="answer_text")
    keyed = load_responses(_jsonl(tmp_path / "k.jsonl", [{"key": "b", "completion": "bye"}]))
    result = evaluate(prompts, keyed)
    assert [p.missing for p in result.prompts] == [True, False] and result.prompts[1].response == "bye"


def test_a_row_with_a_prompt_is_never_matched_by_its_key(tmp_path, prompts):
    """Keys of different prompt sets overlap: a response to another prompt keeps its own text."""
    responses = load_responses(_jsonl(tmp_path / "r.jsonl", [{"key": "a", "prompt": "Other", "response": "x"}]))
    assert all(p.missing for p in evaluate(prompts, responses).prompts)


def test_no_response_field_is_one_clear_error(tmp_path):
    with pytest.raises(DataError, match="no response: none of the fields response, completion"):
        load_responses(_jsonl(tmp_path / "r.jsonl", [{"prompt": "x", "reply": "y"}]))


def test_the_python_api_takes_a_plain_list(prompts):
    result = evaluate(prompts, ANSWERS)
    assert result.accuracy("strict")["prompt_level"] == 0.5
    with pytest.raises(ValueError, match="1 responses for 2 prompts"):
        evaluate(prompts, ANSWERS[:1])
    with pytest.raises(TypeError):
        evaluate(prompts, [1, 2])


def test_the_summary_carries_lm_evals_metric_names(prompts):
    summary = evaluate(prompts, ANSWERS).summary()
    assert summary["prompt_level_strict_acc"] == summary["strict"]["prompt_level"] == 0.5
    assert summary["inst_level_loose_acc"] == summary["loose"]["instruction_level"]


def test_the_eval_command_names_fields_and_says_which_it_used(tmp_path, capsys):
    from genlab.ifbench.cli import main

    prompts = _jsonl(tmp_path / "p.jsonl", ROWS)
    rows = [{"question": r["prompt"], "pred": a} for r, a in zip(ROWS, ANSWERS)]
    responses = _jsonl(tmp_path / "r.jsonl", rows)
    code = main(["eval", "--prompts", str(prompts), "--responses", str(responses), "--response-field", "pred",
                 "--prompt-field", "question", "--json"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out)["prompt_level_strict_acc"] == 0.5
    assert "2 response(s) read from field 'pred'" in out.err
