"""Pieces of the grokking study: modular data, models, onset detection, training regimes and claim checks."""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from genlab.data.modular import modular_split, modular_table, one_hot_pairs, token_sequences, vocab_size
from genlab.harness.decision import spread_from_ci, units_for_power
from genlab.measures.flatness import flatness_penalty, relative_flatness
from genlab.measures.neural_collapse import ncc, neural_collapse
from genlab.nn.mlp import MLP
from genlab.nn.transformer import TinyTransformer
from genlab.studies.grokking import (
    Grokking,
    Regime,
    check_ascent,
    check_control,
    check_encourage,
    check_kappa_times_onset,
    check_kappa_window,
    check_suppress,
    first_crossing,
    late_mean,
    measure,
    onset_log_ratio,
    regularizer_lambda,
    regularizer_term,
    summarise,
    train,
    value_at,
)
from genlab.studies.grokking.stacked import StackedMLP, stacked_flatness, stacked_ncc, train_stacked

CFG = Grokking.config("quick")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def test_modular_tables_are_exact():
    a, b, c = modular_table(7, "sub")
    assert len(a) == 49 and np.all((b + c) % 7 == a)
    a, b, c = modular_table(7, "div")
    assert len(a) == 42 and np.all((b * c) % 7 == a)  # b != 0, c = a / b
    # sub is not commutative: (a - b) != (b - a) for some pair
    table = dict(zip(zip(*modular_table(5, "sub")[:2]), modular_table(5, "sub")[2]))
    assert table[(1, 2)] != table[(2, 1)]
    with pytest.raises(ValueError, match="prime"):
        modular_table(8, "div")
    s = modular_split(11, "add", 0.4, seed=3)
    assert len(s.train) == round(0.4 * 121) and len(np.intersect1d(s.train, s.test)) == 0
    assert np.array_equal(modular_split(11, "add", 0.4, seed=3).train, s.train)
    x = one_hot_pairs(s.a[:5], s.b[:5], 11)
    assert x.shape == (5, 22) and np.all(x.sum(1) == 2) and np.all(x[np.arange(5), 11 + s.b[:5]] == 1)
    t = token_sequences(s.a[:5], s.b[:5], 11, "sub")
    assert t.shape == (5, 4) and t.max() < vocab_size(11) and len(set(t[:, 1])) == 1


def test_transformer_is_causal_and_exposes_features():
    torch.manual_seed(0)
    model = TinyTransformer(vocab_size=20, num_classes=7, d_model=16, n_heads=4, n_layers=1, max_len=4)
    tok = torch.randint(0, 20, (6, 4))
    logits, feats = model.forward_with_features(tok)
    assert logits.shape == (6, 7) and feats.shape == (6, 16)
    torch.testing.assert_close(logits, feats @ model.head.weight.T)
    # causality: changing the last token does not change the prefix's features at earlier positions
    short = model.features(tok[:, :3])
    tok2 = tok.clone()
    tok2[:, 3] = (tok2[:, 3] + 1) % 20
    torch.testing.assert_close(model.features(tok2[:, :3]), short)
    # the measures work on it through the layer name
    y = torch.randint(0, 7, (6,))
    rf = relative_flatness(model, "head", (tok, y))
    assert rf.kappa > 0 and rf.kappa <= rf.kappa_bound


def test_onset_helpers():
    steps = [0, 100, 200, 300]
    assert first_crossing(steps, [0.0, 0.2, 0.6, 0.9], 0.5) == 200
    assert first_crossing(steps, [0.0, 0.2, 0.3, 0.4], 0.5) is None
    assert value_at(steps, [1.0, 10.0, 100.0, 1000.0], 150) == pytest.approx(10**1.5)
    assert late_mean([100.0, 1.0, 4.0, 1.0, 1.0, 1.0, 2.0, 8.0], fraction=0.25) == pytest.approx(4.0)


