"""Import ToolSandbox run folders (apple/ToolSandbox's ``tool_sandbox`` CLI output) as rollouts.

Accepted paths: a run folder (``result_summary.json`` + ``trajectories/<scenario>/``), its ``trajectories``
folder, or one scenario folder (its run's ``result_summary.json`` is looked up two levels up).

Per scenario:

- **Actions** come from ``execution_context.json``: every ``AGENT -> EXECUTION_ENVIRONMENT`` row of
  ``_dbs.SANDBOX``, in row order. Each is paired with its ``EXECUTION_ENVIRONMENT -> AGENT`` reply by
  ``openai_tool_call_id`` (parallel calls can come back reordered), and its outcome is stored as
  ``ToolCall.observation = Observation(content, error)``: on a non-null ``tool_call_exception`` the content
  is that exception text and ``error`` is true. The tool name is the real (execution-facing) one, read from
  the generated call code ``<id>_response = NAME(...)``, else from ``tool_trace``, else
  ``openai_function_name`` (which is scrambled in the tool-name-scrambled scenarios). Arguments are the
  literal ``<id>_parameters = {...}`` dict (read with ``ast.literal_eval``, never executed). ``turn`` counts
  the user messages the agent saw before the call (few-shot rows visible only to the user do not count).
- **Fallback** without ``execution_context.json``: the assistant ``tool_calls`` and ``tool`` messages of
  ``conversation.json``, paired by ``tool_call_id``; a tool message whose content starts like
  ``SomeError: ...`` is taken as a rejection. Every verdict of such a rollout carries a ``heuristic`` note.
- **Final success** Y = 1 when ``similarity >= success_threshold`` (default 1.0) in ``result_summary.json``.
  Without a summary Y is unknown: the scenario is skipped unless ``success_if_unknown`` is given.
- **Aborts** (``exception_type`` set in the summary): ``KeyError`` for an unknown tool (ToolSandbox checks
  agent tool names before executing) becomes a last action named after the attempted tool, carrying the
  error; a ``JSONDecodeError`` becomes a last action with a ``parse_error``. Any other abort (an API error,
  say) is an environment fault: the recorded calls are scored as they are and the fault is listed. An
  aborted scenario without a summary (no ``conversation.json``) cannot be explained and is skipped.
- **Minefield hits** (a minefield whose similarity is > 0, the rule by which ToolSandbox zeroes the
  scenario's similarity) are located at the *last agent call whose AGENT row index is <= the matched
  snapshot index* of ``minefield_mapping`` (snapshots are ``sandbox_message_index`` values); depth 0 means
  before any call. Without a summary or execution context, ``conversation.json``'s ``minefield_matches``
  are used: a match on a tool message is its call, on an assistant message with tool calls the first of
  them, on any other message the last call before it.

``Rollout.metadata`` keeps ``categories``, ``similarity``, ``source`` (``execution_context`` or
``conversation``), ``minefield_hits`` and ``minefield_source`` (the file they were read from, ``None`` when
neither exists), ``environment_faults``, ``aborted_with`` and ``scenario_dir``. See
:mod:`prefix_exec.envs.toolsandbox` for the labelling table and docs/toolsandbox.md for the whole story.
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prefix_exec.envs.toolsandbox import DATASET, classify_exception, split_exception
from prefix_exec.errors import InputError
from prefix_exec.replay import Skipped
from prefix_exec.trajectory import Observation, Rollout, ToolCall

SUMMARY = "result_summary.json"
CONTEXT = "execution_context.json"
CONVERSATION = "conversation.json"
_CODE = re.compile(r"^(?P<id>.+?)_parameters = (?P<args>[^\n]*)\n(?P=id)_response = (?P<name>[^(\s]+)\(")
_ERROR_TEXT = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)(: |$)")
_UNKNOWN_TOOL = re.compile(r"agent_facing_tool_name='(?P<name>[^']*)'")


@dataclass(frozen=True)
class ScenarioResult:
    """One row of ``result_summary.json``'s ``per_scenario_results``.

    ``minefields`` are ``(minefield index, snapshot index, similarity)`` triples.
    """

    name: str
    categories: tuple[str, ...]
    similarity: float
    exception_type: str | None = None
    traceback: str | None = None
    minefields: tuple[tuple[int, int, float], ...] = ()


@dataclass(frozen=True)
class ImportOptions:
    """Identity and success settings shared by every scenario of an import."""

    model: str | None = None
    method: str | None = None
    success_threshold: float = 1.0
    success_if_unknown: int | None = None
    scenarios: frozenset[str] | None = None


@dataclass(frozen=True)
class RecordedCalls:
    """A scenario's agent calls, the SANDBOX row index of each (``None`` in the conversation fallback), and
    the ``(depth, minefield index, similarity)`` of minefield hits found alongside them."""

    calls: tuple[ToolCall, ...] = ()
    rows: tuple[int | None, ...] = ()
    minefields: tuple[tuple[int, int, float], ...] = ()


def read_result_summary(path: str | Path) -> dict[str, ScenarioResult]:
    """Scenario name -> result. Raises :class:`InputError` on a malformed file."""
    data = _load_json(Path(path))
    rows = data.get("per_scenario_results") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError("expected an object with a 'per_scenario_results' list", path=path)
    results: dict[str, ScenarioResult] = {}
    for number, row in enumerate(rows):
        where = f"per_scenario_results[{number}]"
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise InputError("each result needs a 'name'", path=path, field=where)
        try:
            minefields = tuple(
                sorted((int(k), int(v[0]), float(v[1])) for k, v in (row.get("minefield_mapping") or {}).items())
            )
            results[row["name"]] = ScenarioResult(
                name=row["name"],
                categories=tuple(str(c) for c in row.get("categories") or ()),
                similarity=float(row.get("similarity") or 0.0),
                exception_type=row.get("exception_type") or None,
                traceback=row.get("traceback") or None,
                minefields=minefields,
            )
        except (TypeError, ValueError, IndexError) as exc:
            raise InputError(f"malformed result: {exc}", path=path, field=where) from None
    return results


def scenario_dirs(path: str | Path) -> tuple[list[Path], Path | None]:
    """The scenario folders under ``path`` (sorted by name) and the run's summary file, if any."""
    path = Path(path)
    if not path.is_dir():
        raise InputError("not a folder", path=path, hint="pass a ToolSandbox run folder or a scenario folder")
    if _is_scenario(path):
        summary = path.parent.parent / SUMMARY
        return [path], summary if summary.is_file() else None
    root = path.parent if path.name == "trajectories" else path
    folder = root / "trajectories"
    if not folder.is_dir():
        raise InputError(
            f"no {CONTEXT} or {CONVERSATION} here and no 'trajectories' folder",
            path=path,
            hint="pass the folder the tool_sandbox CLI created (it holds result_summary.json and trajectories/)",
        )
    summary = root / SUMMARY
    return sorted(p for p in folder.iterdir() if p.is_dir()), summary if summary.is_file() else None


