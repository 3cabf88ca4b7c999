"""The tau environment on the real tau2 airline/retail toolkits: one crafted rollout per label, isolation of
state between rollouts and across rejected calls, binding, and the no-tool finish."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Sequence
from typing import Any

import pytest

from prefix_exec.envs.base import Environment, Session
from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau.state import CopyOnAccess
from prefix_exec.errors import InputError
from prefix_exec.importers.tau import rollout_of
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, PrefixRecord, Rollout, ToolCall

RETAIL_USER = "isabella_johansson_2152"
DELIVERED = "#W7181492"  # retail: delivered, paid with paypal_3024827, holds hiking boots 8118291112
PENDING = "#W2575533"  # retail: pending, one payment with paypal_3024827
AIRLINE_USER = "noah_muller_9847"


@pytest.fixture(scope="module")
def retail() -> TauEnvironment:
    return TauEnvironment(load_domain("retail"))


@pytest.fixture(scope="module")
def airline() -> TauEnvironment:
    return TauEnvironment(load_domain("airline"))


def crafted(dataset: str, steps: Sequence[tuple[Any, ...]], task_id: str = "0") -> Rollout:
    """A rollout from ('user', text) and ('call', name, arguments) steps, with a matching transcript."""
    actions: list[ToolCall] = []
    transcript: list[dict[str, Any]] = [{"role": "assistant", "content": "Hi! How can I help you today?"}]
    for step in steps:
        if step[0] == "user":
            transcript.append({"role": "user", "content": step[1]})
        else:
            call_id = f"call_{len(actions)}"
            actions.append(ToolCall(name=step[1], arguments=step[2], call_id=call_id))
            transcript.append({"role": "assistant", "tool_calls": [{"id": call_id, "name": step[1]}]})
    return Rollout(dataset, task_id, "m", "x", tuple(actions), success=0, transcript=tuple(transcript))


def run(env: TauEnvironment, steps: Sequence[tuple[Any, ...]], task_id: str = "0") -> PrefixRecord:
    rollout = crafted(env.name, steps, task_id)
    return replay(rollout, env.bind(rollout))


def test_protocols(retail: TauEnvironment) -> None:
    assert isinstance(retail, Environment)
    assert isinstance(retail.start("0"), Session)
    assert retail.name == "tau3-retail"


# --- schema ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("delete_everything", {}, "unknown tool"),
        ("get_user_details", {}, "missing required argument(s) user_id"),
        ("get_user_details", {"user_id": RETAIL_USER, "verbose": True}, "unknown argument(s) verbose"),
        ("get_user_details", {"user_id": 2152}, "argument types do not bind"),
        ("cancel_pending_order", {"order_id": PENDING, "reason": 7}, "argument types do not bind"),
    ],
)
def test_schema_failures_never_execute(
    retail: TauEnvironment, name: str, arguments: dict[str, Any], fragment: str
) -> None:
    record = run(retail, [("user", f"I am {RETAIL_USER}, order {PENDING}"), ("call", name, arguments)])
    assert (record.fed, record.label) == (1, FailureLabel.SCHEMA)
    assert fragment in (record.reason or "")


def test_airline_int_given_as_text_is_schema(airline: TauEnvironment) -> None:
    record = run(
        airline,
        [
            ("user", "reservation SDZQKO, pay with credit_card_3983998"),
            (
                "call",
                "update_reservation_baggages",
                {
                    "reservation_id": "SDZQKO",
                    "total_baggages": "1",
                    "nonfree_baggages": 0,
                    "payment_id": "credit_card_3983998",
                },
            ),
        ],
    )
    assert record.label is FailureLabel.SCHEMA
    assert "total_baggages" in (record.reason or "")


def test_argument_validator_is_schema(retail: TauEnvironment) -> None:
    record = run(
        retail,
        [
            ("user", f"order {PENDING}"),
            ("call", "cancel_pending_order", {"order_id": PENDING, "reason": "changed my mind"}),
        ],
    )
    assert record.label is FailureLabel.SCHEMA
    assert record.reason == "Error: Invalid reason"


# --- dependency -----------------------------------------------------------------------------------------


def test_not_found_on_an_obtained_id_is_dependency(retail: TauEnvironment) -> None:
    record = run(
        retail,
        [("user", "my user id is maria_nobody_0000"), ("call", "get_user_details", {"user_id": "maria_nobody_0000"})],
    )
    verdict = record.failing_verdict
    assert verdict is not None
    assert verdict.causes == (FailureLabel.DEPENDENCY,)
    assert verdict.reason == "Error: User not found"


def test_made_up_missing_id_is_dependency_with_information_cause(retail: TauEnvironment) -> None:
    record = run(retail, [("user", "hello"), ("call", "get_order_details", {"order_id": "#W0000001"})])
    verdict = record.failing_verdict
    assert verdict is not None
    assert verdict.causes == (FailureLabel.DEPENDENCY, FailureLabel.INFORMATION)
    assert verdict.label is FailureLabel.DEPENDENCY  # the fixed order picks dependency


def test_airline_unknown_flight_date_is_dependency(airline: TauEnvironment) -> None:
    record = run(
        airline,
        [
            ("user", "flight HAT228 on 2031-01-01"),
            ("call", "get_flight_status", {"flight_number": "HAT228", "date": "2031-01-01"}),
        ],
    )
    assert record.label is FailureLabel.DEPENDENCY


# --- precondition ---------------------------------------------------------------------------------------


def test_non_delivered_order_return_is_precondition(retail: TauEnvironment) -> None:
    record = run(
        retail,
        [
            ("user", f"I am {RETAIL_USER}; return item 4806644905 of order {PENDING} to paypal_3024827"),
            (
                "call",
                "return_delivered_order_items",
                {
                    "order_id": PENDING,
                    "item_ids": ["4806644905"],
                    "payment_method_id": "paypal_3024827",
                },
            ),
        ],
    )
    assert record.label is FailureLabel.PRECONDITION
    assert record.reason == "Error: Non-delivered order cannot be returned"


def hat228_booking(payment_id: str, amount: int) -> dict[str, object]:
    """book_reservation's arguments: AIRLINE_USER books economy on HAT228 (LAX-EWR, 2024-05-27) for Noah
    Muller, paying ``amount`` with ``payment_id``, no bags, no insurance."""
    return {
        "user_id": AIRLINE_USER,
        "origin": "LAX",
        "destination": "EWR",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT228", "date": "2024-05-27"}],
        "passengers": [{"first_name": "Noah", "last_name": "Muller", "dob": "1963-01-22"}],
        "payment_methods": [{"payment_id": payment_id, "amount": amount}],
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": "no",
    }


def test_payment_not_adding_up_is_precondition(airline: TauEnvironment) -> None:
    record = run(
        airline,
        [
            ("user", f"I am {AIRLINE_USER}. Book HAT228 on 2024-05-27 and pay with credit_card_3983998"),
            ("call", "book_reservation", hat228_booking("credit_card_3983998", 1)),
        ],
    )
    assert record.label is FailureLabel.PRECONDITION
    assert (record.reason or "").startswith("Error: Payment amount does not add up")


# --- state_consistency ----------------------------------------------------------------------------------


def exchange_then_return(refund_to: str) -> list[tuple[str, str, dict[str, object]]]:
    """Order DELIVERED: the boots 8118291112 exchanged for 8277474082 (paid with paypal_3024827), then item
    5753502325 returned with the refund to ``refund_to``; the exchange leaves the order refusing returns."""
    exchange = {
        "order_id": DELIVERED,
        "item_ids": ["8118291112"],
        "new_item_ids": ["8277474082"],
        "payment_method_id": "paypal_3024827",
    }
    refund = {"order_id": DELIVERED, "item_ids": ["5753502325"], "payment_method_id": refund_to}
    return [("call", "exchange_delivered_order_items", exchange), ("call", "return_delivered_order_items", refund)]


def test_acting_on_stale_state_is_state_consistency(retail: TauEnvironment) -> None:
    """The exchange moves the order to 'exchange requested'; the return that the initial state would have
    accepted now fails: the agent acted on a stale view of the order."""
    record = run(
        retail,
        [
            (
                "user",
                f"I am {RETAIL_USER}; order {DELIVERED}: swap boots 8118291112 for 8277474082, "
                "and return 5753502325; use paypal_3024827",
            ),
            *exchange_then_return("paypal_3024827"),
        ],
    )
    assert (record.fed, record.label) == (2, FailureLabel.STATE_CONSISTENCY)
    assert record.verdicts[0].accepted
    assert any(note.startswith("stale-state") for note in record.verdicts[1].notes)


def test_stale_status_masking_an_unknown_id_is_dependency(retail: TauEnvironment) -> None:
    """After the exchange the order refuses returns (status), which hides that the payment method does not
    exist; the initial state reveals it, and dependency wins the fixed order."""
    record = run(
        retail,
        [
            (
                "user",
                f"order {DELIVERED}: swap 8118291112 for 8277474082 with paypal_3024827; "
                "refund 5753502325 to gift_card_9999999",
            ),
            *exchange_then_return("gift_card_9999999"),
        ],
    )
    verdict = record.failing_verdict
    assert verdict is not None
    assert record.fed == 2
    assert verdict.causes == (FailureLabel.DEPENDENCY, FailureLabel.PRECONDITION)
    assert "masked-error" in verdict.notes[0]


def test_changing_a_payment_twice_is_state_consistency(retail: TauEnvironment) -> None:
    record = run(
        retail,
        [
            ("user", f"order {PENDING}, pay with paypal_3024827"),
            ("call", "modify_pending_order_payment", {"order_id": PENDING, "payment_method_id": "paypal_3024827"}),
        ],
    )
    assert record.label is FailureLabel.STATE_CONSISTENCY  # already paid with it: a redundant transition


# --- information ----------------------------------------------------------------------------------------


def test_existing_id_never_seen_is_information(retail: TauEnvironment) -> None:
    record = run(
        retail, [("user", "Hi, I want to check my account"), ("call", "get_user_details", {"user_id": RETAIL_USER})]
    )
    verdict = record.failing_verdict
    assert verdict is not None
    assert verdict.causes == (FailureLabel.INFORMATION,)
    assert RETAIL_USER in verdict.reason


def test_ids_seen_from_user_and_tool_results_are_available(retail: TauEnvironment) -> None:
    record = run(
        retail,
        [
            ("user", "I'm Isabella Johansson, zip 32286. My order is W2575533."),  # no '#': normalised
            ("call", "find_user_id_by_name_zip", {"first_name": "Isabella", "last_name": "Johansson", "zip": "32286"}),
            ("call", "get_user_details", {"user_id": RETAIL_USER}),  # id from the previous tool result
            ("call", "get_order_details", {"order_id": PENDING}),
        ],
    )
    assert record.executable, record.reason


def _parallel_simulation(*, separate: bool) -> dict[str, Any]:
    """Airline task 13: the user gives their id; the agent fetches the user and, in the same assistant message
    (or, with ``separate``, in the next one), a reservation whose id only the first call's result holds."""
    calls = [
        {"id": "c1", "name": "get_user_details", "arguments": {"user_id": "james_lee_6136"}},
        {"id": "c2", "name": "get_reservation_details", "arguments": {"reservation_id": "75JYBV"}},
    ]
    results = [
        {"role": "tool", "id": "c1", "content": "(user details)", "error": False},
        {"role": "tool", "id": "c2", "content": "(reservation details)", "error": False},
    ]
    turns = (
        [{"role": "assistant", "tool_calls": calls[:1]}, results[0], {"role": "assistant", "tool_calls": calls[1:]}]
        if separate
        else [{"role": "assistant", "tool_calls": calls}, results[0]]
    )
    return {
        "id": "sim",
        "task_id": "13",
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?"},
            {"role": "user", "content": "my user id is james_lee_6136"},
            *turns,
            results[1],
        ],
        "reward_info": {"reward": 0.0},
    }


