"""inspect_ai eval logs (``.eval`` or ``.json``), read with inspect_ai's own reader, as plain data.

A log holds one task run: its header (task, model, solver plan, status) and one sample per (id, epoch). This
module turns each sample inspect's reader gives (:mod:`~prefix_exec.importers.inspect.reader` reads a log within
bounds) into an :class:`InspectSample` of plain JSON-like values: its messages normalized to :class:`Message`
(role, text, tool calls, the tool reply's id, error and error type), its metadata, its store, its tool list
(from its model events, when read) and Y from its score. The benchmark
mappings (:mod:`~prefix_exec.importers.inspect.bfcl`, :mod:`~prefix_exec.importers.inspect.tau`) and the generic
one (:func:`generic_rollout`) build rollouts from those; nothing here knows a benchmark.

Y is the log scorer's value, read by inspect's own ``value_to_float`` (``"C"``/``"I"``, booleans, yes/no,
numbers): 1 when it is 1.0 (within 1e-9), else 0, so partial credit (``"P"``, 0.5) is a failure, as tau2's
reward is. A log with several scorers needs ``scorer`` to name the one that is Y. A sample that errored, or has
no usable score, is unscorable: it is reported with the reason (:class:`~prefix_exec.trajectory.Skipped`).

``inspect_ai`` is imported lazily (the ``inspect`` extra); the rest of prefix-exec does not need it. Reading a
log makes inspect load its plugin registry, which logs warnings of other packages' making (inspect_evals'
``Unexpected exception loading entrypoints ...`` when one of its evals' dependencies is missing, ``Could not
find sandbox environment plugin for type 'k8s'`` for a log run in a sandbox not installed here): those two
messages, and only those, are dropped (:func:`quiet_registry`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefix_exec.extras import install_hint
from prefix_exec.importers.arguments import decode_arguments
from prefix_exec.importers.trials import TrialError, TrialRule
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.jsonl import expand_inputs
from prefix_exec.trajectory import Observation, Rollout, ToolCall

SUCCESS_TOLERANCE = 1e-9
INSTALL_HINT = install_hint("inspect_ai")
#: File suffixes inspect writes; a folder argument is searched for these.
LOG_SUFFIXES = (".eval", ".json")


@dataclass(frozen=True)
class Call:
    """One tool call of an assistant message. ``parse_error`` is inspect's, when the model's arguments were
    not a JSON object (inspect then records ``arguments`` as ``{}``)."""

    id: str | None
    name: str
    arguments: JsonMapping
    parse_error: str | None = None


@dataclass(frozen=True)
class Message:
    """One chat message, normalized: ``role`` is system, user, assistant or tool; ``text`` its text parts.

    A tool message carries the ``tool_call_id`` it answers and ``error``, inspect's error message when the
    tool failed (or was refused: an unknown tool, arguments that do not fit its schema), else ``None``;
    ``error_type`` is inspect's kind of that error (``ToolCallError.type``: ``parsing``, ``permission``,
    ``file_not_found``, ``unknown`` for a ``ToolError``, ...).
    """

    role: str
    text: str
    calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None
    error: str | None = None
    error_type: str | None = None


@dataclass(frozen=True)
class InspectSample:
    """One sample (one epoch) of a log. ``y`` is 0/1, or ``None`` with ``unscorable`` saying why."""

    where: str
    id: str
    epoch: int
    messages: tuple[Message, ...]
    metadata: JsonMapping = field(repr=False)
    store: JsonMapping = field(repr=False)
    y: int | None
    unscorable: str | None = None
    score: Any = None
    #: The tools offered to the model, as OpenAI function tools, from the sample's model events (the union over
    #: its model calls, by name, first seen first); ``None`` when events were not read or none called a model.
    tools: tuple[JsonObject, ...] | None = None
    #: The trial ``--trial`` or ``--trial-field`` gave, instead of the epoch's.
    given_trial: int | None = None

    @property
    def trial(self) -> int:
        """The 0-based trial of our records: the given one, else the epoch's (inspect's epochs count from 1)."""
        return self.given_trial if self.given_trial is not None else self.epoch - 1


@dataclass(frozen=True)
class InspectLog:
    """A read log: ``task`` is the task's name without its package (``inspect_evals/bfcl`` -> ``bfcl``)."""

    path: str
    task: str
    model: str
    method: str
    status: str
    samples: tuple[InspectSample, ...]
    scorer: str | None = None

    @property
    def name(self) -> str:
        return Path(self.path).name


def log_files(paths: Iterable[str | Path]) -> list[Path]:
    """The log files among ``paths``; a folder gives its ``.eval``/``.json`` files (not recursively)."""
    return expand_inputs(
        paths,
        lambda folder: (p for p in folder.iterdir() if p.suffix in LOG_SUFFIXES and p.is_file()),
        none_found="no inspect logs (.eval or .json) in this folder",
    )


