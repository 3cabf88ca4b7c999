"""envs/tau/results: a results file matched with its domain, and refused when its tools are another domain's."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from prefix_exec.envs.tau.results import ToolCheck, load_results
from prefix_exec.errors import InputError
from prefix_exec.importers.tau import read_results

pytest.importorskip("tau2")

REPO = Path(__file__).resolve().parents[2]
MEDICAL = REPO / "tests" / "data" / "tau-medical" / "medical_bare-list.json"
MEDICAL_TOOLS = (
    "book_appointment",
    "cancel_appointment",
    "check_insurance_eligibility",
    "get_lab_results",
    "get_patient_record",
    "list_available_slots",
    "search_providers",
)


def real_files(shared_data: Path) -> list[Path]:
    return sorted((shared_data / "tau").glob("*.json")) + sorted((shared_data / "tau" / "leaderboard").glob("*.json"))


def domain_of(path: Path) -> str:
    return "retail" if "retail" in path.name else "airline"


def test_every_shared_airline_and_retail_file_passes(shared_data: Path) -> None:
    files = real_files(shared_data)
    assert len(files) == 17
    for path in files:
        results = read_results(path, model="m", domain=domain_of(path) if "bare-list" in path.name else None)
        loaded = load_results(results)
        assert loaded.tools.unknown == (), path
        assert loaded.tools.note() is None
        assert loaded.tools.names or not results.rollouts  # toolorchestra's: no task ids, nothing read


def test_a_medical_file_given_as_airline_is_refused_naming_its_tools() -> None:
    with pytest.raises(InputError) as info:
        load_results(read_results(MEDICAL, model="m", domain="airline"))
    error = info.value
    assert error.path == str(MEDICAL)
    assert error.message == (
        "the file's tools are not airline's: 7 of its 8 tool names are unknown in airline ("
        + ", ".join(MEDICAL_TOOLS)
        + ")"
    )
    assert error.hint is not None and "--domain" in error.hint
    with pytest.raises(InputError, match="7 of its 8 tool names are unknown in retail"):
        load_results(read_results(MEDICAL, model="m", domain="retail"))


def test_a_retail_file_read_as_airline_is_refused(shared_data: Path, tmp_path: Path) -> None:
    data = json.loads((shared_data / "tau" / "gpt-4.1_retail_1trial.json").read_text(encoding="utf-8"))
    data["info"]["environment_info"]["domain_name"] = "airline"
    path = tmp_path / "retail-as-airline.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=r"12 of its 15 tool names are unknown in airline \(cancel_pending_order"):
        load_results(read_results(path))


def test_the_files_own_tool_list_counts(shared_data: Path, tmp_path: Path) -> None:
    # tau2 may write the offered tools (info.environment_info.tool_defs): an airline-named file listing medical
    # tools is refused even where its agent called few of them
    data = json.loads(MEDICAL.read_text(encoding="utf-8"))[:1]
    for message in data[0]["messages"]:
        message["tool_calls"] = None
    document = {
        "info": {
            "agent_info": {"llm": "m"},
            "environment_info": {"domain_name": "airline", "tool_defs": {name: {} for name in MEDICAL_TOOLS}},
        },
        "tasks": [],
        "simulations": data,
    }
    path = tmp_path / "listed.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    results = read_results(path)
    assert results.offered_tools == MEDICAL_TOOLS
    with pytest.raises(InputError, match="7 of its 7 tool names"):
        load_results(results)
    document["info"]["environment_info"]["tool_defs"] = [{"name": "get_user_details"}, {"name": "calculate"}]
    path.write_text(json.dumps(document), encoding="utf-8")
    assert load_results(read_results(path)).tools.names == ("calculate", "get_user_details")


@pytest.mark.parametrize(
    ("unknown", "known", "refused"),
    [
        (2, 0, True),  # a medical file read as airline whose agent called two of its tools
        (1, 0, True),  # 1 of 1: a file whose only name is another domain's
        (1, 2, False),  # one invented name beside two real ones
        (0, 0, False),  # no name at all: nothing says it is another domain's
        (3, 3, False),  # half, not more than half
        (3, 2, True),  # the edge: 3 > 2 unknown and 3 of 5 > half
        (3, 11, False),  # a weak agent inventing three tools beside eleven real ones
        (12, 3, True),  # a retail file read as airline
    ],
)
def test_the_threshold(unknown: int, known: int, refused: bool) -> None:
    names = tuple(f"u{i}" for i in range(unknown)) + tuple(f"k{i}" for i in range(known))
    check = ToolCheck("airline", tuple(sorted(names)), tuple(sorted(n for n in names if n.startswith("u"))))
    assert check.foreign is refused


def renamed(simulations: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """``simulations`` with the agent's calls of each tool in ``names`` renamed."""
    out = copy.deepcopy(simulations)
    for simulation in out:
        for message in simulation["messages"]:
            for call in message.get("tool_calls") or ():
                call["name"] = names.get(call["name"], call["name"])
    return out


def calling(simulation: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """``simulation`` whose agent, after the first user message, calls each of ``names`` once (each answered)."""
    first_user = next(i for i, m in enumerate(simulation["messages"]) if m["role"] == "user")
    messages = copy.deepcopy(simulation["messages"][: first_user + 1])
    for i, name in enumerate(names):
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "name": name, "arguments": {}}]}
        )
        messages.append({"role": "tool", "id": f"c{i}", "content": "ok", "error": False})
    return {**simulation, "messages": messages}


def test_an_agent_inventing_tools_is_scored_with_a_note(shared_data: Path, tmp_path: Path) -> None:
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    path = tmp_path / "invented.json"
    invented = {"get_user_details": "lookup_customer", "get_reservation_details": "fetch_booking"}
    path.write_text(json.dumps({**data, "simulations": renamed(data["simulations"], invented)}), encoding="utf-8")
    loaded = load_results(read_results(path))
    assert loaded.tools.unknown == ("fetch_booking", "lookup_customer")
    assert loaded.tools.note() == (
        "2 of its 13 tool names are not airline tools (fetch_booking, lookup_customer): calls of them are schema "
        "failures"
    )


@pytest.mark.parametrize(
    ("known", "refused"),
    [
        (["calculate", "list_all_airports", "transfer_to_human_agents"], False),
        (["calculate", "list_all_airports"], True),
    ],
)
def test_the_edge_on_a_file(shared_data: Path, tmp_path: Path, known: list[str], refused: bool) -> None:
    # three unknown names of six: scored (with a note); of five: more than half, refused
    data = json.loads((shared_data / "tau" / "gpt-4.1_airline_1trial.json").read_text(encoding="utf-8"))
    simulation = calling(data["simulations"][0], ["lookup_customer", "fetch_booking", "ghost_tool", *known])
    path = tmp_path / "edge.json"
    path.write_text(json.dumps({**data, "simulations": [simulation]}), encoding="utf-8")
    results = read_results(path)
    if not refused:
        assert load_results(results).tools.unknown == ("fetch_booking", "ghost_tool", "lookup_customer")
        return
    with pytest.raises(InputError, match=r"3 of its 5 tool names are unknown in airline \(fetch_booking, ghost_tool"):
        load_results(results)
