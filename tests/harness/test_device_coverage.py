"""Every study that trains a torch model honours --device: it declares ``accelerated`` (and moves its models and
batches to ``ctx.device``, which the cuda smoke below checks on a machine with a GPU)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import pytest

from genlab.harness import runner
from genlab.harness.study import all_studies, discover

# markers of a torch training loop, in the study module or the modules of its package
TRAINS = ("torch.optim", ".backward(", "torch.autograd.grad(", "train_flow_ensemble(", "train_gd(")
# studies that train torch models but run on the CPU on purpose, with the reason (none today)
CPU_ONLY: dict[str, str] = {}


def _training_source(cls) -> str:
    module = sys.modules[cls.__module__]
    text = inspect.getsource(module)
    if hasattr(module, "__path__"):  # a study package: add its helper modules
        for info in pkgutil.iter_modules(module.__path__, module.__name__ + "."):
            text += inspect.getsource(importlib.import_module(info.name))
    return text


def _studies():
    discover()
    return {name: cls for name, cls in all_studies().items() if not name.startswith("toy-")}


def test_every_torch_training_study_is_accelerated():
    trains = {name for name, cls in _studies().items() if any(m in _training_source(cls) for m in TRAINS)}
    assert len(trains) >= 15  # the markers still find the torch studies
    missing = sorted(n for n in trains if not _studies()[n].accelerated and n not in CPU_ONLY)
    assert missing == [], f"train torch models but ignore --device: {missing}"
    # and nothing claims acceleration without a torch training loop to accelerate
    assert sorted(n for n, c in _studies().items() if c.accelerated and n not in trains) == []


@pytest.mark.slow
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("name", sorted(n for n, c in _studies().items() if c.accelerated))
def test_accelerated_smoke_runs_on_cuda(name, tmp_path):
    res = runner.run_study(name, "smoke", root=tmp_path, device="cuda")
    assert res.ok, res.error
