import itertools
import json

import pytest

from genlab.ifbench.data import load_prompts
from genlab.ifbench.registry import get, ids
from genlab.ifbench.reward import ifeval_reward
from genlab.ifbench.train_prompts import (
    EXCLUDED_TRAIN_IDS,
    compatible,
    default_base_prompts,
    make_train,
    train_ids,
    write_train,
)


def test_train_ids_are_disjoint_from_ifbench_test_and_exclude_the_overlapping_pair():
    pool = set(train_ids())
    assert not pool & set(ids("ifbench"))
    assert "keywords:keyword_specific_position" in EXCLUDED_TRAIN_IDS and not pool & EXCLUDED_TRAIN_IDS
    assert pool == (set(ids("ifeval")) | set(ids("iftrain"))) - EXCLUDED_TRAIN_IDS
    assert not compatible("change_case:english_lowercase", "change_case:english_capital")
    assert not compatible("startend:quotation", "keywords:start_end")


def test_make_train_output_loads_back_with_no_unknown_ids_and_no_conflicts(tmp_path):
    rows = make_train(n=300, max_constraints=5, seed=3)
    paths = write_train(rows, tmp_path)
    for path in paths.values():
        items = load_prompts(path)  # strict loading: an unknown id or bad kwargs would raise
        assert len(items) == 300 and not any(it.unknown for it in items)
        for it in items:
            assert 1 <= len(it.instruction_id_list) <= 5
            for a, b in itertools.combinations(it.instruction_id_list, 2):
                assert compatible(a, b), (a, b)
    assert {len(r["instruction_id_list"]) for r in rows} == {1, 2, 3, 4, 5}
    assert len({r["prompt"] for r in rows}) == 300
    for r in rows[:20]:
        for cid, kw in zip(r["instruction_id_list"], r["kwargs"]):
            assert get(cid).describe(kw) in r["prompt"]
    first = json.loads(paths["open_instruct"].read_text().splitlines()[0])
    assert set(first) == {"key", "messages", "ground_truth", "dataset", "constraint_type", "constraint"}
    assert first["ground_truth"].startswith("[{'instruction_id': [")
    assert ifeval_reward("", first["ground_truth"]) == 0.0  # the reward reads the ground truth it writes


def test_seeded_and_validated():
    assert make_train(n=50, seed=7) == make_train(n=50, seed=7)
    assert make_train(n=50, seed=7) != make_train(n=50, seed=8)
    assert {r["base"] for r in make_train(["Only this."], n=20, seed=1)} == {"Only this."}
    with pytest.raises(ValueError, match="min_constraints"):
        make_train(n=5, min_constraints=3, max_constraints=2)
    with pytest.raises(ValueError, match="could only draw"):
        make_train(["One."], n=10_000, max_constraints=1, max_tries=1)
    assert len(default_base_prompts()) >= 50
