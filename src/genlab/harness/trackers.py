"""Export finished runs to experiment trackers, in addition to the run store: ``--track mlflow|tensorboard|wandb``.

Each tracker receives the run's config (as parameters), its scalar metrics, its claims (a verdict tag or text
per claim key, and the full verdicts as a JSON artifact) and its figures. All three write locally by default:

- MLflow: the tracking URI from ``MLFLOW_TRACKING_URI``, else ``sqlite:///<root>/mlflow.db`` with artifacts in
  ``<root>/mlartifacts``; one experiment per study (``genlab/<study>``), one MLflow run per genlab run.
- TensorBoard: event files in ``<root>/tensorboard/<study>/<preset>/<hash>`` (scalars, claims as text, figures
  as images).
- W&B: offline mode (``wandb sync`` uploads later) under ``<root>/wandb``; project ``genlab``.

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


def _params(config: Mapping[str, Any]) -> dict[str, str]:
    return {k: json.dumps(v) if isinstance(v, list | tuple | dict) else str(v) for k, v in config.items()}


def _run_name(result: Any) -> str:
    return f"{result.study}-{result.preset}-seed{result.seed}-{result.run_hash}"


def _figures(result: Any) -> list[Path]:
    return sorted((Path(result.run_dir) / "figures").glob("*.png"))


def _to_mlflow(result: Any, root: Path) -> None:
    import os

    import mlflow

    uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(root / 'mlflow.db').resolve()}"
    client = mlflow.MlflowClient(uri)
    name = f"genlab/{result.study}"
    experiment = client.get_experiment_by_name(name)
    experiment_id = (
        experiment.experiment_id
        if experiment
        else client.create_experiment(name, artifact_location=(root / "mlartifacts").resolve().as_uri())
    )
    tags = {"genlab.preset": result.preset, "genlab.seed": str(result.seed), "genlab.hash": result.run_hash}
    tags.update({f"claim.{v.key}": v.verdict for v in result.verdicts})
    run = client.create_run(experiment_id, run_name=_run_name(result), tags=tags)
    run_id = run.info.run_id
    from mlflow.entities import Metric, Param

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

    log_dir = root / "tensorboard" / result.study / result.preset / result.run_hash
    with SummaryWriter(log_dir=str(log_dir)) as writer:
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
    run.log(flat_scalars(result.metrics))
    run.log({f"figures/{fig.stem}": wandb.Image(str(fig)) for fig in _figures(result)})
    run.summary.update({f"claim/{v.key}": v.verdict for v in result.verdicts})
    run.finish()


EXPORTERS: dict[str, Callable[[Any, Path], None]] = {
    "mlflow": _to_mlflow,
    "tensorboard": _to_tensorboard,
    "wandb": _to_wandb,
}