@pytest.mark.parametrize(("separate", "fed"), [(False, 2), (True, 3)])  # 3 = T + 1: fully executable
def test_a_parallel_call_cannot_use_its_sibling_result(airline: TauEnvironment, separate: bool, fed: int) -> None:
    """docs/tau.md: for parallel calls, the second one cannot use the first one's (replayed) result."""
    rollout = rollout_of(_parallel_simulation(separate=separate), domain="airline", model="m", method="x")
    assert "75JYBV" in str(airline.start("13").step(rollout.actions[0]).result)  # only the first result has it
    record = replay(rollout, airline.bind(rollout))
    assert record.fed == fed, record.reason
    if not separate:
        assert record.label is FailureLabel.INFORMATION
        assert "75JYBV" in (record.reason or "")


def test_without_message_boundaries_a_result_is_seen_at_once(airline: TauEnvironment) -> None:
    """Online use (evidence given, no transcript): every call is its own turn."""
    session = airline.start("13", evidence=["my user id is james_lee_6136"])
    assert session.step(ToolCall("get_user_details", {"user_id": "james_lee_6136"})).accepted
    assert session.step(ToolCall("get_reservation_details", {"reservation_id": "75JYBV"})).accepted


def test_information_failure_leaves_state_unchanged(retail: TauEnvironment) -> None:
    rollout = crafted(
        retail.name,
        [
            ("user", "cancel please"),
            ("call", "cancel_pending_order", {"order_id": PENDING, "reason": "no longer needed"}),
        ],
    )
    session = retail.bind(rollout).start("0")
    verdict = session.step(rollout.actions[0])
    assert verdict.label is FailureLabel.INFORMATION
    assert session.db.orders[PENDING].status == "pending"