def test_summarise_finds_window_values():
    steps = list(range(0, 1001, 100))
    series = {
        "step": steps,
        "train_acc": [0.1] + [1.0] * 10,
        "test_acc": [0.0] * 5 + [0.6, 0.9, 1.0, 1.0, 1.0, 1.0],
        "ncc": [10.0 * 0.5**i for i in range(11)],
        "nc1": [1.0] * 11,
        "kappa_bound": [100.0] * 4 + [100.0, 10.0, 1.0] + [1.0] * 4,
        "kappa_norm": [1.0] * 11,
        "kappa": [1.0] * 11,
    }
    s = summarise(series, 0.5, 0.95, window=100)
    assert (s["t_mem"], s["onset"], s["t_gen"]) == (100, 500, 700)
    assert s["window"] == [400, 600]
    assert s["kappa_bound_lo"] == pytest.approx(100.0) and s["kappa_bound_hi"] == pytest.approx(1.0)
    assert s["ncc_lo"] / s["ncc_mem"] == pytest.approx(0.5**3)


def _fake_metrics(base_onsets, asc_onsets, off=1000, sup_onsets=None, ncc_up=20.0, enc_onsets=None, ncc_down=0.1,
                  kappa_up=100.0, ctl_onsets=None, ctl_train=1.0):
    """Hand-made metrics: one entry per seed; seed 0 is the pilot seed (left out of claims 4-8)."""

    def run(onset, ncc=1.0, lo=10.0, hi=1.0, train_off=1.0, test_on=0.05):
        return {
            "onset": onset,
            "t_mem": 100,
            "t_gen": None if onset is None else onset + 300,
            "late_ncc": ncc,
            "final_test_acc": 0.97,
            "kappa_bound_lo": lo,
            "kappa_bound_hi": hi,
            "kappa_bound_mem": 2 * lo,
            "max_test_acc_reg_on": test_on,
            "train_acc_at_off": train_off,
            "last_step": 3000,
        }

    sup_onsets = sup_onsets or base_onsets
    enc_onsets = enc_onsets or base_onsets
    ctl_onsets = ctl_onsets or [None] * len(base_onsets)
    steps = [0, 500, 999, 3000]
    series = {}
    for i in range(max(len(base_onsets), len(asc_onsets))):
        flat = {"step": steps, "ncc": [1.0] * 4, "kappa_norm": [1.0] * 4, "kappa_bound": [1.0] * 4,
                "reg_term": [1.0] * 4}
        series[f"modular/add/baseline/{i}"] = flat
        series[f"modular/add/suppress/{i}"] = {**flat, "ncc": [ncc_up * (1 + i / 50)] * 4}
        series[f"modular/add/encourage/{i}"] = {**flat, "ncc": [ncc_down * (1 + i / 50)] * 4}
        series[f"modular/add/ascent/{i}"] = {**flat, "kappa_norm": [kappa_up * (1 + i / 50)] * 4,
                                             "reg_term": [-50.0] * 4}
        series[f"modular/add/control/{i}"] = {**flat, "reg_term": [50.0] * 4}
    return {
        "series": series,
        "intervention_op": "add",
        "ascent_off": off,
        "steps": 3000,
        "log_every": 50,
        "modular": {
            "add": {
                "baseline": [run(o) for o in base_onsets],
                "ascent": [run(o) for o in asc_onsets],
                "suppress": [run(o, ncc=ncc_up * (1 + i / 50)) for i, o in enumerate(sup_onsets)],
                "encourage": [run(o) for o in enc_onsets],
                "control": [run(o, train_off=ctl_train) for o in ctl_onsets],
            }
        },
    }


B = [800, 850, 820, 800, 870, 810, 830, 840]  # baseline onsets of 8 seeds
ASC = [1400, 1500, 1450, 1400, 1550, 1420, 1480, 1460]


