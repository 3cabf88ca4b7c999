"""Array-valued arguments and results in ``refs``, ``invalidates`` and ``produces``: element-wise by default,
one value with ``whole_arrays: true``; and a side file naming an argument the tool does not have is refused at load
(issue 44, item 3). The tools are the memory server's (npm ``@modelcontextprotocol/server-memory``), abridged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from prefix_exec.envs.custom.environment import layered_environment
from prefix_exec.envs.custom.spec_formats import to_spec
from prefix_exec.errors import InputError
from prefix_exec.replay import check_action
from prefix_exec.trajectory import FailureLabel, Observation, ToolCall

NAMES = {"type": "array", "items": {"type": "string"}}
TOOLS = [
    {"name": "create_entities", "inputSchema": {"type": "object", "properties": {"entities": {"type": "array"}}}},
    {"name": "open_nodes", "inputSchema": {"type": "object", "properties": {"names": NAMES}}},
    {"name": "delete_entities", "inputSchema": {"type": "object", "properties": {"entityNames": NAMES}}},
]
SIDE = """
tools:
  create_entities: {produces: {entity: "entities[*].name"}}
  open_nodes: {refs: {names: entity}}
  delete_entities: {refs: {entityNames: entity}, invalidates: {entity: entityNames}}
"""


def session(tmp_path: Path, side: str = SIDE) -> Any:
    (tmp_path / "side.yaml").write_text(side)
    data, form = to_spec({"tools": TOOLS}, path=tmp_path / "tools.json")
    env = layered_environment(data, tmp_path / "tools.json", form=form, hooks=tmp_path / "side.yaml")
    return env.start("")


def step(s: Any, name: str, result: Any = None, **arguments: Any) -> Any:
    return check_action(s, ToolCall(name, arguments, call_id=name, observation=Observation(result)))


def test_a_list_argument_refers_to_each_element(tmp_path: Path) -> None:
    s = session(tmp_path)
    created = {"entities": [{"name": "Alice"}, {"name": "Bob"}]}
    assert step(s, "create_entities", created, entities=[{"name": "Alice"}, {"name": "Bob"}]).accepted
    assert step(s, "open_nodes", names=["Alice"]).accepted
    assert step(s, "open_nodes", names=["Bob", "Alice"]).accepted
    refused = step(s, "open_nodes", names=["Alice", "Carol"])
    assert refused.label is FailureLabel.DEPENDENCY and "names[1]='Carol'" in refused.reason


def test_deleting_a_list_invalidates_each_element(tmp_path: Path) -> None:
    s = session(tmp_path)
    step(s, "create_entities", {"entities": [{"name": "Alice"}, {"name": "Bob"}]}, entities=[])
    assert step(s, "delete_entities", entityNames=["Alice"]).accepted
    gone = step(s, "open_nodes", names=["Alice"])
    assert gone.label is FailureLabel.STATE_CONSISTENCY and "names[0]='Alice'" in gone.reason
    assert step(s, "open_nodes", names=["Bob"]).accepted


def test_a_produced_list_produces_each_element(tmp_path: Path) -> None:
    side = SIDE.replace('"entities[*].name"', "names")
    s = session(tmp_path, side)
    assert step(s, "create_entities", {"names": ["Alice", "Bob"]}, entities=[]).accepted
    assert step(s, "open_nodes", names=["Bob"]).accepted


def test_whole_arrays_compares_the_array_as_one_value(tmp_path: Path) -> None:
    side = SIDE.replace('"entities[*].name"', "names").replace(
        "open_nodes: {refs: {names: entity}}", "open_nodes: {refs: {names: entity}, whole_arrays: true}"
    )
    s = session(tmp_path, side.replace("create_entities: {", "create_entities: {whole_arrays: true, "))
    assert step(s, "create_entities", {"names": ["Alice", "Bob"]}, entities=[]).accepted
    assert step(s, "open_nodes", names=["Alice", "Bob"]).accepted
    assert step(s, "open_nodes", names=["Alice"]).label is FailureLabel.DEPENDENCY


@pytest.mark.parametrize(
    ("layer", "field"),
    [
        ("open_nodes: {refs: {name: entity}}", "tools.open_nodes.refs.name"),
        ("delete_entities: {invalidates: {entity: names}}", "tools.delete_entities.invalidates.entity"),
    ],
)
def test_a_side_file_naming_no_argument_of_the_tool_is_refused_at_load(tmp_path: Path, layer: str, field: str) -> None:
    with pytest.raises(InputError) as raised:
        session(tmp_path, f"tools:\n  {layer}\n")
    assert raised.value.field == field and "no argument of the tool" in raised.value.describe()


def test_a_postcondition_reads_the_real_result_and_fails_the_call(tmp_path: Path) -> None:
    (tmp_path / "after.py").write_text(
        "def made_all(state, args, result):\n"
        "    asked = {e['name'] for e in args.get('entities', [])}\n"
        "    made = {e['name'] for e in (result or {}).get('entities', [])}\n"
        "    return None if asked <= made else f'not created: {sorted(asked - made)}'\n"
    )
    side = "hooks: after.py\n" + SIDE.replace(
        'create_entities: {produces: {entity: "entities[*].name"}}',
        'create_entities: {produces: {entity: "entities[*].name"}, postcondition: made_all}',
    )
    s = session(tmp_path, side)
    asked = [{"name": "Alice"}, {"name": "Bob"}]
    assert step(s, "create_entities", {"entities": asked}, entities=asked).accepted
    failed = step(
        s, "create_entities", {"entities": [{"name": "Carol"}]}, entities=[{"name": "Carol"}, {"name": "Dan"}]
    )
    assert failed.label is FailureLabel.STATE_CONSISTENCY and "not created: ['Dan']" in failed.reason
    assert "postcondition" in failed.notes
    assert step(s, "open_nodes", names=["Carol"]).label is FailureLabel.DEPENDENCY  # a failed call produces nothing


RELATIONS = {
    "type": "array",
    "items": {"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"}}},
}


def test_a_refs_key_may_be_a_path_into_a_list_of_objects(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"relations": RELATIONS}}
    tools = [*TOOLS, {"name": "create_relations", "inputSchema": schema}]
    (tmp_path / "side.yaml").write_text(SIDE + "  create_relations: {refs: {'relations[*].to': entity}}\n")
    data, form = to_spec({"tools": tools}, path=tmp_path / "tools.json")
    s = layered_environment(data, tmp_path / "tools.json", form=form, hooks=tmp_path / "side.yaml").start("")
    step(s, "create_entities", {"entities": [{"name": "Alice"}, {"name": "Bob"}]}, entities=[])
    assert step(s, "create_relations", relations=[{"from": "x", "to": "Alice"}, {"from": "y", "to": "Bob"}]).accepted
    refused = step(s, "create_relations", relations=[{"from": "x", "to": "Bob"}, {"from": "Bob", "to": "Carol"}])
    assert refused.label is FailureLabel.DEPENDENCY
    assert "relations[*].to[1]='Carol'" in refused.reason and "'x'" not in refused.reason


def test_a_refs_path_whose_first_name_is_no_argument_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        session(tmp_path, "tools:\n  open_nodes: {refs: {'nodes[*].name': entity}}\n")
    assert raised.value.field == "tools.open_nodes.refs.nodes[*].name"


def test_a_fan_over_an_object_takes_its_values(tmp_path: Path) -> None:
    """tau2's user record keys its payment methods by their ids: ``payment_methods[*].id`` reads each."""
    side = SIDE.replace('"entities[*].name"', '"methods[*].id"')
    s = session(tmp_path, side)
    methods = {"methods": {"card_1": {"id": "card_1"}, "gift_2": {"id": "gift_2"}}}
    assert step(s, "create_entities", methods, entities=[]).accepted
    assert step(s, "open_nodes", names=["gift_2", "card_1"]).accepted
    assert step(s, "open_nodes", names=["card_3"]).label is FailureLabel.DEPENDENCY


def test_a_fan_per_star_reads_a_list_of_lists(tmp_path: Path) -> None:
    """tau2's search_onestop_flight answers a list of itineraries, each a list of flights: ``[*][*].flight_number``."""
    s = session(tmp_path, SIDE.replace('"entities[*].name"', '"[*][*].name"'))
    assert step(s, "create_entities", [[{"name": "HAT1"}, {"name": "HAT2"}], [{"name": "HAT3"}]], entities=[]).accepted
    assert step(s, "open_nodes", names=["HAT3", "HAT1"]).accepted
    assert step(s, "open_nodes", names=["HAT4"]).label is FailureLabel.DEPENDENCY