def test_without_a_transcript_the_information_check_is_off(retail: TauEnvironment) -> None:
    rollout = Rollout(
        "tau3-retail", "0", "m", "x", (ToolCall("get_user_details", {"user_id": RETAIL_USER}),), success=1
    )
    record = replay(rollout, retail.bind(rollout))
    assert record.executable
    assert "information-unchecked" in record.verdicts[0].notes


# --- state isolation ------------------------------------------------------------------------------------


def test_sessions_are_independent_and_the_shared_db_is_untouched(retail: TauEnvironment) -> None:
    first, second = retail.start("0"), retail.start("0")
    cancel = ToolCall("cancel_pending_order", {"order_id": PENDING, "reason": "no longer needed"})
    assert first.step(cancel).accepted
    assert first.db.orders[PENDING].status == "cancelled"
    assert second.db.orders[PENDING].status == "pending"
    assert retail.domain.base_db.orders[PENDING].status == "pending"
    assert retail.start("0").step(cancel).accepted  # a fresh session starts from the initial state again


def test_fork_is_independent_both_ways(retail: TauEnvironment) -> None:
    session = retail.start("0")
    twin = session.fork()
    assert twin.step(ToolCall("cancel_pending_order", {"order_id": PENDING, "reason": "no longer needed"})).accepted
    assert session.db.orders[PENDING].status == "pending"
    assert session.step(
        ToolCall(
            "modify_pending_order_address",
            {
                "order_id": PENDING,
                "address1": "1 A St",
                "address2": "",
                "city": "X",
                "state": "CA",
                "country": "USA",
                "zip": "12345",
            },
        )
    ).accepted
    assert twin.db.orders[PENDING].address.city != "X"


