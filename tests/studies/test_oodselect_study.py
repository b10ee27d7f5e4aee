"""OODSelect study pieces: the run table, the batched pool trainer (colour reliance follows q), the cache, claims."""

from __future__ import annotations

import numpy as np
import pytest

from genlab.data.shifts import REVERSED, spurious_digits
from genlab.studies.oodselect import OODSelectStudy, PoolConfig, build_pool, draw_runs, train_shard


def test_draw_runs_deterministic_and_spread():
    pc = PoolConfig(runs=30, seed=4)
    runs = draw_runs(pc)
    assert runs == draw_runs(pc)
    assert {r["family"] for r in runs} == {"linear", "mlp1", "mlp2"}
    q = np.array([r["q"] for r in runs])
    assert q.min() >= 0 and q.max() <= 1 and q.std() > 0.2
    assert all(r["width"] == 0 for r in runs if r["family"] == "linear")


def _data(seed=0):
    sd = spurious_digits(seed=seed, p_neutral=0.85, pixel_noise=0.7, spurious_scale=2.0)
    return sd, {
        "x_train": sd.x_train,
        "y_train": sd.y_train,
        "x_id": sd.x_id,
        "y_id": sd.y_id,
        "x_ood": sd.x_ood,
        "y_ood": sd.y_ood,
        "n_core": 64,
        "n_classes": 10,
        "spurious_scale": 2.0,
    }


def test_colour_randomisation_sets_reliance():
    """q = 0 (colour always as in the ID data) vs q = 1 (colour pure noise): the q = 0 linear models win in-
    distribution and lose on the reversed subgroup; the trainer returns one row per checkpoint."""
    sd, data = _data()
    runs = [
        {"run": i, "family": "linear", "width": 0, "l2": 0.0, "frac": 1.0, "q": q, "seed": 7}
        for i, q in enumerate([0.0, 0.0, 1.0, 1.0])
    ]
    ids, cor, acc = train_shard(runs, data, PoolConfig(checkpoints=(50, 150)))
    assert ids == [0, 1, 2, 3] and cor.shape == (4, 2, len(sd.y_ood)) and acc.shape == (4, 2)
    rev = sd.group_ood == REVERSED
    rev_acc = cor[:, -1][:, rev].mean(1)
    assert acc[:2, -1].min() > acc[2:, -1].max() + 0.2
    assert rev_acc[:2].max() < rev_acc[2:].min() - 0.1


def test_pool_cache_roundtrip(tmp_path):
    pc = PoolConfig(runs=6, checkpoints=(5, 10), seed=1)
    a = build_pool(pc, cache_dir=tmp_path)
    files = list(tmp_path.glob("oodselect_pool_*.npz"))
    assert len(files) == 1 and pc.key() in files[0].name
    b = build_pool(pc, cache_dir=tmp_path)
    assert a["correct"].shape == (12, len(a["group_ood"]))
    assert np.array_equal(a["correct"], b["correct"]) and np.array_equal(a["run"], np.repeat(np.arange(6), 2))
    assert PoolConfig(runs=6, checkpoints=(5, 10), seed=2).key() != pc.key()
    null = PoolConfig(runs=6, checkpoints=(5, 10), seed=1, ood_mix=(0.85, 0.0, 0.15))
    assert null.key() != pc.key()
    c = build_pool(null, cache_dir=tmp_path)
    assert not np.any(c["group_ood"] == REVERSED) and c["correct"].shape == a["correct"].shape


