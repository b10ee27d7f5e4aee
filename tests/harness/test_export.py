"""The run store as tables: genlab export (CSV, Parquet), genlab.load_runs / load_claims, genlab.sweep."""

import pandas as pd
import pytest

import genlab
from genlab.harness.errors import ConfigError
from genlab.harness.export import export_tables
from genlab.harness.runner import run_study


def _store(tmp_path):
    for seed in (0, 1):
        run_study("toy-mean", "smoke", seed=seed, root=tmp_path)
    return tmp_path


def test_load_runs_and_claims_as_dataframes(tmp_path):
    root = _store(tmp_path)
    runs = genlab.load_runs(root)
    assert list(runs["seed"]) == [0, 1] and set(runs["config.n"]) == {50}
    assert runs["metric.mean"].between(-1, 2).all() and "metric.nested/sd" in runs
    claims = genlab.load_claims(root, study="toy-mean")
    assert len(claims) == 4 and set(claims["key"]) == {"mean-close", "mean-negative"}
    close = claims[claims["key"] == "mean-close"].iloc[0]
    assert close["method"] == "exact" and close["n"] == 1 and close["direction"] == "above"
    assert genlab.load_runs(root, preset="quick").empty


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_both_tables(tmp_path, fmt):
    pytest.importorskip("pyarrow") if fmt == "parquet" else None
    root = _store(tmp_path / "runs")
    paths = export_tables(root, tmp_path / "out", fmt)
    assert [p.name for p in paths] == [f"runs.{fmt}", f"claims.{fmt}"]
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    assert len(read(paths[0])) == 2 and set(read(paths[1])["verdict"]) <= {"reproduced", "not reproduced"}
    with pytest.raises(ConfigError, match="--format"):
        export_tables(root, tmp_path / "out", "xlsx")


def test_export_command(tmp_path, capsys):
    from genlab.cli import main

    root = _store(tmp_path / "runs")
    main(["export", str(root), "--out", str(tmp_path / "tables")])
    assert (tmp_path / "tables" / "claims.csv").is_file()
    with pytest.raises(SystemExit) as exit_:
        main(["export", str(tmp_path / "missing")])
    assert exit_.value.code == 2 and "not a run store" in capsys.readouterr().err


def test_sweep_from_python(tmp_path):
    results = genlab.sweep("toy-mean", {"n": [20, 40]}, preset="smoke", seeds=2, root=tmp_path)
    assert [(r.config["n"], r.seed) for r in results] == [(20, 0), (20, 1), (40, 0), (40, 1)]
    again = genlab.sweep("toy-mean", {"n": [20]}, preset="smoke", seeds=1, root=tmp_path)
    assert again[0].cached and again[0].metrics == results[0].metrics
    with pytest.raises(ConfigError):
        genlab.sweep("toy-mean", {"n": []}, preset="smoke", root=tmp_path)
