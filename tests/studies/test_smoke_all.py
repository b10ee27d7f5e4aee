"""Every registered study: its smoke preset runs end to end, writes its figures and verdicts, is deterministic,
and has a docs page. (Numbers of each study are tested in that study's own test file.)"""

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
    a, b = _without_timings(first.metrics), _without_timings(second.metrics)
    assert a == b, f"{name}: same seed gave different metrics: {sorted(k for k in a if a[k] != b.get(k))[:5]}"


def _is_timing(key: str) -> bool:
    """Wall and CPU times are measurements of the machine, not results: they may differ between runs."""
    leaf = key.rsplit("/", 1)[-1]
    return leaf.endswith(("_s", "_sec")) or any(t in key for t in ("timing", "wall", "cpu_s", "seconds"))


def _leaves(metrics: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _without_timings(metrics: dict) -> dict:
    return {k: v for k, v in _leaves(metrics).items() if not _is_timing(k)}
