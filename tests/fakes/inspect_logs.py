"""Real inspect_ai logs for the tests: ``inspect eval`` on inspect_evals' BFCL and tau2 tasks, offline, against
the loopback scripted server, with a scripted model whose tool calls are given here per sample.

The same scripts build the native inputs (a BFCL FC result file, a tau2 results file) holding the same calls,
so a test can compare what ``score inspect`` makes of the log with what ``score bfcl``/``score tau`` make of the
native file. inspect_evals runs as installed by ``make setup`` (``--no-deps``): its tasks are loaded from their
module files, since its registry imports every eval's dependencies; BFCL's data comes from bfcl-eval through
``scripts/inspect_evals_cache.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes.openai_server import ScriptedServer, text_message
from prefix_exec.envs.bfcl import api_classes
from prefix_exec.envs.bfcl.calls import bind_positional, parse_call
from prefix_exec.envs.bfcl.tasks import load_task

REPO = Path(__file__).resolve().parents[2]
Call = tuple[str, Mapping[str, Any]]
#: A BFCL script: per turn, per step (one assistant message), its calls.
Turns = Sequence[Sequence[Sequence[Call]]]


def _module_file(name: str) -> str:
    spec = importlib.util.find_spec(name)
    assert spec is not None, f"{name} is not installed (make setup)"
    assert spec.origin is not None, f"{name} is not installed (make setup)"
    return spec.origin


def _assistant(calls: Sequence[Call], prefix: str) -> dict[str, Any]:
    """An assistant message with unique call ids (``<prefix>_<index>``)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"{prefix}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ],
    }


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def run_inspect(task: str, args: Sequence[str], server: ScriptedServer, log_dir: Path, env: Mapping[str, str]) -> Path:
    """``inspect eval <task module or .py file>@<task> ARGS`` against ``server``; returns the one log it wrote."""
    module, _, name = task.partition("@")
    source = module if module.endswith(".py") else _module_file(module)
    command = [
        str(Path(sys.executable).parent / "inspect"),
        "eval",
        f"{source}@{name}",
        *args,
        "--model",
        "openai-api/scripted/model",
        "--log-dir",
        str(log_dir),
        "--display",
        "none",
        "--max-connections",
        "4",
        "--no-log-realtime",  # no live-view buffer: the log file is all a test reads
    ]
    environment = {
        **os.environ,
        "SCRIPTED_API_KEY": "test-key",
        "SCRIPTED_BASE_URL": server.base_url,
        "INSPECT_LOG_LEVEL": "error",
        **env,
    }
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=900, check=False)
    logs = sorted(log_dir.glob("*.eval"))
    failed = f"inspect eval failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, failed
    assert len(logs) == 1, failed
    assert not server.errors, server.errors
    return logs[0]