def read_toolsandbox(paths: Iterable[str | Path], options: ImportOptions | None = None) -> Iterator[Rollout | Skipped]:
    """Rollouts, one per scenario folder under ``paths``; a scenario that cannot be read is a ``Skipped``.

    A scenario met again under the same model and method (another run folder of the same agent) gets the next
    ``trial`` number, in the order the paths are given. Names of ``options.scenarios`` found nowhere are
    reported as ``Skipped`` at the end, never dropped silently.
    """
    options = options or ImportOptions()
    trials: dict[tuple[str, str, str], int] = {}
    found: set[str] = set()
    for path in paths:
        dirs, summary_path = scenario_dirs(path)
        results = read_result_summary(summary_path) if summary_path else {}
        model = options.model or _model_from_run(summary_path.parent if summary_path else Path(path))
        for folder in dirs:
            if options.scenarios is not None and folder.name not in options.scenarios:
                continue
            found.add(folder.name)
            try:
                unit = scenario_rollout(folder, results.get(folder.name), options, model=model)
            except InputError as exc:
                unit = Skipped(str(folder), exc.describe())
            if isinstance(unit, Rollout):
                key = (unit.task_id, unit.model, unit.method)
                trials[key] = trials.get(key, -1) + 1
                unit = replace(unit, trial=trials[key])
            yield unit
        if summary_path is None or _is_scenario(Path(path)):
            continue
        for name in sorted(set(results) - {folder.name for folder in dirs}):
            if options.scenarios is None or name in options.scenarios:
                found.add(name)
                yield Skipped(f"{summary_path}: {name}", "listed in the summary but has no trajectories/ folder")
    for name in sorted((options.scenarios or frozenset()) - found):
        yield Skipped(f"scenario {name}", "named in the scenario list but found in none of the run folders")


