import pytest

from genlab.ifbench.data import PromptItem
from genlab.ifbench.evaluator import evaluate
from genlab.ifbench.examples import EXAMPLES
from genlab.ifbench.registry import get
from genlab.ifbench.reward import IFReward, answer_text, constraint_verdicts, ifeval_reward, score_batch

GT = "[{'instruction_id': ['punctuation:no_comma', 'keywords:existence'], 'kwargs': [None, {'keywords': ['river']}]}]"


def test_open_instruct_format_partial_credit_and_scale():
    assert ifeval_reward("The river is wide.", GT) == 1.0  # one default scale (1) for ifeval_reward and IFReward
    assert IFReward().options["scale"] == 1.0
    assert ifeval_reward("The river is wide.", GT, scale=10) == 10.0  # open-instruct's verification_reward
    assert ifeval_reward("The lake, wide.", GT) == 0.0
    assert ifeval_reward("The river, wide.", GT, scale=10) == 5.0  # one of two: mean over constraints
    assert ifeval_reward("The river, wide.", GT, partial=False) == 0.0
    assert ifeval_reward("The river, wide.", GT, scale=1.0) == 0.5
    as_dict = {"instruction_id": ["punctuation:no_comma"], "kwargs": [None]}
    assert ifeval_reward("no commas here", as_dict, scale=1) == 1.0
    assert ifeval_reward("no commas here", '[{"instruction_id": ["punctuation:no_comma"], "kwargs": [null]}]') == 1


def test_thinking_and_empty_answers():
    assert ifeval_reward("<think>a, b, c</think>The river is wide.", GT) == 1.0
    assert ifeval_reward("<think>still thinking, river", GT) == 0.0  # never finished: no answer
    assert ifeval_reward("   ", GT) == 0.0
    assert ifeval_reward("<|assistant|><answer>The river</answer>", GT) == 1.0
    assert answer_text("<think>x</think>  <answer>y</answer> ") == "y"
    assert ifeval_reward("<think>a, b</think>The river.", GT, strip_think=False) == 0.5


def test_reward_equals_the_evaluators_strict_verdicts_on_every_example():
    """For every constraint's hand-written texts, the reward's verdict is the evaluator's strict verdict."""
    items, responses, expected = [], {}, []
    for i, (cid, ex) in enumerate(sorted(EXAMPLES.items())):
        kw = get(cid).normalize(ex["kwargs"])
        for j, text in enumerate(ex["passing"] + ex["failing"]):
            answer = answer_text(text)
            prompt = f"{i}-{j}"
            items.append(PromptItem(prompt, prompt, [cid], [kw]))
            responses[prompt] = answer
            expected.append(constraint_verdicts(answer, {"instruction_id": [cid], "kwargs": [kw]})[0])
    strict = [p.instructions[0].strict for p in evaluate(items, responses).prompts]
    assert len(strict) > 6 * 100
    assert strict == expected


def test_trl_convention_and_batch_parallelism():
    reward = IFReward()
    completions = [[{"role": "assistant", "content": "The river is wide."}], [{"role": "assistant", "content": "x, y"}]]
    assert reward(prompts=["p", "q"], completions=completions, ground_truth=[GT, GT]) == [1.0, 0.0]
    assert reward.__name__ == "ifbench_reward"
    ifeval_cols = {"instruction_id_list": [["punctuation:no_comma"]] * 2, "kwargs": [[{}], [{}]]}
    assert reward(prompts=None, completions=["a b", "a, b"], **ifeval_cols) == [1.0, 0.0]
    with pytest.raises(KeyError, match="no 'ground_truth'"):
        reward(prompts=["p"], completions=["x"], other=[1])
    preds = [f"The river {i}" + ("," if i % 3 == 0 else "") for i in range(60)]
    serial = score_batch(preds, [GT] * 60, workers=1)
    assert score_batch(preds, [GT] * 60, workers=2) == serial
    assert serial[:3] == [0.5, 1.0, 1.0]
    with pytest.raises(ValueError, match="2 predictions but 1 ground truths"):
        score_batch(["a", "b"], [GT])
