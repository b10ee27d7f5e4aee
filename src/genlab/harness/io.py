"""Atomic file writes and JSON conversion of numpy / torch values."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same directory, then rename: readers never see half a file."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno is not None:  # name the file asked for, never the temp file
            raise type(exc)(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_json(path: Path, obj: Any) -> None:
    """Strict JSON (no NaN / Infinity tokens: non-finite numbers are written as null)."""
    text = json.dumps(to_jsonable(obj), indent=2, sort_keys=False, allow_nan=False)
    atomic_write_bytes(path, (text + "\n").encode())


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def flat_scalars(tree: Any, prefix: str = "") -> dict[str, float]:
    """Scalar leaves (numbers and bools) of nested metrics as ``a/b/c -> float``; lists and strings are left out."""
    out: dict[str, float] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_scalars(value, name + "/"))
        elif isinstance(value, int | float):
            try:
                number = float(value)  # an integer past 1e308 (a hand-edited file) is not a scalar metric
            except OverflowError:
                continue
            if math.isfinite(number):
                out[name] = number
    return out


def to_jsonable(obj: Any) -> Any:
    """numpy / torch scalars and arrays to plain lists and numbers; NaN and ±inf become None (JSON null), so
    what a study returns, what is stored and what claims are checked on are the same values."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "detach"):  # torch tensor
        obj = obj.detach().cpu().numpy()
    if hasattr(obj, "tolist"):  # numpy array or scalar
        return to_jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def plain(v: Any) -> Any:
    """A numpy / torch scalar as a Python number, an array as a list; anything else as it is."""
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return v.item()
    if hasattr(v, "tolist"):
        return v.tolist()
    return v


def fmt_number(v: Any, digits: int = 3) -> str:
    """Numbers rounded to meaningful digits for people; everything else as text."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v):
        return str(v)
    if 10**digits <= abs(v) < 1e6:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"