def test_claim_checks_decide_from_numbers():
    ok = check_ascent(_fake_metrics(B, ASC), CFG)
    assert ok.held is True and ok.test.n == 7  # the pilot seed is left out
    assert check_ascent(_fake_metrics(B, [600, 1500, 1450, 700, 1550, 650, 1480, 900]), CFG).held is None
    assert check_ascent(_fake_metrics(B, [600, 700, 650, 620, 640, 700, 610, 690]), CFG).held is False
    assert check_ascent(_fake_metrics([1200] * 8, ASC), CFG).held is False  # baseline onset after switch-off
    # precondition: the ascent did not raise κ (φ-normalised) ≥ kappa_raise× → withheld, test kept
    weak = check_ascent(_fake_metrics(B, ASC, kappa_up=3.0), CFG)
    assert weak.held is None and weak.test is not None and "precondition" in weak.note
    assert check_suppress(_fake_metrics(B, B, sup_onsets=[x + 60 + (i % 3) * 20 for i, x in enumerate(B)]),
                          CFG).held is True
    assert check_suppress(_fake_metrics(B, B, sup_onsets=[2000 + 10 * i for i in range(8)]), CFG).held is False
    assert check_suppress(_fake_metrics(B, B, ncc_up=2.0), CFG).held is None  # collapse not suppressed
    assert check_kappa_window(_fake_metrics(B, B), CFG).held is True
    # encouragement: decided only where NCC fell ≥ 2× at the onset; faster by > 1.5× fails
    enc = [x - 50 - (i % 2) * 20 for i, x in enumerate(B)]
    assert check_encourage(_fake_metrics(B, B, enc_onsets=enc), CFG).held is True
    assert check_encourage(_fake_metrics(B, B, enc_onsets=[400 + 5 * i for i in range(8)]), CFG).held is False
    assert check_encourage(_fake_metrics(B, B, ncc_down=0.8), CFG).held is None
    # control: the ascent must delay more than the gradient-matched control (paired on log onset ratios)
    fast = check_control(_fake_metrics(B, ASC, ctl_onsets=[x + 20 * (i % 3) for i, x in enumerate(B)]), CFG)
    assert fast.held is True and fast.numbers["control_term_size_over_ascent_term"] == [1.0] * 7
    assert check_control(_fake_metrics(B, ASC, ctl_onsets=[2500] * 8), CFG).held is False  # the control delays more
    dead = check_control(_fake_metrics(B, ASC, ctl_train=0.03), CFG)  # a control that never trained
    assert dead.held is None and dead.test.failed == 7
    m = _fake_metrics(B, ASC, ctl_onsets=B)
    pairs = ((500, 500), (400, 200), (300, 600)) + ((1, 1),) * 5  # (ascent, control) mean gradient norms while on
    for a, c, (ga, gc) in zip(m["modular"]["add"]["ascent"], m["modular"]["add"]["control"], pairs):
        a["reg_grad_on_mean"], c["reg_grad_on_mean"] = ga, gc
    assert check_control(m, CFG).numbers["control_grad_norm_over_ascent_grad_norm"][:2] == [0.5, 2.0]


def test_onset_log_ratio_censors_runs_without_onset():
    m = {"steps": 3000, "log_every": 50}
    assert onset_log_ratio({"onset": 1600}, {"onset": 800}, m) == pytest.approx(np.log(2))
    # never reached: counted as its last step + log_every (a lower bound on its delay)
    assert onset_log_ratio({"onset": None, "last_step": 2000}, {"onset": 800}, m) == pytest.approx(np.log(2050 / 800))
    assert np.isnan(onset_log_ratio({"onset": 900}, {"onset": None}, m))


def test_diverged_runs_are_failed_units_not_errors():
    """A NaN (JSON: None) from a diverged seed makes that seed a failed unit; the check never raises."""
    from genlab.studies.grokking import check_digits_suppress

    digits = {"baseline": [{"final_test_acc": 0.95, "late_ncc": 0.05} for _ in range(6)],
              "suppress": [{"final_test_acc": 0.945 - 0.001 * i, "late_ncc": 2.0} for i in range(6)]}
    digits["suppress"][1] = {"final_test_acc": None, "late_ncc": None}  # diverged
    ev = check_digits_suppress({"digits": digits}, CFG)
    assert ev.held is True and ev.test.failed == 1 and ev.test.n == 5 and "failed" in ev.note
    m = _fake_metrics(B, B)
    m["modular"]["add"]["suppress"][3]["final_test_acc"] = None
    from genlab.studies.grokking import check_suppress_accuracy

    assert check_suppress_accuracy(m, CFG).test.failed == 1


