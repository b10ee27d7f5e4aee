"""Reading the files people's tools write: JSONL / JSON, Parquet / Arrow, Hugging Face ``datasets`` saved to disk,
lm-evaluation-harness ``samples_*.jsonl`` and inspect_ai eval logs (``.eval`` zip or ``.json``).

:func:`read_records` turns any of them into plain rows with the IFEval field names (``key``, ``prompt``,
``instruction_id_list``, ``kwargs``, ``messages``, ``ground_truth``, ``response``), each with a ``where`` string
that names the file and the record ("f.jsonl:12", "f.parquet: row 12", "log.eval: sample 1001 epoch 1"), so that
:mod:`genlab.ifbench.data` can report a bad field in one line. :func:`detect_format` looks at the content, not
the file name.

Formats, as their tools write them:

* **lm-eval** (``lm_eval --log_samples``): one JSON object per line with ``doc`` (the dataset row: ``key``,
  ``prompt``, ``instruction_id_list``, ``kwargs``), ``doc_id``, ``resps`` (``[[text]]``) and ``filtered_resps``
  (``[text]``); the response lm-eval scores is ``filtered_resps[0]``.
* **inspect** (inspect_ai logs): a ``.eval`` zip whose members ``samples/<id>_epoch_<n>.json`` hold one sample each
  (zstd-compressed by recent inspect_ai: reading those needs the ``zstandard`` package, which inspect_ai itself
  installs), or a ``.json`` log with a ``samples`` list. A sample's ``metadata`` carries ``instruction_id_list``
  and ``kwargs`` (a list, or inspect_evals' dict keyed by position) and ``prompt``; ``input`` is the prompt (a
  string or a list of messages) and ``output.completion`` the response.
* **parquet** / **arrow** / **hf-dataset**: one row per record with the JSONL field names (needs ``pyarrow``;
  ``datasets`` for a folder written by ``Dataset.save_to_disk``).
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["FORMATS", "DataError", "detect_format", "read_records"]

FORMATS = ("auto", "jsonl", "parquet", "lm-eval", "inspect")
_ZSTD = 93  # zip compression method id of Zstandard


class DataError(ValueError):
    """A malformed or unreadable input file; the message names the file, the record and the field."""


def _missing(pkg: str, what: str) -> DataError:
    return DataError(f"reading {what} needs the '{pkg}' package: pip install 'genlab[ifbench-formats]' (or {pkg})")


# ------------------------------------------------------------------------------------------------ detection


def detect_format(path: str | Path) -> str:
    """"jsonl", "parquet", "arrow", "hf-dataset", "lm-eval" or "inspect", from the content of ``path``."""
    p = Path(path)
    if p.is_dir():
        if (p / "dataset_info.json").exists() or (p / "state.json").exists() or (p / "dataset_dict.json").exists():
            return "hf-dataset"
        raise DataError(f"{p}: a folder, but not a dataset saved with datasets' save_to_disk (no dataset_info.json)")
    if not p.exists():
        raise DataError(f"{p}: file not found")
    with open(p, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PK\x03\x04"):
        return "inspect"
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "arrow"
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"{") and re.search(rb'"doc"\s*:', _first_line(p)) and b'"doc_id"' in _first_line(p):
        return "lm-eval"
    if text.startswith(b"{") and _looks_like_inspect_json(p):
        return "inspect"
    return "jsonl"


def _first_line(p: Path) -> bytes:
    with open(p, "rb") as f:
        return f.readline(1 << 22)


def _looks_like_inspect_json(p: Path) -> bool:
    """An inspect_ai .json log is one object with ``version``, ``eval`` and ``samples`` (not a JSONL row)."""
    head = _first_line(p)
    if head.rstrip().endswith(b"}"):  # a complete object on the first line: JSONL, unless it is a whole log
        try:
            row = json.loads(head)
        except (ValueError, RecursionError):  # not JSON, or too deep for anyone: the JSONL reader says which
            return False
        return isinstance(row, dict) and "eval" in row and "samples" in row
    with open(p, "rb") as f:
        start = f.read(65536)
    return b'"eval"' in start and b'"version"' in start


# ------------------------------------------------------------------------------------------------ decoding


def read_text(p: Path) -> str:
    """The file as text; a non-UTF-8 byte is one :class:`DataError` naming the file and the line."""
    data = p.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise DataError(f"{p}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def _json_lines(p: Path) -> Iterator[tuple[str, dict]]:
    text = read_text(p)
    if p.suffix == ".json" and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{p}: invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
        for i, row in enumerate(data, 1):
            if not isinstance(row, dict):
                raise DataError(f"{p}: item {i}: expected a JSON object, got {type(row).__name__}")
            yield f"{p}: item {i}", row
        return
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{p}:{i}: invalid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(row, dict):
            raise DataError(f"{p}:{i}: expected a JSON object, got {type(row).__name__}")
        yield f"{p}:{i}", row


# ------------------------------------------------------------------------------------------------ tables


def _table_rows(table: Any, p: Path) -> Iterator[tuple[str, dict]]:
    for i, row in enumerate(table.to_pylist(), 1):
        yield f"{p}: row {i}", row


def _parquet(p: Path) -> Iterator[tuple[str, dict]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise _missing("pyarrow", "Parquet files") from None
    try:
        table = pq.read_table(p)
    except Exception as e:  # pyarrow raises its own error types for damaged files
        raise DataError(f"{p}: not a readable Parquet file ({type(e).__name__}: {e})") from None
    yield from _table_rows(table, p)


def _arrow(p: Path) -> Iterator[tuple[str, dict]]:
    try:
        import pyarrow as pa
        import pyarrow.ipc as ipc
    except ImportError:
        raise _missing("pyarrow", "Arrow files") from None
    try:
        with pa.memory_map(str(p)) as src:
            try:
                table = ipc.open_file(src).read_all()
            except pa.ArrowInvalid:
                src.seek(0)
                table = ipc.open_stream(src).read_all()  # datasets' cache files are Arrow streams
    except Exception as e:
        raise DataError(f"{p}: not a readable Arrow file ({type(e).__name__}: {e})") from None
    yield from _table_rows(table, p)


def _hf_dataset(p: Path) -> Iterator[tuple[str, dict]]:
    try:
        import datasets
    except ImportError:
        raise _missing("datasets", "a Hugging Face dataset folder") from None
    try:
        ds = datasets.load_from_disk(str(p))
    except Exception as e:
        raise DataError(f"{p}: not a dataset saved with save_to_disk ({type(e).__name__}: {e})") from None
    if isinstance(ds, datasets.DatasetDict):
        if len(ds) != 1:
            raise DataError(f"{p}: a DatasetDict with splits {sorted(ds)}; give the folder of one split")
        ds = next(iter(ds.values()))
    for i, row in enumerate(ds, 1):
        yield f"{p}: row {i}", dict(row)


# ------------------------------------------------------------------------------------------------ lm-eval


def _lm_eval(p: Path) -> Iterator[tuple[str, dict]]:
    for where, row in _json_lines(p):
        doc = row.get("doc")
        if not isinstance(doc, dict):
            raise DataError(f"{where}: field 'doc' missing or not an object (an lm-eval samples file has one per line)")
        out = dict(doc)
        resp = row.get("filtered_resps", row.get("resps"))
        while isinstance(resp, list) and resp:
            resp = resp[0]  # filtered_resps = [text]; resps = [[text]]
        if resp is not None:
            if not isinstance(resp, str):
                raise DataError(f"{where}: field 'filtered_resps' must hold a string, got {type(resp).__name__}")
            out["response"] = resp
        out.setdefault("key", row.get("doc_id"))
        yield f"{where} (doc_id {row.get('doc_id')})", out


# ------------------------------------------------------------------------------------------------ inspect


MAX_MEMBER_BYTES = 256 * 2**20  # one decompressed sample of an inspect .eval log (a zip bomb stops here)


def _too_big(p: Path, info: zipfile.ZipInfo) -> DataError:
    return DataError(f"{p}: member {info.filename} decompresses to more than {MAX_MEMBER_BYTES // 2**20} MiB "
                     "(the most genlab reads from one sample); is it an inspect log?")


def _zip_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, p: Path) -> bytes:
    """One member's bytes, decompressed, never more than MAX_MEMBER_BYTES (whatever its header declares)."""
    if info.compress_type != _ZSTD:
        with z.open(info) as fh:
            data = fh.read(MAX_MEMBER_BYTES + 1)
        if len(data) > MAX_MEMBER_BYTES:
            raise _too_big(p, info)
        return data
    raw = _raw_member(z, info)
    try:
        import zstandard
    except ImportError:
        try:
            from compression import zstd  # Python >= 3.14

            data = zstd.ZstdDecompressor().decompress(raw, max_length=MAX_MEMBER_BYTES + 1)
            if len(data) > MAX_MEMBER_BYTES:
                raise _too_big(p, info) from None
            return data
        except ImportError:
            raise DataError(f"{p}: this inspect log is zstd-compressed; reading it needs the 'zstandard' package "
                            "(inspect_ai installs it), or convert it with `inspect log convert --to json`") from None
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    data = reader.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise _too_big(p, info)
    return data


