"""Read BFCL multi-turn result files into rollouts, and build rollouts from BFCL's own ground truth.

A result file (``BFCL_v4_multi_turn_<category>_result.json``) has one JSON object per line:
``{"id": "multi_turn_base_0", "result": [...one entry per user turn...], ...}``. A turn entry is

- FC format: a list of steps, each a list of ``{"<function>": "<JSON arguments>"}`` dicts (a dict with
  several keys is several calls, as BFCL reads it; arguments may also be a dict already), or a string: the
  model's text reply ending the turn (BFCL's OpenAI handlers write it), which BFCL's FC decoder skips, and so
  no action here;
- prompting format: one raw model string for the turn, or a list of strings, one per step.

Every call becomes a :class:`~prefix_exec.trajectory.ToolCall` with ``turn`` set and ``call_id``
``t<turn>.s<step>.c<index>``. A call that cannot be decoded (bad JSON, a string that is not a plain call
with literal arguments) becomes a call with ``parse_error`` at that position: a schema failure, never a
crash. A prompting string that does not even try to call (prose such as "No function matches the user's
request.") is a text reply, not an action: it must start with ``[`` or ``name(`` to count as an attempt.

The category comes from the file name, the model from ``--model`` or the folder name (the one above it for a
file in BFCL v4's ``result/<model>/multi_turn/``), and the method
from ``--method``, or the folder name's ``-FC``/``-prompt`` suffix (BFCL's naming), or else the file's
format (``FC`` or ``prompting``). ``metadata["turns"]`` records the number of turns the model produced,
which BFCL's final-success rule compares with the ground truth's. On a prompting rollout,
``metadata["bfcl_calls"]`` holds the calls BFCL's own decoder reads, where they differ from the actions:
Y runs on those, so that it is BFCL's number (see :func:`bfcl_reading`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from prefix_exec.envs.bfcl import api_classes, prompting
from prefix_exec.envs.bfcl.calls import CallSyntaxError, bind_positional, parse_call, parse_call_list
from prefix_exec.envs.bfcl.checker import BFCL_CALLS, executed_calls
from prefix_exec.envs.bfcl.tasks import CATEGORIES, BfclTask, all_tasks
from prefix_exec.errors import InputError
from prefix_exec.importers.trials import FROM_INPUT, TrialError, TrialRule, trial_fields
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.infrastructure import mark, system_failure
from prefix_exec.records.jsonl import expand_inputs, numbered_lines
from prefix_exec.trajectory import Rollout, Skipped, ToolCall

DATASET = "bfcl"
UNPARSED = "<unparsed>"
_FILE = re.compile(r"multi_turn_(" + "|".join(CATEGORIES) + r")(?:_result)?\.jsonl?$")
_ATTEMPT = re.compile(r"^\s*(\[|[A-Za-z_][\w.]*\s*\()")
#: Readings of a prompting rollout's calls for Y: BFCL's decoder (the default), or the actions as decoded here.
PROMPTING_Y = ("bfcl", "decoded")
_METHOD_SUFFIX = re.compile(r"^(?P<model>.+)-(?P<method>FC|prompt|Prompt|prompting)$")
#: The folder BFCL v4 writes multi-turn result files in, inside the model's (``result/<model>/multi_turn/``).
GROUP_FOLDER = "multi_turn"


def category_of_file(path: Path) -> str:
    """The category a result file holds, from its name; :class:`InputError` when the name does not say."""
    match = _FILE.search(path.name)
    if match is None:
        raise InputError(
            "cannot tell the BFCL category from the file name",
            path=path,
            hint="BFCL names result files BFCL_v4_multi_turn_<base|miss_func|miss_param|long_context>_result.json",
        )
    return match.group(1)


def _found_in(folder: Path) -> Iterator[Path]:
    """The result files in ``folder`` and in its ``multi_turn`` folder (BFCL v4's ``result/<model>/``)."""
    group = folder / GROUP_FOLDER
    for place in (folder, group) if group.is_dir() else (folder,):
        yield from (p for p in place.iterdir() if _FILE.search(p.name))


def result_files(paths: Collection[str | Path]) -> list[Path]:
    """The multi-turn result files among ``paths``; a folder is searched, and so is its ``multi_turn`` folder
    (not further down)."""
    return expand_inputs(paths, _found_in, none_found="no BFCL multi-turn result files in this folder")


def identity(path: Path, model: str | None, method: str | None, fmt: str) -> tuple[str, str]:
    """(model, method) for a file: flags first, then the folder name, then the file's format."""
    folder_model, folder_method = folder_identity(path)
    return model or folder_model, method or folder_method or fmt


def folder_identity(path: Path) -> tuple[str, str | None]:
    """The model and the method (``None``: not named) a result file's folder names: BFCL's ``<model>-FC`` or
    ``<model>-prompt``, else the folder's name is the model; for a file in BFCL v4's ``result/<model>/multi_turn/``,
    the folder above ``multi_turn``."""
    parent = path.resolve().parent
    folder = parent.parent.name if parent.name == GROUP_FOLDER and parent.parent != parent else parent.name
    suffix = _METHOD_SUFFIX.match(folder)
    return (suffix.group("model"), suffix.group("method")) if suffix else (folder, None)


def _fc_calls(step: Any, turn: int, step_index: int) -> list[ToolCall]:
    entries = step if isinstance(step, list) else [step]
    calls: list[ToolCall] = []
    for entry in entries:
        if not isinstance(entry, dict):
            calls.append(
                _unparsed(
                    f"expected a {{function: arguments}} object, got {type(entry).__name__}",
                    entry,
                    turn,
                    step_index,
                    len(calls),
                )
            )
            continue
        for name, raw in entry.items():
            call_id = f"t{turn}.s{step_index}.c{len(calls)}"
            text = raw if isinstance(raw, str) else json.dumps(raw)
            try:
                arguments = json.loads(raw) if isinstance(raw, str) else raw
            except (ValueError, RecursionError) as exc:  # bad JSON, an over-long integer, deep nesting
                calls.append(
                    ToolCall(str(name), {}, call_id, turn, raw=text, parse_error=f"arguments are not JSON: {exc}")
                )
                continue
            if not isinstance(arguments, dict):
                error = f"arguments must be a JSON object, got {type(arguments).__name__}"
                calls.append(ToolCall(str(name), {}, call_id, turn, raw=text, parse_error=error))
                continue
            calls.append(ToolCall(str(name), arguments, call_id, turn, raw=text))
    return calls


def _prompt_calls(text: str, turn: int, step_index: int) -> list[ToolCall]:
    if not _ATTEMPT.match(text.strip("`\n ").strip("'")):
        return []
    try:
        parsed = parse_call_list(text)
    except CallSyntaxError as exc:
        return [_unparsed(str(exc), text, turn, step_index, 0)]
    calls = []
    for index, call in enumerate(parsed):
        call_id = f"t{turn}.s{step_index}.c{index}"
        try:
            arguments = bind_positional(call, api_classes.positional_names)
        except CallSyntaxError as exc:
            calls.append(ToolCall(call.name, {}, call_id, turn, raw=text, parse_error=str(exc)))
            continue
        calls.append(ToolCall(call.name, arguments, call_id, turn, raw=text))
    return calls


def _unparsed(error: str, raw: Any, turn: int, step: int, index: int) -> ToolCall:
    text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    return ToolCall(UNPARSED, {}, f"t{turn}.s{step}.c{index}", turn, raw=text, parse_error=error)


def decode_result(result: Any) -> tuple[list[ToolCall], str]:
    """The calls of one task's ``result`` (all turns, in order) and the format seen (``FC``/``prompting``).

    A result with any step that is not a string (a call object, a list of them) is FC: its string steps are the
    model's text replies, no action (BFCL's FC decoder fails on them and skips them). In a result of strings
    only, each string is a prompting step, decoded as BFCL's prompting decoder reads it."""
    turns = [entry if isinstance(entry, list) else [entry] for entry in result]
    fc = any(not isinstance(step, str) for steps in turns for step in steps)
    calls: list[ToolCall] = []
    for turn, steps in enumerate(turns):
        for step_index, step in enumerate(steps):
            if not isinstance(step, str):
                calls += _fc_calls(step, turn, step_index)
            elif not fc:
                calls += _prompt_calls(step, turn, step_index)
    return calls, "prompting" if not fc and any(turns) else "FC"


def bfcl_reading(result: list[Any], actions: Collection[ToolCall]) -> list[list[list[Any]]] | None:
    """BFCL's own reading of a prompting ``result`` for Y, per turn, when it differs from ``actions``.

    ``None`` when BFCL executes exactly the calls that ``actions`` give (undecodable steps skipped whole).
    Otherwise a list per turn of ``[name, arguments]`` pairs, as :mod:`prefix_exec.envs.bfcl.prompting`
    reads BFCL's decoder: a string turn is empty, positional arguments are dropped, quoted calls fail.
    """
    theirs = [[[name, arguments] for name, arguments in prompting.decode_turn(entry)] for entry in result]
    ours = [[[c.name, dict(c.arguments)] for c in calls] for calls in executed_calls(list(actions), len(result))]
    return None if theirs == ours else theirs


def read_result_file(
    path: Path,
    *,
    model: str | None = None,
    method: str | None = None,
    only: Collection[str] | None = None,
    prompting_y: str = "bfcl",
    trials: TrialRule = FROM_INPUT,
) -> Iterator[Rollout | Skipped]:
    """Rollouts of one result file (``only``: keep these task ids). Bad lines come out as ``Skipped``.

    BFCL's lines name no trial: ``trials`` (``--trial N``, or ``--trial-field``, a path into the line) may give
    one; otherwise the rollout's trial is not given (:mod:`prefix_exec.scoring.numbering` numbers repeated tasks).

    ``prompting_y`` decides which calls Y runs on a prompting-format rollout: ``"bfcl"`` (the default)
    those BFCL's decoder reads (recorded in ``metadata["bfcl_calls"]`` where they differ from the
    actions), ``"decoded"`` the actions as decoded here (positional arguments bound, a string turn read as
    one step, quoted calls unwrapped; ``metadata["prompting_y"] = "decoded"``).
    """
    for item in _rows(path, model=model, method=method, only=only, prompting_y=prompting_y, trials=trials):
        yield item if isinstance(item, Skipped) else _rollout(item.row, item.where, item.reading)


def result_lines(
    path: Path,
    *,
    model: str | None = None,
    method: str | None = None,
    only: Collection[str] | None = None,
    prompting_y: str = "bfcl",
    trials: TrialRule = FROM_INPUT,
) -> Iterator[tuple[str, Callable[[], Rollout | Skipped]] | Skipped]:
    """The lines of one result file as :func:`read_result_file` reads them, each undecoded: its task id and its
    decoding (a ``functools.partial`` of :func:`rollout_of_line` with plain data, which a worker process may
    call), or the ``Skipped`` of a line that is no result of the file's category. Only a line's JSON is read
    here (for its id); decoding its calls (and BFCL's reading of a prompting one) is most of the reading's cost."""
    for item in _rows(path, model=model, method=method, only=only, prompting_y=prompting_y, trials=trials):
        if isinstance(item, Skipped):
            yield item
        else:
            yield item.row["id"], partial(rollout_of_line, item.line, item.where, item.reading)


@dataclass(frozen=True)
class LineReading:
    """How a line of one result file becomes a rollout (:func:`read_result_file`'s arguments, the file's category
    and its folder's model and method, read once per file)."""

    category: str
    model: str
    method: str | None
    prompting_y: str
    trials: TrialRule


@dataclass(frozen=True)
class _Row:
    where: str
    line: str
    row: dict[str, Any]
    reading: LineReading


def rollout_of_line(line: str, where: str, reading: LineReading) -> Rollout | Skipped:
    """The rollout of a result file's ``line`` (read at ``where``, a line :func:`result_lines` gave), or the
    ``Skipped`` of a line whose trial cannot be read."""
    return _rollout(json.loads(line), where, reading)


def _rows(
    path: Path,
    *,
    model: str | None,
    method: str | None,
    only: Collection[str] | None,
    prompting_y: str,
    trials: TrialRule,
) -> Iterator[_Row | Skipped]:
    """Each line of ``path`` that holds a result of the file's category (but those of a task not in ``only``),
    parsed; the ``Skipped`` of each that does not."""
    if prompting_y not in PROMPTING_Y:
        raise ValueError(f"prompting_y must be one of {PROMPTING_Y}, got {prompting_y!r}")
    category = category_of_file(path)
    folder_model, folder_method = folder_identity(path)  # once per file: resolving a path reads the file system
    reading = LineReading(category, model or folder_model, method or folder_method, prompting_y, trials)
    for number, line in numbered_lines(path):
        where = f"{path}:{number}"
        if isinstance(line, InputError):  # not UTF-8, or over-long: this line's error only
            yield Skipped(where, line.message)
            continue
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            yield Skipped(where, f"not JSON: {exc}")
            continue
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or "result" not in row:
            yield Skipped(where, "expected an object with 'id' and 'result'")
            continue
        task_id = row["id"]
        if only is not None and task_id not in only:
            continue
        if not task_id.startswith(f"multi_turn_{category}_"):
            yield Skipped(where, f"task {task_id} is not in category {category} named by the file")
            continue
        yield _Row(where, line, row, reading)


def _rollout(row: dict[str, Any], where: str, reading: LineReading) -> Rollout | Skipped:
    try:
        trial = trial_fields(reading.trials.read(row, own=()))
    except TrialError as exc:
        return Skipped(where, f"input error: {exc}")
    actions, fmt, turns, notes = _decoded(row["result"], reading.prompting_y)
    metadata = {"source": where, **notes}
    rollout = task_rollout(row["id"], reading.model, reading.method or fmt, actions, reading.category, turns, metadata)
    crash = notes.get("inference_error")
    if isinstance(crash, str) and system_failure(crash):  # the model server's failure, not the agent's
        rollout = mark(rollout, crash)
    return replace(rollout, **trial)


def _decoded(result: Any, prompting_y: str) -> tuple[list[ToolCall], str, int, JsonObject]:
    """A line's ``result`` as (actions, format, turns, metadata notes): for a prompting rollout the reading Y runs
    on (``prompting_y``), for an inference error its text."""
    if not isinstance(result, list):
        # BFCL's "inference_error": the model produced no list of turns. It fails BFCL's check.
        return [], "FC", 0, {"inference_error": str(result)[:500]}
    actions, fmt = decode_result(result)
    notes: JsonObject = {}
    if fmt == "prompting" and prompting_y == "decoded":
        notes["prompting_y"] = "decoded"
    elif fmt == "prompting":
        reading = bfcl_reading(result, actions)
        if reading is not None:
            notes[BFCL_CALLS] = reading
    return actions, fmt, len(result), notes


def read_results(
    paths: Collection[str | Path],
    *,
    model: str | None = None,
    method: str | None = None,
    only: Collection[str] | None = None,
    prompting_y: str = "bfcl",
    trials: TrialRule = FROM_INPUT,
) -> Iterator[Rollout | Skipped]:
    """Rollouts of every result file in ``paths`` (files or folders); ``prompting_y`` and ``trials`` as for one
    file."""
    for path in result_files(paths):
        yield from read_result_file(path, model=model, method=method, only=only, prompting_y=prompting_y, trials=trials)


def undecoded_results(
    paths: Collection[str | Path],
    *,
    model: str | None = None,
    method: str | None = None,
    only: Collection[str] | None = None,
    prompting_y: str = "bfcl",
    trials: TrialRule = FROM_INPUT,
) -> Iterator[tuple[str, Callable[[], Rollout | Skipped]] | Skipped]:
    """:func:`read_results`'s lines, each undecoded (:func:`result_lines`)."""
    for path in result_files(paths):
        yield from result_lines(path, model=model, method=method, only=only, prompting_y=prompting_y, trials=trials)


def ground_truth_rollout(task: BfclTask) -> Rollout:
    """BFCL's own answer for ``task`` as a rollout (model ``ground_truth``, method ``bfcl``)."""
    actions = []
    for turn, sources in enumerate(task.ground_truth):
        for index, source in enumerate(sources):
            parsed = parse_call(source)
            arguments = bind_positional(parsed, api_classes.positional_names)
            actions.append(ToolCall(parsed.name, arguments, f"t{turn}.s0.c{index}", turn, raw=source))
    return task_rollout(task.id, "ground_truth", "bfcl", actions, task.category, task.turns)


def task_rollout(
    task_id: str,
    model: str,
    method: str,
    actions: Iterable[ToolCall],
    category: str,
    turns: int,
    notes: JsonMapping | None = None,
) -> Rollout:
    """A BFCL rollout of ``task_id``: ``metadata`` holds its category and number of turns, then ``notes``."""
    return Rollout(
        dataset=DATASET,
        task_id=task_id,
        model=model,
        method=method,
        actions=tuple(actions),
        metadata={"category": category, "turns": turns, **(notes or {})},
    )


def ground_truth_rollouts(only: Collection[str] | None = None) -> Iterator[Rollout]:
    """Ground-truth rollouts of all 800 tasks (or of ``only``), category by category."""
    for task in all_tasks():
        if only is None or task.id in only:
            yield ground_truth_rollout(task)
