"""Claim checks of the dit-locality study on hand-made metrics, including the matched-train-PSNR guard."""

from __future__ import annotations

import numpy as np

from genlab.studies.dit_locality import DiTLocality


def _metrics(gap_small=(6.0, 4.0, 5.5), gap_large=(0.5, 0.45, 0.5), train=(25.0, 24.8, 25.1), att=(1.9, 1.5)):
    seeds = 3
    gap = [[list(gap_small), list(gap_large)]] * seeds
    copy = [[[0.8, 0.5, 0.7], [0.0, 0.0, 0.0]]] * seeds
    tr = [[list(train), [18.0, 18.0, 18.0]]] * seeds
    dist = [[[att[0], att[0], 2.0, 2.0], [att[1], att[1], 2.0, 2.0]]] * seeds
    return {"n_values": [10, 300], "depth": 4, "psnr_match_db": 1.0, "min_gap_db": 1.0, "min_copy": 0.1,
            "uniform_attention_distance": 2.0, "attention_distance_global": dist,
            "results": {"gap": gap, "copy": copy, "psnr_train": tr}}


def _v(m):
    return [v.verdict for v in DiTLocality.verdicts(m, DiTLocality.config("quick"))]


def test_paper_like_numbers_reproduce():
    assert _v(_metrics()) == ["reproduced"] * 4


def test_contradicting_numbers_do_not():
    v = _v(_metrics(gap_small=(4.0, 6.0, 3.0), gap_large=(0.5, -3.0, 0.5), att=(1.5, 1.9)))
    assert v == ["not reproduced"] * 2 + ["not reproduced", "inconclusive"]  # no small-n benefit to shrink
    v = _v(_metrics(gap_small=(6.0, 5.0, 5.5), gap_large=(0.5, -3.0, 0.5)))
    assert v[3] == "not reproduced"


def test_guards_make_under_trained_runs_inconclusive():
    # arms at different train PSNR: gaps not comparable
    v = _v(_metrics(train=(25.0, 28.0, 25.0)))
    assert v[1] == "inconclusive" and v[2] == "inconclusive"
    # no memorisation at the smallest n
    v = _v(_metrics(gap_small=(0.2, 0.1, 0.15)))
    assert v[1:] == ["inconclusive"] * 3
    # a gap but no copies: not memorising either
    m = _metrics()
    m["results"]["copy"] = [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]] * 3
    assert _v(m)[1:] == ["inconclusive"] * 3
    # attention still uniform
    assert _v(_metrics(att=(1.99, 1.98)))[0] == "inconclusive"


def test_seed_disagreement_is_inconclusive():
    m = _metrics()
    g = np.array(m["results"]["gap"], dtype=float)
    g[1, 0, 1] = 7.0  # seed 1: early window worse than global
    m["results"]["gap"] = g.tolist()
    assert _v(m)[1] == "inconclusive"
