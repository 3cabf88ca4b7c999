"""Regenerate tests/data/agentdojo/runs/ and the suites' tool lists: AgentDojo's own runs of its four suites
(workspace, slack, travel, banking), made by AgentDojo's own code without a model.

Run it in its own virtual environment (never the project's), with the pinned version of requirements.txt:

    python3.12 -m venv /work/dojo-venv && /work/dojo-venv/bin/pip install -r scripts/agentdojo/requirements.txt
    /work/dojo-venv/bin/python scripts/agentdojo/generate.py --seed 43

Two pipelines run every user task of every suite at ``--benchmark-version`` (AgentDojo's default, v1.2.2) through
AgentDojo's ``run_task_without_injection_tasks`` under its ``OutputLogger``, so its ``TraceLogger`` writes
``runs/<pipeline>/<suite>/<user_task>/none/none.json`` in AgentDojo's own format and its task checks give
``utility``:

- ``ground-truth``: ``AgentPipeline([SystemMessage, InitQuery, GroundTruthPipeline(task)])``: the task's
  ground-truth calls run through the suite's real environment with ``raise_on_error=True`` (AgentDojo's
  ``GroundTruthPipeline``: one call per assistant turn, ``id`` and ``tool_call_id`` ``None``, the call echoed in the
  reply's ``tool_call``);
- ``scripted-faulty``: ``AgentPipeline([SystemMessage, InitQuery, Scripted, ToolsExecutionLoop([ToolsExecutor(),
  Scripted])])``, the structure ``AgentPipeline.from_config`` builds around a model, with ``Scripted`` standing in
  for the model: it replays the ground truth with call ids (``call_<k>``), but at one seeded position one argument
  is replaced by a made-up value (an id, a name or a date in the wrong format, a number as a word, or the argument
  left out), chosen among those the suite's real tool refuses in a dry run on a copy of the environment. AgentDojo's
  ``ToolsExecutor`` runs the calls, so its runtime records the tool's exception in the reply's ``error``
  (``"ValueError: ..."``, ``"ValidationError: ..."``) with an empty content. Then, by a seeded coin, the script
  retries the correct call and goes on, or gives up with a text answer.

A task whose ground truth has no call, or none the mutations make the tool refuse, has no faulty run (listed in
``faulty.json`` with the reason). ``faulty.json`` also records, for every faulty run, the position (1-based
call index) of the refused call, the argument, the kind of mutation and the recorded error: the oracle the tests
compare FED with. ``<suite>-tools.json`` is each suite's tool list in OpenAI's ``tools`` form, made by
AgentDojo's own ``_function_to_openai`` from the suite's function schemas.

AgentDojo's ``TraceLogger`` adds ``evaluation_timestamp`` and ``duration`` to each file, and some tools stamp
the clock into their results (a sent email's ``timestamp``, a file's ``last_modified``, a new event's id): a
rerun differs from the committed runs in those values only; ``faulty.json`` is the same byte for byte.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentdojo.agent_pipeline import (
    AgentPipeline,
    BasePipelineElement,
    GroundTruthPipeline,
    InitQuery,
    SystemMessage,
    ToolsExecutionLoop,
    ToolsExecutor,
)
from agentdojo.agent_pipeline.agent_pipeline import load_system_message
from agentdojo.agent_pipeline.llms.openai_llm import _function_to_openai
from agentdojo.benchmark import run_task_without_injection_tasks
from agentdojo.functions_runtime import Env, FunctionCall, FunctionsRuntime
from agentdojo.logging import OutputLogger
from agentdojo.task_suite.load_suites import get_suites
from agentdojo.types import ChatAssistantMessage, ChatMessage, text_content_block_from_string

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "agentdojo"
SUITES = ("workspace", "slack", "travel", "banking")
#: The kinds of made-up argument, in the order they are preferred.
TIERS = ("made-up id", "made-up name", "date format", "made-up list item", "number as a word", "argument left out")
GIVE_UP = "I could not complete the task: the tool refused my request."


class Scripted(BasePipelineElement):
    """Stands where a model stands in AgentDojo's pipeline: each turn, the next call of a fixed script (one call
    per assistant message), then a text answer. ``calls`` are the calls in order; ``answer`` the final text."""

    def __init__(self, calls: Sequence[FunctionCall], answer: str) -> None:
        self.calls = list(calls)
        self.answer = answer

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env,
        messages: Sequence[ChatMessage],
        extra_args: dict,
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict]:
        # AgentPipeline and ToolsExecutionLoop pass every argument: no defaults needed
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if turn < len(self.calls):
            said = ChatAssistantMessage(
                role="assistant", content=[text_content_block_from_string("")], tool_calls=[self.calls[turn]]
            )
        else:
            said = ChatAssistantMessage(
                role="assistant", content=[text_content_block_from_string(self.answer)], tool_calls=None
            )
        return query, runtime, env, [*messages, said], extra_args


def reworded_date(value: str) -> str | None:
    """A date or date-time ``YYYY-MM-DD[ HH:MM]`` written the wrong way round (``DD/MM/YYYY[ HH:MM]``)."""
    day, _, time = value.partition(" ")
    parts = day.split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or len(parts[0]) != 4:
        return None
    return f"{parts[2]}/{parts[1]}/{parts[0]}" + (f" {time}" if time else "")


def mutations(call: FunctionCall, rng: random.Random) -> list[tuple[str, str, dict[str, Any]]]:
    """Every made-up replacement of one argument of ``call``: ``(argument, kind, new args)``."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    for name, value in call.args.items():

        def put(new: Any, kind: str, name: str = name) -> None:
            found.append((name, kind, {**call.args, name: new}))

        if isinstance(value, str):
            date = reworded_date(value)
            if date is not None:
                put(date, "date format")
            elif name.endswith("id") or value.isdigit():
                put(str(900000 + rng.randrange(100000)), "made-up id")
            else:
                put(f"{value} {rng.choice(['Archive', 'Old', 'Backup', 'Team'])}", "made-up name")
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int | float):
            put(rng.choice(["twelve", "a few", "some"]), "number as a word")
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            put([*value[:-1], f"{value[-1]}-x{rng.randrange(100)}"], "made-up list item")
        found.append((name, "argument left out", {k: v for k, v in call.args.items() if k != name}))
    return found