#: Warnings inspect's plugin registry logs for other packages, by logger: the start of each message dropped.
REGISTRY_NOISE: Mapping[str, str] = {
    "inspect_ai._util.entrypoints": "Unexpected exception loading entrypoints",
    "inspect_ai.util._sandbox.environment": "Could not find sandbox environment plugin",
}


class _DropMessage(logging.Filter):
    """Drops the records whose message starts with ``start``; every other record passes."""

    def __init__(self, start: str) -> None:
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


def quiet_registry() -> None:
    """Drop :data:`REGISTRY_NOISE` (once per process; the loggers' other messages still pass)."""
    for name, start in REGISTRY_NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropMessage) for f in logger.filters):
            logger.addFilter(_DropMessage(start))


def bare(name: str) -> str:
    return str(name).rsplit("/", 1)[-1]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "no message"


def to_sample(path: str, sample: Any, scorer: str | None, trials: TrialRule, *, tools: bool = False) -> InspectSample:
    where = f"{Path(path).name}: sample {sample.id} epoch {sample.epoch}"
    y, unscorable, value = success_of(sample, scorer)
    if sample.error is not None:
        unscorable = f"unscorable: the sample errored in inspect ({_first_line_text(sample.error.message)})"
        y = None
    metadata, store = dict(sample.metadata or {}), dict(sample.store or {})
    try:  # the epoch is the trial unless --trial or --trial-field say otherwise
        given = trials.read({"id": sample.id, "epoch": sample.epoch, "metadata": metadata, "store": store}, own=())
    except TrialError as exc:
        given, unscorable, y = None, f"input error: {exc}", None
    return InspectSample(
        where=where,
        id=str(sample.id),
        epoch=int(sample.epoch),
        messages=tuple(normalize_messages(sample.messages)),
        metadata=metadata,
        store=store,
        y=y,
        unscorable=unscorable,
        score=value,
        tools=sample_tools(sample.events or ()) if tools else None,
        given_trial=given,
    )


def sample_tools(events: Iterable[Any]) -> tuple[JsonObject, ...] | None:
    """The tools a sample's model events offered, as OpenAI function tools: the union over its model calls by
    name (first seen first, its first definition kept); ``None`` when no event called a model."""
    found: dict[str, JsonObject] = {}
    called = False
    for event in events:
        if getattr(event, "event", None) != "model":
            continue
        called = True
        for info in getattr(event, "tools", None) or ():
            if info.name not in found:
                function: JsonObject = {
                    "name": str(info.name),
                    "parameters": info.parameters.model_dump(exclude_none=True),
                }
                if info.description:
                    function["description"] = str(info.description)
                found[info.name] = {"type": "function", "function": function}
    return tuple(found.values()) if called else None


def _first_line_text(text: Any) -> str:
    lines = str(text).strip().splitlines()
    return lines[0][:300] if lines else "no message"


def success_of(sample: Any, scorer: str | None) -> tuple[int | None, str | None, Any]:
    """(Y, why it is unscorable, the raw score value) of an inspect ``EvalSample``."""
    from inspect_ai.scorer import value_to_float

    scores: JsonMapping = sample.scores or {}
    if not scores:
        return None, "unscorable: the sample has no score (was the log written with --no-score?)", None
    if scorer is None and len(scores) > 1:
        return None, f"the sample has several scores ({', '.join(sorted(scores))}); choose Y with --scorer NAME", None
    name = scorer if scorer is not None else next(iter(scores))
    if name not in scores:
        return None, f"the sample has no score {name!r} (it has {', '.join(sorted(scores))})", None
    value = scores[name].value
    if value is None or not isinstance(value, str | int | float | bool):
        return None, f"score {name!r} is not one value ({type(value).__name__}); Y needs a scalar score", value
    number = value_to_float()(value)
    return int(abs(number - 1.0) <= SUCCESS_TOLERANCE), None, value


def normalize_messages(messages: Iterable[Any]) -> Iterator[Message]:
    """inspect ``ChatMessage`` objects (or their JSON form, as a store holds them) as :class:`Message`."""
    from inspect_ai.model import ChatMessage
    from pydantic import TypeAdapter

    adapter: TypeAdapter[ChatMessage] = TypeAdapter(ChatMessage)
    for raw in messages:
        message = adapter.validate_python(raw) if isinstance(raw, Mapping) else raw
        calls = tuple(_call(call) for call in getattr(message, "tool_calls", None) or ())
        error = getattr(message, "error", None)
        yield Message(
            role=str(message.role),
            text=message.text,
            calls=calls,
            tool_call_id=getattr(message, "tool_call_id", None) if message.role == "tool" else None,
            error=str(error.message) if error is not None else None,
            error_type=str(error.type) if error is not None and getattr(error, "type", None) else None,
        )