def test_a_rejected_write_changes_nothing(airline: TauEnvironment) -> None:
    session = airline.start("0")
    before = session.db.users[AIRLINE_USER].payment_methods["certificate_8301303"].amount
    verdict = session.step(
        ToolCall(
            "book_reservation",
            hat228_booking("certificate_8301303", 100),
        )
    )
    assert not verdict.accepted
    assert session.db.users[AIRLINE_USER].payment_methods["certificate_8301303"].amount == before
    assert "HATHAT" not in session.db.reservations


def test_starting_a_session_copies_no_record(airline: TauEnvironment) -> None:
    session = airline.start("0")
    tables = [session.db.flights, session.db.users, session.db.reservations]
    assert all(isinstance(t, CopyOnAccess) and not t._owned for t in tables)
    assert len(session.db.users) == len(airline.domain.base_db.users)
    session.step(ToolCall("get_user_details", {"user_id": AIRLINE_USER}))
    assert not session.db.users._owned  # a read-only tool reads the shared record, uncopied
    session.step(ToolCall("send_certificate", {"user_id": AIRLINE_USER, "amount": 100}))
    assert session.db.users._owned == {AIRLINE_USER}


def test_task_initial_state_is_applied(retail: TauEnvironment) -> None:
    task = dict(retail.task("0"))
    task["id"] = "init"
    task["initial_state"] = {
        "initialization_data": {"agent_data": {"orders": {PENDING: {"status": "delivered"}}}},
        "initialization_actions": [],
    }
    env = TauEnvironment(retail.domain, {"init": task})
    assert env.start("init").db.orders[PENDING].status == "delivered"
    assert env.start("0").db.orders[PENDING].status == "pending"
    assert retail.domain.base_db.orders[PENDING].status == "pending"


