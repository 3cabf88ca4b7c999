"""Distinct trials for repeated tasks (prefix_exec.scoring.numbering): rollouts of one task read together, numbered
in input order."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.importers.trials import trial_fields
from prefix_exec.scoring.numbering import Numbering, rollout_digest
from prefix_exec.trajectory import Rollout, ToolCall


def rollout(task: str = "t1", *, trial: int | None = None, call: str = "a", **metadata: Any) -> Rollout:
    """A rollout of ``task`` calling ``call``; ``trial`` None: the input named none."""
    return Rollout("d", task, "m", "x", (ToolCall(call),), success=1, metadata=metadata, **trial_fields(trial))


def test_rollouts_without_trials_become_trials_in_input_order() -> None:
    numbering = Numbering()
    out = [numbering.number(rollout(call=c, source=f"f.jsonl:{i}")) for i, c in enumerate("abc")]
    out.append(numbering.number(rollout("t2", source="f.jsonl:9")))
    assert [(r.task_id, r.trial) for r in out] == [("t1", 0), ("t1", 1), ("t1", 2), ("t2", 0)]
    assert "trial_note" not in out[0].metadata and "trial_note" not in out[3].metadata
    assert out[1].metadata["trial_note"] == (
        "trial 1 by input order: the input names no trial, and an earlier, different rollout of this task has trial 0"
    )
    assert numbering.describe() == (
        "2 rollout(s) of 1 task(s) share their dataset, task, model, method and trial with an earlier, different "
        "one (2 naming no trial, 0 naming one already taken): numbered as further trials in input order (task t1 "
        "trial 0 -> 1 from f.jsonl:1; task t1 trial 0 -> 2 from f.jsonl:2); each record says so in "
        "metadata.trial_note. --unique-task refuses them instead; --resume needs the inputs in the same order"
    )


def test_the_summary_is_one_line_for_thousands() -> None:
    numbering = Numbering()
    for i in range(3000):
        numbering.number(rollout(f"t{i % 1000}", call=f"c{i}"))
    summary = numbering.describe()
    assert summary is not None and "\n" not in summary
    assert summary.startswith("2000 rollout(s) of 1000 task(s)")
    assert "; and 1997 more)" in summary
    assert Numbering().describe() is None


def test_recorded_trials_are_kept_when_distinct_and_moved_on_when_taken() -> None:
    numbering = Numbering()
    out = [
        numbering.number(r)
        for r in (rollout(trial=0), rollout(trial=1, call="b"), rollout(trial=0, call="c"), rollout(call="d"))
    ]
    # two tau2 files each holding trial 0 of a task: the second is trial 2 (after the highest, 1)
    assert [r.trial for r in out] == [0, 1, 2, 3]
    assert (
        out[2]
        .metadata["trial_note"]
        .endswith("the input names trial 0, which an earlier, different rollout of this task has")
    )
    assert "(1 naming no trial, 1 naming one already taken)" in (numbering.describe() or "")


def test_a_rollout_without_a_trial_keeps_zero_beside_a_recorded_one() -> None:
    numbering = Numbering()
    out = [numbering.number(r) for r in (rollout(trial=1), rollout(call="b"), rollout(call="c"))]
    assert [r.trial for r in out] == [1, 0, 2]


def test_identical_rollouts_and_unique_task_keep_their_identity() -> None:
    numbering = Numbering()
    first, twin = numbering.number(rollout(source="a")), numbering.number(rollout(source="a"))
    assert twin.key == first.key and twin == rollout(source="a")
    # the same content read from another place is another rollout (the input holds it twice only when it is
    # the same rollout JSON, where it was read included)
    assert numbering.number(rollout(source="b")).trial == 1
    strict = Numbering(unique=True)
    strict.number(rollout())
    assert strict.number(rollout(call="b")).trial == 0
    assert strict.describe() is None


def test_a_renumbered_rollout_read_again_keeps_its_new_trial_so_scoring_sees_the_duplicate() -> None:
    # the same file given twice: its second run of task t1 was renumbered to trial 1 the first time; read again it
    # must come out identical (trial 1, same note), not as a third trial
    numbering = Numbering()
    out = [numbering.number(r) for r in (rollout(source="f:1"), rollout(call="b", source="f:2"))]
    again = [numbering.number(r) for r in (rollout(source="f:1"), rollout(call="b", source="f:2"))]
    assert again == out
    assert [r.trial for r in again] == [0, 1]
    assert len(numbering.renumbered) == 1


def test_the_digest_is_of_the_rollout_json_with_keys_sorted() -> None:
    one = rollout(source="s", extra={"a": 1, "b": 2})
    other = rollout(source="s", extra={"b": 2, "a": 1})
    assert rollout_digest(one) == rollout_digest(other)
    assert rollout_digest(one) != rollout_digest(replace(one, success=0))
    assert rollout_digest(one) != rollout_digest(rollout(source="s", extra={"a": 1, "b": 3}))


groups = st.lists(st.tuples(st.sampled_from(["t1", "t2"]), st.sampled_from("ab"), st.none() | st.integers(0, 2)))


@given(groups)
def test_numbering_leaves_only_identical_rollouts_sharing_an_identity(items: list[tuple[str, str, int | None]]) -> None:
    units = [rollout(task, call=call, trial=trial) for task, call, trial in items]
    numbering = Numbering()
    out = [numbering.number(u) for u in units]
    digests: dict[tuple[Any, ...], str] = {}
    first_key: dict[str, tuple[Any, ...]] = {}
    for before, after in zip(units, out, strict=True):
        assert after.key[:4] == before.key[:4]
        assert digests.setdefault(after.key, rollout_digest(before)) == rollout_digest(before)
        # and a rollout read again takes the identity it took the first time
        assert first_key.setdefault(rollout_digest(before), after.key) == after.key
        if after.trial != before.trial:
            assert after.metadata["trial_note"].startswith(f"trial {after.trial} by input order")
    # the same input in the same order gives the same trials (--resume), and numbering them again changes nothing
    again = Numbering()
    assert [again.number(u).key for u in units] == [r.key for r in out]
    twice = Numbering()
    assert [twice.number(r).key for r in out] == [r.key for r in out]


def test_keeps_says_whether_number_keeps_a_rollout_as_read_and_counts_it_so() -> None:
    """What a worker that decoded a rollout sends back (its identity and digest) settles it as :meth:`number`
    would when that keeps it as read; otherwise nothing is counted and :meth:`number` sees the rollout."""
    first, again, other = rollout("t1", trial=0), rollout("t1", trial=0), rollout("t1", trial=0, call="b")
    by_keeps, by_number = Numbering(), Numbering()
    assert by_keeps.keeps(first.key, rollout_digest(first))
    assert by_number.number(first) == first
    assert not by_keeps.keeps(again.key, rollout_digest(again))  # read twice: number must see it
    assert not by_keeps.keeps(other.key, rollout_digest(other))  # its identity is taken: a further trial
    for numbering in (by_keeps, by_number):
        assert numbering.number(again) == again
        assert numbering.number(other).trial == 1
    assert by_keeps == by_number
