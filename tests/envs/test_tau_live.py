"""The live tau session answers as tau2's own environment: same tool message content, same error flag, same
state afterwards, call after call; a strict session's rejections carry that same answer as their result."""

from __future__ import annotations

from typing import Any

import pytest

from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau.domain import import_tau2
from prefix_exec.trajectory import FailureLabel, ToolCall

USER = "noah_muller_9847"
RESERVATION = "SDZQKO"  # noah_muller_9847's reservation

# Calls tau2 answers in ways our strict checks do not: wrong types it runs anyway, unknown or private names,
# extra arguments, calculator edge cases; writes (successful, failing, with text where numbers belong)
# so later answers show the state each side is in.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": 20240520}),
    ("get_user_details", {"user_id": USER, "verbose": True}),
    ("get_user_details", {"user_id": 9847}),
    ("get_user_details", {}),
    ("refund_everything", {}),
    ("_get_user", {"user_id": USER}),
    ("calculate", {"expression": "1/0"}),
    ("calculate", {"expression": "1+"}),
    ("calculate", {"expression": "()"}),
    ("calculate", {"expression": "7//2"}),
    ("calculate", {"expression": " 2*3"}),
    ("calculate", {"expression": 5}),
    ("calculate", {}),
    ("calculate", {"expression": "1", "x": 1, "y": 2}),
    ("send_certificate", {"user_id": USER, "amount": "100"}),
    ("get_user_details", {"user_id": USER}),
    (
        "update_reservation_baggages",
        {
            "reservation_id": RESERVATION,
            "total_baggages": "1",
            "nonfree_baggages": 0,
            "payment_id": "credit_card_3983998",
        },
    ),
    ("cancel_reservation", {"reservation_id": RESERVATION}),
    ("cancel_reservation", {"reservation_id": RESERVATION}),
    ("get_reservation_details", {"reservation_id": RESERVATION}),
    ("get_user_details", {"user_id": USER}),
]


@pytest.fixture(scope="module")
def airline() -> TauEnvironment:
    return TauEnvironment(load_domain("airline"))


def tau2_environment(env: TauEnvironment) -> Any:
    """tau2's own ``Environment`` over a fresh copy of the airline DB."""
    environment = import_tau2("tau2.environment.environment")
    return environment.Environment(
        domain_name="airline",
        policy=env.domain.policy,
        tools=env.domain.make_toolkit(env.domain.base_db.model_copy(deep=True)),
    )


def test_the_live_session_answers_every_call_as_tau2s_environment(airline: TauEnvironment) -> None:
    message = import_tau2("tau2.data_model.message")
    theirs = tau2_environment(airline)
    ours = airline.start("0", strict=False)
    for index, (name, arguments) in enumerate(CALLS):
        expected = theirs.get_response(
            message.ToolCall(id=str(index), name=name, arguments=dict(arguments), requestor="assistant")
        )
        verdict = ours.step(ToolCall(name, arguments))
        assert (verdict.result, not verdict.accepted) == (expected.content, expected.error), (name, arguments)
    assert ours.db.model_dump() == theirs.tools.db.model_dump()  # the session's db is materialized: tau2's dump


def test_a_failing_call_shows_only_tau2s_text_and_keeps_our_diagnosis_in_the_reason() -> None:
    """After the exchange the order refuses returns, which masks the unknown payment method: our reason says
    so, the agent's answer (``result``) is tau2's message alone."""
    session = TauEnvironment(load_domain("retail")).start("0", strict=False)
    exchange = {
        "order_id": "#W7181492",
        "item_ids": ["8118291112"],
        "new_item_ids": ["8277474082"],
        "payment_method_id": "paypal_3024827",
    }
    assert session.step(ToolCall("exchange_delivered_order_items", exchange)).accepted
    verdict = session.step(
        ToolCall(
            "return_delivered_order_items",
            {"order_id": "#W7181492", "item_ids": ["5753502325"], "payment_method_id": "paypal_0000000"},
        )
    )
    assert verdict.result == "Error: Non-delivered order cannot be returned"
    assert verdict.reason.startswith(f"{verdict.result} (in the initial state: ")


def test_a_strict_rejection_carries_tau2s_answer_and_changes_nothing(airline: TauEnvironment) -> None:
    session = airline.start("0")
    schema = session.step(ToolCall("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": 20240520}))
    assert (schema.accepted, schema.label, schema.result) == (False, FailureLabel.SCHEMA, "[]")
    unknown = session.step(ToolCall("refund_everything", {}))
    assert unknown.result == "Error: Tool 'refund_everything' not found."
    assert "unknown tool" in unknown.reason
    before = session.db.users[USER].model_dump()
    write = session.step(ToolCall("send_certificate", {"user_id": USER, "amount": "100"}))
    assert write.label is FailureLabel.SCHEMA
    assert "Certificate" in str(write.result)  # tau2 would have sent it
    assert session.db.users[USER].model_dump() == before
    informed = airline.start("0", evidence=()).step(
        ToolCall("get_reservation_details", {"reservation_id": RESERVATION})
    )
    assert informed.label is FailureLabel.INFORMATION
    assert RESERVATION in str(informed.result)


def test_a_tau2_session_takes_no_evidence(airline: TauEnvironment) -> None:
    with pytest.raises(ValueError, match="no information check"):
        airline.start("0", evidence=(), strict=False)
    assert airline.start("0", strict=False).fork().strict is False
