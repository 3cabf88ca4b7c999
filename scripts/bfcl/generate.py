"""Regenerate tests/data/bfcl-crash/: result files written by BFCL's own generation (``bfcl generate``'s
``generation_main``) for a few multi-turn entries, some of whose inferences crash, with a scripted model server on
127.0.0.1 in the model's place.

Run it in its own virtual environment (never the project's), with the pinned versions of requirements.txt:

    python3.12 -m venv /work/bfclgen-venv
    /work/bfclgen-venv/bin/pip install --no-deps -r scripts/bfcl/requirements.txt
    /work/bfclgen-venv/bin/python scripts/bfcl/generate.py

What runs: BFCL's ``generation_main`` with the arguments ``bfcl generate --model gpt-4o-2024-11-20-FC --run-ids``
gives it (one run per category, the ids of :data:`ENTRIES` in ``test_case_ids_to_generate.json``), in a scratch
``BFCL_PROJECT_ROOT``. BFCL's handler for that model (``OpenAIResponsesHandler``) builds its OpenAI client from
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``: they point it at the tests' scripted server
(``tests/fakes/openai_server.py``), which speaks the Responses API, with a placeholder key. BFCL runs each entry as
it does for a real model: it sends the turns, executes every call on its own API classes (GorillaFileSystem,
TwitterAPI, TicketAPI) and sends the results back, and writes ``BFCL_v4_multi_turn_<category>_result.json``.

The server answers as :func:`respond` says: in each user turn the entry's ground-truth calls (BFCL's
``possible_answer``), one call per request, then a short text; where :data:`MISTAKES` says, one call with a wrong
argument first (BFCL's API refuses it; the script goes on with the right one). :data:`FAULTS` names the requests
it answers with an HTTP error or lets time out instead; the fault is chosen from the request itself, so a retry
would meet it again. The client's own retries are set to 0 and its timeout to :data:`TIMEOUT_S` (BFCL's handler
sets neither, so the openai client's defaults would apply: 2 retries, 600 s), by wrapping BFCL's
``build_handler`` to return the handler with ``handler.client.with_options(max_retries=0, timeout=TIMEOUT_S)``: a
fault ends the request at once. BFCL's ``multi_threaded_inference`` catches the exception that ends the entry and
writes ``"result": "Error during inference: <the exception's text>"`` with the traceback as the line's only
other field. BFCL itself retries only a ``RateLimitError`` (429), which no fault here is.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "bfcl-crash"
MODEL = "gpt-4o-2024-11-20-FC"
#: The entries run, per category (BFCL's ids).
ENTRIES = {
    "multi_turn_base": [f"multi_turn_base_{i}" for i in range(8)],
    "multi_turn_miss_param": [f"multi_turn_miss_param_{i}" for i in range(4)],
}
#: (entry, user turn from 0) -> the fault served to the turn's first request, in tests/fakes/openai_server.py's
#: words: an HTTP status with its message, or ``hang`` (no answer within the client's timeout).
FAULTS = {
    ("multi_turn_base_1", 0): "500",
    ("multi_turn_base_4", 2): "500",
    ("multi_turn_base_6", 1): "hang",
    ("multi_turn_base_7", 1): "400:This model's maximum context length is 128000 tokens. However, your messages "
    "resulted in 131072 tokens. Please reduce the length of the messages.",
    ("multi_turn_miss_param_2", 1): "502:Bad Gateway",
}
#: (entry, user turn, index of the ground-truth call it comes before) -> a wrong call made first.
MISTAKES = {
    ("multi_turn_base_3", 1, 1): ("cd", {"folder": "photos"}),
    ("multi_turn_base_5", 3, 0): (
        "comment",
        {"tweet_id": 7, "comment_content": "Another successful task completed today!"},
    ),
}
TIMEOUT_S = 2.0
#: How long a ``hang`` keeps the answer back: past the client's timeout.
HANG_S = 4.0
DONE = "Done."
ASK = "I need one more detail to do that: which one do you mean?"


def load_server() -> Any:
    """tests/fakes/openai_server.py (the tests are no package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location("openai_server", ROOT / "tests" / "fakes" / "openai_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parsed_call(source: str, doc: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call ``f(a=1, 'x')`` as (name, arguments): literals only (``ast.literal_eval``), positional
    arguments bound to the function doc's parameters in their order."""
    node = ast.parse(source, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), source
    names = list(doc[node.func.id]["parameters"]["properties"])
    arguments = {names[i]: ast.literal_eval(arg) for i, arg in enumerate(node.args)}
    arguments.update({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None})
    return node.func.id, arguments


def scripts(category: str) -> dict[str, tuple[str, list[list[tuple[str, dict[str, Any]]]]]]:
    """For each entry of ``category`` run here, keyed by its first user message: (id, the calls of each turn),
    the ground truth with :data:`MISTAKES` put in."""
    from bfcl_eval.constants.eval_config import POSSIBLE_ANSWER_PATH
    from bfcl_eval.utils import load_dataset_entry

    wanted = set(ENTRIES[category])
    answers = {}
    for line in (POSSIBLE_ANSWER_PATH / f"BFCL_v4_{category}.json").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] in wanted:
            answers[row["id"]] = row["ground_truth"]
    table: dict[str, tuple[str, list[list[tuple[str, dict[str, Any]]]]]] = {}
    for entry in load_dataset_entry(category):
        if entry["id"] not in wanted:
            continue
        doc = {function["name"]: function for function in entry["function"]}
        for held in entry.get("missed_function", {}).values():
            doc.update({function["name"]: function for function in held})
        turns = []
        for turn, sources in enumerate(answers[entry["id"]]):
            calls = [parsed_call(source, doc) for source in sources]
            for (entry_id, at_turn, before), wrong in MISTAKES.items():
                if entry_id == entry["id"] and at_turn == turn:
                    calls.insert(before, wrong)
            turns.append(calls)
        first = entry["question"][0][0]["content"]
        assert first not in table, f"two entries of {category} open with the same message"
        table[first] = (entry["id"], turns)
    return table


def position(messages: list[dict[str, Any]]) -> tuple[str, int, int]:
    """(first user message, user turn from 0, calls made since that turn's message) of a chat history."""
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    since = messages[users[-1] + 1 :]
    made = sum(len(m.get("tool_calls") or []) for m in since if m["role"] == "assistant")
    return messages[users[0]]["content"], len(users) - 1, made


def responder(table: Mapping[str, tuple[str, list[list[tuple[str, dict[str, Any]]]]]]) -> Any:
    """The scripted model: the turn's next call (ids ``call_<turn>_<k>``), or a text once they are made."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        first, turn, made = position(body["messages"])
        _, turns = table[first]
        calls = turns[turn] if turn < len(turns) else []
        if made < len(calls):
            name, arguments = calls[made]
            call = {"id": f"call_{turn}_{made}", "type": "function"}
            call["function"] = {"name": name, "arguments": json.dumps(arguments)}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": DONE if calls else ASK}

    return respond


def fault_chooser(server: Any, table: Mapping[str, tuple[str, list[Any]]]) -> Any:
    """The fault of :data:`FAULTS` for a request that opens a listed entry's turn (no call made in it yet)."""

    def fault_of(body: dict[str, Any]) -> str | None:
        first, turn, made = position(server.messages_of_input(body.get("input")))
        entry_id, _ = table[first]
        return FAULTS.get((entry_id, turn)) if made == 0 else None

    return fault_of


def bounded_client(generation: Any) -> None:
    """BFCL's ``build_handler``, wrapped: the handler's OpenAI client without retries and with a short timeout."""
    build = generation.build_handler

    def build_handler(model_name: str, temperature: float) -> Any:
        handler = build(model_name, temperature)
        handler.client = handler.client.with_options(max_retries=0, timeout=TIMEOUT_S)
        return handler

    generation.build_handler = build_handler


def generate(category: str, project: Path, server_module: Any) -> None:
    """Run BFCL's generation for ``category``'s entries against the scripted server: BFCL writes
    ``<project>/result/<MODEL>/multi_turn/BFCL_v4_<category>_result.json``."""
    from bfcl_eval import _llm_response_generation as generation

    table = scripts(category)
    (project / "test_case_ids_to_generate.json").write_text(json.dumps({category: ENTRIES[category]}))
    server = server_module.ScriptedServer(responder(table), hang_s=HANG_S)
    server.fault_of = fault_chooser(server_module, table)
    with server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        args = SimpleNamespace(  # what `bfcl generate --model MODEL --run-ids` passes
            model=[MODEL], test_category=["all"], temperature=0.001, include_input_log=False,
            exclude_state_log=False, num_gpus=1, num_threads=None, gpu_memory_utilization=0.9, backend="sglang",
            skip_server_setup=False, local_model_path=None, result_dir=None, allow_overwrite=False, run_ids=True,
            enable_lora=False, max_lora_rank=None, lora_modules=None,
        )  # fmt: skip
        generation.main(args)
    print(f"{category}: {len(server.requests)} requests, HTTP statuses {sorted(set(server.statuses))}")


def oracle(category: str) -> dict[str, Any]:
    """What was planted in ``category``'s entries, from :data:`FAULTS` and :data:`MISTAKES` (not from a result):
    per entry, the fault served (its turn and what) or the wrong call (its turn and its 1-based position among
    the entry's calls, which is where its first refused call is)."""
    table = {entry_id: turns for entry_id, turns in scripts(category).values()}
    planted: dict[str, Any] = {}
    for (entry_id, turn), fault in FAULTS.items():
        if entry_id in table:
            status, _, message = fault.partition(":")
            served = "no answer within the client's timeout" if fault == "hang" else f"HTTP {status} {message}".strip()
            planted[entry_id] = {"fault": {"turn": turn, "served": served}}
    for (entry_id, turn, before), (name, arguments) in MISTAKES.items():
        if entry_id in table:
            at = sum(len(calls) for calls in table[entry_id][:turn]) + before + 1
            planted[entry_id] = {"mistake": {"turn": turn, "position": at, "call": {name: arguments}}}
    return {entry_id: planted.get(entry_id) for entry_id in ENTRIES[category]}


def evaluate(project: Path) -> None:
    """BFCL's own evaluation (``bfcl evaluate --partial-eval``) of the results written: its score files."""
    from bfcl_eval.eval_checker.eval_runner import main as evaluation_main

    evaluation_main([MODEL], list(ENTRIES), None, None, True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="the folder to write (default: %(default)s)")
    args = parser.parse_args()
    project = Path(tempfile.mkdtemp(prefix="bfcl-project-"))
    # before bfcl_eval is imported: it makes its result folders under BFCL_PROJECT_ROOT at import
    os.environ["BFCL_PROJECT_ROOT"] = str(project)
    os.environ["OPENAI_API_KEY"] = "not-a-key"  # the scripted server asks for none; the client wants one
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    try:
        bounded_client(__import__("bfcl_eval._llm_response_generation", fromlist=["main"]))
        server_module = load_server()
        for category in ENTRIES:
            generate(category, project, server_module)
        evaluate(project)
        for kind in ("result", "score"):
            source = project / kind / MODEL / "multi_turn"
            target = args.out / kind / MODEL / "multi_turn"
            target.mkdir(parents=True, exist_ok=True)
            for path in sorted(source.glob("BFCL_v4_*.json")):
                shutil.copyfile(path, target / path.name)
                print(f"wrote {target / path.name}")
        planted = {category: oracle(category) for category in ENTRIES}
        (args.out / "faults.json").write_text(json.dumps(planted, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out / 'faults.json'}")
    finally:
        shutil.rmtree(project)


if __name__ == "__main__":
    main()
