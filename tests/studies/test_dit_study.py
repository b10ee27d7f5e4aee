"""Claim checks of the dit-locality study on hand-made metrics, including the matched-train-PSNR guard, the
random-mask control and the guard that keeps claim 4 from passing when nothing is left to shrink; and the
density-matched random mask itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genlab.nn.dit import random_mask_like, window_mask
from genlab.studies.dit_locality import DiTLocality

# arms: global, early, late, random


def _metrics(gap_small=(6.0, 4.0, 5.5, 5.8), gap_large=(1.0, 0.9, 1.0, 1.0), train=(25.0, 24.8, 25.1, 25.0),
             mass=(0.45, 0.60), seeds=5):  # fmt: skip
    jitter = np.linspace(-0.1, 0.1, seeds)  # seed-to-seed noise, the same for every arm (paired differences vary)
    gap = [[[g + j * (k + 1) for k, g in enumerate(gap_small)], [g + j for g in gap_large]] for j in jitter]
    copy = [[[0.8, 0.5, 0.7, 0.8], [0.0] * 4]] * seeds
    tr = [[list(train), [18.0] * 4]] * seeds
    inside = [[[[mass[0] + j / 10] * 4] * 4, [[mass[1] + j / 5] * 2 + [0.4] * 2] * 4] for j in jitter]
    return {"n_values": [10, 100], "depth": 4, "uniform_window_mass": 0.39,
            "results": {"gap": gap, "copy": copy, "psnr_train": tr, "attention_in_window": inside}}


def _ev(m, i):
    return DiTLocality.claims[i].check(m, DiTLocality.config("quick"))


def _v(m):
    return [v.verdict for v in DiTLocality.verdicts(m, DiTLocality.config("quick"))]


def test_paper_like_numbers_reproduce():
    assert _v(_metrics()) == ["reproduced"] * 5
    ev = _ev(_metrics(), 1)  # early windows lower the gap by 2 dB: a paired t-test over the 5 seeds
    assert ev.test.method == "t" and ev.test.n == 5 and ev.test.effect == pytest.approx(2.0, abs=1e-9)


def test_contradicting_numbers_do_not():
    v = _v(_metrics(gap_small=(4.0, 6.0, 3.0, 5.0), gap_large=(1.0, -3.0, 0.5, 1.0), mass=(0.6, 0.45)))
    assert v == ["not reproduced"] * 4 + ["inconclusive"]  # no small-n benefit to shrink
    v = _v(_metrics(gap_small=(6.0, 5.0, 5.5, 5.8), gap_large=(1.0, -3.0, 0.5, 1.0)))
    assert v[4] == "not reproduced"
    v = _v(_metrics(gap_small=(6.0, 5.0, 5.5, 4.5)))  # the random mask helps more than the window
    assert v[3] == "not reproduced"


def test_guards_make_under_trained_runs_inconclusive():
    # arms at different train PSNR: gaps not comparable, the test is kept but withheld
    ev = _ev(_metrics(train=(25.0, 28.0, 25.0, 25.0)), 1)
    assert ev.held is None and ev.test is not None and "train PSNR" in ev.note
    v = _v(_metrics(train=(25.0, 28.0, 25.0, 25.0)))
    assert v[1] == "inconclusive" and v[2] == "inconclusive" and v[3] == "inconclusive"
    # no memorisation at the smallest n
    v = _v(_metrics(gap_small=(0.2, 0.1, 0.15, 0.2)))
    assert v[1:] == ["inconclusive"] * 4
    # a gap but no copies: not memorising either
    m = _metrics()
    m["results"]["copy"] = [[[0.0] * 4, [0.0] * 4]] * 5
    assert _v(m)[1:] == ["inconclusive"] * 4
    # attention still uniform
    assert _v(_metrics(mass=(0.40, 0.395)))[0] == "inconclusive"


def test_benefit_shrinks_cannot_pass_when_every_arm_generalises_at_large_n():
    assert _v(_metrics(gap_large=(0.02, 0.02, 0.03, 0.02)))[4] == "inconclusive"
    m = _metrics()  # quick trains only the global arm at the larger n: claim 5 is withheld, not an error
    for seed in m["results"]["gap"]:
        seed[1][1:] = [float("nan")] * 3
    ev = _ev(m, 4)
    assert ev.held is None and "not trained" in ev.note


def test_bad_configs_are_rejected():
    for bad in ({"workers": "0"}, {"window": "0"}, {"n_values": "10"}, {"large_n_arms": "early"}):
        with pytest.raises(ValueError):
            DiTLocality.config("quick", bad)


def test_seed_disagreement_is_inconclusive():
    m = _metrics()
    g = np.array(m["results"]["gap"], dtype=float)
    g[1, 0, 1] = 7.0  # seed 1: early window worse than global
    g[3, 0, 1] = 6.5
    m["results"]["gap"] = g.tolist()
    assert _v(m)[1] == "inconclusive"


def test_fewer_than_five_seeds_cannot_decide():
    assert _v(_metrics(seeds=3)) == ["inconclusive"] * 5


def test_random_mask_matches_the_window_row_by_row_and_is_not_local():
    w = window_mask((8, 8), 3)
    r = random_mask_like(w, torch.Generator().manual_seed(0))
    assert torch.equal(r.sum(1), w.sum(1)) and bool(r.diagonal().all())
    assert (r & w).sum() < 0.5 * w.sum()  # mostly outside the window
    again = random_mask_like(w, torch.Generator().manual_seed(0))
    assert torch.equal(r, again)
