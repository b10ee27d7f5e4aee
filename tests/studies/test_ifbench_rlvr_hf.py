"""The ifbench-rlvr study on a local transformers model (``model_path``), with a tiny random GPT-2 and a
word-level tokenizer with a chat template built here (no hub access), on CPU."""

import json
import random
import re

import pytest

transformers = pytest.importorskip("transformers")

from genlab.harness.errors import ConfigError  # noqa: E402
from genlab.harness.runner import run_study  # noqa: E402
from genlab.harness.study import get_study  # noqa: E402
from genlab.ifbench.registry import get, ids  # noqa: E402

WORDS = "the a river cat Moon STONE lamp fox , . ! * # 1 2 3 yes no hello world poem story".split()
TINY = {"seeds": 1, "finetune_steps": 2, "prompts_per_step": 4, "group": 4, "eval_prompts": 3,
        "hf_max_new": 8, "hf_lr": 1e-2, "max_constraints": 3}  # fmt: skip


@pytest.fixture(scope="module")
def tiny_model(build_tiny_chat_lm):
    return build_tiny_chat_lm(WORDS, n_positions=2048)


def test_hf_route_trains_evaluates_and_is_deterministic(tiny_model, tmp_path):
    overrides = {**TINY, "model_path": str(tiny_model)}
    first = run_study("ifbench-rlvr", "smoke", overrides, seed=0, root=tmp_path / "a")
    m = first.metrics
    for arm in ("base", "sft", "dpo", "grpo"):
        for split in ("id", "ood"):
            assert len(m["acc"][arm][split]) == 1 and 0.0 <= m["acc"][arm][split][0] <= 1.0
            assert m["acc"][arm][split][0] == sum(m["follow"][arm][split][0]) / 3  # per-prompt verdicts agree
    assert m["eval_prompts"] == {"id": 3, "ood": 3}
    assert {algo: [len(c) for c in curves] for algo, curves in m["reward_curve"].items()} == {"grpo": [2], "dpo": [2]}
    assert all(0.0 <= r <= 1.0 for r in m["reward_curve"]["grpo"][0] + m["reward_curve"]["dpo"][0])
    assert m["heldout_in_training"] == 0  # no training prompt carries an IFBench test constraint
    assert m["param_delta"]["grpo"][0] > 0  # the GRPO steps moved the weights
    assert (m["param_delta"]["sft"][0] > 0) == (m["sft_accepted"][0] > 0)  # SFT moves only on accepted samples
    assert len(first.verdicts) == 6 and sorted((first.run_dir / "figures").glob("*.png"))
    second = run_study("ifbench-rlvr", "smoke", overrides, seed=0, root=tmp_path / "b")
    assert second.metrics == m


def test_ood_prompts_from_a_file_are_subsampled(tiny_model, tmp_path):
    rng = random.Random(0)
    rows = []
    for i, cid in enumerate(ids("ifbench")[:4]):
        kw = get(cid).sample(rng, {"prompt": "Write a poem."})
        rows.append({"key": i, "prompt": f"Write a poem. {get(cid).describe(kw)}", "instruction_id_list": [cid],
                     "kwargs": [kw]})  # fmt: skip
    path = tmp_path / "ood.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    overrides = {**TINY, "model_path": str(tiny_model), "ood_prompts": str(path), "finetune_steps": 1}
    m = run_study("ifbench-rlvr", "smoke", overrides, seed=0, root=tmp_path / "runs").metrics
    assert m["eval_prompts"] == {"id": 3, "ood": 3}


def test_bad_model_paths_are_one_sentence_errors(tmp_path):
    study = get_study("ifbench-rlvr")
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match=re.escape(f"model_path '{missing}' is not a directory")):
        study.config("full", {"model_path": str(missing)})
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="has no config.json"):
        study.config("full", {"model_path": str(empty)})
    (empty / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="has no tokenizer files"):
        study.config("full", {"model_path": str(empty)})
    (empty / "tokenizer_config.json").write_text("{}")
    with pytest.raises(ConfigError, match="has no chat template"):
        study.config("full", {"model_path": str(empty)})
    with pytest.raises(ConfigError, match="ood_prompts applies only with model_path"):
        study.config("quick", {"ood_prompts": str(tmp_path / "x.jsonl")})


def test_policy_log_probs_are_those_generation_samples_from(tiny_model):
    """On-policy GRPO needs token_logprobs to equal the distribution generate() sampled from (left padding,
    plain temperature-1 sampling, padding after the end token)."""
    import torch

    from genlab.nn.hf_policy import HFPolicy
    from genlab.rl import completion_mask

    policy = HFPolicy.load(str(tiny_model))
    chats = [[{"role": "user", "content": "hello world the river poem"}], [{"role": "user", "content": "cat"}]] * 3
    prompts = policy.encode(chats)
    assert prompts.attention_mask[1].tolist()[0] == 0  # the short prompt is left-padded
    torch.manual_seed(3)
    with torch.no_grad():
        out = policy.model.generate(
            input_ids=prompts.input_ids, attention_mask=prompts.attention_mask, max_new_tokens=20, do_sample=True,
            top_k=0, top_p=1.0, output_logits=True, return_dict_in_generate=True,
        )  # fmt: skip
    comp = out.sequences[:, prompts.input_ids.shape[1] :]
    generated = torch.gather(torch.stack(out.logits, 1).log_softmax(-1), 2, comp[..., None]).squeeze(2)
    mask = completion_mask(comp, policy.eos_ids)
    assert torch.allclose(policy.token_logprobs(prompts, comp) * mask, generated * mask, atol=1e-5)
    a = policy.sample(prompts, 12, 1.0, torch.Generator().manual_seed(1), batch_size=4)
    b = policy.sample(prompts, 12, 1.0, torch.Generator().manual_seed(1), batch_size=4)
    assert a.shape == (6, 12) and torch.equal(a, b)
    greedy = policy.sample(prompts, 12, temperature=0)
    assert torch.equal(greedy[0], greedy[2]) and len(policy.decode(greedy)) == 6
