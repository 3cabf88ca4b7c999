"""Bounds on an inspect log, checked before inspect_ai's reader sees any of it (issue 29 item 4).

inspect_ai's reader has no limits: a 3 KB ``.eval`` whose sample is JSON nested 200,000 deep makes its
streaming parser (ijson's Python backend, which keeps a prefix string per level) allocate tens of GB, and a
260 KB ``.eval`` holding a 256 MB string, or 80 samples of 40 MB in a 3 MB file, keeps it parsing for minutes.
So every JSON document it would parse is checked here first, from the bytes alone:

- a ``.eval`` is a zip archive: each member's size (the size its central directory declares, and the size it
  actually inflates to, read with a cap and never past it), its compression ratio, the archive's total
  expansion, and each member's nesting depth;
- a ``.json`` log is one document: its size and nesting depth.

A sample member over a bound is that sample's input error (:attr:`Archive.unread`); any other member over a
bound (header, journal, summaries, reductions), an archive that expands too far, or a ``.json`` log over a
bound is the whole log's :class:`InputError`. The bounds are :data:`MAX_DOCUMENT_BYTES` (the JSONL line bound),
:data:`MAX_RATIO` with :data:`RATIO_SLACK_BYTES`, and :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import resource
import select
import signal
import struct
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import numpy as np

from prefix_exec import budget
from prefix_exec.errors import InputError
from prefix_exec.records.jsonl import MAX_LINE_CHARS

#: Largest JSON document handed to inspect's reader, bytes: one sample member, any other member, or a whole
#: ``.json`` log (the JSONL line bound; a real tau2 sample with its events is tens of MB).
MAX_DOCUMENT_BYTES = MAX_LINE_CHARS
#: Largest ratio of a member's inflated size to its compressed size (past :data:`RATIO_SLACK_BYTES`), and of the
#: whole archive's inflated size to the file's size (past :data:`MAX_DOCUMENT_BYTES`). Real logs compress 5-25x.
MAX_RATIO = 100
#: Inflated bytes a member may have beyond ``MAX_RATIO`` times its compressed size (small members compress far).
RATIO_SLACK_BYTES = 1 << 20
#: Deepest nesting of arrays and objects in a document (real samples nest a few dozen levels).
MAX_DEPTH = 256
#: zip compression methods read: stored, deflate, and zstd (what inspect writes).
STORED, DEFLATED, ZSTD = 0, 8, 93
#: Largest result a bounded read's child may send back, bytes (pickled; a sample's data is at most a document).
MAX_RESULT_BYTES = 2 * MAX_LINE_CHARS
#: How much is inflated at a time, bytes.
_CHUNK = 1 << 20

#: A JSON string; one never closed (or ending in a lone backslash) runs to the end of the data, as a parser
#: reads it. Without that ending the pattern failed from every quote of an unclosed string of escaped quotes
#: and was retried from the next, each scan to the end: quadratic (80 KB took 40 s, before any bound applied).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # a zip local file header (zipfile.structFileHeader)
#: A sample member's name as inspect writes it and reads it back (``samples/{id}_epoch_{epoch}.json``): an epoch
#: written other than ``str(int)`` (``01``) would send inspect's reader to another member than the one checked.
_SAMPLE = re.compile(r"samples/(.+)_epoch_(0|[1-9][0-9]{0,8})\.json")
#: Why a document holding a NUL byte is refused: UTF-8 JSON never holds one (not even in a string), UTF-16 and
#: UTF-32 JSON always do, and inspect reads a sample with ``json.loads(bytes)``, which takes those too, while
#: :func:`nesting_depth` reads UTF-8 (a character holding a quote byte, U+2200, hid any depth from it).
NOT_UTF8 = "holds a NUL byte: not UTF-8 JSON (UTF-16 or UTF-32 is not read)"
T = TypeVar("T")
HINT = "a log written by 'inspect eval' stays far inside these bounds; is this file from a trusted run?"


@dataclass(frozen=True)
class ReadBounds:
    """The bounds of one read by inspect's reader (a sample of a ``.eval``, a log's header, or a whole ``.json``
    log): wall clock in seconds (``None``: none; ``--rollout-budget``) and memory above the process's size in
    MiB (0: none; ``--call-memory``).

    The read runs in a forked child under ``RLIMIT_AS`` (the process's size plus the bound), and is killed at
    the deadline: inspect's reader calls C code (ijson's yajl backend, zstd, pydantic-core) that cannot be
    interrupted and that may crash rather than raise ``MemoryError`` when an allocation fails, so neither a
    timer nor a cap in this process would be a bound. The child sends back the read's result, pickled; a
    result over :data:`MAX_RESULT_BYTES` is refused. Without ``os.fork`` (Windows) the read runs here,
    bounded only by the size checks.
    """

    seconds: float | None = budget.DEFAULT_ROLLOUT_SECONDS
    memory_mb: int = budget.DEFAULT_CALL_MEMORY_MB

    def run(self, read: Callable[[], T]) -> T:
        """``read()``'s result (picklable), read in a child under the bounds. Raises :class:`ReadFailed` with
        the reason when it raised, ran past a bound, or its child died."""
        if not hasattr(os, "fork"):  # pragma: no cover - Windows
            return read()
        readable, writable = os.pipe()
        with warnings.catch_warnings():  # the child only reads and exits; it takes no lock another thread holds
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            os.close(readable)
            self._child(read, writable)
        os.close(writable)
        try:
            data, late = self._collect(readable, pid)
        except BaseException:  # ^C or a budget while waiting: the child goes too
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        _, status = os.waitpid(pid, 0)
        if late is not None:
            raise ReadFailed(late)
        if os.WIFSIGNALED(status) or not data:
            signal_number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            raise ReadFailed(
                f"the reader died (signal {signal_number}) under the memory bound of {self.memory_mb} MiB "
                "(--call-memory)"
                if signal_number is not None
                else "the reader ended without a result"
            )
        ok, value = pickle.loads(data)
        if not ok:
            raise ReadFailed(value)
        return cast(T, value)

    def _child(self, read: Callable[[], Any], out: int) -> NoReturn:  # pragma: no cover - runs in the child
        try:
            size = budget.address_space()
            if self.memory_mb > 0 and size is not None and hasattr(resource, "RLIMIT_AS"):
                _, hard = resource.getrlimit(resource.RLIMIT_AS)
                resource.setrlimit(resource.RLIMIT_AS, (size + self.memory_mb * 1024 * 1024, hard))
            try:
                payload = pickle.dumps((True, read()), protocol=pickle.HIGHEST_PROTOCOL)
            except MemoryError:
                payload = pickle.dumps((False, self.memory_error()))
            except BaseException as exc:  # every failure of inspect's reader is bad input, said in one line
                payload = pickle.dumps((False, f"{type(exc).__name__}: {first_line(exc)}"))
            if len(payload) > MAX_RESULT_BYTES:
                payload = pickle.dumps((False, f"what it holds pickles to over {MAX_RESULT_BYTES:,} bytes"))
            with os.fdopen(out, "wb") as pipe:
                pipe.write(payload)
        finally:
            os._exit(0)

    def _collect(self, readable: int, pid: int) -> tuple[bytes, str | None]:
        """What the child wrote, read until it closes the pipe, and why it was killed (or ``None``)."""
        deadline = time.monotonic() + (self.seconds if self.seconds is not None else float("inf"))
        chunks: list[bytes] = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    os.kill(pid, signal.SIGKILL)
                    return b"", f"not read within the rollout budget of {self.seconds:g} s (--rollout-budget)"
                ready, _, _ = select.select([readable], [], [], min(left, 3600.0))
                if ready:
                    chunk = os.read(readable, 1 << 20)
                    if not chunk:
                        return b"".join(chunks), None
                    chunks.append(chunk)
        finally:
            os.close(readable)

    def memory_error(self) -> str:
        return f"reading it needs more than the memory bound of {self.memory_mb} MiB (--call-memory)"


class ReadFailed(Exception):
    """A bounded read that raised, ran past a bound or died; the message says which, in one line."""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "no message"


#: The bounds of a read when the caller gives none: the default rollout and call budgets.
DEFAULT_BOUNDS = ReadBounds()


@dataclass(frozen=True)
class Member:
    """A sample member of an archive: its name, the sample id as its name gives it (text) and the epoch."""

    name: str
    id: str
    epoch: int


@dataclass
class Archive:
    """What the checks found in a ``.eval``: its sample members in archive order (each name once, as inspect
    reads them: the last member of a name wins) and, by member name, why a sample is not read (an input error)."""

    samples: list[Member] = field(default_factory=list)
    unread: dict[str, str] = field(default_factory=dict)


def check_eval(path: Path) -> Archive:
    """Check every member of the ``.eval`` archive at ``path`` (see the module docstring). Raises
    :class:`InputError` for the whole log; returns the sample members and the unread ones."""
    try:
        with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
            infos = archive.infolist()
            _check_directory(path, infos)
            declared = {id(i): declared_problem(i) for i in infos}  # sizes alone first: nothing is inflated
            _check_expansion(path, sum(i.file_size for i in infos if declared[id(i)] is None))
            _check_overlap(path, infos)
            found = Archive()
            names: dict[str, Member] = {}
            for info in infos:
                problem = declared[id(info)] or content_problem(raw, info)
                sample = _sample_member(info.filename)
                if sample is None and info.filename.startswith("samples/") and info.filename.endswith(".json"):
                    problem = problem or "a sample member not named <id>_epoch_<n>.json"
                    sample = Member(info.filename, info.filename, 0)
                if sample is not None:
                    names[info.filename] = sample
                    if problem is not None:
                        found.unread[info.filename] = problem
                elif problem is not None:
                    message = f"refused before reading: member {info.filename!r} {problem}"
                    raise InputError(message, path=path, hint=HINT)
            found.samples = list(names.values())
            return found
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, struct.error) as exc:
        raise InputError(
            f"not a readable inspect log (not a zip archive: {exc})",
            path=path,
            hint="pass a .eval or .json log written by 'inspect eval'",
        ) from None


def check_json(path: Path) -> None:
    """Check a ``.json`` log's size and nesting depth; an :class:`InputError` for the log when over a bound."""
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise InputError(
            f"refused before reading: {size:,} bytes, over the bound of {MAX_DOCUMENT_BYTES:,} for a .json log",
            path=path,
            hint="convert it to .eval, whose samples are read one at a time: inspect log convert --to eval",
        )
    with path.open("rb") as fh:
        data = fh.read(MAX_DOCUMENT_BYTES + 1)
    if b"\x00" in data:
        raise InputError(f"refused before reading: {NOT_UTF8}", path=path, hint=HINT)
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise InputError(f"refused before reading: nested {depth} deep, past the bound of {MAX_DEPTH}", path=path)


