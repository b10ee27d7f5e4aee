"""genlab from Python (notebooks, scripts): ``genlab.run(study, preset=..., **overrides)`` and
``genlab.sweep(study, {"key": [values]}, seeds=N)``.

>>> import genlab
>>> r = genlab.run("margin-bounds", preset="smoke", seed=0, root="runs")   # doctest: +SKIP
>>> r.claims["certificate-valid"].verdict                                  # doctest: +SKIP
'reproduced'

The result holds the metrics, the claims (by key), the figures and the run directory; in Jupyter it displays
as a claims table with its figures. Runs go to the same store as the CLI's, so a finished run is read back
instead of recomputed (``force=True`` recomputes).
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genlab.harness.claims import Verdict


@dataclass
class Result:
    study: str
    preset: str
    seed: int
    run_dir: Path
    config: dict[str, Any]
    metrics: dict[str, Any]
    claims: dict[str, Verdict]
    figures: list[Path]
    wall_time: float
    cached: bool

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = "".join(
            f"<tr><td>{esc(v.key)}</td><td>{esc(v.claim)}</td><td>{esc(v.kind)}</td><td><b>{esc(v.verdict)}</b></td>"
            f"<td>{esc(v.numbers_text())}</td></tr>"
            for v in self.claims.values()
        )
        images = "".join(
            f"<img style='max-width:100%' src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
            for p in self.figures
        )
        where = f"<code>{esc(str(self.run_dir))}</code>"
        head = f"<p><b>{esc(self.study)}</b> ({esc(self.preset)}, seed {self.seed}): {where}</p>"
        table = "<table><tr><th>key</th><th>claim</th><th>kind</th><th>verdict</th><th>numbers</th></tr>"
        return f"{head}{table}{rows}</table>{images}"

    def __repr__(self) -> str:
        verdicts = ", ".join(f"{k}: {v.verdict}" for k, v in self.claims.items())
        return f"Result({self.study!r}, preset={self.preset!r}, seed={self.seed}, {verdicts})"


def run(
    study: str,
    preset: str = "quick",
    *,
    seed: int = 0,
    root: str | Path = "runs",
    device: str = "cpu",
    force: bool = False,
    quiet: bool = True,
    **overrides: Any,
) -> Result:
    """Run one study in this process (or read back its finished run) and return its :class:`Result`."""
    from genlab.harness.runner import run_study

    return _result(run_study(study, preset, overrides, seed=seed, root=root, force=force, device=device, quiet=quiet))


def _result(r: Any) -> Result:
    return Result(
        study=r.study,
        preset=r.preset,
        seed=r.seed,
        run_dir=Path(r.run_dir),
        config=r.config,
        metrics=r.metrics,
        claims={v.key: v for v in r.verdicts},
        figures=sorted((Path(r.run_dir) / "figures").glob("*.png")),
        wall_time=r.wall_time,
        cached=r.skipped,
    )


def sweep(
    study: str,
    grid: dict[str, list[Any]],
    preset: str = "quick",
    *,
    seeds: int = 1,
    root: str | Path = "runs",
    device: str = "cpu",
    force: bool = False,
    jobs: int = 1,
    **fixed: Any,
) -> list[Result]:
    """Run ``study`` for every combination of the ``grid`` values (``{"signal": [0.3, 0.6]}``) and seeds
    0..seeds-1, with ``fixed`` overrides on every cell; returns one :class:`Result` per run, in grid order
    (finished runs are read back). ``jobs`` > 1 runs them on a process pool."""
    from genlab.harness.errors import ConfigError
    from genlab.harness.runner import RunSpec, prepare, run_many
    from genlab.harness.study import get_study
    from genlab.harness.sweep import expand, save_sweep, table

    if not isinstance(grid, dict) or not all(isinstance(v, list | tuple) and v for v in grid.values()):
        raise ConfigError("grid must map config keys to non-empty lists of values")
    cells = expand({k: list(v) for k, v in grid.items()})
    specs = [RunSpec(study, preset, {**fixed, **cell}, s, str(root), force, device)
             for cell in cells for s in range(seeds)]  # fmt: skip
    results = run_many(prepare(specs, "local" if jobs > 1 else "serial", jobs), "local" if jobs > 1 else "serial",
                       jobs)  # fmt: skip
    save_sweep(Path(root), study, preset, seeds, cells, results, *table(get_study(study), cells, results))
    failed = [r for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} run(s) failed; first: {failed[0].study} seed {failed[0].seed}: "
                           f"{failed[0].error}")  # fmt: skip
    return [_result(r) for r in results]