def scenario_rollout(
    folder: Path, result: ScenarioResult | None, options: ImportOptions, *, model: str
) -> Rollout | Skipped:
    """The rollout of one scenario folder, or ``Skipped`` with the reason it cannot be scored."""
    context, conversation = folder / CONTEXT, folder / CONVERSATION
    metadata: dict[str, Any] = {"scenario_dir": str(folder), "environment_faults": []}
    if context.is_file():
        recorded = calls_from_execution_context(context)
        metadata["source"] = "execution_context"
        if result is not None:
            minefields, metadata["minefield_source"] = _locate_minefields(result, recorded.rows), SUMMARY
        elif conversation.is_file():
            minefields, metadata["minefield_source"] = minefields_from_conversation(conversation), CONVERSATION
        else:
            minefields, metadata["minefield_source"] = [], None
    elif conversation.is_file():
        recorded = calls_from_conversation(conversation)
        metadata["source"] = "conversation"
        minefields, metadata["minefield_source"] = list(recorded.minefields), CONVERSATION
    else:
        return Skipped(str(folder), f"neither {CONTEXT} nor {CONVERSATION} is present")
    calls = list(recorded.calls)
    aborted = result.exception_type if result else None
    if result is None and not conversation.is_file():
        return Skipped(
            str(folder),
            f"the run aborted ({CONVERSATION} is missing) and there is no {SUMMARY} saying why, so the failing "
            "call is unknown; score the complete run folder",
        )
    if aborted:
        metadata["aborted_with"] = aborted
        attempted = _aborted_call(result, calls[-1].turn if calls else 0) if result else None
        if attempted is not None:
            calls.append(attempted)
        else:
            metadata["environment_faults"].append({"depth": None, "error": f"run aborted with {aborted}"})
    for depth, call in enumerate(calls, start=1):
        observation = call.observation
        if observation is not None and observation.error and classify_exception(str(observation.content)).label is None:
            metadata["environment_faults"].append({"depth": depth, "error": str(observation.content)})
    metadata["minefield_hits"] = [
        {"depth": depth, "minefield": index, "similarity": similarity}
        for depth, index, similarity in minefields
    ]
    if result is not None:
        metadata["categories"] = list(result.categories)
        metadata["similarity"] = result.similarity
        success: int | None = int(result.similarity >= options.success_threshold)
    else:
        success = options.success_if_unknown
        if success is None:
            return Skipped(
                str(folder),
                f"no {SUMMARY} for this scenario, so its final success is unknown; score the whole run folder, "
                "or pass --success-if-unknown 0|1",
            )
        metadata["success_assumed"] = True
    return Rollout(
        dataset=DATASET,
        task_id=folder.name,
        model=model,
        method=options.method or "default",
        actions=tuple(calls),
        success=success,
        metadata=metadata,
    )


def calls_from_execution_context(path: Path) -> RecordedCalls:
    """The agent's calls from the SANDBOX rows, each with its recorded reply paired by call id."""
    data = _load_json(path)
    try:
        rows: list[dict[str, Any]] = [row for row in data["_dbs"]["SANDBOX"] if isinstance(row, dict)]
    except (KeyError, TypeError):
        raise InputError("expected _dbs.SANDBOX rows", path=path) from None
    replies: dict[str | None, deque[dict[str, Any]]] = defaultdict(deque)
    for row in rows:
        if row.get("sender") == "EXECUTION_ENVIRONMENT" and row.get("recipient") == "AGENT":
            replies[row.get("openai_tool_call_id")].append(row)
    calls: list[ToolCall] = []
    indices: list[int | None] = []
    turn = -1
    for row in rows:
        sender, recipient = row.get("sender"), row.get("recipient")
        if sender == "USER" and recipient == "AGENT" and _agent_sees(row):
            turn += 1
        if sender != "AGENT" or recipient != "EXECUTION_ENVIRONMENT":
            continue
        code = str(row.get("content") or "")
        call_id = row.get("openai_tool_call_id")
        queue = replies.get(call_id)
        reply = queue.popleft() if queue else None
        calls.append(
            ToolCall(
                name=_real_name(code, reply, row.get("openai_function_name")),
                arguments=_arguments(code, reply),
                call_id=call_id,
                turn=max(turn, 0),
                observation=_observation(reply),
                raw=code,
            )
        )
        indices.append(row.get("sandbox_message_index"))
    return RecordedCalls(tuple(calls), tuple(indices))


def calls_from_conversation(path: Path) -> RecordedCalls:
    """Heuristic fallback: calls from OpenAI-style messages; rejections from exception-like tool text."""
    messages = _load_json(path)
    if not isinstance(messages, list):
        raise InputError("expected a list of messages", path=path)
    replies = {m.get("tool_call_id"): m for m in messages if isinstance(m, dict) and m.get("role") == "tool"}
    calls: list[ToolCall] = []
    turn = -1
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            turn += 1
        for call in message.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            if not isinstance(function, dict):
                raise InputError(
                    f"tool call {call.get('id')!r}: 'function' must be an object, got {type(function).__name__}",
                    path=path,
                )
            text = function.get("arguments") or "{}"
            if not isinstance(text, str):
                raise InputError(
                    f"tool call {call.get('id')!r}: 'function.arguments' must be a JSON string, got "
                    f"{type(text).__name__}",
                    path=path,
                )
            try:
                arguments, problem = json.loads(text), None
            except json.JSONDecodeError as exc:
                arguments, problem = {}, f"arguments are not JSON: {exc}"
            reply = replies.get(call.get("id"))
            content = None if reply is None else reply.get("content")
            error = None if reply is None else bool(_ERROR_TEXT.match(str(content or "")))
            calls.append(
                ToolCall(
                    name=str(function.get("name") or ""),
                    arguments=arguments if isinstance(arguments, dict) else {},
                    call_id=call.get("id"),
                    turn=max(turn, 0),
                    observation=None if reply is None else Observation(content, error),
                    raw=text,
                    parse_error=problem,
                )
            )
    hits = tuple(minefields_from_conversation(path, messages))
    return RecordedCalls(tuple(calls), (None,) * len(calls), hits)