def test_kappa_share_claim_beats_a_placebo():
    steps = list(range(0, 2001, 100))

    def drop(at, width=100):  # a sharp drop of 100× around `at`
        return [100.0 if st < at - width else (1.0 if st > at + width else 10.0) for st in steps]

    def metrics(kappa, loss, runs=6):
        mods, series = [], {}
        for i in range(runs):
            lo = 800 - 20 * i  # windows differ from run to run, so the paired differences vary
            mods.append({"onset": 1000, "t_mem": 100, "window": [lo, 1200]})
            series[f"modular/add/baseline/{i}"] = {"step": steps, "kappa_bound": kappa, "train_loss": loss,
                                                    "ncc": [10.0 * 0.9**j for j in range(21)]}
        return {"modular": {"add": {"baseline": mods}}, "series": series}

    loglinear = [10.0 * 0.8**i for i in range(21)]
    ok = check_kappa_times_onset(metrics(drop(1000), loglinear), CFG)
    assert ok.held is True and ok.numbers["loglinear_null_share"][0] == pytest.approx(400 / 1900, abs=1e-3)
    # a placebo (the training loss) that drops just as sharply inside the window: κ is no more concentrated
    assert check_kappa_times_onset(metrics(drop(1000), drop(1000)), CFG).held is not True
    # κ dropping before the window, the loss inside it: fails
    assert check_kappa_times_onset(metrics(drop(400), drop(1000)), CFG).held is False


def test_suppression_accuracy_claim():
    from genlab.studies.grokking import check_suppress_accuracy

    m = _fake_metrics(B, ASC)
    for i, r in enumerate(m["modular"]["add"]["suppress"]):
        r["final_test_acc"] = 0.97 - 0.002 * (i % 3)
    assert check_suppress_accuracy(m, CFG).held is True
    for r in m["modular"]["add"]["suppress"][1:]:
        r["final_test_acc"] = 0.1 + 0.01 * len(r)  # training died late
    assert check_suppress_accuracy(m, CFG).held is False


def test_bounded_suppression_term_saturates():
    torch.manual_seed(0)
    feats = torch.randn(12, 5, requires_grad=True)
    w = torch.randn(3, 5)
    y = torch.arange(12) % 3
    value = ncc(feats, y, 3)
    capped = regularizer_term(Regime(steps=1, lr=1.0, reg="suppress", ncc_cap=3.0), feats, w, feats @ w.T, y, 3)
    assert float(capped.detach()) == pytest.approx(-3.0 * float(torch.tanh(value.detach() / 3.0)), rel=1e-6)
    assert float(capped.detach()) > -3.0  # bounded below: it cannot run away however large NCC gets
    huge = regularizer_term(Regime(steps=1, lr=1.0, reg="suppress", ncc_cap=0.01), feats * 1e3, w, feats @ w.T, y, 3)
    assert float(huge.detach()) >= -0.01 - 1e-9


