"""Evidence and decisions on conversations written by hand: each rule of prefix_exec.inference.candidates, and what
is never a reference (enums, copied attributes, values the agent makes up)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.inference.candidates import Inferred, Thresholds, infer
from prefix_exec.inference.corpus import Conversation, Said, Step
from prefix_exec.inference.evidence import Evidence
from prefix_exec.trajectory import Observation, ToolCall

NO_PATTERN = EvidencePolicy(error_pattern=None)


def call(name: str, result: Any = None, error: bool | None = None, **arguments: Any) -> ToolCall:
    content = result if isinstance(result, str) or result is None else json.dumps(result)
    return ToolCall(name, arguments, observation=Observation(content, error))


def evidence_of(conversations: Sequence[Sequence[Step]], *, errors: bool = True) -> Evidence:
    evidence = Evidence(NO_PATTERN, errors=errors)
    for index, steps in enumerate(conversations):
        evidence.add(Conversation(f"c{index}", tuple(steps)))
    return evidence


def refs(inferred: Inferred) -> dict[tuple[str, str], str]:
    return {r.site: r.kind for r in inferred.references}


def produces(inferred: Inferred) -> dict[tuple[str, str], str]:
    return {(p.site[0], p.kind): p.site[1] for p in inferred.productions}


def ticket_flow(n: int) -> list[list[Step]]:
    return [
        [call("open_ticket", {"ticket_id": f"T-{1000 + i}"}), call("close_ticket", "ok", ticket_id=f"T-{1000 + i}")]
        for i in range(n)
    ]


def test_values_that_flow_from_a_result_make_a_reference_and_its_producer() -> None:
    inferred = infer(evidence_of(ticket_flow(4)))
    assert refs(inferred) == {("close_ticket", "ticket_id"): "ticket"}
    assert produces(inferred) == {("open_ticket", "ticket"): "ticket_id"}
    (reference,) = inferred.references
    assert reference.decision.rule == "flow" and reference.decision.confidence == 1.0


def test_too_little_support_is_no_reference() -> None:
    inferred = infer(evidence_of(ticket_flow(2)))
    assert refs(inferred) == {}
    assert "fewer than --min-support 3" in inferred.decisions[("close_ticket", "ticket_id")].reason


def test_one_conversation_passing_a_value_again_is_one_case() -> None:
    repeated = [call("open_ticket", {"ticket_id": "T-1"}), *[call("close_ticket", "ok", ticket_id="T-1")] * 5]
    evidence = evidence_of([repeated])
    seen = evidence.consumers[("close_ticket", "ticket_id")]
    assert (seen.calls, seen.idlike, seen.cases, seen.flow) == (5, 5, 1, 1)


def test_made_up_values_lower_the_confidence_until_refusals_confirm_them() -> None:
    made_up = [[call("close_ticket", "Error: ticket not found", True, ticket_id=f"T-90{i}")] for i in range(3)]
    conversations = ticket_flow(5) + made_up
    without = infer(evidence_of(conversations, errors=False))
    assert refs(without) == {}
    assert "confidence 62%" in without.decisions[("close_ticket", "ticket_id")].reason
    confirmed = infer(evidence_of(conversations))  # the refusal names no value: the only unexplained one counts
    assert refs(confirmed) == {("close_ticket", "ticket_id"): "ticket"}
    assert confirmed.decisions[("close_ticket", "ticket_id")].confidence == 1.0


def test_a_refusal_confirms_the_value_its_text_names() -> None:
    refused = [
        [call("merge", f"Error: ticket T-9{i} not found", True, ticket_id=f"T-9{i}", other_id=f"T-8{i}")]
        for i in range(3)
    ]
    evidence = evidence_of(refused)
    assert evidence.consumers[("merge", "ticket_id")].refused == 3
    assert evidence.consumers[("merge", "other_id")].refused == 0


def test_an_id_the_user_states_is_a_reference_by_its_name() -> None:
    conversations = [
        [Said(0, f"Hi, my user id is u_{i}00."), call("get_user", {"user_id": f"u_{i}00"}, user_id=f"u_{i}00")]
        for i in range(4)
    ]
    inferred = infer(evidence_of(conversations))
    assert refs(inferred) == {("get_user", "user_id"): "user"}
    assert inferred.references[0].decision.rule == "name"
    assert produces(inferred) == {("get_user", "user"): "user_id"}


def test_a_value_the_user_gives_to_a_tool_that_makes_it_is_no_reference() -> None:
    """A name the user states for a new record is not named like an id: the conversation gives it, nothing refers."""
    conversations = [
        [Said(0, f"Create a note called List{i}"), call("create_note", {"title": f"List{i}"}, title=f"List{i}")]
        for i in range(4)
    ]
    inferred = infer(evidence_of(conversations))
    assert refs(inferred) == {}


def test_an_attribute_copied_from_a_result_is_no_reference() -> None:
    conversations = [
        [call("get_user", {"address": {"city": f"City{i}x"}}), call("ship", "ok", city=f"City{i}x")] for i in range(5)
    ]
    inferred = infer(evidence_of(conversations))
    assert refs(inferred) == {}
    assert "named like an id" in inferred.decisions[("ship", "city")].reason


def test_an_enum_is_a_plain_value_whatever_flows() -> None:
    conversations = [
        [call("get_booking", {"cabin_id": "ECON1"}), call("rebook", "ok", cabin_id="ECON1")] for _ in range(5)
    ]
    schemas = {
        "get_booking": {"type": "object"},
        "rebook": {"type": "object", "properties": {"cabin_id": {"type": "string", "enum": ["ECON1", "BUS1"]}}},
    }
    inferred = infer(evidence_of(conversations), schemas)
    assert refs(inferred) == {}
    assert "enum" in inferred.decisions[("rebook", "cabin_id")].reason
    without = infer(evidence_of(conversations))
    assert refs(without) == {("rebook", "cabin_id"): "cabin"}


def test_an_argument_the_spec_does_not_declare_is_never_inferred() -> None:
    schemas = {
        "open_ticket": {"type": "object"},
        "close_ticket": {"type": "object", "properties": {"id": {"type": "string"}}},
    }
    inferred = infer(evidence_of(ticket_flow(4)), schemas)
    assert refs(inferred) == {}
    assert inferred.decisions[("close_ticket", "ticket_id")].reason == "the tool's schema declares no such argument"


def test_arrays_are_element_wise_and_nested_paths_are_references() -> None:
    conversations = [
        [
            call("search", [{"item_id": f"I{i}1"}, {"item_id": f"I{i}2"}]),
            call("order", "ok", item_ids=[f"I{i}1", f"I{i}2"], lines=[{"item_id": f"I{i}2", "quantity": 2}]),
        ]
        for i in range(3)
    ]
    inferred = infer(evidence_of(conversations))
    assert refs(inferred) == {("order", "item_ids"): "item", ("order", "lines[*].item_id"): "item"}
    assert produces(inferred) == {("search", "item"): "[*].item_id"}


def test_invalidates_needs_refusals_after_the_call() -> None:
    conversations = [
        [
            call("open_ticket", {"ticket_id": f"T-{i}00"}),
            call("delete_ticket", "deleted", ticket_id=f"T-{i}00"),
            call("close_ticket", f"Error: ticket T-{i}00 not found", True, ticket_id=f"T-{i}00"),
        ]
        for i in range(4)
    ]
    inferred = infer(evidence_of(conversations))
    assert [(i.site, i.kind, i.refused) for i in inferred.invalidations] == [
        (("delete_ticket", "ticket_id"), "ticket", 4)
    ]
    assert infer(evidence_of(conversations, errors=False)).invalidations == ()


def test_thresholds_decide() -> None:
    evidence = evidence_of(ticket_flow(2))
    assert refs(infer(evidence, thresholds=Thresholds(min_support=2))) == {("close_ticket", "ticket_id"): "ticket"}


def test_two_kinds_get_two_names() -> None:
    conversations = [
        [
            call("find", {"order_id": f"#W{i}11", "user": {"id": f"u{i}11x"}}),
            call("cancel", "ok", order_id=f"#W{i}11"),
            call("profile", "ok", user_id=f"u{i}11x"),
        ]
        for i in range(3)
    ]
    inferred = infer(evidence_of(conversations))
    assert refs(inferred) == {("cancel", "order_id"): "order", ("profile", "user_id"): "user"}
    assert produces(inferred) == {("find", "order"): "order_id", ("find", "user"): "user.id"}
