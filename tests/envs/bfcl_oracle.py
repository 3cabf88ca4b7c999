"""BFCL's own execution code and checker, as a test oracle on trusted inputs only (it ``eval``s call strings).

Mirrors ``bfcl_eval.eval_checker.eval_runner._evaluate_single_multi_turn_entry`` (whose module imports
every provider's client, so it is not imported here): force-termination on a wrong turn count, decoding
(FC: ``convert_to_function_call``; prompting: BFCL's ``default_decode_execute_prompting`` itself), an
undecodable or empty step skipped, then ``multi_turn_checker``.
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
import types
from typing import Any

from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response

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
    if len(result) != len(task.ground_truth):
        return False
    return verdict(task_id, fc_decoded(result))


def fc_decoded(result: list[Any]) -> list[list[list[str]]]:
    """An FC-format ``result`` decoded as BFCL decodes it: per turn, the call strings of each step; a step
    that does not decode, or decodes to no call, is skipped."""
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
    return decoded


def _prompting_decoder() -> Any:
    """BFCL's ``default_decode_execute_prompting``.

    Its module imports the Java and JavaScript parsers (tree_sitter) and tenacity at the top, none of which
    the Python decoder uses and none of which ``make setup`` installs: those imports get modules whose
    functions raise, for the time of the import, so that BFCL's own decoder is imported unchanged.
    """

    def unused(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("not part of BFCL's Python decoder")

    stubs = {
        "bfcl_eval.model_handler.parser.java_parser": {"parse_java_function_call": unused},
        "bfcl_eval.model_handler.parser.js_parser": {"parse_javascript_function_call": unused},
        "tenacity": dict.fromkeys(
            ("retry", "retry_if_exception_message", "retry_if_exception_type", "wait_random_exponential"), unused
        ),
    }
    added = []
    for name, attributes in stubs.items():
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__dict__.update(attributes)
            sys.modules[name] = module
            added.append(name)
    try:
        from bfcl_eval.model_handler.utils import default_decode_execute_prompting
    finally:
        for name in added:  # no other test sees them
            del sys.modules[name]
    return default_decode_execute_prompting


def bfcl_success_prompting(task_id: str, result: Any) -> bool:
    """BFCL's verdict for a prompting-format ``result``, step for step as ``_evaluate_single_multi_turn_entry``.

    That includes iterating a turn that is one string by character. Only for trusted inputs: BFCL's decoder
    ``eval``s operator expressions and its execution code ``eval``s every call.
    """
    decode = _prompting_decoder()
    task = load_task(task_id)
    if not isinstance(result, list) or len(result) != len(task.ground_truth):
        return False
    decoded: list[list[list[str]]] = []
    for turn in result:
        steps = []
        for item in turn:  # a string turn: its characters, as BFCL iterates it
            calls = _decoded_character(item) if isinstance(item, str) and len(item) == 1 else _decode(decode, item)
            if calls is not None and not is_empty_execute_response(calls):
                steps.append(calls)
        decoded.append(steps)
    return verdict(task_id, decoded)


def _decode(decode: Any, item: Any) -> list[str] | None:
    try:
        return list(decode(item, has_tool_call_tag=False))
    except Exception:  # BFCL ignores any failed decoding
        return None


@functools.cache
def _decoded_character(character: str) -> list[str] | None:
    """BFCL's decoding of one character (a string turn is iterated by character), once per character."""
    return _decode(_prompting_decoder(), character)


def verdict(task_id: str, decoded: list[list[list[str]]]) -> bool:
    """BFCL's ``multi_turn_checker`` on ``decoded`` call strings (per turn, per step) of task ``task_id``."""
    task = load_task(task_id)
    truth = [list(turn) for turn in task.ground_truth]
    entry = {
        "id": task_id,
        "initial_config": json.loads(json.dumps(task.initial_config)),
        "involved_classes": list(task.involved_classes),
    }
    # BFCL's verdict as in a fresh process: post_tweet's default lists leak between BFCL's own runs.
    TwitterAPI.post_tweet.__defaults__ = ([], [])
    # A fresh model name per run: BFCL caches instances in module globals keyed by it.
    checked = multi_turn_checker(decoded, truth, entry, task_id.rsplit("_", 1)[0], f"oracle_{next(_RUN)}")
    return bool(checked["valid"])
