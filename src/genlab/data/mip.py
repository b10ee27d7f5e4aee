"""Seeded mixed-integer programs and writers for the standard ``.lp`` (CPLEX LP) and free ``.mps`` formats.

Families (the classic testbeds of learning-to-branch work, small enough for a laptop):

* :func:`knapsack` — 0-1 knapsack with *correlated* weights and values (Pisinger's classes), optionally with
  several knapsack rows (multi-dimensional), maximise value;
* :func:`set_cover` — Balas–Ho style set cover (every row covered by at least two columns), minimise cost;
* :func:`facility_location` — capacitated facility location (Cornuéjols, Sridharan, Thizy 1991 style):
  binary opening decisions, continuous assignment fractions, minimise fixed + transport cost.

Every generator takes a ``numpy.random.Generator`` (same seed, same instance) and returns a :class:`MIP` whose
:meth:`MIP.write` writes a file any MIP solver reads, so the same instance can be solved by SCIP, HiGHS or a
reference implementation. Nothing here imports a solver.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FAMILIES = ("knapsack", "setcover", "facility")


@dataclass
class MIP:
    """``sense`` c·x subject to rows ``A x (<=|>=|=) b``, bounds ``lb <= x <= ub``, some variables integer.

    ``A`` is dense (instances here are small); ``kinds`` holds "<=", ">=" or "=" per row, ``integer`` a bool per
    column. Variable names are ``x0, x1, ...`` unless ``names`` is given.
    """

    name: str
    sense: str  # "min" | "max"
    c: np.ndarray
    A: np.ndarray
    kinds: list[str]
    b: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    integer: np.ndarray
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.c = np.asarray(self.c, dtype=float)
        self.A = np.atleast_2d(np.asarray(self.A, dtype=float))
        self.b = np.asarray(self.b, dtype=float)
        n = self.c.size
        self.lb = np.broadcast_to(np.asarray(self.lb, dtype=float), (n,)).copy()
        self.ub = np.broadcast_to(np.asarray(self.ub, dtype=float), (n,)).copy()
        self.integer = np.broadcast_to(np.asarray(self.integer, dtype=bool), (n,)).copy()
        if not self.names:
            self.names = [f"x{j}" for j in range(n)]
        if self.sense not in ("min", "max"):
            raise ValueError(f"sense must be 'min' or 'max', got {self.sense!r}")
        if self.A.shape != (len(self.kinds), n) or self.b.shape != (len(self.kinds),):
            raise ValueError(f"A is {self.A.shape}, b {self.b.shape}, {len(self.kinds)} row kinds, {n} columns")
        if set(self.kinds) - {"<=", ">=", "="}:
            raise ValueError(f"row kinds must be '<=', '>=' or '=', got {sorted(set(self.kinds))}")

    @property
    def n_vars(self) -> int:
        return int(self.c.size)

    @property
    def n_rows(self) -> int:
        return len(self.kinds)

    def write(self, path: str | Path) -> Path:
        """Write ``.lp`` or ``.mps`` by the file's suffix; returns the path."""
        path = Path(path)
        if path.suffix == ".lp":
            text = to_lp(self)
        elif path.suffix == ".mps":
            text = to_mps(self)
        else:
            raise ValueError(f"{path}: write .lp or .mps files")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


# -- writers ------------------------------------------------------------------------------------------------


def _num(v: float) -> str:
    """Shortest text that reads back to the same double."""
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


def _lp_terms(coefs: np.ndarray, names: list[str]) -> str:
    terms = [f"{'-' if v < 0 else '+'} {_num(abs(v))} {names[j]}" for j, v in enumerate(coefs) if v != 0]
    text = " ".join(terms) or f"+ 0 {names[0]}"
    return text[2:] if text.startswith("+ ") else text


def _wrap(text: str, width: int = 240) -> str:
    """LP readers limit line length; break long rows between terms."""
    out, line = [], ""
    for tok in text.split(" "):
        if len(line) + len(tok) + 1 > width and line:
            out.append(line)
            line = "   "
        line = f"{line} {tok}" if line.strip() else f"{line}{tok}"
    out.append(line)
    return "\n".join(out)


def to_lp(m: MIP) -> str:
    """CPLEX LP format (read by SCIP, HiGHS, Gurobi, CPLEX)."""
    lines = [f"\\ {m.name}", "Maximize" if m.sense == "max" else "Minimize", _wrap(" obj: " + _lp_terms(m.c, m.names))]
    lines.append("Subject To")
    for i, kind in enumerate(m.kinds):
        lines.append(_wrap(f" c{i}: {_lp_terms(m.A[i], m.names)} {kind} {_num(m.b[i])}"))
    lines.append("Bounds")
    for j, name in enumerate(m.names):
        lo = "-inf" if np.isneginf(m.lb[j]) else _num(m.lb[j])
        hi = "+inf" if np.isposinf(m.ub[j]) else _num(m.ub[j])
        lines.append(f" {lo} <= {name} <= {hi}")
    ints = [name for j, name in enumerate(m.names) if m.integer[j]]
    if ints:
        lines.append("General")
        lines.extend(_wrap(" " + " ".join(ints[k : k + 20])) for k in range(0, len(ints), 20))
    lines.append("End")
    return "\n".join(lines) + "\n"


