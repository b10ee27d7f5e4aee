"""cmm-merging: the conflicting digit tasks, claim checks on known metrics (each claim can fail), config validation,
and one real seed at smoke scale whose scores are consistent with how they are defined."""

from dataclasses import replace

import numpy as np
import pytest

from genlab.data.digit_tasks import N_CLASSES, TASKS, digit_task_splits, task_labels
from genlab.harness.errors import ConfigError
from genlab.studies.cmm_merging import CMMMerging, _run_seed, capability_weights, linear_step_gap

CFG = CMMMerging.config("quick")


def test_tasks_are_label_maps_of_the_same_digits():
    digits = np.arange(10)
    assert task_labels("reverse", digits).tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert task_labels("prime", digits).tolist() == [int(d in (2, 3, 5, 7)) for d in digits]
    assert task_labels("loop", digits)[[0, 6, 8, 9, 4]].tolist() == [1] * 5
    assert N_CLASSES == {"identity": 10, "parity": 2, "greater4": 2, "mod3": 3, "loop": 2, "prime": 2,
                         "reverse": 10, "shift3": 10}  # fmt: skip
    assert len(TASKS) == 8


def test_splits_are_disjoint_stratified_and_seeded():
    s = digit_task_splits((0.5, 0.2, 0.3), seed=3)
    parts = [set(s.train), set(s.val), set(s.test)]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert sum(map(len, parts)) == 1797
    for idx in (s.train, s.val, s.test):  # every digit in every split, in proportion
        counts = np.bincount(s.digit[idx], minlength=10)
        assert counts.min() > 0 and counts.max() - counts.min() <= 0.1 * len(idx) / 10 + 2
    assert np.array_equal(digit_task_splits(seed=3).val, digit_task_splits(seed=3).val)
    assert not np.array_equal(digit_task_splits(seed=4).val, s.val)


def _metrics(drops=(0.1, 0.1, 0.1), cmm=0.80, rand=0.72, rand_sd=0.02, best=0.78, weak_cost=None, n=6,
             same=0.76, rev=0.74, linear_gap=1e-7):
    """Metrics of ``n`` seeds with small seed noise around the given means."""
    noise = np.linspace(-0.004, 0.004, n)
    methods = ("task_arithmetic", "ties", "dare_ties")
    k_lo, k_hi = 0.9 + noise, {m: 0.9 - d + noise[::-1] for m, d in zip(methods, drops)}
    sweep = {m: {"2": list(k_lo), "4": list((k_lo + k_hi[m]) / 2), "8": list(k_hi[m])} for m in k_hi}
    weak_cost = weak_cost or {"task_arithmetic": 0.03, "ties": 0.03, "dare_ties": 0.03, "cmm": 0.01, "random": 0.03}
    pools = {}
    for pool, cost in (("strong", dict.fromkeys(weak_cost, 0.0)), ("with_weak", weak_cost)):
        p = {m: list(best - cost[m] + noise) for m in ("task_arithmetic", "ties", "dare_ties")}
        p["cmm"] = list(cmm - cost["cmm"] + noise)
        p["best_one_shot"] = [max(v) for v in zip(*(p[m] for m in ("task_arithmetic", "ties", "dare_ties")))]
        p["random_order_mean"] = list(rand - cost["random"] + noise[::-1])
        p["random_order_sd"] = [rand_sd] * n
        p["same_weights"] = list(same + noise[::-1])
        p["reversed"] = list(rev + noise[::-1])
        p["linear_step_gap"] = [linear_gap] * n
        pools[pool] = p
    return {"sweep": sweep, "pools": pools, "split_disjoint": [True] * n, "split_sizes": [898, 359, 540]}


def _verdicts(m, cfg=CFG):
    return {v.key: v.verdict for v in CMMMerging.verdicts(m, cfg)}


def test_every_claim_reproduced_on_clear_metrics():
    m = _metrics(cmm=0.82, best=0.78)
    assert set(_verdicts(m).values()) == {"reproduced"}, _verdicts(m)


