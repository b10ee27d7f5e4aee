"""tight-bounds: the stability-binding arm of Theorem 4.3 (the theorem's α₁, conformal, batched pairs)."""

import numpy as np
import pytest

from genlab.measures.estimability import hoeffding_radius
from genlab.studies import tight_bounds as stb
from genlab.studies.tight_bounds import population as pop


def test_conformal_rank_and_leave_one_out_quantile():
    assert pop.conformal_rank(40, 0.025) == 39 and pop.conformal_rank(80, 0.025) == 78
    changes = np.arange(40) / 100
    a1 = pop.conformal_alpha1(changes, 0.025)  # rank 39 of the 39 others: the others' maximum
    np.testing.assert_allclose(a1[:-1], 0.39)
    assert a1[-1] == pytest.approx(0.38)  # the largest unit is bounded by the others' maximum only: it exceeds it
    assert np.all(np.isinf(pop.conformal_alpha1(changes[:39], 0.025)))  # 39 units: level 0.975 unreachable
    a1 = pop.conformal_alpha1(np.arange(80) / 100, 0.025)  # rank 78 of 79 others: the second largest of them
    assert a1[0] == pytest.approx(0.78) and a1[79] == pytest.approx(0.77)


def test_conformal_alpha1_covers_exchangeable_units_at_its_level():
    rng = np.random.default_rng(0)
    covered = [np.mean(x <= pop.conformal_alpha1(x, 0.025)) for x in rng.exponential(size=(300, 40))]
    assert np.mean(covered) == pytest.approx(39 / 40)  # continuous draws: exactly the largest unit is missed
    covered = [np.mean(x <= pop.conformal_alpha1(x, 0.1)) for x in rng.exponential(size=(300, 50))]
    assert np.mean(covered) == pytest.approx(0.9, abs=0.01)  # rank 45 of 49 others: units 46–50 missed


def _blobs(units, m, rng):
    centers = rng.normal(size=(10, 8)) * 3
    y = rng.integers(0, 10, size=(units, m))
    return (centers[y] + rng.normal(size=(units, m, 8))).astype(np.float32), y


def test_train_pairs_share_initialisation_and_batches():
    rng = np.random.default_rng(1)
    x, y = _blobs(3, 60, rng)
    z = rng.normal(size=(50, 8)).astype(np.float32)
    pred = pop.train_pairs(x, y, 0, width=16, lr=0.05, steps=30, seed=5)(z)  # k = 0: the pair trains on one sample
    np.testing.assert_array_equal(pred[0::2], pred[1::2])  # same init, same draws: A(S₁) = A(S) exactly
    assert not np.array_equal(pred[0], pred[2])  # units differ (own data and init)
    untrained = pop.train_pairs(x, y, 20, width=16, lr=0.05, steps=0, seed=5)(z)
    np.testing.assert_array_equal(untrained[0::2], untrained[1::2])  # the pair starts from one initialisation
    own = pop.train_pairs(x, y, 20, width=16, lr=0.05, steps=0, seed=5)(x)  # z (U, n, d): unit u's own points
    assert own.shape == (6, 60)


def test_population_runs_numbers_on_separable_blobs():
    rng = np.random.default_rng(2)
    x, y = _blobs(40, 120, rng)
    xt, yt = _blobs(1, 500, np.random.default_rng(2))  # same seed: the same ten centres
    rows = pop.population_runs(x, y, xt[0], yt[0], 40, 0.05, width=32, lr=0.05, steps=150, seed=3)
    assert len(rows) == 40 and {r["k"] for r in rows} == {40} and {r["m"] for r in rows} == {120}
    r = rows[0]
    assert r["alpha0"] == pytest.approx(hoeffding_radius(40, 0.025)) == pytest.approx(0.2340, abs=1e-4)
    assert r["alpha0_full_delta"] == pytest.approx(hoeffding_radius(40, 0.05))
    changes = np.array([q["loss_instability"] for q in rows])
    np.testing.assert_allclose([q["alpha1_resampled"] for q in rows], pop.conformal_alpha1(changes, 0.025))
    for q in rows:
        assert q["error"] == pytest.approx(abs(q["holdout"] - q["test_err"]))
        assert q["covers"] == (q["error"] <= q["alpha0"] + q["alpha1_resampled"])
        assert q["loss_instability"] == pytest.approx(abs(q["loss_s1"] - q["test_err"]))
    assert np.mean([q["train_err"] for q in rows]) < 0.05  # well-separated blobs: the nets fit their samples
    assert np.mean([q["test_err"] for q in rows]) < 0.1


def _binding_rows(n, **kw):
    row = dict(k=500, m=1000, loss_instability=0.1, alpha0=0.066, alpha1_resampled=0.12, covers=True,
               covers_without_alpha1=False, width_allowed=0.37, error=0.1, test_err=0.52, train_err=0.0)
    row.update(kw)
    return [dict(row) for _ in range(n)]


def test_binding_claim_is_withheld_unless_the_loss_change_exceeds_alpha0():
    cfg = stb.TightBounds.config("quick")
    ev = stb._binding_claim({"mnist1d_binding": {"mlp_long": _binding_rows(80)}}, cfg)
    assert ev.held is True and ev.numbers["binding_runs"] == "80/80" and ev.test.ci[0] > 0.95
    assert ev.numbers["coverage_hoeffding_alone"] == 0 and ev.numbers["m"] == 1000
    ev = stb._binding_claim({"mnist1d_binding": {"mlp_long": _binding_rows(79) + _binding_rows(1, covers=False)}},
                            cfg)
    assert ev.held is None and ev.test.ci[0] < 0.95  # 79/80: Wilson lower limit 0.933
    for covered, held in ((72, False), (73, None)):  # Wilson upper limit 0.949 < 0.95 at 72/80, 0.957 at 73/80
        rows = _binding_rows(covered) + _binding_rows(80 - covered, covers=False)
        assert stb._binding_claim({"mnist1d_binding": {"mlp_long": rows}}, cfg).held is held
    loose = _binding_rows(80, loss_instability=0.01)
    ev = stb._binding_claim({"mnist1d_binding": {"mlp_long": loose}}, cfg)
    assert ev.held is None and "Hoeffding alone" in ev.note and ev.test.gate
    assert stb._binding_claim({}, cfg).held is None  # the arm is off


def test_binding_config():
    cfg = stb.TightBounds.config("quick")
    assert (cfg.binding_units, cfg.binding_m, cfg.binding_holdout) == (80, 1000, 500)
    assert hoeffding_radius(cfg.binding_holdout, cfg.delta / 2) == pytest.approx(0.0662, abs=1e-4)
    with pytest.raises(ValueError, match="binding_units"):
        stb.TightBounds.config("quick", {"binding_units": 39})
    stb.TightBounds.config("quick", {"binding_units": 40})
    stb.TightBounds.config("quick", {"binding_units": 0})  # the arm off
    with pytest.raises(ValueError, match="binding_holdout"):
        stb.TightBounds.config("quick", {"binding_holdout": 1000})
