"""Every registered study: its smoke preset runs end to end, writes its figures and verdicts, is deterministic,
and has a docs page. Every metric is compared: timings belong in ``ctx.timer``, never in metrics. (Numbers of each
study are tested in that study's own test file.)"""

from pathlib import Path

import pytest

from genlab.harness.config import config_to_dict
from genlab.harness.runner import run_study
from genlab.harness.study import PRESETS, all_studies

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted(all_studies())


def test_there_are_studies():
    assert "phi-curve" in STUDIES


@pytest.mark.parametrize("name", STUDIES)
def test_study_is_complete(name):
    cls = all_studies()[name]
    assert set(PRESETS) <= set(cls.presets)
    for preset in PRESETS:
        config_to_dict(cls.config(preset))  # every preset builds a valid config
    assert cls.claims, f"{name} states no claims"
    assert cls.paper.title and cls.paper.arxiv
    assert (ROOT / "docs" / "studies" / f"{name}.md").exists(), f"docs/studies/{name}.md is missing"


@pytest.mark.parametrize("name", STUDIES)
def test_smoke_preset_runs_and_is_deterministic(name, tmp_path):
    cls = all_studies()[name]
    first = run_study(name, "smoke", seed=0, root=tmp_path / "a")
    assert isinstance(first.metrics, dict) and first.metrics
    assert len(first.verdicts) == len(cls.claims)
    errors = [f"{v.key}: {v.note}" for v in first.verdicts if v.verdict == "error"]
    assert not errors, f"{name}: a claim check raised (an error is a bug, never a verdict): {errors}"
    figures = sorted((first.run_dir / "figures").glob("*.png"))
    assert figures and all(f.stat().st_size > 1000 for f in figures)
    second = run_study(name, "smoke", seed=0, root=tmp_path / "b")
    differ = sorted(k for k in first.metrics if first.metrics[k] != second.metrics.get(k))
    assert first.metrics == second.metrics, f"{name}: same seed, different metrics (timings go in ctx.timer): {differ}"