def convert_to_json(log: Path, out: Path) -> Path:
    """The same log in inspect's ``.json`` format, written by ``inspect log convert``."""
    command = [str(Path(sys.executable).parent / "inspect"), "log", "convert", str(log), "--to", "json"]
    done = subprocess.run([*command, "--output-dir", str(out)], capture_output=True, text=True, timeout=300)
    converted = sorted(out.glob("*.json"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(converted) == 1, done.stderr[-3000:]
    return converted[0]


# ------------------------------------------------------------------------------------------------------- BFCL


@dataclass(frozen=True)
class BfclScript:
    """The scripted model's calls for BFCL samples, keyed by task id; its first user message picks the task."""

    turns: Mapping[str, Turns]
    first_messages: Mapping[str, str]

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        users = [m for m in messages if m["role"] == "user"]
        first = _text(users[0])
        task = next(t for t, text in self.first_messages.items() if first.strip() == text.strip())
        turn, previous, since_user = -1, "", 0
        for message in messages:
            if message["role"] == "user" and previous != "user":
                turn, since_user = turn + 1, 0
            elif message["role"] == "assistant":
                since_user += 1
            if message["role"] != "system":
                previous = message["role"]
        steps = self.turns[task][turn] if turn < len(self.turns[task]) else ()
        if since_user < len(steps):
            return _assistant(steps[since_user], f"call_t{turn}_s{since_user}")
        return text_message(f"Turn {turn} is done.")

    def result_file(self, folder: Path, category: str) -> Path:
        """The same calls as a BFCL FC result file (arguments as JSON text, as BFCL's FC handlers write them)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"BFCL_v4_multi_turn_{category}_result.json"
        with path.open("w", encoding="utf-8") as handle:
            for task, turns in self.turns.items():
                if task.startswith(f"multi_turn_{category}_"):
                    result = [[[{name: json.dumps(args)} for name, args in step] for step in turn] for turn in turns]
                    handle.write(json.dumps({"id": task, "result": result}) + "\n")
        return path


def bfcl_cache(folder: Path) -> Path:
    """An INSPECT_EVALS_CACHE_DIR holding BFCL's data from bfcl-eval (scripts/inspect_evals_cache.py)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "inspect_evals_cache.py"), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return folder


# ------------------------------------------------------------------------------------------------------- tau2


@dataclass(frozen=True)
class TauScript:
    """Per tau2 task id: the customer's opening line (a marker the script finds its task by), the agent's calls
    (one per message), and the agent's closing text. The simulated customer stops after the agent's text."""

    greetings: Mapping[str, str]
    calls: Mapping[str, Sequence[Call]]
    closing: str = "Your request is complete."
    marker_of: Mapping[str, str] | None = None

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        system = _text(messages[0]) if messages and messages[0]["role"] == "system" else ""
        if "customer service agent" in system:  # the agent's conversation
            said = " ".join(_text(m) for m in messages if m["role"] == "user")
            task = next(t for t, greeting in self.greetings.items() if greeting in said)
            done = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
            if done < len(self.calls[task]):
                return _assistant([self.calls[task][done]], f"call_{task}_{done}")
            return text_message(self.closing)
        # the simulated customer's conversation: its scenario names the task
        if not any(m["role"] == "assistant" for m in messages):
            markers = self.marker_of or {}
            task = next(t for t, marker in markers.items() if marker in system)
            return text_message(self.greetings[task])
        return text_message("Thank you. ###STOP###")

    def results_file(
        self,
        path: Path,
        tasks: Sequence[Mapping[str, Any]],
        errors: Mapping[str, Sequence[bool]],
        rewards: Mapping[str, float],
    ) -> Path:
        """The same conversations as a tau2 airline results file embedding ``tasks``, each call's reply flagged
        as ``errors`` says; the reply texts are placeholders (a file built by hand has no real tool output)."""
        simulations = []
        for task, calls in self.calls.items():
            messages: list[dict[str, Any]] = [{"role": "user", "content": self.greetings[task]}]
            for index, (name, args) in enumerate(calls):
                call_id = f"call_{task}_{index}_0"
                messages.append(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": call_id, "name": name, "arguments": dict(args), "requestor": "assistant"}
                        ],
                    }
                )
                failed = errors[task][index]
                messages.append({"role": "tool", "id": call_id, "content": "scripted reply", "error": failed})
            messages.append({"role": "assistant", "content": self.closing})
            simulations.append(
                {
                    "id": f"sim-{task}",
                    "task_id": task,
                    "trial": 0,
                    "messages": messages,
                    "reward_info": {"reward": rewards[task]},
                    "termination_reason": "user_stop",
                }
            )
        info = {
            "agent_info": {"llm": "model", "implementation": "llm_agent"},
            "environment_info": {"domain_name": "airline"},
        }
        document = {"info": info, "tasks": list(tasks), "simulations": simulations}
        path.write_text(json.dumps(document), encoding="utf-8")
        return path


# ------------------------------------------------------------------------------------------- the tests' logs

BFCL_TASKS = ("multi_turn_base_1", "multi_turn_base_2", "multi_turn_miss_func_0")


def truth(task_id: str) -> list[list[list[Call]]]:
    """BFCL's ground truth of a task, one call per step."""
    turns = []
    for sources in load_task(task_id).ground_truth:
        steps: list[list[Call]] = []
        for source in sources:
            call = parse_call(source)
            steps.append([(call.name, bind_positional(call, api_classes.positional_names))])
        turns.append(steps)
    return turns


def bfcl_plan() -> BfclScript:
    """Three BFCL samples: a recovery after a schema failure, an executable run that fails Y, a miss_func tool
    called before it is revealed."""
    base_1 = truth("multi_turn_base_1")
    # two calls in one step; then mv without its required destination (a schema failure, refused by inspect
    # too), then the right mv: FED 4, Y 1 after recovery
    base_1[0] = [[("ls", {"a": True}), ("pwd", {})]]
    base_1[1] = [[("cd", {"folder": "workspace"})], [("mv", {"source": "log.txt"})], *base_1[1][1:]]
    base_2 = truth("multi_turn_base_2")
    base_2[4] = []  # the last turn answered in text only: every call executable, Y 0
    miss_func = truth("multi_turn_miss_func_0")
    assert miss_func[2] == []
    assert load_task("multi_turn_miss_func_0").missed_function == {"sort": 3}
    miss_func[2] = [[("sort", {"file_name": "final_report.pdf"})]]  # before it is revealed at turn 3
    turns = {"multi_turn_base_1": base_1, "multi_turn_base_2": base_2, "multi_turn_miss_func_0": miss_func}
    return BfclScript(turns, {t: load_task(t).questions[0] for t in BFCL_TASKS})


