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
  say) is an environment fault: the recorded calls are scored as they are and the fault is listed; one that says
  the model API failed (``RateLimitError``, an ``InternalServerError``: :func:`prefix_exec.records.infrastructure.
  system_failure`) also marks the rollout as an infrastructure failure, left out of the records by default. An
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

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prefix_exec.envs.toolsandbox.semantics import (
    DATASET,
    MinefieldHit,
    ScenarioFacts,
    classify_exception,
    final_success,
    locate_minefields,
    split_exception,
)
from prefix_exec.errors import InputError
from prefix_exec.importers.toolsandbox.rows import (
    RecordedCalls,
    calls_from_conversation,
    calls_from_execution_context,
    load_json,
    minefields_from_conversation,
)
from prefix_exec.importers.trials import FROM_INPUT, TrialError, TrialRule, trial_fields
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.records.infrastructure import KEY, TEXT_CHARS, system_failure
from prefix_exec.trajectory import Observation, Rollout, Skipped, ToolCall

__all__ = [
    "ImportOptions",
    "RecordedCalls",
    "ScenarioResult",
    "calls_from_conversation",
    "calls_from_execution_context",
    "minefields_from_conversation",
    "read_result_summary",
    "read_toolsandbox",
    "scenario_dirs",
    "scenario_rollout",
]

SUMMARY = "result_summary.json"
CONTEXT = "execution_context.json"
CONVERSATION = "conversation.json"
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
    #: Why the row cannot be used (a malformed value, naming its field); the scenario is then skipped.
    error: str | None = None
    #: The row as read, for ``--trial-field`` (a path into it).
    row: JsonMapping = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class ImportOptions:
    """Identity and success settings shared by every scenario of an import. ToolSandbox names no trial:
    ``trials`` may give one (``--trial N``, or ``--trial-field``, a path into the scenario's summary row)."""

    model: str | None = None
    method: str | None = None
    success_threshold: float = 1.0
    success_if_unknown: int | None = None
    scenarios: frozenset[str] | None = None
    trials: TrialRule = FROM_INPUT


def read_result_summary(path: str | Path) -> dict[str, ScenarioResult]:
    """Scenario name -> result. Raises :class:`InputError` on a malformed file; a malformed row is kept as a
    result with :attr:`ScenarioResult.error` set (its scenario is skipped, the others are scored)."""
    data = load_json(Path(path))
    rows = data.get("per_scenario_results") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError("expected an object with a 'per_scenario_results' list", path=path)
    results: dict[str, ScenarioResult] = {}
    for number, row in enumerate(rows):
        where = f"per_scenario_results[{number}]"
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise InputError("each result needs a 'name'", path=path, field=where)
        try:
            results[row["name"]] = _result(row)
        except InputError as exc:
            problem = InputError(exc.message, path=path, field=f"{where}.{exc.field}")
            results[row["name"]] = ScenarioResult(row["name"], (), 0.0, error=problem.describe())
    return results