def to_mps(m: MIP) -> str:
    """Free MPS. A ``max`` problem is written with ``OBJSENSE MAX`` (read by SCIP and HiGHS)."""
    kind = {"<=": "L", ">=": "G", "=": "E"}
    lines = [f"NAME {m.name}", "OBJSENSE", "    MAX" if m.sense == "max" else "    MIN", "ROWS", " N obj"]
    lines += [f" {kind[k]} c{i}" for i, k in enumerate(m.kinds)]
    lines.append("COLUMNS")
    in_int = False
    for j, name in enumerate(m.names):
        if m.integer[j] != in_int:
            lines.append(f" MARK{j} 'MARKER' '{'INTORG' if m.integer[j] else 'INTEND'}'")
            in_int = bool(m.integer[j])
        lines.append(f" {name} obj {_num(m.c[j])}")
        lines += [f" {name} c{i} {_num(m.A[i, j])}" for i in np.flatnonzero(m.A[:, j])]
    if in_int:
        lines.append(" MARKEND 'MARKER' 'INTEND'")
    lines.append("RHS")
    lines += [f" rhs c{i} {_num(v)}" for i, v in enumerate(m.b) if v != 0]
    lines.append("BOUNDS")
    for j, name in enumerate(m.names):
        lo, hi = m.lb[j], m.ub[j]
        if np.isneginf(lo) and np.isposinf(hi):
            lines.append(f" FR bnd {name}")
            continue
        lines.append(f" MI bnd {name}" if np.isneginf(lo) else f" LO bnd {name} {_num(lo)}")
        if not np.isposinf(hi):
            lines.append(f" UP bnd {name} {_num(hi)}")
    lines.append("ENDATA")
    return "\n".join(lines) + "\n"


# -- families -----------------------------------------------------------------------------------------------