def minefields_from_conversation(path: Path, messages: list[Any] | None = None) -> list[tuple[int, int, float]]:
    """``(depth, minefield index, similarity)`` of every minefield match with similarity > 0."""
    messages = messages if messages is not None else _load_json(path)
    hits: list[tuple[int, int, float]] = []
    ids: list[str | None] = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        calls = message.get("tool_calls") or []
        first_depth = len(ids) + 1
        ids.extend(call.get("id") for call in calls)
        details = message.get(f"{message.get('role')}_details") or {}
        for match in details.get("minefield_matches") or ():
            similarity = float(match.get("minefield_similarity") or 0.0)
            if similarity <= 0:
                continue
            if message.get("role") == "tool" and message.get("tool_call_id") in ids:
                depth = ids.index(message.get("tool_call_id")) + 1
            elif calls:
                depth = first_depth
            else:
                depth = len(ids)
            hits.append((depth, int(match.get("minefield_index", -1)), similarity))
    return hits


def _locate_minefields(result: ScenarioResult, rows: Sequence[int | None]) -> list[tuple[int, int, float]]:
    hits = []
    for index, snapshot, similarity in result.minefields:
        if similarity > 0:
            depth = sum(1 for row in rows if row is not None and row <= snapshot)
            hits.append((depth, index, similarity))
    return hits


def _aborted_call(result: ScenarioResult, turn: int) -> ToolCall | None:
    """The call an agent-side abort attempted, as a failing last action; ``None`` for other aborts."""
    error = _last_error_line(result.traceback or "", result.exception_type or "")
    rule = classify_exception(error)
    short = (result.exception_type or "").rsplit(".", 1)[-1]
    if short == "JSONDecodeError":
        return ToolCall(name="<undecodable call>", turn=turn, parse_error=error, raw=None)
    if rule.name == "unknown tool" or (short == "KeyError" and not result.traceback):
        match = _UNKNOWN_TOOL.search(error)
        name = match.group("name") if match else "<unknown tool>"
        return ToolCall(name=name, turn=turn, observation=Observation(error, True), raw=None)
    return None


def _last_error_line(traceback: str, exception_type: str) -> str:
    short = exception_type.rsplit(".", 1)[-1]
    for line in reversed(traceback.strip().splitlines()):
        head = split_exception(line)[0]
        if short and head.rsplit(".", 1)[-1] == short:
            return line.strip()
    return f"{exception_type}: the run aborted" if exception_type else "the run aborted"


def _is_scenario(path: Path) -> bool:
    return (path / CONTEXT).is_file() or (path / CONVERSATION).is_file()


def _agent_sees(row: Mapping[str, Any]) -> bool:
    visible = row.get("visible_to")
    return visible is None or "AGENT" in visible


def _real_name(code: str, reply: Mapping[str, Any] | None, agent_facing: Any) -> str:
    match = _CODE.match(code)
    if match:
        return match.group("name")
    for trace in (reply or {}).get("tool_trace") or ():
        try:
            return str(json.loads(trace)["tool_name"])
        except (ValueError, KeyError, TypeError):
            continue
    return str(agent_facing or "")


def _arguments(code: str, reply: Mapping[str, Any] | None) -> dict[str, Any]:
    match = _CODE.match(code)
    if match:
        try:
            value = ast.literal_eval(match.group("args"))
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, dict):
            return value
    for trace in (reply or {}).get("tool_trace") or ():
        try:
            arguments = json.loads(trace)["arguments"]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(arguments, dict):
            return arguments
    return {}


def _observation(reply: Mapping[str, Any] | None) -> Observation | None:
    if reply is None:
        return None
    exception = reply.get("tool_call_exception")
    if exception:
        return Observation(str(exception), True)
    return Observation(reply.get("content"), False)


def _model_from_run(folder: Path) -> str:
    # The tool_sandbox CLI names runs agent_<model>_user_<model>_<mm_dd_yyyy_hh_mm_ss>.
    match = re.match(r"agent_(?P<model>.+?)_user_", folder.name)
    return match.group("model") if match else folder.name


def _load_json(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
