"""A scripted tau2 conversation: the user simulator states the case, the agent plays the gold actions.

Requests are told apart by their system prompt: the user simulator's holds ``<scenario>``, the agent's holds
``<policy>``, the NL-assertion judge's asks for ``expectedOutcome``. The user's first message names the case
(``[case ID]``) and every identifier of the gold actions, so the information check sees them (unless
``reveal_ids`` is false); after the
agent's first answer the user stops. The agent plays the gold actions one per step, then answers with the
task's communicate info; the judge finds every assertion met (none failed), or with ``harsh_judge`` one
failed. ``prefix`` puts scripted model answers before the gold ones: each item is the list of
calls of one answer (several are parallel calls). The same script drives tau2's own ``LLMAgent``, whose
requests look alike (system prompt with ``<policy>``, the whole conversation each time).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from fakes.openai_server import text_message, tool_message
from fakes.planning import planning_answer
from prefix_exec.envs.tau.domain import import_tau2
from prefix_exec.envs.tau.information import identifier_arguments


class TauScript:
    def __init__(
        self,
        env: Any,
        task_ids: list[str],
        *,
        reveal_ids: bool = True,
        prefix: Sequence[Sequence[tuple[str, dict[str, Any]]]] = (),
        harsh_judge: bool = False,
    ) -> None:
        self.reveal_ids = reveal_ids
        self.harsh_judge = harsh_judge
        self.prefix = [list(calls) for calls in prefix]
        Task = import_tau2("tau2.data_model.tasks").Task
        self.scenarios: dict[str, str] = {}
        self.gold: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.info: dict[str, list[str]] = {}
        for task_id in task_ids:
            raw = env.task(task_id)
            self.scenarios[task_id] = str(Task.model_validate(raw).user_scenario)
            criteria = raw.get("evaluation_criteria") or {}
            self.gold[task_id] = [(a["name"], a.get("arguments") or {}) for a in criteria.get("actions") or []]
            self.info[task_id] = [str(i) for i in criteria.get("communicate_info") or []]
        self.judged = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = body["messages"]
        system = str(messages[0].get("content") or "")
        if "<scenario>" in system:
            task_id = next(t for t, s in self.scenarios.items() if s in system)
            if sum(1 for m in messages if m["role"] == "user") >= 2:  # the agent answered (roles are flipped)
                return text_message("Thanks, that is all. ###STOP###")
            ids = sorted({v for _, args in self.gold[task_id] for _, v in identifier_arguments(args)})
            if not self.reveal_ids:
                ids = []
            return text_message(f"Hello, [case {task_id}]. My references: {', '.join(ids) or 'none'}.")
        if "expectedOutcome" in system:
            self.judged += 1
            failed = [{"expectedOutcome": "x", "reasoning": "no", "metExpectation": False}] if self.harsh_judge else []
            return text_message(json.dumps({"results": failed}))
        planned = planning_answer(body, "1. look up the case")
        if planned is not None:
            return planned
        first = next(str(m["content"]) for m in messages if m["role"] == "user")
        match = re.search(r"\[case ([^\]]+)\]", first)
        assert match is not None, first
        task_id = match.group(1)
        step = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
        if step < len(self.prefix):
            return tool_message(self.prefix[step])
        step -= len(self.prefix)
        if step < len(self.gold[task_id]):
            return tool_message([self.gold[task_id][step]])
        return text_message("Done. " + " ".join(self.info[task_id]))
