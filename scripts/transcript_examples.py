"""Write ``examples/transcripts``' other forms from its OpenAI Chat file, with the libraries that own each form.

``openai-chat.jsonl`` (written by hand: seven conversations of a web shop's support agent, on ``tools.json``)
is the source. From it:

- ``anthropic.jsonl``: each conversation's messages converted by litellm's own OpenAI-to-Anthropic converter
  (``anthropic_messages_pt``), the system prompt as the top-level ``system``, the tools as Anthropic tools
  (``input_schema``);
- ``langchain.json``: the messages as LangChain message objects (``langchain_core``'s ``convert_to_messages``)
  written by LangChain's ``messages_to_dict``, as a JSON list;
- ``openai-responses.jsonl``: the items the Agents SDK's ``to_input_list()`` gives for such a run (user
  messages, ``function_call`` and ``function_call_output`` items, assistant ``message`` items), converted here
  and checked against litellm's Responses-to-Chat converter, which must give back the same calls and replies;
- ``tau-bench.json``: tau-bench's results layout (``task_id``, ``reward``, ``info``, ``traj``, ``trial``).

A tool reply whose text begins with ``Error`` is flagged where the form has a flag, as those frameworks record
a tool that raised: Anthropic ``is_error: true``, LangChain ``status: "error"``. Run from the repository root
in an environment with litellm and langchain-core (``make setup`` installs both)::

    python scripts/transcript_examples.py examples/transcripts
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the folder holding openai-chat.jsonl")
    folder = parser.parse_args().folder
    records = [json.loads(line) for line in (folder / "openai-chat.jsonl").read_text().splitlines()]
    write_jsonl(folder / "anthropic.jsonl", [anthropic_record(r) for r in records])
    write_jsonl(folder / "openai-responses.jsonl", [responses_record(r) for r in records])
    (folder / "langchain.json").write_text(json.dumps([langchain_record(r) for r in records], indent=1) + "\n")
    (folder / "tau-bench.json").write_text(json.dumps([tau_bench_record(r) for r in records], indent=1) + "\n")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def identity(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in ("task_id", "model", "method", "success")}


def is_error(content: Any) -> bool:
    return isinstance(content, str) and content.startswith("Error")


def anthropic_record(record: dict[str, Any]) -> dict[str, Any]:
    from litellm.litellm_core_utils.prompt_templates.factory import anthropic_messages_pt

    system = [m["content"] for m in record["messages"] if m["role"] == "system"]
    chat = [m for m in record["messages"] if m["role"] != "system"]
    messages = anthropic_messages_pt(chat, model="claude-sonnet-4-5", llm_provider="anthropic")
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_result" and is_error(block.get("content")):
                block["is_error"] = True
    tools = [
        {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
        for f in (t["function"] for t in record["tools"])
    ]
    return {**identity(record), "system": "\n".join(system), "messages": messages, "tools": tools}


def langchain_record(record: dict[str, Any]) -> dict[str, Any]:
    from langchain_core.messages import ToolMessage, convert_to_messages, messages_to_dict

    messages = convert_to_messages(record["messages"])
    for message in messages:
        if isinstance(message, ToolMessage) and is_error(message.content):
            message.status = "error"
    return {**identity(record), "messages": messages_to_dict(messages), "tools": record["tools"]}


def responses_record(record: dict[str, Any]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    system = ""
    for n, message in enumerate(record["messages"]):
        if message["role"] == "system":
            system = message["content"]
        elif message["role"] == "user":
            items.append({"content": message["content"], "role": "user"})
        elif message["role"] == "tool":
            items.append(
                {"call_id": message["tool_call_id"], "output": message["content"], "type": "function_call_output"}
            )
        else:
            if message.get("content"):
                text = {"annotations": [], "text": message["content"], "type": "output_text"}
                items.append(
                    {"id": f"msg_{n}", "content": [text], "role": "assistant", "status": "completed", "type": "message"}
                )
            for call in message.get("tool_calls") or ():
                items.append(
                    {
                        "arguments": call["function"]["arguments"],
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "type": "function_call",
                        "id": f"fc_{call['id'].removeprefix('call_')}",
                        "status": "completed",
                    }
                )
    tools = [{"type": "function", **t["function"], "strict": False} for t in record["tools"]]
    converted = {**identity(record), "instructions": system, "input": items, "tools": tools}
    check_responses(record, converted)
    return converted


def check_responses(record: dict[str, Any], converted: dict[str, Any]) -> None:
    """litellm's Responses-to-Chat converter gives back the conversation's calls and replies."""
    from litellm.responses.litellm_completion_transformation.transformation import LiteLLMCompletionResponsesConfig

    back = LiteLLMCompletionResponsesConfig.transform_responses_api_input_to_messages(
        converted["input"], {"instructions": converted["instructions"]}
    )
    back = [m if isinstance(m, dict) else m.model_dump() for m in back]

    def calls(messages: list[Any]) -> list[tuple[str, str, str]]:
        return [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for m in messages
            for c in m.get("tool_calls") or ()
        ]

    def replies(messages: list[Any]) -> list[tuple[str, str]]:
        return [(m["tool_call_id"], m["content"]) for m in messages if m.get("role") == "tool"]

    assert calls(back) == calls(record["messages"]), record["task_id"]
    assert replies(back) == replies(record["messages"]), record["task_id"]


def tau_bench_record(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "task_id": record["task_id"],
        "reward": float(record["success"]),
        "info": {},
        "traj": record["messages"],
        "trial": 0,
    }


if __name__ == "__main__":
    main()