def test_lambda_schedule_and_terms():
    r = Regime(steps=100, lr=1e-3, reg="suppress", lam=1e-3, start_at_mem=True, ramp=10, reg_off=None)
    assert regularizer_lambda(r, 5, None) == 0.0  # not memorised yet
    assert regularizer_lambda(r, 19, 20) == 0.0
    assert regularizer_lambda(r, 20, 20) == pytest.approx(1e-4)
    assert regularizer_lambda(r, 24, 20) == pytest.approx(5e-4)
    assert regularizer_lambda(r, 500, 20) == pytest.approx(1e-3)
    assert regularizer_lambda(Regime(steps=10, lr=1.0, reg="ascent", lam=2.0, reg_off=7), 7, 0) == 0.0
    torch.manual_seed(0)
    feats = torch.randn(12, 5, requires_grad=True)
    w = torch.randn(3, 5, requires_grad=True)
    y = torch.arange(12) % 3
    logits = feats @ w.T
    for reg, expect in (("suppress", -ncc(feats, y, 3)), ("encourage", ncc(feats, y, 3)),
                        ("ascent", -flatness_penalty(feats, w, logits, 2.0, True))):
        got = regularizer_term(Regime(steps=1, lr=1.0, reg=reg), feats, w, logits, y, 3)
        assert float(got.detach()) == pytest.approx(float(expect.detach()))
    # the control has the ascent term's size but no gradient into the head: it targets only the hidden norm
    ctl = regularizer_term(Regime(steps=1, lr=1.0, reg="normpen"), feats, w, logits, y, 3)
    size = float(flatness_penalty(feats, w, logits, 2.0, True).detach())
    assert float(ctl.detach()) == pytest.approx(size)
    gw, gf = torch.autograd.grad(ctl, (w, feats), allow_unused=True)
    matched = regularizer_term(Regime(steps=1, lr=1.0, reg="normpen"), feats, w, logits, y, 3, size=7.5)
    assert float(matched.detach()) == pytest.approx(7.5)  # matched to a given size (the ascent run's)
    grow = regularizer_term(Regime(steps=1, lr=1.0, reg="normpen", control_sign=-1.0), feats, w, logits, y, 3, 7.5)
    assert float(grow.detach()) == pytest.approx(-7.5)  # the norm-rewarding variant
    assert gw is None and torch.allclose(gf, 2 * size / float((feats.detach() ** 2).sum(1).mean()) * feats / 12)
    # the control as run: a pull of the head towards R whose gradient norm is the given target, touching only W
    anchor = torch.randn(3, 5)
    pull = regularizer_term(Regime(steps=1, lr=1.0, reg="headpull", anchor=anchor), feats, w, logits, y, 3, 4.25)
    gw, gf = torch.autograd.grad(pull, (w, feats), allow_unused=True)
    assert gf is None and float(gw.norm()) == pytest.approx(4.25, rel=1e-6)
    d = (w - anchor).detach()
    assert float(pull.detach()) == pytest.approx(4.25 * float(d.norm()) / 2, rel=1e-6)  # c·‖d‖² with c = g/(2‖d‖)
    assert torch.allclose(gw, 4.25 * d / d.norm())  # straight towards R
    with pytest.raises(ValueError, match="anchor"):
        regularizer_term(Regime(steps=1, lr=1.0, reg="headpull"), feats, w, logits, y, 3, 1.0)


def _tiny_modular():
    s = modular_split(7, "add", 0.6, seed=0)
    x, y = torch.from_numpy(one_hot_pairs(s.a, s.b, 7)), torch.from_numpy(s.c)
    tr, te = torch.from_numpy(s.train), torch.from_numpy(s.test)
    return x[tr], y[tr], x[te], y[te]


def test_measure_agrees_with_the_measures_module():
    torch.manual_seed(0)
    data = _tiny_modular()
    model = MLP(14, (16, 16), 7)
    m = measure(model, data[0], data[1], 7)
    rf = relative_flatness(model, "head", (data[0], data[1]))
    nc = neural_collapse(model, "head", (data[0], data[1]), num_classes=7)
    assert m["kappa"] == pytest.approx(rf.kappa, rel=1e-6)
    assert m["kappa_bound"] == pytest.approx(rf.kappa_bound, rel=1e-6)
    assert m["ncc"] == pytest.approx(nc["ncc"], rel=1e-6) and m["nc1"] == pytest.approx(nc["nc1"], rel=1e-6)


def test_regularisers_push_their_measures_and_switch_off():
    data = _tiny_modular()

    def go(reg, lam, off=None, cap=50.0, at_mem=False):
        torch.manual_seed(1)
        model = MLP(14, (16, 16), 7)
        regime = Regime(
            steps=60, lr=3e-3, weight_decay=0.0, log_every=20, reg=reg, lam=lam, reg_off=off, weight_cap=cap,
            start_at_mem=at_mem, ramp=5,
        )
        return train(model, data, 7, regime, torch.Generator().manual_seed(0)), model

    base, _ = go("none", 0.0)
    asc, _ = go("ascent", 10.0)
    sup, _ = go("suppress", 1.0)
    late, _ = go("suppress", 1.0, at_mem=True)  # starts only once the batch is memorised
    assert sup["reg_term"][0] < 0 and late["reg_term"][0] == 0.0
    mem = next(i for i, a in enumerate(late["train_acc"]) if a >= 0.99) if max(late["train_acc"]) >= 0.99 else None
    assert all(t == 0.0 for t in late["reg_term"][: (mem if mem is not None else len(late["reg_term"]))])
    assert asc["kappa_norm"][-1] > 1.5 * base["kappa_norm"][-1]
    _, capped = go("ascent", 10.0, cap=2.0)
    assert float(capped.head.weight.detach().norm()) <= 2.0 + 1e-6  # the cap holds while the regulariser is on
    assert sup["ncc"][-1] > 3 * base["ncc"][-1]
    # switched off at step 0 it is the baseline, bit for bit
    off0, _ = go("ascent", 10.0, off=0)
    assert off0["test_acc"] == base["test_acc"] and off0["kappa"] == base["kappa"]