def _result(row: JsonObject) -> ScenarioResult:
    """One summary row, every value checked; raises :class:`InputError` whose ``field`` is the key."""
    categories = row.get("categories") or []
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        raise InputError("expected a list of category names", field="categories")
    similarity = row.get("similarity") or 0.0
    if isinstance(similarity, bool) or not isinstance(similarity, int | float):
        raise InputError(f"expected a number, got {type(similarity).__name__}", field="similarity")
    texts = {}
    for key in ("exception_type", "traceback"):
        value = row.get(key) or None
        if value is not None and not isinstance(value, str):
            raise InputError(f"expected text or null, got {type(value).__name__}", field=key)
        texts[key] = value
    mapping = row.get("minefield_mapping") or {}
    if not isinstance(mapping, dict):
        raise InputError(f"expected an object, got {type(mapping).__name__}", field="minefield_mapping")
    minefields = []
    for key, value in mapping.items():
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and type(value[0]) is int
            and isinstance(value[1], int | float)
            and not isinstance(value[1], bool)
            and str(key).lstrip("-").isdecimal()
            and len(str(key)) <= 18
        )
        if not ok:
            raise InputError(
                "expected [snapshot index, similarity] under a minefield index",
                field=f"minefield_mapping.{str(key)[:40]}",
            )
        minefields.append((int(key), int(value[0]), float(value[1])))
    return ScenarioResult(
        name=row["name"],
        categories=tuple(categories),
        similarity=float(similarity),
        exception_type=texts["exception_type"],
        traceback=texts["traceback"],
        minefields=tuple(sorted(minefields)),
        row=row,
    )


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

    ToolSandbox names no trial: a scenario met again under the same model and method (another run folder of the
    same agent) is told apart by :class:`scoring.numbering.Numbering`, in the order the paths are given. Names
    of ``options.scenarios`` found nowhere are reported as ``Skipped`` at the end, never dropped silently.
    """
    options = options or ImportOptions()
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
    if result is not None and result.error is not None:
        return Skipped(str(folder), f"its {SUMMARY} row is malformed: {result.error}")
    try:
        trial = trial_fields(options.trials.read(result.row if result is not None else {}, own=()))
    except TrialError as exc:
        return Skipped(str(folder), f"input error: {exc} (in its {SUMMARY} row)")
    metadata: JsonObject = {"scenario_dir": str(folder), "environment_faults": []}
    read = _recorded(folder, result, metadata)
    if read is None:
        return Skipped(str(folder), f"neither {CONTEXT} nor {CONVERSATION} is present")
    recorded, minefields = read
    calls = list(recorded.calls)
    if result is None and not (folder / CONVERSATION).is_file():
        return Skipped(
            str(folder),
            f"the run aborted ({CONVERSATION} is missing) and there is no {SUMMARY} saying why, so the failing "
            "call is unknown; score the complete run folder",
        )
    _note_faults(calls, result, metadata)
    hits = [MinefieldHit(depth=d, minefield=i, similarity=sim) for d, i, sim in minefields]
    facts = ScenarioFacts.of_scenario(list(result.categories) if result else [], hits)
    metadata.update(facts.to_metadata(list(result.categories) if result else [], hits, metadata["source"]))
    if result is None:
        del metadata["categories"]  # unknown without a summary (ScenarioFacts then reads the scenario's name)
    if result is not None:
        metadata["similarity"] = result.similarity
        success: int | None = final_success(result.similarity, options.success_threshold)
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
        **trial,
    )


def _recorded(
    folder: Path, result: ScenarioResult | None, metadata: JsonObject
) -> tuple[RecordedCalls, list[tuple[int, int, float]]] | None:
    """The scenario's recorded calls and its minefield hits ``(depth, minefield, similarity)``: from the
    execution context when there is one, else from the conversation (a heuristic); ``None`` with neither. Where
    each came from goes in ``metadata`` (``source``, ``minefield_source``)."""
    context, conversation = folder / CONTEXT, folder / CONVERSATION
    if context.is_file():
        recorded = calls_from_execution_context(context)
        metadata["source"] = "execution_context"
        if result is not None:
            hits = locate_minefields(result.minefields, recorded.rows)
            minefields = [(h["depth"], h["minefield"], h["similarity"]) for h in hits]
            metadata["minefield_source"] = SUMMARY
        elif conversation.is_file():
            minefields, metadata["minefield_source"] = minefields_from_conversation(conversation), CONVERSATION
        else:
            minefields, metadata["minefield_source"] = [], None
        return recorded, minefields
    if conversation.is_file():
        recorded = calls_from_conversation(conversation)
        metadata["source"] = "conversation"
        metadata["minefield_source"] = CONVERSATION
        return recorded, list(recorded.minefields)
    return None


def _note_faults(calls: list[ToolCall], result: ScenarioResult | None, metadata: JsonObject) -> None:
    """An aborted run: the call its abort attempted appended to ``calls`` as a failing last action (or, for an
    abort that is not the agent's, an environment fault), noted in ``metadata.aborted_with``. Then every recorded
    error that is not the agent's (no failure label: a missing API key, say) in ``metadata.environment_faults``."""
    aborted = result.exception_type if result else None
    if aborted:
        metadata["aborted_with"] = aborted
        attempted = _aborted_call(result, calls[-1].turn if calls else 0) if result else None
        if attempted is not None:
            calls.append(attempted)
        else:
            metadata["environment_faults"].append({"depth": None, "error": f"run aborted with {aborted}"})
            error = _last_error_line(result.traceback or "", aborted) if result else aborted
            if system_failure(f"{aborted}: {error}"):  # the model API's failure (a 429, a 500): the system's
                metadata[KEY] = f"the run aborted with {error}"[:TEXT_CHARS]
    for depth, call in enumerate(calls, start=1):
        observation = call.observation
        if observation is not None and observation.error and classify_exception(str(observation.content)).label is None:
            metadata["environment_faults"].append({"depth": depth, "error": str(observation.content)})


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


def _model_from_run(folder: Path) -> str:
    # The tool_sandbox CLI names runs agent_<model>_user_<model>_<mm_dd_yyyy_hh_mm_ss>.
    match = re.match(r"agent_(?P<model>.+?)_user_", folder.name)
    return match.group("model") if match else folder.name