def _call(call: Any) -> Call:
    """An inspect ``ToolCall`` as a :class:`Call`: inspect's parse error, else the shared decoder's."""
    arguments, problem = decode_arguments(call.arguments)
    return Call(id=call.id, name=str(call.function), arguments=arguments, parse_error=call.parse_error or problem)


def replies(messages: Sequence[Message], index: int) -> dict[str, Message]:
    """The tool messages answering the assistant message at ``index``, by call id: those right after it (ids
    are matched only there, since some servers reuse ids across messages)."""
    found: dict[str, Message] = {}
    for message in messages[index + 1 :]:
        if message.role != "tool":
            break
        if message.tool_call_id is not None:
            found.setdefault(message.tool_call_id, message)
    return found


def observation_of(reply: Message | None) -> Observation | None:
    """What the tool answered when the log was made: its text (inspect's error message and type for a failed
    call). inspect records a failure on the reply, so a reply without one has the flag ``False``."""
    if reply is None:
        return None
    if reply.error is not None:
        return Observation(content=reply.error, error=True, error_type=reply.error_type)
    return Observation(content=reply.text, error=False)


def tool_call(call: Call, call_id: str | None, turn: int, reply: Message | None) -> ToolCall:
    """One of our actions for an inspect tool call; ``raw`` is its arguments as JSON text."""
    parse_error = f"inspect could not parse the arguments: {call.parse_error}" if call.parse_error else None
    return ToolCall(
        name=call.name,
        arguments=dict(call.arguments),
        call_id=call_id,
        turn=turn,
        observation=observation_of(reply),
        raw=json.dumps(call.arguments, default=str),
        parse_error=parse_error,
    )


def generic_rollout(log: InspectLog, sample: InspectSample, *, model: str, method: str) -> Rollout:
    """A sample of any task as a rollout on a tool spec: every assistant tool call in message order, its
    turn the number of user messages before it less one, its id inspect's, and the tool's reply as its
    observation; the transcript is the sample's messages (:func:`transcript_of`), so values its user and system
    messages gave satisfy ``refs``. ``dataset`` is the task name; ``task_id`` the sample id."""
    actions: list[ToolCall] = []
    users = 0
    for index, message in enumerate(sample.messages):
        if message.role == "user":
            users += 1
        if message.role != "assistant" or not message.calls:
            continue
        answered = replies(sample.messages, index)
        for call in message.calls:
            reply = answered.get(call.id) if call.id is not None else None
            actions.append(tool_call(call, call.id, max(users - 1, 0), reply))
    rollout = sample_rollout(log, sample, actions, dataset=log.task, model=model, method=method)
    return replace(rollout, transcript=transcript_of(sample.messages))


def transcript_of(messages: Sequence[Message]) -> tuple[JsonObject, ...]:
    """The messages as a rollout's transcript, one entry each, in the decoder's form: ``{"role", "content"}`` with
    the text, ``tool_calls`` (``{"id", "name"}``) on an assistant message that calls, ``tool_call_id`` on a reply."""
    transcript: list[JsonObject] = []
    for message in messages:
        entry: JsonObject = {"role": message.role, "content": message.text}
        if message.calls:
            entry["tool_calls"] = [{"id": call.id, "name": call.name} for call in message.calls]
        if message.tool_call_id is not None:
            entry["tool_call_id"] = message.tool_call_id
        transcript.append(entry)
    return tuple(transcript)


def sample_rollout(
    log: InspectLog,
    sample: InspectSample,
    actions: Iterable[ToolCall],
    *,
    dataset: str,
    model: str,
    method: str,
    metadata: JsonMapping | None = None,
) -> Rollout:
    """The rollout of ``sample`` with these actions: its id as ``task_id``, its Y and trial, and ``metadata``
    followed by the sample's :func:`provenance`."""
    return Rollout(
        dataset=dataset,
        task_id=sample.id,
        model=model,
        method=method,
        actions=tuple(actions),
        success=sample.y,
        trial=sample.trial,
        metadata={**(metadata or {}), **provenance(log, sample)},
    )


def provenance(log: InspectLog, sample: InspectSample) -> JsonObject:
    """``metadata`` naming where a rollout came from: ``source`` and the log's own identity and score."""
    return {
        "source": sample.where,
        "inspect": {"log": log.name, "task": log.task, "sample_id": sample.id, "epoch": sample.epoch},
        "inspect_score": sample.score,
    }