def test_initialization_actions_and_history_calls_run_in_order(retail: TauEnvironment) -> None:
    task = dict(retail.task("0"))
    task["id"] = "acts"
    address = {"address1": "1 A St", "address2": "", "city": "Y", "state": "CA", "country": "USA", "zip": "1"}
    task["initial_state"] = {
        "initialization_actions": [
            {
                "env_type": "assistant",
                "func_name": "modify_pending_order_address",
                "arguments": {"order_id": PENDING, **address},
            },
        ],
        "message_history": [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "h1",
                        "name": "cancel_pending_order",
                        "requestor": "assistant",
                        "arguments": {"order_id": PENDING, "reason": "ordered by mistake"},
                    }
                ],
            },
            {"role": "tool", "id": "h1", "content": "..."},
        ],
    }
    order = TauEnvironment(retail.domain, {"acts": task}).start("acts").db.orders[PENDING]
    assert (order.address.city, order.status, order.cancel_reason) == ("Y", "cancelled", "ordered by mistake")
    assert retail.domain.base_db.orders[PENDING].status == "pending"
    task["initial_state"]["initialization_actions"][0]["arguments"]["order_id"] = "#W0"
    with pytest.raises(InputError, match="initialization action modify_pending_order_address fails"):
        TauEnvironment(retail.domain, {"acts": task}).start("acts")


@pytest.mark.parametrize(
    "state",
    [
        "bad",
        {"initialization_data": "bad"},
        {"initialization_data": {"agent_data": ["bad"]}},
        {"initialization_data": {"agent_data": {"orders": {PENDING: {"status": 5}}}}},
        {"initialization_actions": "bad"},
        {"initialization_actions": [{"arguments": {}}]},
        {"message_history": ["bad"]},
        {"message_history": [{"role": "assistant", "tool_calls": "zzz"}]},
    ],
)
def test_a_malformed_initial_state_is_an_input_error(retail: TauEnvironment, state: Any) -> None:
    task = {**retail.task("0"), "id": "bad", "initial_state": state}
    with pytest.raises(InputError, match="task bad: malformed initial_state"):
        TauEnvironment(retail.domain, {"bad": task}).start("bad")


@pytest.mark.parametrize("criteria", ["bad", {"actions": "bad"}, {"actions": [{"arguments": {}}]}])
def test_malformed_expected_actions_are_an_input_error(retail: TauEnvironment, criteria: Any) -> None:
    task = {**retail.task("0"), "id": "bad", "evaluation_criteria": criteria}
    with pytest.raises(InputError, match=r"evaluation_criteria\.actions"):
        TauEnvironment(retail.domain, {"bad": task}).start("bad").finish_without_tools()


