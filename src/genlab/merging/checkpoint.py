"""Tensor sources for merging: a safetensors checkpoint on disk (one file, or a Hugging Face model folder with
``model.safetensors`` or sharded ``model-0000x-of-0000y.safetensors`` + ``model.safetensors.index.json``), or an
in-memory state dict. Both give names, dtypes and shapes without loading data, and load one tensor at a time:
on disk by reading that tensor's bytes (or through ``safetensors.safe_open``'s memory map), so a merge holds about
one tensor per input.
"""

from __future__ import annotations

import json
import struct
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from genlab.merging.errors import CheckpointError

# safetensors dtype codes -> torch dtypes (those torch can hold)
ST_DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
}
ST_CODES = {v: k for k, v in ST_DTYPES.items()}
INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit

# Output embeddings that a checkpoint with tied embeddings omits, and where mergekit then reads them from
# (the architectures' "tied_names"). Used only when some models have the tensor and others do not.
TIED_FALLBACKS: dict[str, tuple[str, ...]] = {
    "lm_head.weight": (
        "model.embed_tokens.weight",
        "transformer.wte.weight",
        "wte.weight",
        "model.language_model.embed_tokens.weight",
        "model.lm_head.weight",
        "backbone.embeddings.weight",
        "decoder.embed_tokens.weight",
        "encoder.embed_tokens.weight",
        "shared.weight",
    ),
    "decoder.embed_tokens.weight": ("encoder.embed_tokens.weight", "lm_head.weight", "shared.weight"),
    "encoder.embed_tokens.weight": ("decoder.embed_tokens.weight", "lm_head.weight", "shared.weight"),
    "cls.predictions.decoder.weight": ("bert.embeddings.word_embeddings.weight",),
    "output.weight": ("model.tok_embeddings.weight",),
    "lm_head.decoder.weight": ("roberta.embeddings.word_embeddings.weight",),
    "vocab_projector.weight": ("distilbert.embeddings.word_embeddings.weight",),
}


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    offset: int = 0  # byte offset of the data in its file (safetensors sources)

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * self.dtype.itemsize


class Source(ABC):
    """Something tensors can be read from by name."""

    label: str
    infos: dict[str, TensorInfo]

    @abstractmethod
    def load(self, name: str) -> torch.Tensor:
        """The tensor called ``name``."""

    def close(self) -> None:  # noqa: B027 - a deliberate no-op default; file-backed sources override it
        """Release open files (a no-op for in-memory sources)."""

    def resolve(self, name: str) -> str | None:
        """The name this source stores ``name`` under: itself, or a tied embedding (see ``TIED_FALLBACKS``)."""
        if name in self.infos:
            return name
        return next((alt for alt in TIED_FALLBACKS.get(name, ()) if alt in self.infos), None)


class StateDictSource(Source):
    """An in-memory ``{name: tensor}`` mapping (a ``state_dict()``)."""

    def __init__(self, state: Mapping[str, torch.Tensor], label: str = "state dict"):
        self.label = label
        self.state = state
        bad = [k for k, v in state.items() if not isinstance(v, torch.Tensor)]
        if bad:
            raise CheckpointError(f"{label}: entry {bad[0]!r} is not a tensor")
        self.infos = {k: TensorInfo(k, v.dtype, tuple(v.shape)) for k, v in state.items()}

    def load(self, name: str) -> torch.Tensor:
        return self.state[name]


