"""Claim checks of the dit-locality study on hand-made metrics, including the matched-train-PSNR guard, the
random-mask control and the guard that keeps claim 4 from passing when nothing is left to shrink; and the
density-matched random mask itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genlab.nn.dit import random_mask_like, window_mask
from genlab.studies.dit_locality import ARMS, DiTLocality

# arms: global, early, late, random


def _metrics(gap_small=(6.0, 4.0, 5.5, 5.8), gap_large=(1.0, 0.9, 1.0, 1.0), train=(25.0, 24.8, 25.1, 25.0),
             mass=(0.45, 0.60), seeds=5):  # fmt: skip
    jitter = np.linspace(-0.1, 0.1, seeds)  # seed-to-seed noise, the same for every arm (paired differences vary)
    gap = [[[g + j * (k + 1) for k, g in enumerate(gap_small)], [g + j for g in gap_large]] for j in jitter]
    copy = [[[0.8, 0.5, 0.7, 0.8], [0.0] * 4]] * seeds
    tr = [[list(train), [18.0] * 4]] * seeds
    te = [[[a - b for a, b in zip(tr[0][0], g[0])], [18.0 - b for b in g[1]]] for g in gap]
    inside = [[[[mass[0] + j / 10] * 4] * 4, [[mass[1] + j / 5] * 2 + [0.4] * 2] * 4] for j in jitter]
    return {"n_values": [5, 100], "depth": 4, "uniform_window_mass": 0.39,
            "results": {"gap": gap, "copy": copy, "psnr_train": tr, "psnr_test": te, "attention_in_window": inside}}


def _ev(m, i):
    return DiTLocality.claims[i].check(m, DiTLocality.config("quick"))


def _v(m):
    return [v.verdict for v in DiTLocality.verdicts(m, DiTLocality.config("quick"))]


KEYS = ["global-memorises", "early-window-lowers-gap", "late-window-weaker", "early-window-beats-random-mask",
        "early-attention-local-at-large-n", "benefit-shrinks-with-n", "early-window-raises-heldout-psnr"]


def test_claims_in_order_premise_first():
    assert [c.key for c in DiTLocality.claims] == KEYS


def test_paper_like_numbers_reproduce():
    assert _v(_metrics()) == ["reproduced"] * 7
    held = _ev(_metrics(), 6)  # held-out PSNR: early 20.8 dB vs global 19.0 dB
    assert held.test.method == "t" and held.test.n == 5 and held.test.effect == pytest.approx(1.8, abs=0.1)
    ev = _ev(_metrics(), 1)  # early windows lower the gap by 2 dB: a paired t-test over the 5 seeds
    assert ev.test.method == "t" and ev.test.n == 5 and ev.test.effect == pytest.approx(2.0, abs=1e-9)
    pre = _ev(_metrics(), 0)  # premise: global gap 6 dB vs the 1 dB margin
    assert pre.held is True and pre.test.n == 5 and pre.test.margin == 1.0 and pre.test.effect == pytest.approx(6.0)
    assert pre.numbers["psnr_test_global"] == pytest.approx(19.0)


def test_contradicting_numbers_do_not():
    v = _v(_metrics(gap_small=(4.0, 6.0, 3.0, 5.0), gap_large=(1.0, -3.0, 0.5, 1.0), mass=(0.6, 0.45)))
    # no small-n benefit to shrink; held-out PSNR: early 18.8 vs global 21.0 dB
    assert v == ["reproduced"] + ["not reproduced"] * 4 + ["inconclusive", "not reproduced"]
    v = _v(_metrics(gap_small=(6.0, 5.0, 5.5, 5.8), gap_large=(1.0, -3.0, 0.5, 1.0)))
    assert v[5] == "not reproduced"
    v = _v(_metrics(gap_small=(6.0, 5.0, 5.5, 4.5)))  # the random mask helps more than the window
    assert v[3] == "not reproduced"


def test_premise_gates_the_gap_claims():
    # no memorisation at the smallest n: the premise is not reproduced, every gap claim withheld (tests kept)
    v = _v(_metrics(gap_small=(0.2, 0.1, 0.15, 0.2)))
    assert v[0] == "not reproduced" and v[1:4] == ["inconclusive"] * 3 and v[5:] == ["inconclusive"] * 2
    ev = _ev(_metrics(gap_small=(0.2, 0.1, 0.15, 0.2)), 1)
    assert ev.held is None and ev.test is not None and "premise global-memorises is not met" in ev.note
    # a global gap whose CI straddles the margin: premise undecided, gap claims withheld
    m = _metrics()
    g = np.array(m["results"]["gap"], dtype=float)
    g[:, 0, 0] = [0.0, 2.5, 0.2, 2.0, 0.5]
    g[:, 0, 1:] = g[:, 0, :1] - 2.0 + np.linspace(0, 0.2, 5)[:, None]  # every window / mask arm ~2 dB below
    m["results"]["gap"] = g.tolist()
    assert _v(m)[:4] == ["inconclusive"] * 4 and "undecided" in _ev(m, 1).note
    # copies are reported, not required: a memorising gap without copies still decides
    m = _metrics()
    m["results"]["copy"] = [[[0.0] * 4, [0.0] * 4]] * 5
    assert _v(m) == ["reproduced"] * 7


def test_matched_train_psnr_guard():
    ev = _ev(_metrics(train=(25.0, 28.0, 25.0, 25.0)), 1)
    assert ev.held is None and ev.test is not None and "train PSNR" in ev.note
    v = _v(_metrics(train=(25.0, 28.0, 25.0, 25.0)))
    assert v[0] == "reproduced" and v[1:4] == ["inconclusive"] * 3


def test_attention_still_uniform_is_inconclusive():
    assert _v(_metrics(mass=(0.40, 0.395)))[4] == "inconclusive"


def test_benefit_shrinks_cannot_pass_when_every_arm_generalises_at_large_n():
    assert _v(_metrics(gap_large=(0.02, 0.02, 0.03, 0.02)))[5] == "inconclusive"
    m = _metrics()  # quick trains only the global arm at the larger n: claim 6 is withheld, not an error
    for seed in m["results"]["gap"]:
        seed[1][1:] = [float("nan")] * 3
    ev = _ev(m, 5)
    assert ev.held is None and "not trained" in ev.note


def test_bad_configs_are_rejected():
    for bad in ({"seeds": "0"}, {"window": "0"}, {"replicate": "-1"}, {"n_values": "10"}, {"large_n_arms": "early"},
                {"small_n_arms": "global,random"}, {"small_n_arms": "global,early,wide"}):
        with pytest.raises(ValueError):
            DiTLocality.config("quick", bad)


def test_quick_arms_leave_late_and_large_n_untested():
    """Quick trains global, early and random at the smallest n and nothing at the larger n (12 seeds fit its CPU
    budget): claims 3, 5 and 6 then have nothing to test (no test, so they stay out of Holm's family) while the
    premise, the central claim and the random-mask control are decided as before."""
    cfg = DiTLocality.config("quick")
    assert cfg.seeds == 12 and cfg.small_n_arms == ("global", "early", "random") and cfg.large_n_arms == ()
    assert DiTLocality.config("full").small_n_arms == DiTLocality.config("full").large_n_arms == ARMS
    m = _metrics(seeds=12)
    for seed in m["results"]["gap"]:
        seed[0][2] = float("nan")  # late arm not trained
        seed[1] = [float("nan")] * 4  # nothing trained at n = 100
    for seed in m["results"]["attention_in_window"]:
        seed[1] = [[float("nan")] * 4] * 4
    ev = DiTLocality.verdicts(m, cfg)
    assert [v.verdict for v in ev] == ["reproduced", "reproduced", "inconclusive", "reproduced", "inconclusive",
                                       "inconclusive", "reproduced"]  # fmt: skip
    for i in (2, 4, 5):
        assert ev[i].test is None and "nothing to test" in ev[i].note
    assert ev[1].test.n == 12 and ev[1].test.p_holm is not None


def test_seed_disagreement_is_inconclusive():
    m = _metrics()
    g = np.array(m["results"]["gap"], dtype=float)
    g[1, 0, 1] = 7.0  # seed 1: early window worse than global
    g[3, 0, 1] = 6.5
    m["results"]["gap"] = g.tolist()
    assert _v(m)[1] == "inconclusive"


def test_fewer_than_five_seeds_cannot_decide():
    assert _v(_metrics(seeds=3)) == ["inconclusive"] * 7


def test_random_mask_matches_the_window_row_by_row_and_is_not_local():
    w = window_mask((8, 8), 3)
    r = random_mask_like(w, torch.Generator().manual_seed(0))
    assert torch.equal(r.sum(1), w.sum(1)) and bool(r.diagonal().all())
    assert (r & w).sum() < 0.5 * w.sum()  # mostly outside the window
    again = random_mask_like(w, torch.Generator().manual_seed(0))
    assert torch.equal(r, again)


def test_one_ensemble_pairs_arms_within_a_seed_and_separates_seeds():
    """The seeds are members of one ensemble DiT. With lr = 0 every arm keeps its (shared) initial weights, so the
    arms of one seed see the same subset and evaluation noise and must give the same numbers; different seeds draw
    their own subsets and noise. Arms not trained at the larger n are NaN."""
    from genlab.studies.dit_locality import Job, _run_all

    cfg = DiTLocality.config("smoke", {"seeds": "3", "steps": "2", "lr": "0", "dim": "8", "eval_images": "8",
                                       "n_samples": "8", "euler_steps": "2", "small_n_arms": ",".join(ARMS),
                                       "large_n_arms": "global"})  # fmt: skip
    n_values = [5, 20]
    job = Job(cfg, n_values, 0, {(s, n): 10 * s + n for s in range(3) for n in n_values},
              {k: i for i, k in enumerate(("init", "train", "psnr", "x0", "attn", "mask"))})  # fmt: skip
    r = _run_all(job)
    assert r["members"] == 3 * (4 + 1)
    gap, tr, te = (np.array(r[k], dtype=float) for k in ("gap", "psnr_train", "psnr_test"))
    assert gap.shape == (3, 2, 4) and np.isnan(gap[:, 1, 1:]).all() and not np.isnan(gap[:, 1, 0]).any()
    np.testing.assert_allclose(gap, tr - te)
    np.testing.assert_allclose(gap[:, 0, 1:], np.repeat(gap[:, 0, :1], 3, axis=1), atol=1e-5)
    assert len(set(np.round(gap[:, 0, 0], 6))) == 3  # three seeds, three different subsets and noise draws
    quick_arms = DiTLocality.config("smoke", {"seeds": "2", "steps": "1", "dim": "8", "eval_images": "4",
                                              "n_samples": "4", "euler_steps": "1"})  # fmt: skip
    r = _run_all(Job(quick_arms, n_values, 0, {(s, n): s + n for s in range(2) for n in n_values},
                     {k: i for i, k in enumerate(("init", "train", "psnr", "x0", "attn", "mask"))}))  # fmt: skip
    gap = np.array(r["gap"], dtype=float)  # the default arms: global, early, random at n = 5 only
    assert r["members"] == 2 * 3 and np.isnan(gap[:, 0, 2]).all() and np.isnan(gap[:, 1]).all()
    assert not np.isnan(gap[:, 0, [0, 1, 3]]).any()


def test_quick_draws_replicate_one_and_replicate_zero_keeps_the_old_streams():
    """The held-out PSNR claim was suggested by quick's replicate-0 run, so quick tests it on replicate 1: every
    unit stream (init, subsets, batches, noise, mask) is new, the dataset split is the same; replicate 0 (smoke,
    full) keeps the streams it always had."""
    assert DiTLocality.config("quick").replicate == 1
    assert DiTLocality.config("smoke").replicate == DiTLocality.config("full").replicate == 0
    held = next(c for c in DiTLocality.claims if c.key == "early-window-raises-heldout-psnr")
    assert held.requires == ("global-memorises",)
    m = _metrics()
    for seed in m["results"]["gap"]:
        seed[0][1] = float("nan")  # early arm not trained
    assert _ev(m, 6).held is None and _ev(m, 6).test is None
