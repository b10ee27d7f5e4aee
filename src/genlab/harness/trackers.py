"""Export finished runs to experiment trackers, in addition to the run store: ``--track mlflow|tensorboard|wandb``.

Each tracker receives the run's config (as parameters), its scalar metrics, its claims (a verdict tag or text
per claim key, and the full verdicts as a JSON artifact) and its figures. All three write locally by default:

- MLflow: the tracking URI from ``MLFLOW_TRACKING_URI``, else ``sqlite:///<root>/mlflow.db`` with artifacts in
  ``<root>/mlartifacts``; one experiment per study (``genlab/<study>``), one MLflow run per genlab run.
- TensorBoard: event files in ``<root>/tensorboard/<study>/<preset>/<hash>`` (scalars, claims as text, figures
  as images).
- W&B: offline mode (``wandb sync`` uploads later) under ``<root>/wandb``; project ``genlab``.

Time series stream live: a run computed with ``--track`` opens its MLflow run and TensorBoard writer when it
starts, and every ``ctx.record(step=..., loss=...)`` of the study is logged there with its step as it happens
(:class:`LiveRun`); the final export then completes the same MLflow run. A run read back from the store (cached)
replays its ``records.jsonl`` with the same steps. A record's numeric values become metrics named by the key,
prefixed by its string values (``ctx.record(step=3, arm="full", loss=0.2)`` → ``full/loss`` at step 3); its step
is ``step``, ``epoch`` or ``iteration``, else the record's position. W&B (offline) receives the records at export.

The libraries are optional extras (``pip install 'genlab[mlflow]'`` and so on); a missing one is a clear error
before any run starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from genlab.harness.errors import ConfigError
from genlab.harness.io import flat_scalars

TRACKERS = ("mlflow", "tensorboard", "wandb")
_MODULES = {"mlflow": "mlflow", "tensorboard": "tensorboard", "wandb": "wandb"}


def check_trackers(names: list[str]) -> list[str]:
    """Validate tracker names and that their libraries import; returns the names (deduplicated, in order)."""
    import importlib.util

    out: list[str] = []
    for name in names:
        if name not in TRACKERS:
            raise ConfigError(f"unknown tracker {name!r}; choose among {', '.join(TRACKERS)}")
        if importlib.util.find_spec(_MODULES[name]) is None:
            raise ConfigError(f"--track {name} needs its library: pip install 'genlab[{name}]'")
        if name not in out:
            out.append(name)
    return out


def export(result: Any, root: Path, trackers: list[str]) -> None:
    """Send one finished run (a RunResult that did not fail) to each tracker."""
    if not result.ok:
        return
    for name in trackers:
        EXPORTERS[name](result, Path(root))


STEP_KEYS = ("step", "epoch", "iteration")


def series_points(record: Mapping[str, Any], index: int) -> tuple[int, dict[str, float]]:
    """A record as (step, {metric name: value}): numeric values named by their key, prefixed by the record's
    string values; the step from ``step`` / ``epoch`` / ``iteration``, else the record's position."""
    import math

    step = next((record[k] for k in STEP_KEYS if _is_int(record.get(k))), index)
    prefix = "/".join(str(v) for k, v in record.items() if isinstance(v, str))
    values = {}
    for k, v in record.items():
        if k in STEP_KEYS or isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            continue
        values[f"{prefix}/{k}" if prefix else k] = float(v)
    return int(step), values


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class LiveRun:
    """The trackers of one run while it computes: ``log(record)`` sends a ``ctx.record`` with its step.

    MLflow metrics are buffered and sent in batches (at most every second, and at ``close``); TensorBoard
    scalars are written as they come."""

    def __init__(self, names: list[str], root: Path, study: str, preset: str, seed: int, run_hash: str) -> None:
        import time

        self._index = 0
        self._last_flush = time.monotonic()
        self._buffer: list[Any] = []
        self._writer = None
        self._client = None
        self._run_id = ""
        root = Path(root)
        if "tensorboard" in names:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(_tb_dir(root, study, preset, run_hash)))
        if "mlflow" in names:
            client, experiment_id = _mlflow_experiment(root, study)
            tags = {"genlab.preset": preset, "genlab.seed": str(seed), "genlab.hash": run_hash, "genlab.live": "1"}
            self._client = client
            self._run_id = client.create_run(experiment_id, run_name=f"{study}-{preset}-seed{seed}-{run_hash}",
                                             tags=tags).info.run_id  # fmt: skip

    def log(self, record: Mapping[str, Any]) -> None:
        import time

        step, values = series_points(record, self._index)
        self._index += 1
        if self._writer is not None:
            for name, value in values.items():
                self._writer.add_scalar(name, value, step)
        if self._client is not None:
            from mlflow.entities import Metric

            now = int(time.time() * 1000)
            self._buffer.extend(Metric(name, value, now, step) for name, value in values.items())
            if len(self._buffer) >= 500 or time.monotonic() - self._last_flush > 1.0:
                self._flush()

    def _flush(self) -> None:
        import time

        for i in range(0, len(self._buffer), 1000):  # MLflow caps a batch at 1,000 metrics
            self._client.log_batch(self._run_id, metrics=self._buffer[i : i + 1000])  # type: ignore[union-attr]
        self._buffer.clear()
        self._last_flush = time.monotonic()

    def close(self, failed: bool = False) -> None:
        if self._client is not None:
            self._flush()
            if failed:
                self._client.set_terminated(self._run_id, status="FAILED")
        if self._writer is not None:
            self._writer.close()


