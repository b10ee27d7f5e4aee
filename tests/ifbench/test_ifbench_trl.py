"""Two steps of TRL's GRPOTrainer on a tiny random model, rewarded by IFReward on make-train's TRL rows."""

import json

import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")

WORDS = "the river is wide and blue a cat sat on mat write short note no commas please".split()


@pytest.mark.slow
def test_grpo_two_steps_with_ifreward(build_tiny_chat_lm, tmp_path):
    import datasets
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from genlab.ifbench.reward import IFReward
    from genlab.ifbench.train_prompts import make_train, write_train

    torch.set_num_threads(1)
    model_dir = build_tiny_chat_lm(WORDS)
    rows = make_train(["write a short note", "write a note", "a short note", "note"], n=4, max_constraints=1, seed=0,
                      constraint_ids=["punctuation:no_comma", "change_case:english_lowercase"])
    paths = write_train(rows, tmp_path / "train")
    trl_rows = [json.loads(x) for x in paths["trl"].read_text().splitlines()]
    assert all(isinstance(r["prompt"], list) and r["prompt"][-1]["role"] == "user" for r in trl_rows)
    ds = datasets.load_dataset("json", data_files=str(paths["trl"]), split="train")
    calls = []

    class Recording(IFReward):
        def __call__(self, prompts=None, completions=(), **columns):
            out = super().__call__(prompts=prompts, completions=completions, **columns)
            calls.append((len(completions), out))
            return out

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=6, learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to=[],
        use_cpu=True, seed=0, dataloader_num_workers=0,
    )  # fmt: skip
    trainer = GRPOTrainer(model=str(model_dir), reward_funcs=[Recording()], args=args, train_dataset=ds)
    trainer.train()
    assert trainer.state.global_step == 2
    assert len(calls) >= 2 and all(len(r) == n for n, r in calls)
    assert all(0.0 <= x <= 1.0 for _, r in calls for x in r)  # IFReward's scale: 1
    logged = [h for h in trainer.state.log_history if "reward" in h or any(k.startswith("rewards/") for k in h)]
    assert logged, trainer.state.log_history
