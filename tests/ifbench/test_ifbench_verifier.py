"""open-instruct verifier interface, both ground-truth forms, and the older func_name rules."""

import asyncio
import json

import pytest

from genlab.ifbench import legacy
from genlab.ifbench.reward import ifeval_reward
from genlab.ifbench.verifier import IFBenchVerifier, VerificationResult, VerifierConfig, open_instruct_answer

GT = "[{'instruction_id': ['punctuation:no_comma', 'keywords:existence'], 'kwargs': [None, {'keywords': ['river']}]}]"


def test_interface_matches_open_instruct():
    v = IFBenchVerifier()
    assert (v.name, v.weight) == ("ifeval", 1.0)
    assert v.get_config_class() is VerifierConfig
    r = v([], "The river, wide.", GT)
    assert isinstance(r, VerificationResult) and r.score == 0.5 and r.cost == 0.0
    assert "punctuation:no_comma" in r.reasoning
    assert asyncio.run(v.async_call([], "The river is wide.", GT)).score == 1.0
    assert v([], "<think>x</think>   ", GT).score == 0.0  # empty answer
    assert repr(v) == "IFBenchVerifier(name=ifeval, weight=1.0)"


def test_scores_equal_the_reward_on_the_same_answer():
    for text in ["The river is wide.", "The lake, wide.", "<|assistant|>The river, wide.", "a river"]:
        assert IFBenchVerifier()([], text, GT).score == ifeval_reward(text, GT)


def test_answer_extraction_is_open_instruct_s():
    assert open_instruct_answer("<|assistant|><think>a</think> <answer>b</answer> ") == "b"
    assert open_instruct_answer("no think") == "no think"


@pytest.mark.parametrize(
    ("label", "good", "bad"),
    [
        ({"func_name": "verify_keywords", "keyword_list": ["Sea", "sky"]}, "the sea and the SKY", "the sea"),
        ({"func_name": "verify_keyword_frequency", "word": "cat", "N": 2}, "Cat and cat, dog.", "cat cats"),
        ({"func_name": "verify_letter_frequency", "letter": "a", "N": 2}, "an apple A", "aaa"),
        ({"func_name": "validate_word_constraint", "N": 10, "quantifier": "around"}, " ".join(["w"] * 11), "w w"),
        ({"func_name": "verify_sentence_constraint", "N": 2, "quantifier": "at most"}, "One. Two.", "A. B. C. D."),
        ({"func_name": "validate_frequency_capital_words", "N": 2, "quantifier": "at least"}, "NO WAY", "No way"),
        ({"func_name": "verify_paragraph_count", "N": 2}, "a\n * * * \nb", "a\n* * *\n"),
        ({"func_name": "validate_sections", "N": 2, "section_splitter": "SECTION"}, "SECTION a SECTION b", "a"),
        ({"func_name": "validate_two_responses"}, "a ****** b", "a ****** a"),
        ({"func_name": "validate_no_commas", "unused": None}, "a b", "a, b"),
    ],
)
def test_func_name_rules(label, good, bad):
    v = IFBenchVerifier()
    assert v([], good, json.dumps(label)).score == 1.0
    assert v([], bad, dict(label)).score == 0.0
    assert label.get("func_name")  # the caller's label is not consumed


def test_func_name_table_and_errors():
    assert len(legacy.FUNCTIONS) == 25
    with pytest.raises(ValueError, match="unknown func_name"):
        legacy.check_func_name("x", {"func_name": "nope"})
    with pytest.raises(ValueError, match="verify_keywords"):
        legacy.check_func_name("x", {"func_name": "verify_keywords", "wrong": 1})