def knapsack(
    rng: np.random.Generator,
    items: int = 30,
    rows: int = 1,
    correlation: str = "strong",
    value_range: int = 1000,
    capacity_frac: float = 0.5,
    integral: bool = True,
) -> MIP:
    """0-1 (multi-dimensional) knapsack, maximise value. Pisinger's correlation classes: weights w ~ U{1..R};
    ``weak``: v = w + U{-R/10..R/10} (clipped to >= 1); ``strong``: v = w + R/10; ``inverse``: w = v + R/10.
    Each row has its own weights (correlated with the common values); capacity = ``capacity_frac`` of the row's
    total weight. ``integral=False`` adds U(0,1) to every weight and value, which makes LP optima unique (ties
    in value/weight ratios have probability zero) — used by the tests that compare with a reference B&B."""
    if items < 1 or rows < 1 or value_range < 10 or not 0 < capacity_frac < 1:
        raise ValueError("knapsack needs items >= 1, rows >= 1, value_range >= 10, 0 < capacity_frac < 1")
    r = value_range
    base = rng.integers(1, r + 1, size=items).astype(float)
    w = rng.integers(1, r + 1, size=(rows, items)).astype(float)
    w[0] = base
    if correlation == "weak":
        v = np.maximum(1.0, base + rng.integers(-(r // 10), r // 10 + 1, size=items))
    elif correlation == "strong":
        v = base + r // 10
    elif correlation == "inverse":
        v, w[0] = base, base + r // 10
    else:
        raise ValueError(f"correlation must be weak, strong or inverse, got {correlation!r}")
    if rows > 1:  # the other rows correlate with the values too, so no row is trivially loose
        noise = rng.integers(-(r // 20), r // 20 + 1, (rows - 1, items))
        w[1:] = np.maximum(1.0, 0.5 * w[1:] + 0.5 * v[None, :] + noise)
    if not integral:
        v = v + rng.random(items)
        w = w + rng.random(w.shape)
    cap = np.floor(capacity_frac * w.sum(axis=1))
    return MIP(f"knapsack_{items}x{rows}", "max", v, w, ["<="] * rows, cap, 0.0, 1.0, True)


def set_cover(
    rng: np.random.Generator, rows: int = 40, cols: int = 60, density: float = 0.1, max_cost: int = 100
) -> MIP:
    """Balas–Ho set cover: min c·x, every row covered (A x >= 1), x binary. Each column covers a random
    ``density`` fraction of rows; every row is then made to be covered by at least two columns."""
    if rows < 1 or cols < 2 or not 0 < density <= 1 or max_cost < 1:
        raise ValueError("set_cover needs rows >= 1, cols >= 2, 0 < density <= 1, max_cost >= 1")
    a = (rng.random((rows, cols)) < density).astype(float)
    for i in np.flatnonzero(a.sum(axis=1) < 2):  # top up sparse rows to two distinct covering columns
        missing = 2 - int(a[i].sum())
        free = np.flatnonzero(a[i] == 0)
        a[i, rng.choice(free, size=missing, replace=False)] = 1.0
    c = rng.integers(1, max_cost + 1, size=cols).astype(float)
    return MIP(f"setcover_{rows}x{cols}", "min", c, a, [">="] * rows, np.ones(rows), 0.0, 1.0, True)


def facility_location(
    rng: np.random.Generator, facilities: int = 6, customers: int = 12, ratio: float = 3.0
) -> MIP:
    """Capacitated facility location (Cornuéjols–Sridharan–Thizy): points in the unit square, demands
    d ~ U{5..35}, capacities s ~ U{10..160} rescaled so that total capacity = ``ratio`` × total demand, fixed
    costs f ~ U{0..90} + U{100..110}·sqrt(s), transport cost 10·distance per unit of demand. Variables: y_i
    (open, binary) then x_ij (fraction of customer j served by i, continuous). Rows: demand Σ_i x_ij = 1,
    capacity Σ_j d_j x_ij <= s_i y_i, linking x_ij <= y_i, and the valid Σ_i s_i y_i >= Σ_j d_j."""
    if facilities < 1 or customers < 1 or ratio < 1:
        raise ValueError("facility_location needs facilities >= 1, customers >= 1, ratio >= 1")
    fi, cu = rng.random((facilities, 2)), rng.random((customers, 2))
    d = rng.integers(5, 36, size=customers).astype(float)
    s = rng.integers(10, 161, size=facilities).astype(float)
    s = np.ceil(s * ratio * d.sum() / s.sum())
    f = rng.integers(0, 91, size=facilities) + rng.integers(100, 111, size=facilities) * np.sqrt(s)
    f = np.round(f, 2)
    cost = np.round(10.0 * np.linalg.norm(fi[:, None, :] - cu[None, :, :], axis=2) * d[None, :], 3)
    nf, nc = facilities, customers
    n = nf + nf * nc
    xcol = lambda i, j: nf + i * nc + j  # noqa: E731 - column of x_ij
    rows_a, kinds, b = [], [], []
    for j in range(nc):  # demand
        r = np.zeros(n)
        r[[xcol(i, j) for i in range(nf)]] = 1.0
        rows_a.append(r), kinds.append("="), b.append(1.0)
    for i in range(nf):  # capacity
        r = np.zeros(n)
        r[[xcol(i, j) for j in range(nc)]] = d
        r[i] = -s[i]
        rows_a.append(r), kinds.append("<="), b.append(0.0)
    for i in range(nf):  # linking (the strong formulation)
        for j in range(nc):
            r = np.zeros(n)
            r[xcol(i, j)], r[i] = 1.0, -1.0
            rows_a.append(r), kinds.append("<="), b.append(0.0)
    r = np.zeros(n)
    r[:nf] = s
    rows_a.append(r), kinds.append(">="), b.append(float(d.sum()))
    c = np.concatenate([f, cost.ravel()])
    names = [f"y{i}" for i in range(nf)] + [f"x{i}_{j}" for i in range(nf) for j in range(nc)]
    integer = np.arange(n) < nf
    return MIP(f"facility_{nf}x{nc}", "min", c, np.array(rows_a), kinds, np.array(b), 0.0, 1.0, integer, names)


GENERATORS = {"knapsack": knapsack, "setcover": set_cover, "facility": facility_location}


def generator_options(family: str) -> dict[str, Any]:
    """The options of a family's generator with their defaults (``{"items": 30, "rows": 1, ...}``)."""
    params = list(inspect.signature(GENERATORS[family]).parameters.values())[1:]  # after rng
    return {p.name: p.default for p in params}


def generate(family: str, rng: np.random.Generator, **kwargs) -> MIP:
    """One instance of ``family`` (knapsack | setcover | facility) with the generator's keyword arguments."""
    if family not in GENERATORS:
        raise ValueError(f"unknown instance family {family!r}; families: {', '.join(FAMILIES)}")
    return GENERATORS[family](rng, **kwargs)


def write_family(
    family: str, directory: str | Path, count: int, seed: int = 0, fmt: str = "lp", **kwargs
) -> list[Path]:
    """Write ``count`` instances of a family as ``<family>_<k>.<fmt>`` into ``directory``; instance k is drawn
    from its own stream (seed, k), so the first instances do not change when ``count`` grows."""
    if fmt not in ("lp", "mps"):
        raise ValueError(f"fmt must be 'lp' or 'mps', got {fmt!r}")
    out = []
    for k in range(count):
        mip = generate(family, np.random.default_rng([seed, k]), **kwargs)
        mip.name = f"{family}_{k}"
        out.append(mip.write(Path(directory) / f"{family}_{k}.{fmt}"))
    return out