def test_unknown_task_is_a_key_error(retail: TauEnvironment) -> None:
    with pytest.raises(KeyError):
        retail.start("no-such-task")


# --- no-tool finish, calculator -------------------------------------------------------------------------


def test_finish_without_tools_follows_the_expected_actions(airline: TauEnvironment) -> None:
    assert airline.start("0").finish_without_tools().accepted  # task 0 expects no action
    verdict = airline.start("2").finish_without_tools()
    # tau3's task 2 looks the user and reservations up and sends nothing (the older tau2 task expected a
    # send_certificate: tests/envs/test_tau_providers.py)
    assert verdict.label is FailureLabel.PRECONDITION
    assert "get_reservation_details" in verdict.reason
    assert "send_certificate" not in verdict.reason


@pytest.mark.parametrize(
    ("expression", "accepted", "result"),
    [
        ("2 + 3 * 4", True, "14.0"),
        ("(1 - 3) / 3", True, "-0.67"),
        ("2 ** 10", True, "1024.0"),
        ("__import__('os')", False, "Invalid characters"),
        ("9 ** 9 ** 9", False, "exponent"),
        ("1 / 0", False, "division by zero"),
        ("(((9 ** 64) ** 64) ** 64) ** 64", False, "too large"),  # nested powers: 9**(64**4), hours of work
        ("(2 ** 60) ** 60 / (2 ** 60) ** 59", True, "1.152921504606847e+18"),  # big, but divided back down
    ],
)
def test_calculate_without_eval(airline: TauEnvironment, expression: str, accepted: bool, result: str) -> None:
    verdict = airline.start("0").step(ToolCall("calculate", {"expression": expression}))
    assert verdict.accepted is accepted
    assert result in (verdict.result if accepted else verdict.reason)
    assert verdict.label is (None if accepted else FailureLabel.SCHEMA)


@pytest.mark.parametrize("enabled", [True, False])
def test_parsing_a_domain_leaves_the_garbage_collector_as_it_found_it(
    enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from prefix_exec.envs.tau import domain

    states: list[bool] = []
    build = domain._build

    def watched(*args: Any) -> Any:
        states.append(gc.isenabled())
        return build(*args)

    monkeypatch.setattr(domain, "_CACHE", {})  # a fresh parse, without dropping the shared cache
    monkeypatch.setattr(domain, "_build", watched)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert load_domain("airline").name == "airline"
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert states == [False]  # paused while parsing


def test_a_failed_call_leaves_no_reference_cycle(airline: TauEnvironment) -> None:
    """A tool's exception comes back without its traceback, whose frames would hold the session (and its DB)
    in a cycle only the garbage collector frees: the session goes with its last reference."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        session = airline.start("0")
        verdict = session.step(ToolCall("get_user_details", {"user_id": "nobody_0000"}))
        assert not verdict.accepted and verdict.result == "Error: User nobody_0000 not found"
        gone = weakref.ref(session)
        del session
        assert gone() is None
    finally:
        if enabled:
            gc.enable()


def test_a_failed_call_keeps_the_callers_exception_traceback(airline: TauEnvironment) -> None:
    """A call made while the caller handles an exception: the tool's exception is chained to the caller's
    (``__context__``), whose traceback is the caller's own and must survive the call (a bare ``raise`` after
    it shows where the caller's error came from)."""

    def fail() -> None:
        raise RuntimeError("the caller's own error")

    session = airline.start("0")
    try:
        fail()
    except RuntimeError as outer:
        frames = len(list(_frames(outer.__traceback__)))
        verdict = session.step(ToolCall("get_user_details", {"user_id": "nobody_0000"}))
        assert not verdict.accepted
        assert outer.__traceback__ is not None and len(list(_frames(outer.__traceback__))) == frames


def _frames(tb: Any) -> Any:
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next
