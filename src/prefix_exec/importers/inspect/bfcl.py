"""inspect_evals' BFCL samples (``inspect eval inspect_evals/bfcl``) as the rollouts a BFCL result file gives.

inspect_evals runs a multi-turn sample as one conversation: for each BFCL turn it appends that turn's user
message(s) (after a notice of newly revealed tools, at miss_func's reveal turn), then lets the model call tools
until it answers in text. So each run of consecutive user messages starts a turn, and each assistant message
with tool calls is one step of it. The rollout is what :mod:`prefix_exec.importers.bfcl` reads from the same
calls in a FC result file: dataset ``bfcl``, the sample id as task id, every call in order with ``turn`` and
``call_id`` ``t<turn>.s<step>.c<index>``, ``raw`` the arguments as JSON, and ``metadata`` ``category`` and
``turns`` (the turns the model reached, which BFCL's rule compares with the ground truth's). Beyond a result
file, each call keeps the tool's reply as its observation.

Y is the log's score (:mod:`prefix_exec.importers.inspect.log`); BFCL's rule on these calls is the regrade.
Single-turn BFCL categories, ``multi_turn_composite`` and the V4 agentic ones have no environment here: their
samples are reported unscorable, with the reason.
"""

from __future__ import annotations

from prefix_exec.envs.bfcl.tasks import category_of
from prefix_exec.importers.bfcl import DATASET
from prefix_exec.importers.inspect.log import InspectLog, InspectSample, replies, sample_rollout, tool_call
from prefix_exec.trajectory import Rollout, Skipped, ToolCall

#: inspect_evals' task name for BFCL (all categories share it; the sample says its category).
TASK = "bfcl"


def bfcl_rollout(log: InspectLog, sample: InspectSample, *, model: str, method: str) -> Rollout | Skipped:
    """One BFCL sample as a rollout, or why it cannot be scored here."""
    if sample.unscorable:
        return Skipped(sample.where, sample.unscorable)
    category = str(sample.metadata.get("category_name") or "")
    try:
        ours = category_of(sample.id)
    except KeyError:
        return Skipped(
            sample.where,
            f"BFCL category {category or '(none)'} is not one prefix-exec replays: it scores the v3 multi-turn "
            "categories base, miss_func, miss_param and long_context",
        )
    if category and category != f"multi_turn_{ours}":
        return Skipped(sample.where, f"input error: sample {sample.id} says its category is {category}")
    actions: list[ToolCall] = []
    turn, step, previous = -1, 0, ""
    for index, message in enumerate(sample.messages):
        if message.role == "user" and previous != "user":
            turn, step = turn + 1, 0
        if message.role != "system":
            previous = message.role
        if message.role != "assistant" or not message.calls:
            continue
        answered = replies(sample.messages, index)
        for position, call in enumerate(message.calls):
            reply = answered.get(call.id) if call.id is not None else None
            actions.append(tool_call(call, f"t{max(turn, 0)}.s{step}.c{position}", max(turn, 0), reply))
        step += 1
    metadata = {"category": ours, "turns": max(turn + 1, 0)}
    return sample_rollout(log, sample, actions, dataset=DATASET, model=model, method=method, metadata=metadata)