def test_control_is_gradient_matched_to_the_ascent_in_training():
    """The ascent run records ‖∇ λ·term‖ per step without changing its own update; a headpull control fed those
    norms has, at every on-step, a term gradient of exactly that norm, and it is off from the switch-off."""
    data = _tiny_modular()

    def go(reg, record, target=None, anchor=None):
        torch.manual_seed(1)
        model = MLP(14, (16, 16), 7)
        regime = Regime(steps=40, lr=3e-3, weight_decay=1.0, log_every=10, reg=reg, lam=10.0, reg_off=30,
                        record_grad=record, target_sizes=target, anchor=anchor)
        grads: list[float] = []
        series = train(model, data, 7, regime, torch.Generator().manual_seed(0), grads_out=grads)
        return series, grads, model

    plain, none, _ = go("ascent", False)
    asc, g_asc, _ = go("ascent", True)
    assert none == [] and plain == asc  # recording the gradient norm leaves the ascent run bit for bit unchanged
    assert len(g_asc) == 40 and all(g > 0 for g in g_asc[:30]) and g_asc[30:] == [0.0] * 10
    anchor = torch.randn(7, 16)
    ctl, g_ctl, _ = go("headpull", True, target=tuple(g_asc), anchor=anchor)
    assert np.allclose(g_ctl, g_asc, rtol=1e-6, atol=0)
    assert ctl["reg_term"][-1] == 0.0 and ctl["reg_term"][1] > 0


def test_config_validation():
    full = Grokking.config("full")
    assert full.model == "transformer" and full.p == 97 and "div" in full.ops
    quick = Grokking.config("quick")
    assert Grokking.config("smoke").seeds == 1 and quick.seeds - len(quick.pilot_seeds) >= 5
    with pytest.raises(ValueError, match="ops"):
        Grokking.config("quick", {"ops": ("pow",)})
    with pytest.raises(ValueError, match="ascent_off"):
        Grokking.config("quick", {"ascent_off": 10**6})


def test_shortened_arms_must_outlast_the_switch_off():
    with pytest.raises(ValueError, match="control_steps"):
        Grokking.config("quick", {"control_steps": 900})
    assert Grokking.config("quick").control_steps == 0  # the control's onset is compared with the ascent's
    full = Grokking.config("full")
    assert full.encourage_steps == 0 and full.control_steps == 0  # the transformer runs every arm in full


# -- seeds side by side: the stacked model --------------------------------------------------------------------


def _members(n=3, dtype=torch.float64):
    """n plain MLPs with their own init and their own split of a+b mod 7 (same sizes), in float64."""
    models, datas = [], []
    for s in range(n):
        sp = modular_split(7, "add", 0.6, seed=s)
        x, y = torch.from_numpy(one_hot_pairs(sp.a, sp.b, 7)).to(dtype), torch.from_numpy(sp.c)
        tr, te = torch.from_numpy(sp.train), torch.from_numpy(sp.test)
        torch.manual_seed(10 + s)
        models.append(MLP(14, (16, 16), 7).to(dtype))
        datas.append((x[tr], y[tr], x[te], y[te]))
    return models, datas


