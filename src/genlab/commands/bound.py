"""``genlab bound ...``: generalization-bound calculators on the command line.

The lead engineer mounts ``app`` as ``genlab bound``; ``genlab bound margin --gamma 0.1 --n 10000 --frac 0.02``
prints every margin bound for halfspaces at that point. Heavy imports happen inside the commands.
"""

from __future__ import annotations

import json

import typer

app = typer.Typer(help="Generalization-bound calculators.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Generalization-bound calculators (shapes with a constant c, and explicit-constant certificates)."""


@app.command()
def margin(
    gamma: float = typer.Option(..., help="margin γ of unit-norm w on inputs in the unit ball, in (0, 1]"),
    n: int = typer.Option(..., help="number of training points"),
    frac: float = typer.Option(0.0, help="fraction of training points with margin <= γ (L_S^γ)"),
    delta: float = typer.Option(0.05, help="failure probability δ"),
    c: float = typer.Option(1.0, help="the unspecified universal constant of the shape bounds"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
) -> None:
    """Margin bounds for halfspaces at (γ, L_S^γ, n, δ): Larsen–Schalburg's tight bound and its predecessors."""
    import math

    from genlab.measures.margin_bounds import bound_table

    for name, value in (("--gamma", gamma), ("--frac", frac), ("--delta", delta), ("--c", c)):
        if not math.isfinite(value):
            typer.echo(f"error: {name} must be a finite number, got {value}", err=True)
            raise typer.Exit(2)
    if c <= 0:
        typer.echo(f"error: --c (the universal constant) must be > 0, got {c:g}", err=True)
        raise typer.Exit(2)
    import warnings

    import numpy as np

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():  # an undefined bound is NaN, said below
            warnings.simplefilter("ignore", RuntimeWarning)
            table = bound_table(gamma, frac, n, delta, c)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if as_json:  # strict JSON: an undefined value (gamma < n^-1/2) or an infinite one is null
        from genlab.harness.io import to_jsonable

        doc = {"gamma": gamma, "n": n, "frac": frac, "delta": delta, "c": c, "bounds": to_jsonable(table)}
        typer.echo(json.dumps(doc, allow_nan=False))
        return
    typer.echo(f"margin bounds at gamma={gamma:g}, n={n}, L_S^gamma={frac:g}, delta={delta:g}")
    width = max(len(k) for k in table)
    for name, row in table.items():
        v = row["value"]
        shown = "undefined (gamma < n^-1/2)" if v != v else ("infinite" if v == float("inf") else f"{v:.6g}")
        typer.echo(f"  {name:<{width}}  {shown:>12}  [{row['what']}]")
    typer.echo(
        "Shapes use an unspecified universal constant c and are NOT certificates; only the 'certified' row is a "
        "valid bound (inputs of norm <= 1, ||w|| <= 1)."
    )
