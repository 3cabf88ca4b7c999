"""A scripted model for BFCL multi-turn tasks: it plays each turn's ground truth, one call per step.

The task is recognised from its first user message, so the tasks served together must start differently.
Planner requests get the current turn's ground truth as a plan; the verifier approves.
"""

from __future__ import annotations

import json
from typing import Any

from fakes.openai_server import text_message, tool_message
from prefix_exec.agents.prompt_planning import PROMPT_PLAN_PROCEED
from prefix_exec.drivers.bfcl import questions
from prefix_exec.envs.bfcl.checker import ground_truth_calls
from prefix_exec.envs.bfcl.tasks import load_task


class BfclScript:
    def __init__(self, task_ids: list[str]) -> None:
        self.truth: dict[str, list[list[tuple[str, dict[str, Any]]]]] = {}
        self.by_first: dict[str, str] = {}
        self.by_goal: dict[str, tuple[str, int]] = {}
        for task_id in task_ids:
            task = load_task(task_id)
            turns, _ = questions(task.category)[task_id]
            assert turns[0] not in self.by_first, f"{task_id} starts like {self.by_first.get(turns[0])}"
            self.by_first[turns[0]] = task_id
            self.truth[task_id] = ground_truth_calls(task)
            for index, text in enumerate(turns):
                self.by_goal.setdefault(text, (task_id, index))

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = body["messages"]
        first = str(messages[0].get("content") or "")
        if first.startswith("You are the PLANNER"):
            goal = str(messages[1]["content"]).split("Goal:\n", 1)[1].split("\n\nTools:", 1)[0]
            task_id, turn = self.by_goal.get(goal, ("", -1))
            calls = self.truth[task_id][turn] if task_id else []
            steps = [{"tool": name, "arguments": args, "bindings": {}} for name, args in calls]
            return text_message(json.dumps({"steps": steps}))
        if first.startswith("You are the VERIFIER"):
            return text_message(json.dumps({"approved": True, "issues": []}))
        if not body.get("tools") and "Before acting" in str(messages[-1].get("content")):
            return text_message("1. call the tools the request needs")
        # A turn's user message may carry a plan after the request; prompt-planning adds "Now carry out ...".
        users = [i for i, m in enumerate(messages) if m["role"] == "user" and m["content"] != PROMPT_PLAN_PROCEED]
        first = str(messages[users[0]]["content"])
        task_id = self.by_first[max((k for k in self.by_first if first.startswith(k)), key=len)]
        turn = len(users) - 1
        step = sum(1 for m in messages[users[-1] :] if m["role"] == "assistant" and m.get("tool_calls"))
        calls = self.truth[task_id][turn]
        if step >= len(calls):
            return text_message("Done.")
        return tool_message([calls[step]])