def _stacked_vs_plain(regime, targets=None, anchors=None, n=3):
    models, datas = _members(n)
    stacked = StackedMLP(models)  # copies the members' initial weights
    data = tuple(torch.stack([d[j] for d in datas]) for j in range(4))
    s_series, s_sizes, s_grads = train_stacked(stacked, data, 7, regime, [torch.Generator().manual_seed(s) for s in
                                                                          range(n)], targets, anchors)  # fmt: skip
    plain = []
    for s, (model, d) in enumerate(zip(models, datas)):
        r = dataclasses.replace(regime, target_sizes=None if targets is None else tuple(targets[s]),
                                anchor=None if anchors is None else anchors[s])  # fmt: skip
        sizes, grads = [], []
        series = train(model, d, 7, r, torch.Generator().manual_seed(s), sizes_out=sizes, grads_out=grads)
        plain.append((series, sizes, grads))
    return list(zip(s_series, s_sizes, s_grads)), plain


def _assert_same(stacked, plain, rtol=1e-6):
    for (ss, s_sizes, s_grads), (ps, p_sizes, p_grads) in zip(stacked, plain):
        assert ss.keys() == ps.keys()
        for key in ps:
            assert np.allclose(ss[key], ps[key], rtol=rtol, atol=1e-9, equal_nan=True), key
        assert np.allclose(s_sizes, p_sizes, rtol=rtol, atol=1e-12)
        assert len(s_grads) == len(p_grads) and np.allclose(s_grads, p_grads, rtol=rtol, atol=1e-12)


