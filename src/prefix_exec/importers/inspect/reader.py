"""Reading an inspect log within bounds: :func:`read_log` checks the file (:mod:`.archive`), then reads it
with inspect_ai's reader in a bounded child, a ``.eval`` one sample at a time, into an
:class:`~prefix_exec.importers.inspect.log.InspectLog` of plain data (:mod:`.log` converts each sample).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.inspect.archive import (
    DEFAULT_BOUNDS,
    Archive,
    Member,
    ReadBounds,
    ReadFailed,
    check_eval,
    check_json,
)
from prefix_exec.importers.inspect.log import (
    INSTALL_HINT,
    InspectLog,
    InspectSample,
    bare,
    quiet_registry,
    to_sample,
)
from prefix_exec.importers.trials import FROM_INPUT, TrialRule
from prefix_exec.records.jsonl import check_regular_file


def read_log(
    path: str | Path,
    *,
    scorer: str | None = None,
    tools: Callable[[str], bool] | None = None,
    trials: TrialRule = FROM_INPUT,
    bounds: ReadBounds = DEFAULT_BOUNDS,
) -> InspectLog:
    """Read one log with inspect_ai's reader. A file inspect cannot read raises :class:`InputError`.

    The file is checked against :mod:`~prefix_exec.importers.inspect.archive`'s bounds first (sizes, compression
    ratio, nesting depth): a log over them raises :class:`InputError` before inspect parses anything. A
    ``.eval`` is then read one sample at a time, each under ``bounds`` (memory, time); a sample over a bound,
    or one inspect cannot read, is unscorable with the reason and the others are read on. A ``.json`` log is
    one document, read whole under ``bounds``.

    ``scorer`` names the score that is Y when a sample has several (``None``: the only one). ``tools`` says, from
    the log's task name, whether to read the samples' tool lists (:attr:`InspectSample.tools`, from their
    events). (A ``.json`` log's header is not read on its own: inspect's streaming header reader crashes the
    process on some malformed ``.json`` files, a 5,000-digit number for one.)
    ``trials``: a fixed trial, or a path into each sample (``metadata.run``; ``id``, ``epoch``, ``metadata`` and
    ``store`` are its fields), instead of the epoch; a sample without it is unscorable, with the reason.
    """
    p = Path(path)
    check_regular_file(p)
    quiet_registry()
    try:
        import inspect_ai.log  # noqa: F401  (also teaches zipfile inspect's zstd members)
    except ModuleNotFoundError as exc:
        raise InputError(f"this command needs inspect_ai, which is not installed ({exc})", hint=INSTALL_HINT) from None
    archive = check_eval(p) if p.suffix == ".eval" else None
    try:
        if archive is None:
            check_json(p)
            header, found = bounds.run(lambda: _read_json_log(p, scorer, trials, tools))
        else:
            header = bounds.run(lambda: _read_header(p))
    except ReadFailed as exc:  # inspect's reader raises zip, JSON, pydantic, OS and memory errors alike: bad input
        raise InputError(
            f"not a readable inspect log ({exc})",
            path=path,
            hint="pass a .eval or .json log written by 'inspect eval' (inspect_ai's read_eval_log must open it)",
        ) from None
    if archive is not None:
        events = tools is not None and tools(header.task)
        read = [_read_member(p, member, archive, bounds, scorer, trials, events) for member in archive.samples]
        read.sort(key=lambda pair: pair[0])  # inspect's own order: epoch, then id
        found = tuple(sample for _, sample in read)
    return InspectLog(
        path=str(path),
        task=header.task,
        model=header.model,
        method=header.method,
        status=header.status,
        samples=found,
        scorer=scorer,
    )


@dataclass(frozen=True)
class _Header:
    """What a log's header says, as plain text (read in a child and sent back)."""

    task: str
    model: str
    method: str
    status: str


def _header_of(log: Any) -> _Header:
    plan = [step.solver for step in (log.plan.steps if log.plan else [])]
    method = "+".join(bare(s) for s in plan) or "inspect"
    return _Header(bare(log.eval.task), str(log.eval.model), method, str(log.status))


def _read_json_log(
    path: Path, scorer: str | None, trials: TrialRule, tools: Callable[[str], bool] | None
) -> tuple[_Header, tuple[InspectSample, ...]]:
    """A ``.json`` log read whole (inspect reads a ``.json`` log's events whether asked to leave them out or not)."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path), resolve_attachments=True)
    events = tools is not None and tools(bare(log.eval.task))
    samples = tuple(to_sample(str(path), s, scorer, trials, tools=events) for s in log.samples or ())
    return _header_of(log), samples


def _read_header(path: Path) -> _Header:
    """A ``.eval`` log's header alone (its samples are read one at a time)."""
    from inspect_ai.log import read_eval_log

    return _header_of(read_eval_log(str(path), header_only=True))


def _read_member(
    path: Path,
    member: Member,
    archive: Archive,
    bounds: ReadBounds,
    scorer: str | None,
    trials: TrialRule,
    events: bool,
) -> tuple[tuple[int, str], InspectSample]:
    """One sample member of a checked archive, read alone under ``bounds``, with its place in inspect's order;
    a refused member, or one inspect cannot read, is an unscorable sample saying why."""
    from inspect_ai.log import read_eval_log_sample

    def read() -> tuple[tuple[int, str], InspectSample]:
        # With its events: inspect leaves fields out by streaming the member through ijson, ten times slower
        # than reading it whole (22 s against 2 s for a 40 MB sample); the member's size is bounded anyway.
        raw = read_eval_log_sample(str(path), member.id, member.epoch, resolve_attachments=True)
        order = (int(raw.epoch), raw.id if isinstance(raw.id, str) else str(raw.id).zfill(20))  # inspect's sort
        return order, to_sample(str(path), raw, scorer, trials, tools=events)

    problem = archive.unread.get(member.name)
    if problem is None:
        try:
            return bounds.run(read)
        except ReadFailed as exc:
            problem = f"inspect cannot read it ({exc})"
    order = (member.epoch, member.id.zfill(20) if member.id.isdecimal() else member.id)  # its id's type unknown
    unreadable = InspectSample(
        where=f"{path.name}: sample {member.id} epoch {member.epoch}",
        id=member.id,
        epoch=member.epoch,
        messages=(),
        metadata={},
        store={},
        y=None,
        unscorable=f"input error: {member.name}: {problem}",
    )
    return order, unreadable
