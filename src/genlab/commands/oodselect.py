"""``genlab oodselect``: run OODSelect on your own model pool's predictions.

Registered on the top-level CLI with ``app.command("oodselect")(oodselect)``. Input formats (see docs/oodselect.md):

* ``--correct C.npy``: a (models x OOD examples) array of 0/1 (or bool); rows in the order of ``--id-acc``.
* ``--correct C.csv``: header ``model,<example id>,<example id>,...``; one row per model, 0/1 entries. With
  ``--labels`` the entries are predicted class labels instead and correctness is ``prediction == label``.
* ``--id-acc A.csv``: header ``model,id_acc[,group]``; ``group`` (optional) names the training run a model (e.g. a
  checkpoint) came from, so all checkpoints of one run fall on the same side of the model split.
* ``--labels Y.csv|Y.npy``: true labels of the OOD examples, CSV ``example,label`` (ids matching the header of
  C.csv) or a 1-D array in column order.

Module-level imports are light (typer, pathlib); numpy and torch load only when the command runs.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from genlab.harness.errors import ConfigError


class OODSelectInputError(typer.BadParameter, ConfigError):
    """A bad input file or option. A typer ``BadParameter`` (exit code 2 under typer/click) and a genlab
    ``ConfigError`` (exit code 2 under genlab's CLI wrapper, which catches genlab errors)."""


def _fail(msg: str) -> OODSelectInputError:
    return OODSelectInputError(msg)


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    if not path.is_file():
        raise _fail(f"{path} {'is not a file' if path.exists() else 'does not exist'}")
    try:  # utf-8-sig: a byte-order mark (Excel's CSV export) is not part of the first column's name
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    except UnicodeDecodeError as exc:
        raise _fail(f"{path} is not UTF-8 text (byte {exc.start})") from None
    except csv.Error as exc:
        raise _fail(f"{path} is not a valid CSV file: {exc}") from None
    if len(rows) < 2:
        raise _fail(f"{path} needs a header row and at least one data row")
    return [h.strip() for h in rows[0]], [[c.strip() for c in r] for r in rows[1:]]


def load_id_acc(path: Path) -> tuple[list[str], Any, Any]:
    """Read ``model,id_acc[,group]``; returns (model names, accuracies, groups or None)."""
    import numpy as np

    header, rows = _read_csv(path)
    low = [h.lower() for h in header]
    if "model" not in low or "id_acc" not in low:
        raise _fail(f"{path} must have the header columns 'model' and 'id_acc' (got {', '.join(header)})")
    im, ia = low.index("model"), low.index("id_acc")
    ig = low.index("group") if "group" in low else None
    names, acc, groups = [], [], []
    for i, r in enumerate(rows, start=2):
        if len(r) != len(header):
            raise _fail(f"{path} line {i} has {len(r)} fields but the header has {len(header)}")
        names.append(r[im])
        try:
            acc.append(float(r[ia]))
        except ValueError:
            raise _fail(f"{path} line {i}: id_acc {r[ia]!r} is not a number") from None
        if ig is not None:
            groups.append(r[ig])
    if len(set(names)) != len(names):
        raise _fail(f"{path} lists some model more than once")
    acc_arr = np.asarray(acc)
    if np.any((acc_arr < 0) | (acc_arr > 1)):
        raise _fail(f"{path}: id_acc values must lie in [0, 1]")
    return names, acc_arr, (np.unique(groups, return_inverse=True)[1] if ig is not None else None)


def load_labels(path: Path, example_ids: list[str] | None, n_examples: int) -> Any:
    """True labels of the OOD examples, aligned with the columns of the prediction matrix."""
    import numpy as np

    if path.suffix == ".npy":
        y = _load_npy(path).reshape(-1)
        if len(y) != n_examples:
            raise _fail(f"{path} has {len(y)} labels but the predictions have {n_examples} examples (columns)")
        return y.astype(str)
    header, rows = _read_csv(path)
    low = [h.lower() for h in header]
    if "label" not in low:
        raise _fail(f"{path} must have the header columns 'example' and 'label' (got {', '.join(header)})")
    il = low.index("label")
    if "example" in low and example_ids is not None:
        ie = low.index("example")
        mapping = {r[ie]: r[il] for r in rows}
        missing = [e for e in example_ids if e not in mapping]
        if missing:
            raise _fail(f"{path} has no label for {len(missing)} example(s), e.g. {missing[0]!r}")
        return np.asarray([mapping[e] for e in example_ids])
    if len(rows) != n_examples:
        raise _fail(f"{path} has {len(rows)} labels but the predictions have {n_examples} examples (columns)")
    return np.asarray([r[il] for r in rows])


def load_correct(path: Path, models: list[str], labels: Path | None) -> tuple[Any, list[str]]:
    """The correctness matrix with rows ordered like ``models``; also the example ids."""
    import numpy as np

    if not path.is_file():
        raise _fail(f"{path} {'is not a file' if path.exists() else 'does not exist'}")
    if path.suffix == ".npy":
        arr = _load_npy(path)
        if arr.ndim != 2:
            raise _fail(f"{path} must be a 2-D array (models x OOD examples), got shape {arr.shape}")
        if arr.shape[0] != len(models):
            raise _fail(f"{path} has {arr.shape[0]} rows (models) but the ID-accuracy file lists {len(models)} models")
        ids = [str(j) for j in range(arr.shape[1])]
        if labels is not None:
            arr = arr.astype(str) == load_labels(labels, None, arr.shape[1])[None, :]
    elif path.suffix == ".csv":
        header, rows = _read_csv(path)
        if header[0].lower() != "model":
            raise _fail(f"{path}: the first header column must be 'model' (got {header[0]!r})")
        ids = header[1:]
        if not ids:
            raise _fail(f"{path} has no example columns")
        by_model = {}
        for i, r in enumerate(rows, start=2):
            if len(r) != len(header):
                raise _fail(f"{path} line {i} has {len(r)} fields but the header has {len(header)}")
            by_model[r[0]] = r[1:]
        missing = [m for m in models if m not in by_model]
        extra = [m for m in by_model if m not in set(models)]
        if missing or extra:
            raise _fail(
                f"model names differ between {path} and the ID-accuracy file: "
                + (f"{len(missing)} missing from {path.name} (e.g. {missing[0]!r})" if missing else "")
                + ("; " if missing and extra else "")
                + (f"{len(extra)} not in the ID-accuracy file (e.g. {extra[0]!r})" if extra else "")
            )
        raw = np.asarray([by_model[m] for m in models])
        if labels is not None:
            arr = raw == load_labels(labels, ids, len(ids))[None, :]
        else:
            low = np.char.lower(raw)
            ok = np.isin(low, ["0", "1", "true", "false", "0.0", "1.0"])
            if not ok.all():
                bad = raw[~ok][0]
                raise _fail(f"{path}: entries must be 0/1 correctness (got {bad!r}); pass --labels to give predictions")
            arr = np.isin(low, ["1", "true", "1.0"])
    else:
        raise _fail(f"{path}: --correct must be a .npy or .csv file")
    return np.asarray(arr, dtype=np.float64), ids


def _load_npy(path: Path) -> Any:
    import zipfile

    import numpy as np

    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:  # a file starting "PK" is read as .npz
        raise _fail(f"{path} is not a readable .npy array ({' '.join(str(exc).split())[:80]})") from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise _fail(f"{path} is an .npz archive, not a .npy array")
    kind = arr.dtype.kind
    if kind in "US":  # label strings
        return arr
    if kind not in "biuf" or (kind == "f" and not np.isfinite(arr).all()):
        raise _fail(f"{path} must hold finite numbers (or label strings), got dtype {arr.dtype}")
    return arr


def _parse_list(text: str, name: str, kind=float, positive: bool = False) -> list:
    import math

    try:
        vals = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise _fail(f"{name} must be a comma-separated list of numbers, got {text!r}") from None
    if not vals:
        raise _fail(f"{name} is empty")
    if not all(math.isfinite(v) for v in vals):
        raise _fail(f"{name} must be finite numbers, got {text!r}")
    if positive and min(vals) <= 0:
        raise _fail(f"{name} must be > 0, got {text!r}")
    return vals


MAX_RANDOM = 100_000  # random subsets per k (the baseline's distribution)
MAX_STEPS = 1_000_000  # Adam steps of the soft selection


def oodselect(
    correct: Annotated[Path, typer.Option("--correct", help="models x OOD-examples correctness: .npy, or .csv with a "
                                          "'model' column (predictions if --labels is given)")],
    id_acc: Annotated[Path, typer.Option("--id-acc", help="CSV with columns model,id_acc[,group]")],
    k: Annotated[str, typer.Option("--k", help="subset sizes: integers, or fractions of the OOD set in (0, 1); "
                                   "comma-separated")] = "0.05,0.1,0.25,0.5,0.75",
    labels: Annotated[Path | None, typer.Option("--labels", help="true OOD labels (CSV example,label or .npy) when "
                                                "--correct holds predicted labels")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="directory for selection.json, selected_k*.csv and "
                                             "scatter.png")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the full report as JSON")] = False,
    split: Annotated[str, typer.Option("--split", help="train/val/test fractions of the models")] = "0.6,0.2,0.2",
    seed: Annotated[int, typer.Option("--seed")] = 0,
    steps: Annotated[int, typer.Option("--steps", help="Adam steps of the soft selection")] = 1500,
    lrs: Annotated[str, typer.Option("--lrs", help="learning rates tried (picked on validation models)")] = (
        "0.03,0.1,0.3"),
    lams: Annotated[str, typer.Option("--lams", help="size-penalty weights tried")] = "0.1,1,10",
    n_random: Annotated[int, typer.Option("--n-random", help="random subsets per k")] = 100,
    loss: Annotated[str, typer.Option("--loss", help="'r' (inverse line) or 'r2' (no relation)")] = "r",
    greedy: Annotated[bool, typer.Option("--greedy/--no-greedy", help="also run the greedy baseline")] = True,
) -> None:
    """Find OOD subsets on which ID accuracy anti-correlates with OOD accuracy (OODSelect), judged on held-out
    models, next to the full set, random subsets and a greedy baseline."""
    from genlab.measures.oodselect import run_oodselect, scatter_plot

    if loss not in ("r", "r2"):
        raise _fail(f"--loss must be 'r' or 'r2', got {loss!r}")
    if steps < 1 or n_random < 1 or seed < 0:
        raise _fail(f"--steps and --n-random must be >= 1 and --seed >= 0 (got {steps}, {n_random}, {seed})")
    if n_random > MAX_RANDOM or steps > MAX_STEPS:
        raise _fail(f"--n-random is at most {MAX_RANDOM:,} subsets per k and --steps at most {MAX_STEPS:,} "
                    f"(got {n_random:,}, {steps:,})")
    if out is not None and out.exists() and not out.is_dir():
        raise _fail(f"--out {out} is a file, not a directory")
    models, acc, groups = load_id_acc(id_acc)
    mat, ids = load_correct(correct, models, labels)
    if mat.ndim != 2 or 0 in mat.shape:
        raise _fail(f"{correct}: no OOD examples to select from (a {' x '.join(map(str, mat.shape))} array)")
    ks = _parse_list(k, "--k")
    ks = [int(v) if float(v).is_integer() and v >= 1 else v for v in ks]
    try:
        rep = run_oodselect(
            mat, acc, ks, fractions=_parse_list(split, "--split"), groups=groups, seed=seed,
            lrs=_parse_list(lrs, "--lrs", positive=True), lams=_parse_list(lams, "--lams"), steps=steps,
            n_random=n_random,
            loss=loss, greedy=greedy,
        )
    except ValueError as exc:
        raise _fail(str(exc)) from None
    report = rep.to_dict()
    report["models"] = models
    report["example_ids"] = ids
    for row in report["per_k"]:
        row["example_ids"] = [ids[j] for j in row["indices"]]
    if out is not None:
        _write_outputs(out, report, rep, ids, mat, acc, seed, scatter_plot)
    if json_out:
        typer.echo(json.dumps(report))
        return
    _print_table(report)


def _write_outputs(out: Path, report: dict, rep: Any, ids: list[str], mat: Any, acc: Any, seed: int, plot: Any) -> None:
    """selection.json, selected_k*.csv and scatter.png, each written atomically (strict JSON)."""
    import io

    from genlab.harness.io import atomic_write_bytes, atomic_write_json

    if out.exists() and not out.is_dir():
        raise _fail(f"--out {out} is a file, not a directory")
    created, written = not out.exists(), []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for sel in rep.selections:
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(["index", "example"])
            w.writerows([[int(j), ids[j]] for j in sel.indices])
            written.append(out / f"selected_k{sel.k}.csv")
            atomic_write_bytes(written[-1], buf.getvalue().encode())
        written.append(out / "scatter.png")
        plot(rep, mat, acc, written[-1], seed=seed)
        written.append(out / "selection.json")
        atomic_write_json(written[-1], report)
    except BaseException:  # nothing half-written stays behind, and no empty --out
        for f in written:
            f.unlink(missing_ok=True)
        if created:
            import shutil

            shutil.rmtree(out, ignore_errors=True)
        raise


def _print_table(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    f = report["r_full"]
    con.print(
        f"{report['n_models']} models ({report['n_train_models']} train / {report['n_val_models']} val / "
        f"{report['n_test_models']} test) x {report['n_examples']} OOD examples; probit Pearson r on held-out "
        f"(test) models. Full OOD set: r = {f['test']:+.3f}"
    )
    t = Table()
    for col in ("k", "fraction", "OODSelect r (test)", "greedy r (test)", "random r (mean ± sd)"):
        t.add_column(col, justify="right")
    for row in report["per_k"]:
        g = row.get("greedy", {}).get("test")
        t.add_row(str(row["k"]), f"{row['fraction']:.2f}", f"{row['selected']['test']:+.3f}",
                  "-" if g is None else f"{g:+.3f}", f"{row['random']['mean']:+.3f} ± {row['random']['sd']:.3f}")
    con.print(t)
    for w in report["warnings"]:
        con.print(f"[yellow]warning:[/yellow] {w}")
