"""Hostile inspect logs built here (issue 29 item 4): ``.eval`` archives whose members are nested far too deep,
hold one huge string, or inflate far past their compressed size, next to good samples; and ``.json`` logs the
same way. Members are written as inspect writes them (zstd) or deflated; the huge ones are streamed, never held.

A good sample of these logs is a conversation without a tool call, scored on :data:`TOOLS` (``--tools``).
"""

from __future__ import annotations

import io
import json
import struct
import warnings
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

#: The zip method inspect writes (zstd), readable once inspect_ai has patched zipfile.
ZSTD = 93
#: The spec the good samples are scored on: a tools list, so a sample without a tool call is a no-tool action.
TOOLS = [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}]


def header(task: str = "notes", sample_ids: Iterable[Any] = (1,)) -> dict[str, Any]:
    """An inspect log header (what ``header.json`` holds) of a finished run of ``task``."""
    ids = list(sample_ids)
    return {
        "version": 2,
        "status": "success",
        "eval": {
            "eval_id": "E1",
            "run_id": "",
            "created": "2026-01-01T00:00:00+00:00",
            "task": task,
            "task_id": "",
            "task_version": 0,
            "dataset": {"name": "d", "samples": len(ids), "sample_ids": ids},
            "model": "m",
            "config": {},
            "packages": {},
        },
        "plan": {"name": "plan", "steps": [], "config": {}},
        "stats": {"started_at": "", "completed_at": ""},
    }


def sample(sample_id: Any, epoch: int = 1, **extra: Any) -> dict[str, Any]:
    """A scored sample (score ``C``) of one user message answered without a tool call."""
    return {
        "id": sample_id,
        "epoch": epoch,
        "input": "hi",
        "target": "",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
        "output": {"model": "", "choices": [], "completion": ""},
        "scores": {"s": {"value": "C"}},
        "metadata": {},
        "store": {},
        "events": [],
        **extra,
    }


def sample_text(sample_id: Any, epoch: int = 1, *, metadata_raw: str = "{}") -> str:
    """A sample's JSON with ``metadata`` replaced by the raw JSON text ``metadata_raw``."""
    text = json.dumps(sample(sample_id, epoch, metadata="\u0000M\u0000"))
    return text.replace(json.dumps("\u0000M\u0000"), metadata_raw)


def write_eval(
    path: Path,
    members: dict[str, str | bytes | Iterable[bytes]],
    *,
    method: int = zipfile.ZIP_DEFLATED,
    head: dict[str, Any] | None = None,
) -> Path:
    """A ``.eval`` archive of ``header.json`` (``head``, default :func:`header`) and ``members`` (text, bytes or
    pieces of bytes streamed into the member), compressed with ``method``."""
    with path.open("wb") as out:
        _archive(out, members, method, head)
    return path


def eval_bytes(
    members: dict[str, str | bytes | Iterable[bytes]], *, method: int = zipfile.ZIP_DEFLATED, head: Any = None
) -> bytes:
    """The bytes of the archive :func:`write_eval` would write."""
    out = io.BytesIO()
    _archive(out, members, method, head)
    return out.getvalue()


def _archive(out: IO[bytes], members: dict[str, str | bytes | Iterable[bytes]], method: int, head: Any) -> None:
    if method == ZSTD:
        import inspect_ai.log  # noqa: F401  (patches zipfile with zstd)
    with zipfile.ZipFile(out, "w", compression=method) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a member name given twice, on purpose
        archive.writestr("header.json", head if isinstance(head, str) else json.dumps(head or header()))
        for name, content in members.items():
            if isinstance(content, str | bytes):
                archive.writestr(name, content)
                continue
            with archive.open(name, "w", force_zip64=True) as member:
                for piece in content:
                    member.write(piece)


def good_members(ids: Iterable[Any]) -> dict[str, str | bytes | Iterable[bytes]]:
    return {f"samples/{i}_epoch_1.json": json.dumps(sample(i)) for i in ids}


def deep_members(sample_id: Any, depth: int) -> dict[str, str | bytes | Iterable[bytes]]:
    """A sample whose metadata is an array nested ``depth`` deep (200,000 deflates to about 3 KB... of brackets)."""
    return {
        f"samples/{sample_id}_epoch_1.json": sample_text(
            sample_id, metadata_raw='{"x": ' + "[" * depth + "]" * depth + "}"
        )
    }


def big_string_members(sample_id: Any, megabytes: int) -> dict[str, str | bytes | Iterable[bytes]]:
    """A sample holding one string of ``megabytes`` MiB of one letter, streamed (never held whole)."""
    before, after = sample_text(sample_id, metadata_raw='{"x": "\u0000S\u0000"}').split("\u0000S\u0000")

    def pieces() -> Iterable[bytes]:
        yield before.encode()
        chunk = b"a" * (1 << 20)
        for _ in range(megabytes):
            yield chunk
        yield after.encode()

    return {f"samples/{sample_id}_epoch_1.json": pieces()}


def json_log(path: Path, samples: list[str]) -> Path:
    """A ``.json`` log: the header with the raw sample texts ``samples``."""
    head = json.dumps(header(sample_ids=range(len(samples))))
    path.write_text(head[:-1] + ', "samples": [' + ", ".join(samples) + "]}", encoding="utf-8")
    return path


def two_directories(path: Path, shown: bytes, hidden: bytes) -> Path:
    """:func:`two_directories_bytes` written to ``path``."""
    path.write_bytes(two_directories_bytes(shown, hidden))
    return path


def two_directories_bytes(shown: bytes, hidden: bytes) -> bytes:
    """A stored ``.eval`` of ``header.json`` and sample (1, 1) whose end record gives inspect's reader one
    central directory (the sample is ``hidden``: it reads the directory at the offset the record states) and
    zipfile another of the same length (``shown``: it reads the directory ending at the record, and shifts
    every member's offset by the difference, as for data prepended to an archive)."""
    head, name = json.dumps(header()).encode(), b"samples/1_epoch_1.json"
    body, offsets = bytearray(), {}
    for key, member, data in [("hidden", name, hidden), ("header", b"header.json", head), ("shown", name, shown)]:
        offsets[key] = len(body)
        crc = zlib.crc32(data)
        body += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(member), 0)
        body += member + data

    def directory(sample: str, shift: int) -> bytes:
        out = b""
        for member, key, data in [
            (b"header.json", "header", head),
            (name, sample, {"hidden": hidden, "shown": shown}[sample]),
        ]:
            fixed = (20, 20, 0, 0, 0, 0, zlib.crc32(data), len(data), len(data), len(member), 0, 0, 0, 0, 0)
            out += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", *fixed, offsets[key] - shift) + member
        return out

    inspects = directory("hidden", 0)
    zipfiles = directory("shown", len(inspects))  # zipfile adds the shift back: it starts right after inspect's
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 2, 2, len(zipfiles), len(body), 0)
    return bytes(body) + inspects + zipfiles + end
