"""Fault-injection operators on BFCL ground-truth trajectories, one or more per failure label.

An operator turns a task's ground-truth calls into a faulty rollout and states what it injected: the label
of the fault and the 1-based depth of the first call that must be rejected. Operators that change a call
in place know that depth statically. Operators that *drop* a call (a prerequisite, a login, an engine
start) cannot know statically where the omission first bites; for them a **witness** run executes the
mutated calls on BFCL's own API classes, with no prefix-exec checks, and the first call the API
itself refuses is the injected depth. A candidate whose omission never bites is discarded.

Each operator also gives the *repaired* variant that a recovering agent would produce: the faulty call,
then the fix, then the rest of the ground truth.

| operator | injects | expected label | how |
|---|---|---|---|
| ``rename_argument`` | schema | schema | an argument key renamed (``file_name`` -> ``fileName``) |
| ``retype_argument`` | schema | schema | an argument value of the wrong type (``"42"`` for 42, ``["a"]`` for ``"a"``) |
| ``misspell_tool`` | schema | schema | a tool name in the other case style (``startEngine`` -> ``start_engine``) |
| ``drop_prerequisite`` | dependency | dependency | a ``cd`` into the folder later calls use is dropped |
| ``skip_authentication`` | precondition | precondition | the login call is dropped |
| ``skip_engine_start`` | precondition | precondition | ``pressBrakePedal``, ``lockDoors`` or ``startEngine`` dropped |
| ``create_twice`` | state_consistency | state_consistency | a ``mkdir``/``touch`` is repeated at once |
| ``invent_id`` | information | dependency | an id or file name the dialogue never produced |

``invent_id`` is the one off-diagonal operator by design: BFCL's APIs answer an invented id and a
not-yet-created one with the same "not found" error, so the scorer labels both ``dependency`` (see
docs/demo.md). Its expected label says so, and the calibration checks that expectation.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_exec.envs.bfcl.binding import WIDENED
from prefix_exec.envs.bfcl.labels import C, D, P, S
from prefix_exec.json_types import JsonMapping
from prefix_exec.trajectory import FailureLabel, ToolCall

Calls = tuple[ToolCall, ...]
#: Runs calls on BFCL's raw APIs for a task and returns the 1-based depth of the first refused call.
Witness = Callable[[Calls], int | None]
#: Function docs by tool name (BFCL's JSON docs), for type-aware mutations.
Docs = Mapping[str, JsonMapping]

# The labels by BFCL's short names (envs.bfcl.labels), plus the one its error table never gives.
INFO = FailureLabel.INFORMATION


@dataclass(frozen=True)
class Mutation:
    """A faulty rollout: ``calls`` fail first at ``depth`` (1-based); ``repaired`` fails there too, then
    fixes the fault and goes on. ``expected`` is the label the scorer must report."""

    operator: str
    injected: FailureLabel
    expected: FailureLabel
    depth: int
    calls: Calls
    repaired: Calls
    detail: str


@dataclass(frozen=True)
class Operator:
    name: str
    injected: FailureLabel
    expected: FailureLabel
    propose: Callable[[Calls, Docs, Witness, random.Random], Mutation | None]
    doc: str


def _replace(calls: Calls, i: int, new: ToolCall) -> Calls:
    return (*calls[:i], new, *calls[i + 1 :])


def _with(call: ToolCall, **changes: Any) -> ToolCall:
    return ToolCall(
        changes.get("name", call.name),
        changes.get("arguments", dict(call.arguments)),
        call_id=None,
        turn=changes.get("turn", call.turn),
    )


def _in_place(
    op: str, calls: Calls, i: int, bad: ToolCall, detail: str, injected: FailureLabel, expected: FailureLabel
) -> Mutation:
    """The call at index ``i`` replaced by ``bad``; the repair retries the original call right after."""
    mutated = _replace(calls, i, bad)
    repaired = (*calls[:i], bad, *calls[i:])
    return Mutation(op, injected, expected, i + 1, mutated, repaired, detail)


def _bad_arguments(op: str, calls: Calls, i: int, arguments: JsonMapping, detail: str) -> Mutation:
    """A schema fault in place: the call at index ``i`` made with ``arguments`` (``detail`` says how)."""
    return _in_place(op, calls, i, _with(calls[i], arguments=arguments), f"{calls[i].name}: argument {detail}", S, S)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _rename_argument(calls: Calls, docs: Docs, witness: Witness, rng: random.Random) -> Mutation | None:
    options = [(i, k) for i, c in enumerate(calls) for k in c.arguments]
    rng.shuffle(options)
    for i, key in options:
        new = _camel(key) if "_" in key else f"{key}_name"
        properties = docs[calls[i].name].get("parameters", {}).get("properties", {})
        if new in properties:
            continue
        arguments = {new if k == key else k: v for k, v in calls[i].arguments.items()}
        return _bad_arguments("rename_argument", calls, i, arguments, f"{key!r} renamed to {new!r}")
    return None


def _wrong_type(value: Any, declared: str) -> Any:
    if declared in ("integer", "float") and not isinstance(value, bool):
        return str(value)
    if declared == "string":
        return [value]
    if declared == "boolean":
        return "true" if value else "false"
    if declared == "array" and isinstance(value, list):
        return ", ".join(map(str, value))
    return None


def _retype_argument(calls: Calls, docs: Docs, witness: Witness, rng: random.Random) -> Mutation | None:
    options = [(i, k) for i, c in enumerate(calls) for k in c.arguments]
    rng.shuffle(options)
    for i, key in options:
        if (calls[i].name, key) in WIDENED:
            continue  # the environment accepts both types here, as BFCL's own data needs
        spec = docs[calls[i].name].get("parameters", {}).get("properties", {}).get(key, {})
        wrong = _wrong_type(calls[i].arguments[key], str(spec.get("type")))
        if wrong is None:
            continue
        arguments = {**calls[i].arguments, key: wrong}
        detail = f"{key!r} given as {type(wrong).__name__} {wrong!r}"
        return _bad_arguments("retype_argument", calls, i, arguments, detail)
    return None


def _misspell_tool(calls: Calls, docs: Docs, witness: Witness, rng: random.Random) -> Mutation | None:
    order = list(range(len(calls)))
    rng.shuffle(order)
    for i in order:
        name = calls[i].name
        wrong = _snake(name) if any(ch.isupper() for ch in name) else _camel(name)
        if wrong == name or wrong in docs:
            continue
        return _in_place("misspell_tool", calls, i, _with(calls[i], name=wrong), f"{name} called as {wrong}", S, S)
    return None


def _dropping(
    op: str, names: frozenset[str], injected: FailureLabel, skip: Callable[[ToolCall], bool] = lambda call: False
) -> Callable[..., Mutation | None]:
    """An operator that drops one call named in ``names``; the witness fixes where that first bites."""

    def propose(calls: Calls, docs: Docs, witness: Witness, rng: random.Random) -> Mutation | None:
        options = [i for i, c in enumerate(calls) if c.name in names and not skip(c)]
        rng.shuffle(options)
        for i in options:
            mutated = (*calls[:i], *calls[i + 1 :])
            depth = witness(mutated)
            if depth is None:
                continue  # the omission never bites: not a fault
            j = depth - 1
            if mutated[j].name == "cd" and mutated[j].arguments.get("folder") == "..":
                continue  # "already at the root": the omission shows as file-system state, not a missing input
            # the agent sees the refusal, makes the missing call, and retries the refused one
            fix = _with(calls[i], turn=mutated[j].turn)
            repaired = (*mutated[: j + 1], fix, mutated[j], *mutated[j + 1 :])
            return Mutation(
                op,
                injected,
                injected,
                depth,
                mutated,
                repaired,
                f"dropped {calls[i].name}({_args(calls[i])}); first refused: {mutated[j].name}",
            )
        return None

    return propose


def _args(call: ToolCall) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())


def _create_twice(calls: Calls, docs: Docs, witness: Witness, rng: random.Random) -> Mutation | None:
    options = [i for i, c in enumerate(calls) if c.name in ("mkdir", "touch")]
    rng.shuffle(options)
    for i in options:
        mutated = (*calls[: i + 1], calls[i], *calls[i + 1 :])
        if witness(mutated) != i + 2:
            continue  # the API tolerates the repeat here: not a fault
        return Mutation("create_twice", C, C, i + 2, mutated, mutated, f"{calls[i].name}({_args(calls[i])}) made twice")
    return None


#: Argument keys that reference something the dialogue must have produced or named.
_REFERENCE = re.compile(r"(^|_)(id|file_name|source|symbol)$")


def _invented(value: Any) -> Any:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return 9_000_000 + value % 1000
    if isinstance(value, str):
        stem, dot, ext = value.rpartition(".")
        return f"{stem}_final.{ext}" if dot and stem else ("ZZZQ" if value.isupper() else f"{value}_0427")
    return None


def _invent_id(calls: Calls, docs: Docs, witness: Witness, rng: random.Random) -> Mutation | None:
    options = [(i, k) for i, c in enumerate(calls) for k in c.arguments if _REFERENCE.search(k)]
    rng.shuffle(options)
    for i, key in options:
        fake = _invented(calls[i].arguments[key])
        if fake is None:
            continue
        bad = _with(calls[i], arguments={**calls[i].arguments, key: fake})
        mutated = _replace(calls, i, bad)
        if witness(mutated) != i + 1:
            continue  # the API accepts the invented value (a free-text field): not a fault
        return _in_place("invent_id", calls, i, bad, f"{calls[i].name}: {key}={fake!r} was never produced", INFO, D)
    return None


OPERATORS: tuple[Operator, ...] = (
    Operator("rename_argument", S, S, _rename_argument, "rename an argument key"),
    Operator("retype_argument", S, S, _retype_argument, "give an argument a value of the wrong type"),
    Operator("misspell_tool", S, S, _misspell_tool, "call a tool by a misspelled name"),
    Operator(
        "drop_prerequisite",
        D,
        D,
        _dropping("drop_prerequisite", frozenset({"cd"}), D, skip=lambda c: c.arguments.get("folder") == ".."),
        "drop the cd into the folder that later calls use",
    ),
    Operator(
        "skip_authentication",
        P,
        P,
        _dropping(
            "skip_authentication",
            frozenset({"authenticate_twitter", "ticket_login", "message_login", "login_device"}),
            P,
        ),
        "drop the login call",
    ),
    Operator(
        "skip_engine_start",
        P,
        P,
        _dropping("skip_engine_start", frozenset({"startEngine", "pressBrakePedal", "lockDoors"}), P),
        "drop the engine start or one of its preconditions",
    ),
    Operator("create_twice", C, C, _create_twice, "create the same directory or file twice"),
    Operator("invent_id", INFO, D, _invent_id, "reference an id or file name nobody produced"),
)
BY_NAME: Mapping[str, Operator] = {op.name: op for op in OPERATORS}


def apply(
    operator: Operator, calls: Sequence[ToolCall], docs: Docs, witness: Witness, rng: random.Random
) -> Mutation | None:
    """``operator`` on ``calls``, or ``None`` when it does not apply to this task."""
    return operator.propose(tuple(calls), docs, witness, rng)