def _raw_member(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The stored (compressed) bytes of a member: after its local header, ``compress_size`` bytes."""
    import struct

    fp = z.fp
    assert fp is not None
    fp.seek(info.header_offset)
    header = fp.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    return fp.read(info.compress_size)


def _inspect_samples(p: Path) -> Iterator[tuple[str, dict]]:
    if zipfile.is_zipfile(p):
        try:
            with zipfile.ZipFile(p) as z:
                names = sorted((i for i in z.infolist() if i.filename.startswith("samples/")), key=_sample_order)
                for info in names:
                    try:
                        sample = json.loads(_zip_member(z, info, p))
                    except DataError:
                        raise
                    except (ValueError, zipfile.BadZipFile) as e:
                        raise DataError(f"{p}: member {info.filename}: invalid JSON ({e})") from None
                    yield f"{p}: {info.filename}", sample
        except zipfile.BadZipFile as e:
            raise DataError(f"{p}: damaged .eval archive ({e})") from None
        return
    try:
        log = json.loads(read_text(p))
    except json.JSONDecodeError as e:
        raise DataError(f"{p}: invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    samples = log.get("samples") if isinstance(log, dict) else None
    if not isinstance(samples, list):
        raise DataError(f"{p}: an inspect log needs a 'samples' list (was it written with samples?)")
    for i, sample in enumerate(samples, 1):
        yield f"{p}: samples[{i - 1}]", sample


def _sample_order(info: zipfile.ZipInfo) -> tuple:
    m = re.match(r"samples/(.*)_epoch_(\d+)\.json$", info.filename)
    if not m:
        return (1, info.filename)
    sid = m.group(1)
    return (0, int(m.group(2)), (0, int(sid)) if sid.isdigit() else (1, sid))


def _message_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return None


def _inspect(p: Path) -> Iterator[tuple[str, dict]]:
    for where, s in _inspect_samples(p):
        if not isinstance(s, dict):
            raise DataError(f"{where}: expected a sample object")
        where = f"{where} (sample {s.get('id')} epoch {s.get('epoch', 1)})"
        meta = s.get("metadata") or {}
        if not isinstance(meta, dict):
            raise DataError(f"{where}: field 'metadata' must be an object")
        out: dict[str, Any] = {"key": s.get("id")}
        for k in ("instruction_id_list", "kwargs", "ground_truth", "key"):
            if k in meta:
                out[k] = meta[k]
        kws = out.get("kwargs")
        if isinstance(kws, dict) and all(str(k).isdigit() for k in kws):  # inspect_evals: {position: kwargs}
            out["kwargs"] = [kws[k] for k in sorted(kws, key=int)]
        prompt = meta.get("prompt")
        if prompt is None:
            inp = s.get("input")
            prompt = inp if isinstance(inp, str) else None
            if isinstance(inp, list):
                users = [m for m in inp if isinstance(m, dict) and m.get("role") == "user"]
                prompt = _message_text(users[-1].get("content")) if users else None
        out["prompt"] = prompt
        output = s.get("output")
        if isinstance(output, dict):
            resp = output.get("completion")
            if not resp and output.get("choices"):
                resp = _message_text((output["choices"][0].get("message") or {}).get("content"))
            if resp is not None:
                out["response"] = resp
        yield where, out


_READERS = {
    "jsonl": _json_lines,
    "parquet": _parquet,
    "arrow": _arrow,
    "hf-dataset": _hf_dataset,
    "lm-eval": _lm_eval,
    "inspect": _inspect,
}


def read_records(path: str | Path, fmt: str = "auto") -> Iterator[tuple[str, dict]]:
    """(where, row) for every record of ``path`` in format ``fmt`` ("auto": :func:`detect_format`). "parquet"
    also reads Arrow files and dataset folders."""
    p = Path(path)
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not p.exists():
        raise DataError(f"{p}: file not found")
    found = detect_format(p)
    if fmt == "auto" or (fmt == "parquet" and found in ("arrow", "hf-dataset")):
        fmt = found
    elif p.is_dir():
        raise DataError(f"{p}: a folder; give a file (or --format auto for a dataset folder)")
    return _guarded(p, _READERS[fmt](p))


def _guarded(p: Path, rows: Iterator[tuple[str, dict]]) -> Iterator[tuple[str, dict]]:
    """The reader's rows; JSON nested deeper than Python can parse is one DataError naming the file."""
    where = ""
    try:
        for where, row in rows:
            yield where, row
    except RecursionError:
        after = f" (the record after {where})" if where else ""
        raise DataError(f"{p}: JSON nested too deeply to read{after}") from None