def bfcl_log(folder: Path, plan: BfclScript) -> Path:
    """A real log of inspect_evals/bfcl on :data:`BFCL_TASKS`, played by ``plan``."""
    cache = bfcl_cache(folder / "cache")
    with ScriptedServer(plan.respond) as server:
        return run_inspect(
            "inspect_evals.bfcl.bfcl@bfcl",
            ["-T", "categories=multi_turn_base,multi_turn_miss_func", "--sample-id", ",".join(BFCL_TASKS)],
            server,
            folder / "logs",
            {"INSPECT_EVALS_CACHE_DIR": str(cache)},
        )


#: One tau2 airline sample (inspect_evals' tau2 copies the airline DB into the sample's store at every step, so
#: each sample costs seconds to run and to read): a cancellation where the agent first asks for a made-up
#: reservation id, which fails, then the right one, then cancels it (a DB write the regrade checks).
TAU_PLAN = TauScript(
    greetings={"19": "Hi, I am olivia_gonzalez_2305 and I want to cancel my Texas trip."},
    calls={
        "19": [
            ("get_user_details", {"user_id": "olivia_gonzalez_2305"}),
            ("get_reservation_details", {"reservation_id": "ZZZ999"}),
            ("get_reservation_details", {"reservation_id": "Z7GOZK"}),
            ("cancel_reservation", {"reservation_id": "Z7GOZK"}),
        ],
    },
    marker_of={"19": "olivia_gonzalez_2305"},
)
#: The error flag of each call's reply: inspect_evals' tools fail on the made-up id.
TAU_ERRORS = {"19": [False, True, False, False]}


def tau_log(folder: Path) -> Path:
    """A real log of inspect_evals/tau2_airline on :data:`TAU_PLAN`'s tasks."""
    with ScriptedServer(TAU_PLAN.respond) as server:
        return run_inspect(
            "inspect_evals.tau2.tau2@tau2_airline",
            ["-T", "shuffle=false", "--sample-id", ",".join(TAU_PLAN.calls)],
            server,
            folder / "logs",
            {},
        )


def tau_variant_log(folder: Path) -> Path:
    """A real log of a policy variant of inspect_evals/tau2_airline (tests/fakes/inspect_tau_variant_task.py: the
    task ``tau2_airline_tighter_policy``) on :data:`TAU_PLAN`'s tasks."""
    with ScriptedServer(TAU_PLAN.respond) as server:
        return run_inspect(
            f"{Path(__file__).with_name('inspect_tau_variant_task.py')}@tau2_airline_tighter_policy",
            ["-T", "shuffle=false", "--sample-id", ",".join(TAU_PLAN.calls)],
            server,
            folder / "logs",
            {},
        )


# ------------------------------------------------------------------------------ a task of no benchmark

NOTES_TASKS = str(Path(__file__).with_name("inspect_notes_task.py"))


def notes_respond(body: dict[str, Any]) -> dict[str, Any]:
    """The model of tests/fakes/inspect_notes_task.py: the note sample creates a note, appends to a made-up id
    (which the tool refuses), then to the right one; a question is answered in text."""
    messages = body["messages"]
    if "two plus two" in _text(next(m for m in messages if m["role"] == "user")):
        return text_message("4")
    done = sum(1 for m in messages if m["role"] == "assistant")
    script = [
        ("create_note", {"text": "hi"}),
        ("append_note", {"note_id": "N-9", "text": "bye"}),
        ("append_note", {"note_id": "N-1", "text": "bye"}),
    ]
    if done < len(script):
        return _assistant([script[done]], f"call_{done}")
    return text_message("done")


def notes_log(folder: Path, task: str, *, server_errors: int = 0) -> Path:
    """A real log of ``task`` (``notes`` or ``qa``) of tests/fakes/inspect_notes_task.py. ``server_errors``: the
    model server answers that many requests first with a 500, one sample at a time and without inspect's own
    retries, so that the first sample errors (``RetryError(... raised InternalServerError)``: the openai client
    tries 3 times) and the others run."""
    with ScriptedServer(notes_respond) as server:
        server.faults.extend(["500"] * server_errors)
        args = ["--max-retries", "0", "--no-fail-on-error", "--max-samples", "1"] if server_errors else []
        return run_inspect(f"{NOTES_TASKS}@{task}", args, server, folder / "logs", {})
