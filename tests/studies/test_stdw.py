"""STDW pieces: rho schedules, the GST reduction (rho = 1 + per-domain labels), rho = 0 never uses the target,
source-only vs gradual on an easy drift, and the claims on synthetic metrics."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from genlab.data.shifts import domain_sequence
from genlab.studies.stdw import (
    STDWStudy,
    TrainConfig,
    accuracy,
    gst_adapt,
    make_model,
    rho_schedule,
    stdw_adapt,
    train_supervised,
)

torch.set_num_threads(1)
TC = TrainConfig(hidden=(32,), batch=32, source_epochs=15, epochs_per_step=2, confidence_q=0.0)


def test_schedules_known_values():
    assert rho_schedule("linear")(0.25) == 0.25
    assert rho_schedule("cosine")(0.5) == pytest.approx(0.5)
    assert rho_schedule("cosine")(0.25) == pytest.approx(0.5 * (1 - np.cos(np.pi / 4)))
    assert rho_schedule("step")(0.49) == 0.0 and rho_schedule("step")(0.5) == 1.0
    assert rho_schedule("reversed")(1.0) == 0.0
    assert rho_schedule("const0.5")(0.9) == 0.5
    with pytest.raises(ValueError, match="known"):
        rho_schedule("exp")


@pytest.fixture(scope="module")
def seq_and_source():
    seq = domain_sequence("drifting-tabular", seed=0, n_domains=3, per_domain=96, dim=8, n_classes=3)
    gen = torch.Generator().manual_seed(0)
    src = make_model(seq.dim, seq.n_classes, TC, 0)
    train_supervised(src, seq.xs[0], seq.ys[0], TC, TC.source_epochs, gen)
    return seq, src


def _params(m):
    return torch.cat([p.detach().flatten() for p in m.parameters()])


def test_rho_one_with_domain_labels_is_exactly_gst(seq_and_source):
    seq, src = seq_and_source
    a, b = copy.deepcopy(src), copy.deepcopy(src)
    gst_adapt(a, seq.xs[1:], TC, torch.Generator().manual_seed(5))
    stdw_adapt(b, seq.xs[0], seq.ys[0], seq.xs[1:], TC, torch.Generator().manual_seed(5), schedule="const1",
               labels="domain")
    assert torch.equal(_params(a), _params(b))
    # ...and a different schedule is not GST
    c = copy.deepcopy(src)
    stdw_adapt(c, seq.xs[0], seq.ys[0], seq.xs[1:], TC, torch.Generator().manual_seed(5), schedule="linear",
               labels="domain")
    assert not torch.equal(_params(a), _params(c))


def test_rho_zero_never_uses_the_last_domain(seq_and_source):
    seq, src = seq_and_source
    garbage = np.random.default_rng(0).normal(size=seq.xs[-1].shape).astype(np.float32) * 100
    a, b = copy.deepcopy(src), copy.deepcopy(src)
    for m, last in ((a, seq.xs[-1]), (b, garbage)):
        stdw_adapt(m, seq.xs[0], seq.ys[0], [*seq.xs[1:-1], last], TC, torch.Generator().manual_seed(1),
                   schedule="const0")
    assert torch.equal(_params(a), _params(b))


def test_gradual_self_training_beats_source_only_on_a_drifting_stream():
    seq = domain_sequence("drifting-tabular", seed=3, n_domains=8, per_domain=200)
    tc = TrainConfig(hidden=(32,), batch=32, source_epochs=20, epochs_per_step=3)
    gen = torch.Generator().manual_seed(0)
    src = make_model(seq.dim, seq.n_classes, tc, 0)
    train_supervised(src, seq.xs[0], seq.ys[0], tc, tc.source_epochs, gen)
    gst = copy.deepcopy(src)
    gst_adapt(gst, seq.xs[1:], tc, torch.Generator().manual_seed(1))
    acc_src, acc_gst = accuracy(src, *seq.target_test), accuracy(gst, *seq.target_test)
    assert accuracy(src, seq.xs[0], seq.ys[0]) > 0.9
    assert acc_gst > acc_src + 0.2


def _metrics(gains: dict[str, float], noise: float = 0.01, n: int = 3) -> dict:
    rng = np.random.default_rng(0)
    arms = ["source", "gst", "stdw-linear", "stdw-const0", "stdw-const0.5", "stdw-reversed"]
    target = {}
    for ds in ("a", "b"):
        base = 0.3 + 0.02 * rng.normal(size=n)
        target[ds] = {arm: (base + gains.get(arm, 0.0) + noise * rng.normal(size=n)).tolist() for arm in arms}
    return {"arms": arms, "target": target}


def test_claims_on_synthetic_metrics():
    m = _metrics({"gst": 0.4, "stdw-linear": 0.5, "stdw-const0": 0.05, "stdw-const0.5": 0.3, "stdw-reversed": 0.2})
    v = [x.verdict for x in STDWStudy.verdicts(m, STDWStudy.config("quick"))]
    assert v == ["reproduced"] * 5
    m = _metrics({"gst": 0.4, "stdw-linear": 0.4, "stdw-const0": 0.4, "stdw-reversed": 0.4}, noise=0.05)
    v = [x.verdict for x in STDWStudy.verdicts(m, STDWStudy.config("quick"))]
    assert v[:2] == ["reproduced"] * 2 and v[2] == "inconclusive" and v[3] == "not reproduced"
    m = _metrics({"gst": 0.0, "stdw-linear": -0.1})
    assert [x.verdict for x in STDWStudy.verdicts(m, STDWStudy.config("quick"))][:2] == ["not reproduced"] * 2


def test_cyclic_matching_visits_every_example_of_both_domains():
    """One epoch of one step over domains of 50 (labelled source) and 30 examples, batch 8: 7 batch pairs, the
    shorter domain cycles, and every example of both domains is seen."""
    seen: list[np.ndarray] = []

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x):
            seen.append(x[:, 0].detach().numpy().astype(int).copy())
            return self.lin(x)

    x0 = np.stack([np.arange(50), np.zeros(50)], 1).astype(np.float32)
    x1 = np.stack([np.arange(100, 130), np.ones(30)], 1).astype(np.float32)
    tc = TrainConfig(batch=8, epochs_per_step=1, confidence_q=0.0)
    stdw_adapt(Recorder(), x0, np.arange(50) % 2, [x1], tc, torch.Generator().manual_seed(0), schedule="const0.5")
    ids = np.concatenate(seen)
    assert len(seen) == 2 * 7  # 7 pairs, each a previous-domain and a next-domain batch
    assert set(range(50)) <= set(ids.tolist()) and set(range(100, 130)) <= set(ids.tolist())


def _schedule_metrics(gain: float, noise: float, seeds: int = 5) -> dict:
    rng = np.random.default_rng(0)
    target = {}
    for ds in ("a", "b"):
        base = 0.7 + 0.02 * rng.standard_normal(seeds)
        target[ds] = {"stdw-linear": list(base + gain + noise * rng.standard_normal(seeds)),
                      "stdw-const0.5": list(base), "stdw-cosine": list(base + 0.001)}
    return {"arms": ["stdw-linear", "stdw-const0.5", "stdw-cosine"], "target": target}


def test_schedule_claim_is_one_paired_contrast_decided_both_ways():
    from genlab.studies.stdw import STDWStudy, _claim_schedule

    cfg = STDWStudy.Config()
    assert _claim_schedule(_schedule_metrics(0.05, 0.005), cfg).held is True  # linear clearly better
    assert _claim_schedule(_schedule_metrics(0.0, 0.001), cfg).held is False  # confidently below the margin
    assert _claim_schedule(_schedule_metrics(0.01, 0.05), cfg).held is None  # too noisy to decide
    missing = {"arms": ["stdw-linear"], "target": {}}
    assert _claim_schedule(missing, cfg).held is None
