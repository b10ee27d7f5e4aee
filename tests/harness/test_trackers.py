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


def test_records_stream_live_with_their_steps_to_an_mlflow_store(tmp_path, monkeypatch):
    """A real MLflow store on disk (SQLite, MLflow's default since its file store went into maintenance)."""
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = run_study("toy-mean", "smoke", seed=2, root=tmp_path, track=("mlflow",))
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("genlab/toy-mean")
    (live,) = client.search_runs([experiment.experiment_id])
    assert live.info.status == "RUNNING"  # streamed while the study ran, before the export
    history = client.get_metric_history(live.info.run_id, "partial")
    assert [m.step for m in history] == [0, 1, 2]
    export(result, tmp_path, check_trackers(["mlflow"]))
    (run,) = client.search_runs([experiment.experiment_id])  # the export completes the same run
    assert run.info.run_id == live.info.run_id and run.info.status == "FINISHED"
    assert run.data.tags["claim.mean-close"] == "reproduced" and run.data.params["n"] == "50"
    # a cached run read back from the store replays its records with the same steps into a new run
    cached = run_study("toy-mean", "smoke", seed=2, root=tmp_path)
    export(cached, tmp_path, check_trackers(["mlflow"]))
    runs = client.search_runs([experiment.experiment_id])
    replayed = next(r for r in runs if r.info.run_id != live.info.run_id)
    assert [m.step for m in client.get_metric_history(replayed.info.run_id, "partial")] == [0, 1, 2]


def test_records_reach_tensorboard_with_their_steps(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result = run_study("toy-mean", "smoke", seed=3, root=tmp_path, track=("tensorboard",))
    export(result, tmp_path, check_trackers(["tensorboard"]))
    acc = EventAccumulator(str(tmp_path / "tensorboard" / "toy-mean" / "smoke" / result.run_hash))
    acc.Reload()
    assert [e.step for e in acc.Scalars("partial")] == [0, 1, 2]


def test_series_points_name_metrics_by_key_and_string_values():
    from genlab.harness.trackers import series_points

    assert series_points({"step": 7, "arm": "full", "loss": 0.5, "ok": True}, 0) == (7, {"full/loss": 0.5})
    assert series_points({"epoch": 2, "acc": 1}, 5) == (2, {"acc": 1.0})
    assert series_points({"x": float("nan"), "y": 2.0}, 4) == (4, {"y": 2.0})