def open_live(names: tuple[str, ...] | list[str], root: Path, study: str, preset: str, seed: int,
              run_hash: str) -> LiveRun | None:  # fmt: skip
    """A :class:`LiveRun` for the trackers that stream (mlflow, tensorboard), or None when none is asked for."""
    live = [n for n in names if n in ("mlflow", "tensorboard")]
    return LiveRun(live, root, study, preset, seed, run_hash) if live else None


def _records(result: Any) -> list[dict[str, Any]]:
    path = Path(result.run_dir) / "records.jsonl"
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _tb_dir(root: Path, study: str, preset: str, run_hash: str) -> Path:
    return root / "tensorboard" / study / preset / run_hash


def _mlflow_experiment(root: Path, study: str) -> tuple[Any, str]:
    import os

    import mlflow

    uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(root / 'mlflow.db').resolve()}"
    client = mlflow.MlflowClient(uri)
    name = f"genlab/{study}"
    experiment = client.get_experiment_by_name(name)
    if experiment:
        return client, experiment.experiment_id
    return client, client.create_experiment(name, artifact_location=(root / "mlartifacts").resolve().as_uri())


def _params(config: Mapping[str, Any]) -> dict[str, str]:
    return {k: json.dumps(v) if isinstance(v, list | tuple | dict) else str(v) for k, v in config.items()}


def _run_name(result: Any) -> str:
    return f"{result.study}-{result.preset}-seed{result.seed}-{result.run_hash}"


def _figures(result: Any) -> list[Path]:
    return sorted((Path(result.run_dir) / "figures").glob("*.png"))


def _to_mlflow(result: Any, root: Path) -> None:
    import time

    from mlflow.entities import Metric, Param, RunTag

    client, experiment_id = _mlflow_experiment(root, result.study)
    tags = {"genlab.preset": result.preset, "genlab.seed": str(result.seed), "genlab.hash": result.run_hash}
    tags.update({f"claim.{v.key}": v.verdict for v in result.verdicts})
    live = client.search_runs(
        [experiment_id], f"tags.`genlab.hash` = '{result.run_hash}' and tags.`genlab.live` = '1' "
        "and attributes.status = 'RUNNING'", max_results=1,
    )  # fmt: skip
    if live and not result.skipped:  # the run this process streamed into: complete it
        run_id = live[0].info.run_id
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        series = []
    else:
        run_id = client.create_run(experiment_id, run_name=_run_name(result), tags=tags).info.run_id
        now = int(time.time() * 1000)
        series = [Metric(name, value, now, step) for i, rec in enumerate(_records(result))
                  for step, values in [series_points(rec, i)] for name, value in values.items()]  # fmt: skip
    for i in range(0, len(series), 1000):
        client.log_batch(run_id, metrics=series[i : i + 1000])
    params = [Param(k, v[:6000]) for k, v in _params(result.config).items()]
    metrics = [Metric(k, v, 0, 0) for k, v in flat_scalars(result.metrics).items()]
    for i in range(0, max(len(params), len(metrics)), 100):  # MLflow caps a batch at 100 params
        client.log_batch(run_id, metrics=metrics[i : i + 100], params=params[i : i + 100])
    client.log_text(run_id, json.dumps([v.to_dict() for v in result.verdicts], indent=2), "claims.json")
    for fig in _figures(result):
        client.log_artifact(run_id, str(fig), "figures")
    client.set_terminated(run_id)


def _to_tensorboard(result: Any, root: Path) -> None:
    import matplotlib.image as mpimg
    from torch.utils.tensorboard import SummaryWriter

    log_dir = _tb_dir(root, result.study, result.preset, result.run_hash)
    streamed = not result.skipped and log_dir.is_dir() and any(log_dir.glob("events.*"))
    with SummaryWriter(log_dir=str(log_dir)) as writer:
        if not streamed:
            for i, rec in enumerate(_records(result)):  # not streamed by this process: replay the time series
                step, values = series_points(rec, i)
                for name, value in values.items():
                    writer.add_scalar(name, value, step)
        for key, value in flat_scalars(result.metrics).items():
            writer.add_scalar(key, value, 0)
        for v in result.verdicts:
            writer.add_text(f"claims/{v.key}", f"**{v.verdict}** ({v.kind}): {v.claim}  \n{v.numbers_text()}", 0)
        writer.add_text("config", "```\n" + json.dumps(result.config, indent=2) + "\n```", 0)
        for fig in _figures(result):
            image = mpimg.imread(str(fig))[..., :3]
            writer.add_image(f"figures/{fig.stem}", image, 0, dataformats="HWC")


def _to_wandb(result: Any, root: Path) -> None:
    import wandb

    (root / "wandb").mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project="genlab", name=_run_name(result), group=result.study, job_type=result.preset, config=result.config,
        mode="offline", dir=str(root), reinit="finish_previous",
    )  # fmt: skip
    for i, rec in enumerate(_records(result)):
        step, values = series_points(rec, i)
        run.log({**values, "step": step})
    run.log(flat_scalars(result.metrics))
    run.log({f"figures/{fig.stem}": wandb.Image(str(fig)) for fig in _figures(result)})
    run.summary.update({f"claim/{v.key}": v.verdict for v in result.verdicts})
    run.finish()


EXPORTERS: dict[str, Callable[[Any, Path], None]] = {
    "mlflow": _to_mlflow,
    "tensorboard": _to_tensorboard,
    "wandb": _to_wandb,
}