def _metrics(sel, rand, prec, full=0.6, null=(0.05, -0.1), null_pool=(0.2, 0.1), pools=5):
    rows = []
    for i in range(pools):  # a little spread over pools, so each test has a finite CI
        e = 0.01 * (i - pools // 2)
        rows.append({
            "r_null_selected_test": [v + e for v in null],
            "r_null_pool_selected_test": [v + e for v in null_pool],
            "r_full_null_pool_test": 0.9,
            "r_full_test": full + e,
            "r_selected_test": [v + e for v in sel],
            "r_random_mean": [v + e for v in rand],
            "precision": [v + e for v in prec],
            "r_greedy_test": [v + 0.1 for v in sel],
        })
    return {"k_fractions": [0.1, 0.25, 0.5], "planted_fraction": 0.25, "ks": [10, 25, 50], "seeds": rows}


def _verdicts(m):
    return {v.key: v.verdict for v in OODSelectStudy.verdicts(m, OODSelectStudy.config("quick"))}


def test_claims_read_the_metrics():
    good = _verdicts(_metrics([-0.7, -0.6, 0.1], [0.5, 0.6, 0.6], [0.8, 0.6, 0.4]))
    assert set(good.values()) == {"reproduced"} and len(good) == 7
    bad = _verdicts(_metrics([-0.7, -0.2, 0.1], [0.2, 0.6, 0.6], [0.3, 0.3, 0.3], full=0.1))
    assert [bad[k] for k in ("full-set-on-the-line", "selected-below-the-line", "random-subsets-on-the-line",
                             "selection-enriched")] == ["not reproduced"] * 4
    reversed_null = _verdicts(_metrics([-0.7, -0.6, 0.1], [0.5, 0.6, 0.6], [0.8, 0.6, 0.4], null=(-0.7, -0.6),
                                       null_pool=(-0.8, -0.7)))
    assert reversed_null["null-control"] == reversed_null["null-pool-control"] == "not reproduced"
    few = _verdicts(_metrics([-0.7, -0.6, 0.1], [0.5, 0.6, 0.6], [0.8, 0.6, 0.4], pools=3))
    assert set(few.values()) == {"inconclusive"}  # 3 pools < 5 units
    straddling = _metrics([-0.7, -0.6, 0.1], [0.5, 0.6, 0.6], [0.8, 0.6, 0.4])
    for i, r in enumerate((0.1, 0.9, 0.2, 0.8, 0.3)):
        straddling["seeds"][i]["r_full_test"] = r
    assert _verdicts(straddling)["full-set-on-the-line"] == "inconclusive"
    off = _metrics([-0.7, -0.6, 0.1], [0.5, 0.6, 0.6], [0.8, 0.6, 0.4])
    for row in off["seeds"]:
        row["r_null_pool_selected_test"] = []
    assert _verdicts(off)["null-pool-control"] == "inconclusive"


def test_config_validation():
    with pytest.raises(ValueError):
        OODSelectStudy.config("quick", {"k_fractions": (0.5, 1.5)})
    for bad in ({"exact_n": 40}, {"exact_k": 20}, {"exact_problems": -1}):  # enumeration must stay small and valid
        with pytest.raises(ValueError, match="exact_"):
            OODSelectStudy.config("quick", bad)


def test_pool_job_is_seeded_and_runs_soft_vs_exact_in_pool_0_only(tmp_path):
    from dataclasses import replace

    from genlab.studies.oodselect import _pool_job

    cfg = replace(OODSelectStudy.config("smoke"), runs=10, checkpoints=(5, 10), steps=10, n_random=5,
                  null_pool=False, exact_n=8, exact_k=2)

    def job(ps):
        return {"cfg": cfg, "ps": ps, "pool_seed": 7, "cache": str(tmp_path), "device": "cpu",
                "splits": [{"seed": 3, "null_seed": 4, "exact_seed": 5, "scatter_seed": 6}]}

    a, b, other = _pool_job(job(0)), _pool_job(job(0)), _pool_job(job(1))
    (ra,), (rb,), (ro,) = a["rows"], b["rows"], other["rows"]
    assert ra["r_selected_test"] == rb["r_selected_test"] and ra["exact"] == rb["exact"]  # same seeds, same result
    assert len(ra["exact"]["r_soft"]) == cfg.exact_problems and ro["exact"] is None
    exact = ra["exact"]  # the enumerated optimum is the lowest (soft search in float32: 1e-6 tolerance)
    assert all(e <= s + 1e-6 for e, s in zip(exact["r_exact"], exact["r_soft"]))
    assert ro["r_selected_test"] == ra["r_selected_test"]  # pool index only gates the descriptive sub-problem
    assert -1 <= ra["r_full_test"] <= 1 and a["first"] is not None and 0 < a["planted"] < 1
