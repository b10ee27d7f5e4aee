import numpy as np

from genlab.ifbench.reward import ifeval_reward
from genlab.studies.ifbench_rlvr import (
    COMMA,
    WORD0,
    WORD_KINDS,
    WORDS,
    demonstration,
    detokenize,
    ground_truth,
    random_response,
    sample_prompts,
    word_pool,
)


def test_out_of_domain_pairs_never_occur_in_training():
    for kind in WORD_KINDS:
        assert not set(word_pool(kind, "id")) & set(word_pool(kind, "ood"))
        assert set(word_pool(kind, "id")) | set(word_pool(kind, "ood")) == set(range(len(WORDS)))
    rng = np.random.default_rng(0)
    train = {(k, w) for p in sample_prompts(rng, 2000, "id", 2) for k, w in p if w is not None}
    ood = sample_prompts(rng, 500, "ood", 2)
    assert all(any(w is not None for _, w in p) for p in ood)
    assert not train & {(k, w) for p in ood for k, w in p if w is not None}


def test_demonstrations_satisfy_every_constraint_under_the_real_checkers():
    rng = np.random.default_rng(1)
    for split in ("id", "ood"):
        for cons in sample_prompts(rng, 300, split, 3):
            text = detokenize(demonstration(rng, cons, 16))
            assert ifeval_reward(text, ground_truth(cons), scale=1.0) == 1.0, (cons, text)


def test_detokenize_and_the_base_distribution_follow_instructions_only_by_chance():
    assert detokenize([WORD0, COMMA, WORD0 + 1, 3, WORD0]) == "river, cat"
    rng = np.random.default_rng(2)
    prompts = sample_prompts(rng, 400, "id", 2)
    rewards = [ifeval_reward(detokenize(random_response(rng, 16)), ground_truth(c), scale=1.0) for c in prompts]
    assert 0.2 < np.mean(rewards) < 0.8  # neither always right nor always wrong