def declared_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a member is refused by what the archive declares of it (size, ratio, method), or ``None``."""
    declared, compressed = info.file_size, info.compress_size
    if declared > MAX_DOCUMENT_BYTES:
        return f"declares {declared:,} bytes, over the bound of {MAX_DOCUMENT_BYTES:,}"
    if declared > MAX_RATIO * compressed + RATIO_SLACK_BYTES:
        return f"inflates {compressed:,} bytes to {declared:,}, past the compression ratio bound of {MAX_RATIO}"
    if info.compress_type not in (STORED, DEFLATED, ZSTD):
        return f"uses compression method {info.compress_type}, which is not read (inspect writes zstd)"
    return None


def content_problem(raw: io.BufferedReader, info: zipfile.ZipInfo) -> str | None:
    """Why a member is refused by what it holds, or ``None``: it inflates to another size than it declares
    (read with a cap one byte past the declared size), or it is nested too deep."""
    data = b"".join(inflate(raw, info, info.file_size + 1))
    if len(data) != info.file_size:
        more = "more" if len(data) > info.file_size else "fewer"
        return f"inflates to {more} bytes than the {info.file_size:,} it declares"
    if b"\x00" in data:
        return NOT_UTF8
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        return f"is nested {depth} deep, past the bound of {MAX_DEPTH}"
    return None


def inflate(raw: io.BufferedReader, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
    """The member's inflated bytes, in pieces, never more than ``limit`` in all (whatever the data says)."""
    raw.seek(info.header_offset)
    header = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    if header[0] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"member {info.filename!r} has no local header")
    raw.seek(header[10] + header[11], io.SEEK_CUR)  # past the name and the extra field
    source = io.BytesIO(raw.read(info.compress_size))  # at most the file's size; the bound is on output
    left = limit
    if info.compress_type == STORED:
        yield source.read(left)
        return
    if info.compress_type == DEFLATED:
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        pending = source.read()
        while left > 0:
            piece = inflater.decompress(pending, min(left, _CHUNK))  # input past the cap stays in the tail
            pending = inflater.unconsumed_tail
            if not piece:
                return
            left -= len(piece)
            yield piece
        return
    import zstandard  # inspect_ai's own dependency, for its zstd members

    with zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True) as reader:
        while left > 0:
            piece = reader.read(min(left, _CHUNK))
            if not piece:
                return
            left -= len(piece)
            yield piece


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text ``data`` (strings skipped), without parsing it."""
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    deepest, depth = 0, 0
    for start in range(0, len(brackets), _CHUNK):
        codes = np.frombuffer(brackets, dtype=np.uint8, count=min(_CHUNK, len(brackets) - start), offset=start)
        running = depth + np.cumsum(np.where((codes == ord("[")) | (codes == ord("{")), 1, -1), dtype=np.int64)
        deepest, depth = max(deepest, int(running.max())), int(running[-1])
    return deepest


def _check_directory(path: Path, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse an archive whose members, as inspect's reader finds them, are not zipfile's (what was checked).

    inspect reads samples with its own zip reader, which takes the central directory at the offset the end
    record states (and a ZIP64 end record only when the 32-bit fields are full), where zipfile takes the one
    ending at the end record and shifts every offset by the difference (for data prepended to an archive), and
    reads a ZIP64 end record whenever its locator is there; names inspect decodes as UTF-8 always. One file
    can so hold two directories: the checks saw one, inspect read the other, unchecked."""
    import anyio
    from inspect_ai._util.async_zip import AsyncZipReader
    from inspect_ai._util.asyncfiles import AsyncFilesystem

    async def entries() -> list[tuple[str, int, int, int, int]]:
        async with AsyncFilesystem() as filesystem:
            found = await AsyncZipReader(filesystem, str(path)).entries()
        return [
            (e.filename, int(e.compression_method), e.compressed_size, e.uncompressed_size, e.local_header_offset)
            for e in found.entries
        ]

    checked = [(i.filename, i.compress_type, i.compress_size, i.file_size, i.header_offset) for i in infos]
    if anyio.run(entries) != checked:
        raise InputError(
            "refused before reading: inspect's reader finds another central directory (other members, or the "
            "same at other offsets) than the one checked",
            path=path,
            hint=HINT,
        )


def _check_overlap(path: Path, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse members whose compressed bytes add up to more than the file: entries sharing one member's bytes.
    Each member's bytes are read once by the checks, so the reading stays within the file's size."""
    size = path.stat().st_size
    if sum(i.compress_size for i in infos) > size:
        raise InputError(
            f"refused before reading: the archive's members overlap (their compressed sizes add up to more than "
            f"the file's {size:,} bytes)",
            path=path,
            hint=HINT,
        )


def _check_expansion(path: Path, inflated: int) -> None:
    size = path.stat().st_size
    if inflated > MAX_RATIO * size + MAX_DOCUMENT_BYTES:
        raise InputError(
            f"refused before reading: the archive's members declare {inflated:,} bytes in a file of {size:,}, past "
            f"the compression ratio bound of {MAX_RATIO}",
            path=path,
            hint=HINT,
        )


def _sample_member(name: str) -> Member | None:
    match = _SAMPLE.fullmatch(name)
    return Member(name, match.group(1), int(match.group(2))) if match else None