def refusal(suite: Any, env: Env, done: Sequence[FunctionCall], name: str, args: dict[str, Any]) -> str | None:
    """The error the suite's real tool records for ``name(**args)`` after ``done`` ran, on a copy of ``env``."""
    runtime = FunctionsRuntime(suite.tools)
    trial = env.model_copy(deep=True)
    for call in done:
        runtime.run_function(trial, call.function, call.args)
    _, error = runtime.run_function(trial, name, args)
    return error


def fault(suite: Any, task: Any, rng: random.Random) -> dict[str, Any]:
    """The faulty script of one task: its calls, its answer and what was done (or why there is none)."""
    env = task.init_environment(suite.load_and_inject_default_environment({}))
    truth = [c.model_copy(deep=True) for c in task.ground_truth(env.model_copy(deep=True))]
    if not truth:
        return {"faulty": False, "reason": "the ground truth makes no call"}
    candidates = [(position, mutation) for position, call in enumerate(truth) for mutation in mutations(call, rng)]
    rng.shuffle(candidates)
    # A made-up value the tool itself refuses first (its own ValueError), a wrong type or a left-out argument
    # (pydantic's ValidationError in AgentDojo's runtime) only when no value does: the first kind is what the
    # recorded error alone can show, the second our own schema check sees too.
    candidates.sort(key=lambda c: TIERS.index(c[1][1]))
    for position, (argument, kind, args) in candidates:
        call = truth[position]
        error = refusal(suite, env, truth[:position], call.function, args)
        if error is None:
            continue
        bad = FunctionCall(function=call.function, args=args)
        retry = rng.random() < 2 / 3
        script = [*truth[:position], bad, *(truth[position:] if retry else [])]
        for k, c in enumerate(script):
            script[k] = FunctionCall(function=c.function, args=dict(c.args), id=f"call_{k + 1}")
        answer = (task.GROUND_TRUTH_OUTPUT or "Done.") if retry else GIVE_UP
        return {
            "faulty": True,
            "calls": script,
            "answer": answer,
            "position": position + 1,
            "function": call.function,
            "argument": argument,
            "kind": kind,
            "retried": retry,
            "error": error,
        }
    return {"faulty": False, "reason": "no mutation of any argument made the tool refuse"}


def run(suite: Any, task: Any, pipeline: AgentPipeline, logdir: Path, version: str) -> bool | str:
    """One task through AgentDojo's own runner and logger; its utility, or the exception AgentDojo's own utility
    check raised on the run (a trace check that reads an argument the faulty call left out: the file then has
    the messages but no ``utility``)."""
    try:
        utility, _ = run_task_without_injection_tasks(suite, pipeline, task, logdir, True, version)
    except Exception as e:  # AgentDojo's utility_from_traces indexes args without a check
        return f"{type(e).__name__}: {e}"
    return utility


def generate(seed: int, version: str, out: Path) -> None:
    """Write ``out/runs``, ``out/faulty.json`` and ``out/<suite>-tools.json`` for every suite."""
    logdir = out / "runs"
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir(parents=True)
    system = load_system_message(None)
    suites = get_suites(version)
    oracle: dict[str, dict[str, Any]] = {}
    with OutputLogger(str(logdir)):
        for name in SUITES:
            suite = suites[name]
            tools = [_function_to_openai(f) for f in suite.tools]
            (out / f"{name}-tools.json").write_text(json.dumps(tools, indent=1) + "\n")
            rng = random.Random(f"{seed}/{name}")
            for task_id, task in suite.user_tasks.items():
                truth = AgentPipeline([SystemMessage(system), InitQuery(), GroundTruthPipeline(task)])
                truth.name = "ground-truth"
                run(suite, task, truth, logdir, version)
                plan = fault(suite, task, rng)
                key = f"{name}/{task_id}"
                if plan.pop("faulty"):
                    agent = Scripted(plan.pop("calls"), plan.pop("answer"))
                    faulty = AgentPipeline(
                        [SystemMessage(system), InitQuery(), agent, ToolsExecutionLoop([ToolsExecutor(), agent])]
                    )
                    faulty.name = "scripted-faulty"
                    plan["utility"] = run(suite, task, faulty, logdir, version)
                oracle[key] = plan
    (out / "faulty.json").write_text(json.dumps(oracle, indent=1, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=43, help="seed of the faulty runs' positions and values")
    parser.add_argument("--benchmark-version", default="v1.2.2", help="AgentDojo's suites version")
    parser.add_argument("--out", type=Path, default=OUT, help="folder written (runs/ in it is replaced)")
    args = parser.parse_args()
    generate(args.seed, args.benchmark_version, args.out)


if __name__ == "__main__":
    main()
