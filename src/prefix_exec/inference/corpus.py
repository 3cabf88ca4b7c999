"""The conversations inference reads, from every form prefix-exec reads, as one shape: :class:`Conversation`.

A conversation is its steps in order: the user and system messages (:class:`Said`, with their place in the
conversation) and the agent's tool calls (:class:`~prefix_exec.trajectory.ToolCall`, each with the recorded reply as
its observation), and the tools list it offered when it has one. Each form is read by the importer that reads it for
scoring; nothing is parsed a second way here:

- ``transcripts`` forms (OpenAI Chat or Responses, Anthropic, LangChain, tau-bench results:
  :data:`prefix_exec.importers.transcripts.READERS`), what ``score transcripts`` reads;
- ``tau2``: tau2-bench results files (``{info, tasks, simulations}`` or a bare list of simulations), read by
  :func:`prefix_exec.importers.tau.conversation_of`, so a simulation without a task id or a reward is read too
  (inference needs neither);
- ``inspect``: inspect_ai logs (``.eval``, or ``.json`` holding ``eval`` and ``samples``; the inspect extra);
- ``rollouts``: canonical rollouts (what ``score custom`` reads, and what the guard's ``--record`` folder holds as
  ``rollouts.jsonl``).

``--format auto`` decides per file: ``.eval`` is inspect; a ``.json`` document holding ``simulations`` (or a list of
objects with ``reward_info`` or ``termination_reason``) is tau2, one holding ``eval`` and ``samples`` inspect; a JSONL
file whose first record is a canonical rollout is rollouts; anything else is read as transcripts (whose reader
detects their form). A record that cannot be read is a :class:`~prefix_exec.trajectory.Skipped` with the reason (one
bad record never loses the others); without ``keep_going`` it is raised.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.importers.inspect.log import generic_rollout
from prefix_exec.importers.inspect.reader import read_log
from prefix_exec.importers.tau import conversation_of
from prefix_exec.importers.transcripts import READERS, Identity, TranscriptFile, unreadable
from prefix_exec.importers.transcripts.documents import MAX_JSON_CHARS
from prefix_exec.json_types import JsonMapping, loads
from prefix_exec.records.codec import is_rollout
from prefix_exec.records.jsonl import check_regular_file, iter_json_lines
from prefix_exec.replay import SPEAKERS, call_positions
from prefix_exec.sources.spec import read_units
from prefix_exec.trajectory import Rollout, Skipped, ToolCall

#: The forms ``--format`` names: ``auto`` (per file), the tool-specific ones, then each transcript form.
FORMS: tuple[str, ...] = ("auto", "tau2", "inspect", "rollouts", *READERS)
#: Inference reads no identity: every conversation is read with these fixed fields (a record lacking a task id, a
#: model or a success is still a conversation).
ANONYMOUS = Identity({}, {"task_id": "-", "model": "-", "method": "-", "dataset": "-", "success": 0, "trial": 0}, {})


@dataclass(frozen=True)
class Said:
    """A user or system message: its place in the conversation (0-based, as its form numbers messages) and its
    content as the log holds it (text, or content parts)."""

    index: int
    content: Any


Step = Said | ToolCall


@dataclass(frozen=True)
class Conversation:
    """One conversation: where it was read (``file:line``, ``file[3]``, ``file: simulations[3]``), its steps in
    order, and the tools list it offered (``None`` when its form has none)."""

    where: str
    steps: tuple[Step, ...]
    tools: Any = None

    @property
    def calls(self) -> list[ToolCall]:
        return [s for s in self.steps if isinstance(s, ToolCall)]


def steps_of(actions: Sequence[ToolCall], transcript: Sequence[JsonMapping] | None) -> tuple[Step, ...]:
    """The steps of a rollout: its transcript's user and system messages placed among its actions as replay feeds
    them to a session (:func:`prefix_exec.replay.call_positions`: every such message before the assistant message
    that issued a call is heard before that call; a call the transcript does not list hears nothing new). Without a
    transcript, the actions alone."""
    if not transcript:
        return tuple(actions)
    steps: list[Step] = []
    fed = 0
    for action, upto in zip(actions, call_positions(transcript, actions), strict=True):
        while upto is not None and fed < upto:
            steps.extend(_said(fed, transcript[fed]))
            fed += 1
        steps.append(action)
    return tuple(steps)


def _said(index: int, message: JsonMapping) -> list[Said]:
    if message.get("role") in SPEAKERS and message.get("content") is not None:
        return [Said(index, message.get("content"))]
    return []


def conversation(rollout: Rollout, tools: Any = None) -> Conversation:
    """A rollout as a conversation (its ``metadata.source`` as where it was read)."""
    where = str(rollout.metadata.get("source") or f"{rollout.task_id}/{rollout.trial}")
    return Conversation(where, steps_of(rollout.actions, rollout.transcript), tools)


def form_of(path: Path) -> str:
    """The form of one file under ``--format auto`` (module docstring)."""
    if path.suffix == ".eval":
        return "inspect"
    if path.suffix == ".json":
        return _document_form(_document(path))
    first = next(iter_json_lines(path, tolerant=True), None)
    return "rollouts" if first is not None and is_rollout(first[1]) else "transcripts"


def _document(path: Path) -> Any:
    """The parsed JSON document of a ``.json`` file (``None`` when it is not one: JSON Lines in a ``.json``, which
    the transcripts reader reads, or not JSON, which it reports)."""
    check_regular_file(path)
    try:
        with path.open(encoding="utf-8") as handle:
            text = handle.read(MAX_JSON_CHARS + 1)
        return None if len(text) > MAX_JSON_CHARS else loads(text, max_depth=None)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _document_form(data: Any) -> str:
    if isinstance(data, Mapping) and "simulations" in data:
        return "tau2"
    if isinstance(data, Mapping) and "eval" in data and "samples" in data:
        return "inspect"
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, Mapping) and "messages" in first and ("reward_info" in first or "termination_reason" in first):
        return "tau2"
    return "transcripts"


def read_file(path: Path, form: str, *, keep_going: bool) -> Iterator[Conversation | Skipped]:
    """The conversations of one file read as ``form`` (a name of :data:`FORMS`; ``auto``: :func:`form_of`)."""
    if form == "auto":
        form = form_of(path)
    if form == "tau2":
        yield from _tau2(path, keep_going=keep_going)
    elif form == "inspect":
        yield from _inspect(path)
    elif form == "rollouts":
        for unit in read_units([str(path)], keep_going=keep_going, model=None, method=None):
            yield unit if isinstance(unit, Skipped) else conversation(unit)
    else:
        yield from _transcripts(path, None if form == "transcripts" else form, keep_going=keep_going)


def _transcripts(path: Path, forced: str | None, *, keep_going: bool) -> Iterator[Conversation | Skipped]:
    for item in TranscriptFile(path, ANONYMOUS, format=forced, tolerant=keep_going):
        if isinstance(item, InputError):
            yield unreadable(item, keep_going)
        else:
            yield conversation(item.rollout, item.tools)


def _tau2(path: Path, *, keep_going: bool) -> Iterator[Conversation | Skipped]:
    data = _document(path)
    simulations = data.get("simulations") if isinstance(data, Mapping) else data
    if not isinstance(simulations, list):
        raise InputError(
            "not a tau2 results file: expected an object with 'simulations', or a list of simulations",
            path=path,
            hint="pass the JSON file tau2 writes with --save-to, or --format another form",
        )
    field = "simulations" if isinstance(data, Mapping) else ""
    for index, simulation in enumerate(simulations):
        where = f"{path.name}: {field}[{index}]"
        try:
            if not isinstance(simulation, Mapping):
                raise TypeError(f"the simulation is not an object ({type(simulation).__name__})")
            actions, transcript = conversation_of(simulation)
        except (KeyError, TypeError, ValueError) as exc:
            if not keep_going:
                raise InputError(f"unreadable simulation: {exc!r:.300}", path=path, field=f"{field}[{index}]") from None
            yield Skipped(where, f"unreadable simulation: {exc!r:.300}")
            continue
        yield Conversation(where, steps_of(actions, transcript))


def _inspect(path: Path) -> Iterator[Conversation | Skipped]:
    log = read_log(path, tools=lambda task: True)
    for sample in log.samples:
        rollout = generic_rollout(log, sample, model=log.model, method=log.method)
        yield conversation(rollout, list(sample.tools) if sample.tools is not None else None)


def read_corpus(
    paths: Sequence[Path], form: str, *, keep_going: bool, on_file: Callable[[Path, str], None] | None = None
) -> Iterator[Conversation | Skipped]:
    """The conversations of every file in order (:func:`read_file`); ``on_file(path, form)`` is told each file
    before it is read (for progress). A file that cannot be read at all is one :class:`Skipped` under
    ``keep_going``, else its :class:`InputError` is raised."""
    for path in paths:
        chosen = form_of(path) if form == "auto" else form
        if on_file is not None:
            on_file(path, chosen)
        try:
            yield from read_file(path, chosen, keep_going=keep_going)
        except InputError as exc:
            if not keep_going:
                raise
            yield Skipped(str(path), exc.detail())


def shown(value: Any, limit: int = 60) -> str:
    """A value for a message or a comment: its JSON text, cut at ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