def test_claims_fail_when_they_should():
    v = _verdicts(_metrics(drops=(0.1, 0.005, 0.1)))  # TIES does not degrade
    assert v["one-shot-degrades"] == "not reproduced"
    v = _verdicts(_metrics(cmm=0.705, rand=0.72, rand_sd=0.02))  # ahead of random orders by 0.005 < 1 sd
    assert v["cmm-beats-random-order"] == "not reproduced"
    v = _verdicts(_metrics(cmm=0.77, best=0.79))  # with weak experts both score 0.76: a tie is below the margin
    assert v["cmm-beats-one-shot"] == "not reproduced"
    cost = {"task_arithmetic": 0.03, "ties": 0.03, "dare_ties": 0.0, "cmm": 0.02, "random": 0.03}
    assert _verdicts(_metrics(weak_cost=cost))["cmm-robust-to-weak-experts"] == "not reproduced"
    v = _verdicts(_metrics(cmm=0.80, same=0.81))  # the one-shot merge with the same weights does as well
    assert v["cmm-beats-same-weights"] == "not reproduced" and v["cmm-beats-one-shot"] == "reproduced"
    assert _verdicts(_metrics(cmm=0.80, rev=0.805))["cmm-beats-reversed-order"] == "not reproduced"
    assert _verdicts(_metrics(linear_gap=1e-3))["linear-step-is-one-shot"] == "not reproduced"
    m = _metrics()
    m["split_disjoint"][2] = False
    assert _verdicts(m)["validation-disjoint-from-test"] == "not reproduced"


def test_cmm_claims_wait_for_the_premise():
    v = _verdicts(_metrics(drops=(0.1, 0.005, 0.1)))  # no conflict: nothing CMM does can be read
    for key in ("cmm-beats-same-weights", "cmm-beats-reversed-order", "cmm-beats-random-order", "cmm-beats-one-shot"):
        assert v[key] == "inconclusive", key


def test_linear_steps_make_cmm_a_one_shot_merge():
    """The identity behind the issue: with task-arithmetic steps the curriculum only sets weights."""
    import torch

    gen = torch.Generator().manual_seed(0)
    base = {"w": torch.randn(6, 5, generator=gen), "b": torch.randn(5, generator=gen)}
    experts = [{k: v + 0.3 * torch.randn(v.shape, generator=gen) for k, v in base.items()} for _ in range(5)]
    scores = [0.3, 0.1, 0.5, 0.2, 0.4]
    assert linear_step_gap(base, experts, scores, CFG) < 1e-6
    w = capability_weights(scores, CFG)  # linear schedule: 2k / (K(K + 1)) by ascending capability
    assert np.allclose(w, [2 * k / 30 for k in (3, 1, 5, 2, 4)])


def test_claim_texts_follow_the_config():
    cfg = replace(CFG, gain_margin=0.03, degrade_margin=0.05, k_grid=(2, 6))
    texts = {c.key: c.text_for(cfg) for c in CMMMerging.claims}
    assert "0.03" in texts["cmm-beats-one-shot"] and "0.05" in texts["one-shot-degrades"]
    assert "(2, 6)" in texts["one-shot-degrades"]


@pytest.mark.parametrize(
    "override",
    [{"tasks": "identity,bogus"}, {"tasks": "identity"}, {"k_grid": "2,9"}, {"pool_tasks": "1"},
     {"split": "0.5,0.5,0.5"}, {"lambdas": "0.1,-1"}, {"ties_density": "0"}, {"cmm_schedule": "cubic"},
     {"noise": "1.5"}, {"weak_noisy": "0", "weak_short": "0"}, {"gain_margin": "nan"}],
)
def test_bad_configs_are_rejected(override):
    with pytest.raises(ConfigError):
        CMMMerging.config("quick", override)


def test_one_seed_scores_are_consistent():
    cfg = CMMMerging.config("smoke")
    r = _run_seed((cfg, 11, "cpu"))
    assert r["split_disjoint"] and r["split_sizes"] == [898, 359, 540]
    # each strong expert is the reference for its own task: alone it scores exactly 1 on it, so its all-task
    # normalised average is 1/n_tasks + (its accuracy on the other tasks relative to their experts)
    assert len(r["alone"]) == len(cfg.tasks) + cfg.weak_noisy + cfg.weak_short
    strong_caps = [c for c, k in zip(r["capability"], r["kinds"]) if k == "strong"]
    assert min(strong_caps) > 0  # fine-tuning on a task helps on that task's validation split
    for pool in ("strong", "with_weak"):
        arms = r[pool]
        assert len(arms["random_order"]["test"]) == cfg.random_orders
        for arm in ("task_arithmetic", "ties", "dare_ties", "cmm", "same_weights", "reversed"):
            assert 0 < arms[arm]["test"] <= 1.5 and arms[arm]["lambda"] in (*cfg.lambdas, *cfg.lambdas_progressive)
        assert arms["linear_step_gap"] < 1e-5
        assert arms["cmm"]["density"] in cfg.cmm_density
