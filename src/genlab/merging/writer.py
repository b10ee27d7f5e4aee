"""Streaming safetensors output: the shard layout and every header are fixed before the first tensor is merged
(names, dtypes and shapes are known from the inputs' headers), so each merged tensor is written to disk as soon
as it exists and never held with the others.

Shards follow mergekit's rule (tensors in merge order; a new shard starts when the next tensor would overflow
``max_shard_bytes``) and Hugging Face's names: one shard is ``model.safetensors``; several are
``model-00001-of-0000N.safetensors`` with ``model.safetensors.index.json``. The output folder is built under a
temporary name next to the destination and renamed into place only when complete (:func:`atomic_dir`).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import struct
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from genlab.merging.checkpoint import INDEX_NAME, SINGLE_NAME, ST_CODES, TensorInfo
from genlab.merging.errors import MergeError

DEFAULT_SHARD_BYTES = 5_000_000_000  # mergekit's --out-shard-size default ("5B")


@dataclass
class Shard:
    filename: str
    tensors: list[TensorInfo] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


def plan_shards(tensors: Sequence[TensorInfo], max_shard_bytes: int = DEFAULT_SHARD_BYTES) -> list[Shard]:
    """Split tensors (in write order) into shards and name them the Hugging Face way."""
    shards: list[Shard] = []
    current: Shard | None = None
    for t in tensors:
        if current is None or (current.tensors and max_shard_bytes > 0 and current.nbytes + t.nbytes > max_shard_bytes):
            current = Shard("")
            shards.append(current)
        current.tensors.append(t)
    if not shards:
        shards.append(Shard(""))
    n = len(shards)
    for i, s in enumerate(shards):
        s.filename = SINGLE_NAME if n == 1 else f"model-{i + 1:05d}-of-{n:05d}.safetensors"
    return shards


def _header(shard: Shard, metadata: dict[str, str]) -> bytes:
    entries: dict[str, object] = {"__metadata__": metadata}
    offset = 0
    for t in shard.tensors:
        entries[t.name] = {
            "dtype": ST_CODES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + t.nbytes],
        }
        offset += t.nbytes
    raw = json.dumps(entries, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # safetensors pads the header to 8 bytes so the data stays aligned
    return struct.pack("<Q", len(raw)) + raw


class ShardedWriter:
    """Write tensors, in the planned order, into the planned shards of ``folder``."""

    def __init__(self, folder: Path, shards: list[Shard], metadata: dict[str, str] | None = None):
        self.folder = Path(folder)
        self.shards = shards
        self.metadata = {"format": "pt", **(metadata or {})}
        self._order = [(i, t) for i, s in enumerate(shards) for t in s.tensors]
        self._next = 0
        self._fh = None
        self._shard = -1

    def write(self, name: str, tensor: torch.Tensor) -> None:
        if self._next >= len(self._order):
            raise MergeError(f"tensor {name!r} was not planned for the output")
        shard_index, info = self._order[self._next]
        if name != info.name or tensor.dtype != info.dtype or tuple(tensor.shape) != info.shape:
            raise MergeError(
                f"output tensor {name!r} {tuple(tensor.shape)} {tensor.dtype} does not match the plan "
                f"({info.name!r} {info.shape} {info.dtype})"
            )
        if shard_index != self._shard:
            self._open(shard_index)
        data = tensor.detach().to("cpu").contiguous().reshape(-1)
        if data.numel():
            self._fh.write(memoryview(data.view(torch.uint8).numpy()))
        self._next += 1
        if self._next == len(self._order) or self._order[self._next][0] != shard_index:
            self._close()

    def _open(self, index: int) -> None:
        self._close()
        self._shard = index
        shard = self.shards[index]
        self._fh = open(self.folder / shard.filename, "wb")  # noqa: SIM115 (closed in _close, across calls)
        self._fh.write(_header(shard, self.metadata))

    def _close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None

    def finish(self) -> None:
        """Check every planned tensor was written; write the index for a sharded output."""
        self._close()
        if self._next != len(self._order):
            missing = self._order[self._next][1].name
            raise MergeError(f"the merge stopped before writing {missing!r}")
        if not self._order:  # an empty checkpoint is still a valid file
            self._open(0)
            self._close()
        if len(self.shards) > 1:
            index = {
                "metadata": {"total_size": sum(s.nbytes for s in self.shards)},
                "weight_map": {t.name: s.filename for s in self.shards for t in s.tensors},
            }
            (self.folder / INDEX_NAME).write_text(json.dumps(index, indent=2) + "\n")

    def abort(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class BackgroundWriter:
    """A :class:`ShardedWriter` whose writes run on one helper thread, so writing tensor k (a file write and,
    at a shard's end, its fsync: both release the GIL) overlaps merging tensor k + 1. At most one write is in
    flight: ``write`` first waits for the previous one (re-raising its error), so besides the tensor being
    merged only one finished tensor is held. ``done(name)`` runs on the caller's thread once that tensor is
    on disk."""

    def __init__(self, writer: ShardedWriter):
        from concurrent.futures import ThreadPoolExecutor

        self.writer = writer
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="genlab-write")
        self._pending = None  # (future, name, done callback)

    def _wait(self) -> None:
        if self._pending is not None:
            future, name, done = self._pending
            self._pending = None
            future.result()
            if done is not None:
                done(name)

    def write(self, name: str, tensor: torch.Tensor, done=None) -> None:
        self._wait()
        self._pending = (self._pool.submit(self.writer.write, name, tensor), name, done)

    def finish(self) -> None:
        self._wait()
        self.writer.finish()

    def abort(self) -> None:
        """Let a write in flight end (its error, if any, is dropped: the caller is already failing), then close."""
        if self._pending is not None:
            self._pending[0].exception()
            self._pending = None
        self._pool.shutdown(wait=True)
        self.writer.abort()


@contextmanager
def atomic_dir(dest: str | Path, force: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary folder next to ``dest``; on success rename it to ``dest``, on any error delete
    it, so ``dest`` is never left half written. An existing non-empty ``dest`` is an error unless ``force``.

    A symlinked ``dest`` stays a link: the folder it points to is the one replaced. The temporary folder's name
    carries the process id (``.NAME.PID.XXXX.tmp``), so a later run removes what a killed run left behind (a
    process that no longer exists) and never touches a running merge's folder."""
    dest = Path(os.path.realpath(dest)) if Path(dest).is_symlink() else Path(dest)
    if dest.exists() and not dest.is_dir():
        raise MergeError(f"output {dest} exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise MergeError(f"output folder {dest} exists and is not empty (use --force to replace it)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    clear_leftovers(dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.{os.getpid()}.", suffix=".tmp", dir=dest.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        old = None
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.{os.getpid()}.", suffix=".old", dir=dest.parent))
            os.rmdir(old)
            os.rename(dest, old)
        os.rename(tmp, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def clear_leftovers(dest: Path) -> list[Path]:
    """Remove ``.NAME.PID.XXXX.tmp`` / ``.old`` siblings of ``dest`` whose process is gone (killed merges)."""
    removed = []
    for p in dest.parent.glob(f".{glob.escape(dest.name)}.*"):
        rest = p.name[len(dest.name) + 2 :]
        pid, _, tail = rest.partition(".")
        if not (pid.isdigit() and tail.endswith((".tmp", ".old")) and not p.is_symlink() and p.is_dir()):
            continue
        if _alive(int(pid)):
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
