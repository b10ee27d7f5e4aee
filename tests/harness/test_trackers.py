"""--track: runs exported to MLflow and TensorBoard through their real libraries, into a temporary folder."""

import json

import pytest

from genlab.harness.errors import ConfigError
from genlab.harness.runner import run_study
from genlab.harness.trackers import check_trackers, export


def test_unknown_or_missing_tracker_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown tracker"):
        check_trackers(["neptune"])


def test_mlflow_gets_params_metrics_claims_and_figures(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("sqlalchemy")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = run_study("toy-mean", "smoke", seed=1, root=tmp_path)
    export(result, tmp_path, check_trackers(["mlflow"]))
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("genlab/toy-mean")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.params["n"] == "50" and run.data.metrics["mean"] == pytest.approx(result.metrics["mean"])
    assert run.data.tags["claim.mean-close"] == "reproduced" and run.info.status == "FINISHED"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"claims.json", "figures"} <= artifacts
    claims = json.loads(mlflow.artifacts.load_text(f"{run.info.artifact_uri}/claims.json"))
    assert [c["key"] for c in claims] == ["mean-close", "mean-negative"]


def test_tensorboard_gets_scalars_claims_and_figures(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result = run_study("toy-mean", "smoke", seed=1, root=tmp_path)
    export(result, tmp_path, check_trackers(["tensorboard"]))
    acc = EventAccumulator(str(tmp_path / "tensorboard" / "toy-mean" / "smoke" / result.run_hash))
    acc.Reload()
    tags = acc.Tags()
    assert "mean" in tags["scalars"] and acc.Scalars("mean")[0].value == pytest.approx(result.metrics["mean"])
    assert "figures/mean" in tags["images"]
    assert any(t.startswith("claims/mean-close") for t in tags["tensors"])
