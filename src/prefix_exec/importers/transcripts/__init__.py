"""Transcripts in the forms agents write them, as rollouts: one rollout per conversation.

Each format has one small reader (:mod:`.openai_chat`, :mod:`.openai_responses`, :mod:`.anthropic`,
:mod:`.langchain`, :mod:`.tau_bench`) that maps a record's messages onto the common form of
:mod:`.decoder`, which builds every rollout the same way: actions with their observations, the transcript,
the identity and Y (:mod:`.identity`). A file's records (:mod:`.documents`) are JSONL, a JSON list or a JSON
object wrapping lists; its format is detected from the first record that shows one (:mod:`.formats`), or
forced. A malformed record is an :class:`~prefix_exec.errors.InputError` naming the file, the line (JSONL)
or record (``[3]``) and the field; it loses that record only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts import openai_chat
from prefix_exec.importers.transcripts.decoder import decode
from prefix_exec.importers.transcripts.documents import metadata_only, records
from prefix_exec.importers.transcripts.formats import READERS, SHAPES, Reader, detect, unknown_shape
from prefix_exec.importers.transcripts.identity import Identity, identity_fields
from prefix_exec.importers.trials import lookup
from prefix_exec.records.infrastructure import mark, system_failure
from prefix_exec.trajectory import Rollout, Skipped

__all__ = [
    "READERS",
    "Identity",
    "Transcript",
    "TranscriptFile",
    "decodings",
    "lookup",
    "read_batch",
    "rollout_of",
    "tools_digest",
    "transcript_of",
    "unreadable",
]


@dataclass(frozen=True)
class Transcript:
    """One conversation read: the rollout, the tools list it offered (``None`` when it has none), its
    format, and where it came from (``path``, ``line`` for JSONL, ``prefix`` such as ``[3].`` in JSON)."""

    rollout: Rollout
    tools: Any
    format: str
    path: str
    line: int | None
    prefix: str


class TranscriptFile:
    """The conversations of one file, read lazily: iterate for :class:`Transcript` (or, with ``tolerant``,
    the InputError of a bad record, in its place). ``format`` forces one format (a name of :data:`READERS`);
    without it the first record that shows a format decides the file's (:func:`.formats.detect`), and a later
    record decisively of another is an error. After iterating, :attr:`format` is the format read (``None``
    when no record showed one) and :attr:`read` the number of conversations read."""

    def __init__(self, path: str | Path, identity: Identity, *, format: str | None = None, tolerant: bool) -> None:
        if format is not None and format not in READERS:
            raise InputError(f"unknown transcript format {format!r}", hint=f"one of {', '.join(READERS)}")
        self.path = Path(path)
        self.identity = identity
        self.forced = format
        self.format = format
        self.tolerant = tolerant
        self.read = 0
        self.metadata_lines: list[str] = []
        self._decided_at = ""

    def __iter__(self) -> Iterator[Transcript | InputError]:
        for item in self._records():
            if isinstance(item, InputError):
                yield item
                continue
            try:
                transcript = item()
            except InputError as exc:
                if not self.tolerant:
                    raise
                yield exc
                continue
            yield transcript
            self.read += 1

    def undecoded(self) -> Iterator[Callable[[], Transcript] | InputError]:
        """As iterating, but each record is handed out undecoded, its format decided: calling it gives its
        :class:`Transcript` (raising the :class:`InputError` iterating yields in its place), and may be done in
        another process (it pickles: plain data and a module-level function). Here a record counts as read when
        handed out (one that then fails to decode is reported where it is decoded)."""
        for item in self._records():
            yield item
            if not isinstance(item, InputError):
                self.read += 1

    def _records(self) -> Iterator[Callable[[], Transcript] | InputError]:
        """Each record with its reader (:func:`transcript_of` on it, not yet called), or the InputError of a
        record or file that cannot be read (raised unless ``tolerant``)."""
        try:
            for line, prefix, data in records(self.path, tolerant=self.tolerant):
                try:
                    if isinstance(data, InputError):
                        raise data
                    if metadata_only(data):  # a header or trailer line: no conversation, said in the note
                        self.metadata_lines.append(f"line {line}" if line is not None else prefix.rstrip(".") or "[0]")
                        continue
                    reader = self._reader(data, line, prefix).name
                    yield partial(
                        transcript_of, data, self.identity, reader=reader, path=str(self.path), line=line, prefix=prefix
                    )
                except InputError as exc:
                    if not self.tolerant:
                        raise
                    yield exc
        except InputError as exc:  # the file as a whole (not JSON, too large, of no transcript shape)
            if not self.tolerant:
                raise
            yield exc

    def note(self) -> str:
        """What was read, for the log, once iterated: how many conversations, in which form and how it was chosen
        (a file whose records showed none, plain-text messages only, was read as Chat: :func:`.formats.detect`)."""
        skipped = ""
        if self.metadata_lines:
            shown = ", ".join(self.metadata_lines[:5]) + (", ..." if len(self.metadata_lines) > 5 else "")
            lines = len(self.metadata_lines)
            skipped = f"; {lines} record{'s' if lines != 1 else ''} of metadata only skipped ({shown})"
        if not self.read:
            return f"prefix-exec: note: {self.path}: no conversation read{skipped}"
        how = "--format" if self.forced else "detected"
        label = READERS[self.format or openai_chat.NAME].label
        count = f"{self.read} conversation{'s' if self.read != 1 else ''}"
        return f"prefix-exec: note: {self.path}: {count} read as {label} ({how}){skipped}"

    def _reader(self, data: Any, line: int | None, prefix: str) -> Reader:
        found, decisive = detect(data)

        def fail(message: str, hint: str) -> InputError:
            return InputError(message, path=self.path, line=line, field=prefix.rstrip(".") or None, hint=hint)

        if self.forced is not None:
            if decisive and found != self.forced:
                raise fail(
                    f"read as {READERS[self.forced].label} (--format), but the record is {READERS[str(found)].label}",
                    "drop --format to detect each file's form, or name the form this file holds",
                )
            return READERS[self.forced]
        if found is None:
            if self.format is None:
                raise fail(*unknown_shape(data))
            return READERS[self.format]  # the file's format says what is missing
        if decisive and self.format is not None and found != self.format:
            raise fail(
                f"the record is {READERS[found].label}, but the file's first records are "
                f"{READERS[self.format].label} ({self._decided_at})",
                "one form per file: split the file by form, or force one with --format",
            )
        if decisive and self.format is None:
            self.format = found
            self._decided_at = f"line {line}" if line is not None else f"record {prefix.rstrip('.') or '0'}"
        return READERS[self.format or found]


def transcript_of(
    data: Any,
    identity: Identity,
    *,
    reader: Reader | str | None = None,
    path: str,
    line: int | None = None,
    prefix: str = "",
) -> Transcript:
    """One record as a rollout, read by ``reader`` (or the one of :data:`READERS` so named; detected from the
    record when ``None``). Raises :class:`InputError` naming the field."""

    if isinstance(reader, str):
        reader = READERS[reader]
    if reader is None:
        found = detect(data)[0]
        reader = READERS[found or "openai-chat"]
    shape = f"read as {reader.label}, whose records are {SHAPES.get(reader.name, reader.label)}"

    def fail(field: str, message: str, hint: str | None = None) -> InputError:
        where = (prefix + field).rstrip(".") or None
        return InputError(message, path=path, line=line, field=where, hint=hint or shape)

    if not isinstance(data, Mapping):
        raise fail("", f"expected a conversation object, got {type(data).__name__}")
    actions, transcript = decode(reader.read(data, fail), fail)
    values = identity_fields(data, identity, fail, reward=reader.reward)
    name = Path(path).name
    where = f"{name}:{line}" if line is not None else name + (prefix if prefix[:1] in ("[", "") else f":{prefix}")
    rollout = Rollout(
        dataset=values["dataset"],
        task_id=values["task_id"],
        model=values["model"],
        method=values["method"],
        actions=actions,
        success=values["success"],
        success_absent=values["success"] is None,
        trial=values["trial"] or 0,
        trial_given=values["trial"] is not None,
        transcript=transcript,
        metadata={"source": where.rstrip("."), **reader.metadata(data)},
    )
    crash = data.get("error")  # AgentDojo's run-level error: the pipeline raised (a model server's 500, say)
    if isinstance(crash, str) and system_failure(crash):
        rollout = mark(rollout, crash)  # the system's failure (records.infrastructure)
    return Transcript(rollout, data.get("tools"), reader.name, path, line, prefix)


def unreadable(exc: InputError, keep_going: bool) -> Skipped:
    """The unit ``exc`` says cannot be read, for scoring to list; ``exc`` raised unless ``keep_going``."""
    if not keep_going:
        raise exc
    where = f"{exc.path}:{exc.line}" if exc.line is not None else str(exc.path)
    return Skipped(where, exc.detail() + (f" (hint: {exc.hint})" if exc.hint else ""))


def rollout_of(decode: Callable[[], Transcript], keep_going: bool) -> Rollout | Skipped:
    """The rollout of the conversation ``decode`` reads (:meth:`TranscriptFile.undecoded`), or, with
    ``keep_going``, why it cannot be read (:func:`unreadable`): an undecoded unit's decoding
    (:class:`~prefix_exec.scoring.units.Undecoded`), which a worker process may do."""
    try:
        return decode().rollout
    except InputError as exc:
        return unreadable(exc, keep_going)


def read_batch(
    path: str, identity: Identity, forced: str | None, keep_going: bool
) -> tuple[list[Callable[[], Rollout | Skipped] | Skipped], InputError | None, str | None]:
    """The conversations of the file at ``path``, undecoded (each :func:`rollout_of` a record), with the error that
    stopped the reading (without ``keep_going``: a record or the file that cannot be read) and the file's note
    (:meth:`TranscriptFile.note`): a :class:`~prefix_exec.scoring.units.Batch`'s reading, which a worker process may do.
    With ``keep_going`` a record that cannot be read is its :func:`unreadable` unit."""
    transcripts = TranscriptFile(path, identity, format=forced, tolerant=keep_going)
    units: list[Callable[[], Rollout | Skipped] | Skipped] = []
    try:
        units.extend(decodings(transcripts, keep_going))
    except InputError as exc:
        return units, exc, None
    return units, None, transcripts.note()


def decodings(transcripts: TranscriptFile, keep_going: bool) -> Iterator[Callable[[], Rollout | Skipped] | Skipped]:
    """Each record of ``transcripts`` as its decoding (:func:`rollout_of` it, which a worker process may call), or,
    with ``keep_going``, as the :func:`unreadable` unit of a record that cannot be read (without it, that error is
    raised here)."""
    for raw in transcripts.undecoded():
        yield unreadable(raw, keep_going) if isinstance(raw, InputError) else partial(rollout_of, raw, keep_going)


def tools_digest(tools: Any) -> str:
    """16 hex digits naming a tools list by its content (records say which list served as the spec)."""
    return hashlib.sha256(json.dumps(tools, sort_keys=True, default=str).encode()).hexdigest()[:16]
