"""BFCL's own executor and checker, as a test oracle on trusted inputs only (it ``eval``s call strings).

Mirrors ``bfcl_eval.eval_checker.eval_runner._evaluate_single_multi_turn_entry`` for FC-format results:
force-termination on a wrong turn count, FC decoding with ``convert_to_function_call`` (an undecodable
step is skipped), then ``multi_turn_checker``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

from prefix_exec.envs.bfcl.tasks import load_task

_RUN = itertools.count()


def convert_to_function_call(step: Any) -> list[str]:
    """BFCL's FC decoding (``model_handler.utils.convert_to_function_call``, whose module needs tree_sitter)."""
    entries = [step] if isinstance(step, dict) else step
    calls = []
    for entry in entries:
        for name, value in entry.items():
            arguments = json.loads(value) if isinstance(value, str) else value
            calls.append(f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})")
    return calls


def bfcl_success(task_id: str, result: list[Any]) -> bool:
    """BFCL's verdict for an FC-format ``result`` of task ``task_id``."""
    task = load_task(task_id)
    truth = [list(turn) for turn in task.ground_truth]
    if len(result) != len(truth):
        return False
    decoded: list[list[list[str]]] = []
    for turn in result:
        steps = []
        for step in turn:
            try:
                calls = convert_to_function_call(step)
            except (json.JSONDecodeError, TypeError, AttributeError):
                continue
            if calls:
                steps.append(calls)
        decoded.append(steps)
    entry = {
        "id": task_id,
        "initial_config": json.loads(json.dumps(task.initial_config)),
        "involved_classes": list(task.involved_classes),
    }
    # BFCL's verdict as in a fresh process: post_tweet's default lists leak between BFCL's own runs.
    TwitterAPI.post_tweet.__defaults__ = ([], [])
    # A fresh model name per run: BFCL caches instances in module globals keyed by it.
    verdict = multi_turn_checker(decoded, truth, entry, task_id.rsplit("_", 1)[0], f"oracle_{next(_RUN)}")
    return bool(verdict["valid"])