def read_header(path: Path) -> dict[str, TensorInfo]:
    """Names, dtypes and shapes from a safetensors file's JSON header (no tensor data is read)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER:
                raise CheckpointError(f"{path}: not a safetensors file (header length {n} is implausible)")
            raw = fh.read(n)
            fh.seek(0, 2)
            size = fh.tell()
    except OSError as exc:
        raise CheckpointError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CheckpointError(f"{path}: not a safetensors file (its header is not JSON)") from None
    except RecursionError:
        raise CheckpointError(f"{path}: not a safetensors file (its header is nested too deeply)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a safetensors file (its header is not a JSON object)")
    return _parse_header(path, header, 8 + n, size)


def _is_count(x: object) -> bool:
    return type(x) is int and x >= 0


def _parse_header(path: Path, header: dict, start: int, size: int) -> dict[str, TensorInfo]:
    """Validate every entry as the safetensors format specifies: ``dtype`` a known code, ``shape`` a list of
    non-negative integers, ``data_offsets`` two integers [begin, end] with end − begin = the tensor's bytes, inside
    the file; ``__metadata__`` a string-to-string map. Anything else (fractions, strings, negative sizes) is an
    error, never truncated or coerced."""
    infos = {}
    for name, entry in header.items():
        if name == "__metadata__":
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise CheckpointError(f"{path}: malformed header (__metadata__ must map strings to strings)")
            continue
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise CheckpointError(f"{path}: malformed header entry for tensor {name!r} "
                                  "(needs exactly dtype, shape, data_offsets)")  # fmt: skip
        code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not isinstance(shape, list) or not all(_is_count(s) for s in shape):
            raise CheckpointError(f"{path}: tensor {name!r} has shape {shape!r}; a shape is a list of whole numbers")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_count(o) for o in offsets):
            raise CheckpointError(
                f"{path}: tensor {name!r} has data_offsets {offsets!r}; they are two whole numbers [begin, end]"
            )
        if not isinstance(code, str) or code not in ST_DTYPES:
            raise CheckpointError(f"{path}: tensor {name!r} has dtype {code!r}, which genlab merge cannot read")
        begin, end = offsets
        info = TensorInfo(name, ST_DTYPES[code], tuple(shape), start + begin)
        if end - begin != info.nbytes or start + end > size:
            raise CheckpointError(f"{path}: tensor {name!r} has inconsistent offsets (truncated or corrupt file?)")
        infos[name] = info
    return infos


class SafetensorsSource(Source):
    """A safetensors checkpoint: one ``.safetensors`` file or a Hugging Face model folder.

    ``mmap=True`` reads each tensor through ``safetensors.safe_open`` (a memory map opened and released per
    tensor, so mapped pages do not pile up in the process's resident set); ``mmap=False`` (default) reads the
    tensor's bytes straight into a fresh torch buffer at the offset the header gives, one copy, no mapping.
    Both return identical tensors (tested)."""

    def __init__(self, path: str | Path, label: str | None = None, mmap: bool = False):
        self.path = Path(path)
        self.label = label or str(path)
        self.mmap = mmap
        self.files = self._files()
        self.infos: dict[str, TensorInfo] = {}
        self.file_of: dict[str, Path] = {}
        for file, names in self.files.items():
            infos = read_header(file)
            missing = [n for n in names if n not in infos] if names is not None else []
            if missing:
                raise CheckpointError(f"{self.label}: the index places {missing[0]!r} in {file.name}, which lacks it")
            for name, info in infos.items():
                if names is None or name in names:
                    self.infos[name] = info
                    self.file_of[name] = file

    @property
    def folder(self) -> Path | None:
        return self.path if self.path.is_dir() else None

    def _files(self) -> dict[Path, set[str] | None]:
        """Data files and, for an index, the tensor names each must hold."""
        p = self.path
        if p.is_file():
            if p.name.endswith(".index.json"):
                return _index_files(p)
            return {p: None}
        if not p.exists():
            raise CheckpointError(f"model {self.label!r}: no such file or folder (genlab merge never downloads)")
        if (p / INDEX_NAME).exists():
            return _index_files(p / INDEX_NAME)
        if (p / SINGLE_NAME).exists():
            return {p / SINGLE_NAME: None}
        others = sorted(q.name for q in p.glob("*.safetensors"))
        if len(others) == 1:
            return {p / others[0]: None}
        if (p / "pytorch_model.bin").exists() or (p / "pytorch_model.bin.index.json").exists():
            raise CheckpointError(
                f"{self.label}: only pickle weights (pytorch_model.bin); genlab merge reads safetensors"
            )
        raise CheckpointError(f"{self.label}: no {SINGLE_NAME} or {INDEX_NAME} in this folder")

    def load(self, name: str) -> torch.Tensor:
        file, info = self.file_of[name], self.infos[name]
        try:
            if self.mmap:
                from safetensors import safe_open

                with safe_open(str(file), framework="pt") as handle:
                    return handle.get_tensor(name)
            return _read_tensor(file, info)
        except CheckpointError:
            raise
        except Exception as exc:  # OSError, or safetensors' own error types for corrupt data
            raise CheckpointError(f"cannot read tensor {name!r} from {file}: {exc}") from None


def _read_tensor(file: Path, info: TensorInfo) -> torch.Tensor:
    """Read one tensor's bytes into a new tensor (little-endian, as safetensors stores them)."""
    out = torch.empty(info.shape, dtype=info.dtype)
    if out.numel() == 0:
        return out
    view = memoryview(out.reshape(-1).view(torch.uint8).numpy())
    got = 0
    with open(file, "rb", buffering=0) as fh:
        fh.seek(info.offset)
        while got < len(view):  # one read returns at most ~2 GiB on Linux
            n = fh.readinto(view[got:])
            if not n:
                raise CheckpointError(f"{file}: tensor {info.name!r} is truncated ({got} of {len(view)} bytes)")
            got += n
    return out


def _index_files(index: Path) -> dict[Path, set[str] | None]:
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
        if not isinstance(weight_map, dict):
            raise TypeError
    except OSError as exc:
        raise CheckpointError(f"cannot read {index}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
        raise CheckpointError(f"{index}: not a safetensors index (needs a 'weight_map' object)") from None
    files: dict[Path, set[str]] = {}
    for name, file in weight_map.items():
        files.setdefault(index.parent / str(file), set()).add(name)
    for file in files:
        if not file.exists():
            raise CheckpointError(f"{index} names the shard {file.name}, which does not exist")
    return dict(sorted(files.items()))


def open_source(model: str | Path | Mapping[str, torch.Tensor] | torch.nn.Module, label: str | None = None) -> Source:
    """A :class:`Source` for a path (file or folder), a state dict or a module."""
    if isinstance(model, torch.nn.Module):
        return StateDictSource(model.state_dict(), label or type(model).__name__)
    if isinstance(model, Mapping):
        return StateDictSource(model, label or "state dict")
    return SafetensorsSource(model, label)