def test_stacked_model_matches_separately_trained_plain_models():
    """Every arm's regime, trained as one stacked model, gives each seed the run it gets alone (float64, so the
    comparison is exact up to summation order): own init, split, batch order, optimiser state, regulariser start,
    head-norm cap, matched control and recorded gradient norm."""
    base = Regime(steps=30, lr=3e-3, weight_decay=1.0, log_every=10)
    _assert_same(*_stacked_vs_plain(base))
    asc = dataclasses.replace(base, reg="ascent", lam=10.0, reg_off=20, record_grad=True, weight_cap=3.0)
    stacked, plain = _stacked_vs_plain(asc)
    _assert_same(stacked, plain)
    assert all(g > 0 for g in stacked[0][2][:20]) and stacked[0][2][20:] == [0.0] * 10
    # the head-pull control fed each seed's ascent gradient norms, with a per-seed anchor
    targets = [g for _, _, g in stacked]
    anchors = torch.randn(3, 7, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    ctl = dataclasses.replace(base, reg="headpull", lam=10.0, reg_off=20, record_grad=True)
    c_stacked, c_plain = _stacked_vs_plain(ctl, targets, anchors)
    _assert_same(c_stacked, c_plain)
    assert np.allclose(c_stacked[1][2][:20], targets[1][:20], rtol=1e-9)
    # suppression from memorisation with a ramp: each seed starts when *it* memorises
    sup = dataclasses.replace(base, steps=60, lr=3e-2, reg="suppress", lam=0.5, start_at_mem=True, ramp=5, ncc_cap=3.0)
    s_stacked, s_plain = _stacked_vs_plain(sup)
    _assert_same(s_stacked, s_plain)
    starts = [next((i for i, v in enumerate(sz) if v > 0), None) for _, sz, _ in s_stacked]
    assert all(s is not None for s in starts) and len(set(starts)) > 1  # different seeds memorised at different steps
    # minibatch SGD: one batch order per seed
    sgd = dataclasses.replace(base, optimizer="sgd", lr=0.05, batch_size=8, reg="suppress", lam=0.1)
    _assert_same(*_stacked_vs_plain(sgd))


def test_stacked_training_in_float32_stays_close():
    models, datas = _members(2, torch.float32)
    data = tuple(torch.stack([d[j] for d in datas]) for j in range(4))
    regime = Regime(steps=20, lr=3e-3, weight_decay=1.0, log_every=10)
    got = train_stacked(StackedMLP(models), data, 7, regime, [torch.Generator().manual_seed(s) for s in range(2)])[0]
    for s, (model, d) in enumerate(zip(models, datas)):
        want = train(model, d, 7, regime, torch.Generator().manual_seed(s))
        assert np.allclose(got[s]["train_loss"], want["train_loss"], rtol=1e-4)
        assert np.allclose(got[s]["kappa"], want["kappa"], rtol=1e-3)


def test_a_diverged_member_stays_its_own_failed_unit():
    models, datas = _members(2)
    alone = StackedMLP(models[:1])
    stacked = StackedMLP(models)
    with torch.no_grad():
        stacked.weights[1][1].fill_(float("nan"))  # member 1 diverged
    regime = Regime(steps=20, lr=3e-3, weight_decay=1.0, log_every=10, reg="ascent", lam=1.0, record_grad=True)
    data = tuple(torch.stack([d[j] for d in datas]) for j in range(4))
    both, _, grads = train_stacked(stacked, data, 7, regime, [torch.Generator().manual_seed(s) for s in range(2)])
    one, _, _ = train_stacked(alone, tuple(t[:1] for t in data), 7, regime, [torch.Generator().manual_seed(0)])
    assert all(np.isnan(both[1]["kappa"])) and not np.isfinite(grads[1]).any()
    for key in one[0]:
        assert np.allclose(both[0][key], one[0][key], rtol=1e-12, atol=1e-15), key
    with pytest.raises(ValueError, match="same layer sizes"):
        StackedMLP([MLP(14, (16, 16), 7), MLP(14, (8, 16), 7)])


def test_stacked_terms_equal_the_plain_terms_per_member():
    g = torch.Generator().manual_seed(0)
    feats, w = torch.randn(3, 40, 5, generator=g, dtype=torch.float64), torch.randn(3, 4, 5, generator=g,
                                                                                    dtype=torch.float64)  # fmt: skip
    logits = torch.bmm(feats, w.transpose(1, 2))
    y = torch.randint(0, 4, (3, 40), generator=g)
    y[2][y[2] == 3] = 0  # class 3 absent in member 2: NCC over the classes present
    want = torch.stack([ncc(feats[s], y[s], 4) for s in range(3)])
    assert torch.allclose(stacked_ncc(feats, y, 4), want, rtol=1e-12)
    for temp, norm in ((2.0, True), (1.0, False)):
        want = torch.stack([flatness_penalty(feats[s], w[s], logits[s], temp, norm) for s in range(3)])
        assert torch.allclose(stacked_flatness(feats, w, logits, temp, norm), want, rtol=1e-12)


# -- claim 5's seed count --------------------------------------------------------------------------------------


def test_claim5_seed_count_is_the_documented_power_calculation():
    # the spread of the 7-seed CI [-0.066, 0.040], a true difference of 0.05 in log onset, 80 % power; plus the
    # pilot seed
    sd = spread_from_ci(-0.066, 0.040, 7)
    assert CFG.control_seeds == units_for_power(sd, 0.05) + len(CFG.pilot_seeds) == 14


def test_claim5_uses_the_extra_ascent_and_control_seeds_and_claim4_does_not():
    extra = [1450, 1500, 1480, 1520]
    m = _fake_metrics(B, ASC + extra, ctl_onsets=[x - 100 for x in ASC + extra])
    assert len(m["modular"]["add"]["baseline"]) == 8 and len(m["modular"]["add"]["ascent"]) == 12  # extra: 2 arms
    ev = check_control(m, CFG)
    assert ev.held is True and ev.test.n == 11 and ev.test.effect == pytest.approx(
        np.mean([np.log(a / (a - 100)) for a in (ASC + extra)[1:]]))
    assert check_ascent(m, CFG).test.n == 7


def test_claim5_confirmatory_run_is_the_documented_power_calculation():
    # the 13-seed run's CI and estimate (unrounded, run seed 0), 80 % power at level 0.99 (Holm over the 10
    # empirical claims, Bonferroni's bound), plus the pilot-seed index that the checks leave out
    page = (Path(__file__).resolve().parents[2] / "docs" / "studies" / "grokking.md").read_text()
    (n,) = re.findall(r"^genlab run grokking --seed 1 --set control_seeds=(\d+)$", page, re.M)
    sd = spread_from_ci(-0.06111714188823407, 0.005954026791288605, 13)
    assert int(n) == units_for_power(sd, 0.027581557548472732, level=0.99) + len(CFG.pilot_seeds) == 52
    assert units_for_power(sd, 0.027581557548472732) == 34  # what level 0.95 would have asked for
