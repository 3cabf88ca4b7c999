"""score_to_file: the one loop every ``score`` command runs (replay each rollout on its environment, skip, resume,
refuse to overwrite)."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import pytest

from prefix_exec.errors import InputError
from prefix_exec.records.codec import read_records
from prefix_exec.scoring.numbering import Numbering
from prefix_exec.scoring.pool.dispatch import pool_for
from prefix_exec.scoring.run import ScoreOptions, progress_bar, score_to_file
from prefix_exec.scoring.units import Batch, Reading, Scorable, numbered, with_environment
from prefix_exec.terminal import Escaping
from prefix_exec.trajectory import PrefixRecord, Rollout, Skipped, ToolCall, UnitKey
from test_replay import CounterEnv, CounterSession, rollout


def units() -> list[Rollout | Skipped]:
    return [
        rollout(("inc", {})),
        Rollout("toy", "missing", "m", "react", success=1),  # no such task: a replay error
        Skipped("in.jsonl:3", "not JSON"),
        Rollout("toy", "t2", "m", "react", actions=(ToolCall("inc"), ToolCall("need", {"n": 5})), success=0),
        rollout(("inc", {})),  # the first unit again
    ]


def test_keep_going_scores_the_rest_and_lists_every_unit_it_could_not_score(tmp_path: Path) -> None:
    out, log = tmp_path / "r.jsonl", io.StringIO()
    report = score_to_file(with_environment(units(), CounterEnv()), out, log=log, options=ScoreOptions(keep_going=True))
    records = list(read_records(out))
    assert [(r.task_id, r.fed, r.T) for r in records] == [("t1", 2, 1), ("t2", 2, 2)]
    assert (report.written, report.executable, report.resumed) == (2, 1, 0)
    assert [s.where for s in report.skipped] == [
        "task missing (model m, method react, trial 0)",
        "in.jsonl:3",
        "task t1 (model m, method react, trial 0)",
    ]
    assert "no task" in report.skipped[0].error
    assert "twice" in report.skipped[2].error
    assert log.getvalue().count("prefix-exec: skipped") == 3


def test_without_keep_going_the_first_bad_unit_stops_and_the_records_before_it_stay(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with pytest.raises(InputError, match=r"missing.*no task"):
        score_to_file(with_environment(units(), CounterEnv()), out)
    assert [r.task_id for r in read_records(out)] == ["t1"]


def test_a_full_output_is_refused_then_resumed_without_rescoring(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    good = [u for u in units() if isinstance(u, Rollout) and u.task_id != "missing"][:2]
    score_to_file(with_environment(good[:1], CounterEnv()), out)
    with pytest.raises(InputError, match="already holds records"):
        score_to_file(with_environment(good, CounterEnv()), out)
    env = CounterEnv()
    report = score_to_file(with_environment(good, env), out, options=ScoreOptions(resume=True))
    assert (report.written, report.resumed, env.starts) == (1, 1, 1)
    assert [r.task_id for r in read_records(out)] == ["t1", "t2"]


class OffsetEnv(CounterEnv):
    """A counter that starts at ``offset``: the same rollout replays differently here and on a :class:`CounterEnv`."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        self.offset = offset

    def start(self, task_id: str) -> CounterSession:
        session = super().start(task_id)
        session.value = self.offset
        return session


def test_each_rollout_replays_on_its_own_environment_also_when_prepare_replaces_it(tmp_path: Path) -> None:
    """Two rollouts, two environments, one run: each executable only on its own environment. ``prepare`` returns a
    new object (what once needed a table of environments keyed by the rollout's id()); it keeps its pair's."""
    zero, ten = CounterEnv(), OffsetEnv(10)
    on_zero = Rollout("toy", "a", "m", "react", actions=(ToolCall("inc"), ToolCall("need", {"n": 1})))
    on_ten = Rollout("toy", "b", "m", "react", actions=(ToolCall("inc"), ToolCall("need", {"n": 11})))
    prepared: list[Rollout] = []

    def prepare(unit: Rollout) -> Rollout:
        prepared.append(replace(unit, success=1))
        return prepared[-1]

    out = tmp_path / "r.jsonl"
    report = score_to_file([Scorable(on_zero, zero), Scorable(on_ten, ten)], out, prepare=prepare)
    records = list(read_records(out))
    assert [(r.task_id, r.fed, r.T, r.success) for r in records] == [("a", 3, 2, 1), ("b", 3, 2, 1)]
    assert (report.written, report.executable) == (2, 2)
    assert (zero.starts, ten.starts) == (1, 1)
    # swapped, each rollout fails its last call: the pairing decides, not the order
    swapped = score_to_file(
        [Scorable(on_zero, ten), Scorable(on_ten, zero)], out, prepare=prepare, options=ScoreOptions(overwrite=True)
    )
    assert [(r.task_id, r.fed, r.reason) for r in read_records(out)] == [
        ("a", 2, "counter is 11"),
        ("b", 2, "counter is 1"),
    ]
    assert swapped.executable == 0


def test_a_scorable_from_prepare_replays_on_its_own_environment(tmp_path: Path) -> None:
    """``prepare`` may name the environment (BFCL's, taking over its check's execution): the pair's is not used."""
    pairs_env, own = CounterEnv(), OffsetEnv(10)
    rollout = Rollout("toy", "a", "m", "react", actions=(ToolCall("inc"), ToolCall("need", {"n": 11})))
    out = tmp_path / "r.jsonl"
    score_to_file([Scorable(rollout, pairs_env)], out, prepare=lambda unit: Scorable(replace(unit, success=1), own))
    assert [(r.task_id, r.fed, r.T, r.success) for r in read_records(out)] == [("a", 3, 2, 1)]
    assert (pairs_env.starts, own.starts) == (0, 1)


def test_an_environment_built_from_the_rollout_gets_the_prepared_one_and_only_when_replayed(tmp_path: Path) -> None:
    built: list[Rollout] = []

    def env_for(unit: Rollout) -> CounterEnv:
        built.append(unit)
        return CounterEnv()

    first, second = rollout(("inc", {}), success=None), rollout(("inc", {}), success=None)
    second = replace(second, task_id="t2")
    out = tmp_path / "r.jsonl"
    score_to_file([Scorable(first, env_for)], out, prepare=lambda unit: replace(unit, success=0))
    assert [(u.task_id, u.success) for u in built] == [("t1", 0)]  # the rollout prepare returned
    pairs = [Scorable(first, env_for), Scorable(second, env_for), Scorable(second, env_for)]
    report = score_to_file(
        pairs, out, prepare=lambda unit: replace(unit, success=1), options=ScoreOptions(resume=True, keep_going=True)
    )
    assert [(u.task_id, u.success) for u in built] == [("t1", 0), ("t2", 1)]  # not for the kept one, nor the repeat
    assert (report.written, report.resumed, len(report.skipped)) == (1, 1, 1)


def test_a_duplicate_is_the_same_rollout_and_a_conflict_names_both(tmp_path: Path) -> None:
    # what numbering leaves sharing an identity (prefix_exec.scoring.numbering): the same rollout read twice, or with
    # --unique-task a different rollout of one task and trial
    first = replace(rollout(("inc", {})), metadata={"source": "f.jsonl:1"})
    other = replace(first, actions=(ToolCall("inc"), ToolCall("inc")), metadata={"source": "f.jsonl:3"})
    report = score_to_file(
        with_environment([first, first, other], CounterEnv()),
        tmp_path / "o.jsonl",
        log=io.StringIO(),
        options=ScoreOptions(keep_going=True),
    )
    assert report.written == 1
    duplicate, conflict = report.skipped
    assert (duplicate.where, duplicate.error) == (
        "task t1 (model m, method react, trial 0) from f.jsonl:1",
        "duplicate: the input holds this rollout twice",
    )
    assert conflict.where == "task t1 (model m, method react, trial 0) from f.jsonl:3"
    assert conflict.error.startswith(
        "a different rollout has this dataset, task, model, method and trial: task t1 (model m, method react, "
        "trial 0) from f.jsonl:1. Give them distinct trial numbers (--trial-field PATH, --trial N)"
    )


def test_numbered_rollouts_resume_onto_the_same_trials(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    # three runs of one task from a log naming no trial, as an importer reads them
    runs = [
        replace(rollout(*calls), trial_given=False)
        for calls in ((("inc", {}),), (("inc", {}), ("inc", {})), (("need", {"n": 0}),))
    ]
    numbering = Numbering()
    first = score_to_file(numbered(with_environment(runs[:2], CounterEnv()), numbering), out)
    assert first.written == 2 and numbering.describe() is not None
    env = CounterEnv()
    again = score_to_file(numbered(with_environment(runs, env), Numbering()), out, options=ScoreOptions(resume=True))
    assert (again.resumed, again.written, env.starts) == (2, 1, 1)
    records = list(read_records(out))
    assert [(r.trial, r.T) for r in records] == [(0, 1), (1, 2), (2, 1)]
    assert [r.metadata.get("trial_note", "")[:22] for r in records] == [
        "",
        "trial 1 by input order",
        "trial 2 by input order",
    ]


@pytest.mark.parametrize(("seconds", "expected"), [(3600.0, 1), (0.0, 6)])
def test_records_are_fsynced_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seconds: float, expected: int
) -> None:
    """One worker fsyncs as the pool does: at most every SYNC_SECONDS (here: never before the end, or after
    every record) and once at the end; every record is flushed as written (a kill keeps it)."""
    import os

    from prefix_exec.scoring import replayer

    synced: list[int] = []
    monkeypatch.setattr(replayer, "SYNC_SECONDS", seconds)
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    out = tmp_path / "out.jsonl"
    flushed: list[int] = []

    def seen(record: object) -> None:  # called once the record is written: it is in the file already
        flushed.append(out.read_text(encoding="utf-8").count("\n"))

    rollouts = [replace(rollout(("inc", {})), trial=trial) for trial in range(5)]
    report = score_to_file(with_environment(rollouts, CounterEnv()), out, on_record=seen)
    assert report.written == 5
    assert flushed == [1, 2, 3, 4, 5]
    assert len(synced) == expected


def look_where(record: PrefixRecord) -> tuple[int, int]:
    """An Observer's look (module level: it pickles to the workers): the process it ran in, and the record's T."""
    import os

    return os.getpid(), record.T


@dataclass
class Where:
    """An Observer that keeps what it was given: (key, what look_where gave), in the order given."""

    taken: list[tuple[UnitKey, object]] = field(default_factory=list)

    @property
    def look(self) -> Callable[[PrefixRecord], object]:
        return look_where

    def take(self, key: UnitKey, seen: object) -> None:
        self.taken.append((key, seen))


@pytest.mark.parametrize("workers", [1, 2])
def test_an_observer_looks_where_the_record_is_made_and_takes_in_input_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """An Observer's look runs in the worker that replayed the rollout (here every rollout goes to the workers),
    its take here in input order; a plain on_record gets every record itself; the records are those of one
    worker."""
    import os

    from prefix_exec.scoring.pool import dispatch as pool_dispatch

    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)
    rollouts = [
        replace(rollout(*[("inc", {})] * (trial % 3 + 1)), trial=trial) for trial in range(7)
    ]  # T = 1, 2, 3, 1, ...
    observer, records = Where(), []
    score_to_file(
        with_environment(rollouts, CounterEnv()),
        tmp_path / "a.jsonl",
        on_record=observer,
        options=ScoreOptions(dispatch=pool_for(workers)),
    )
    score_to_file(
        with_environment(rollouts, CounterEnv()),
        tmp_path / "b.jsonl",
        on_record=records.append,
        options=ScoreOptions(dispatch=pool_for(workers)),
    )
    assert [key for key, _ in observer.taken] == [r.key for r in rollouts]
    assert [seen[1] for _, seen in observer.taken] == [trial % 3 + 1 for trial in range(7)]  # type: ignore[index]
    pids = {seen[0] for _, seen in observer.taken}  # type: ignore[index]
    assert (pids == {os.getpid()}) if workers == 1 else (os.getpid() not in pids)
    assert [r.key for r in records] == [r.key for r in rollouts]
    assert all(isinstance(r, PrefixRecord) for r in records)
    one = tmp_path / "one.jsonl"
    score_to_file(with_environment(rollouts, CounterEnv()), one)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes() == one.read_bytes()


class Client:
    """An object a caller's code put in a rollout's metadata: JSON cannot hold it, so the line holds its repr."""

    def __repr__(self) -> str:
        return "Client('https://user:key@example.com/v1', timeout=5)"


@pytest.mark.parametrize("workers", [1, 2])
def test_credentials_in_metadata_json_cannot_hold_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A URL's credentials in a tuple, a set or an object's repr in the metadata are removed as in a string: the
    line holds those as a list, a list and the repr (json_types.dumps), and that is what is redacted; the rollout's own
    metadata is left as it was. Oracle: the lines written by hand."""
    from prefix_exec.scoring.pool import dispatch as pool_dispatch

    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)
    secret = "https://user:key@example.com/v1"
    metadata = {
        "api_base": secret,
        "fallbacks": (secret,),
        "mirrors": {secret},
        "client": Client(),
        "settings": {"base": secret, "retries": (1, 2)},
    }
    unit = replace(rollout(("inc", {})), metadata=metadata)
    out = tmp_path / "out.jsonl"
    score_to_file(with_environment([unit], CounterEnv()), out, options=ScoreOptions(dispatch=pool_for(workers)))
    [line] = out.read_text(encoding="utf-8").splitlines()
    assert "user:key@" not in line
    redacted = "https://***@example.com/v1"
    assert json.loads(line)["metadata"] == {
        "api_base": redacted,
        "fallbacks": [redacted],
        "mirrors": [redacted],
        "client": f"Client('{redacted}', timeout=5)",
        "settings": {"base": redacted, "retries": [1, 2]},
    }
    assert unit.metadata["settings"] == {"base": secret, "retries": (1, 2)}  # not changed in place


@dataclass
class Unsendable(Where):
    """An Observer whose look does not pickle (a lambda): the run replays in this process and says why."""

    @property
    def look(self) -> Callable[[PrefixRecord], object]:
        return lambda record: (os.getpid(), record.T)


def test_an_observer_whose_look_does_not_pickle_is_named(tmp_path: Path) -> None:
    """The note names the observer's look, not the rollouts' preparation (there is none here); every rollout is
    replayed and taken in this process, as with one worker."""
    rollouts = [replace(rollout(("inc", {})), trial=trial) for trial in range(3)]
    observer, log = Unsendable(), io.StringIO()
    score_to_file(
        with_environment(rollouts, CounterEnv()),
        tmp_path / "out.jsonl",
        on_record=observer,
        log=log,
        options=ScoreOptions(dispatch=pool_for(2)),
    )
    assert "note: the look of the run's on_record cannot be sent to workers (" in log.getvalue()
    assert "preparation" not in log.getvalue()
    assert [(key, seen) for key, seen in observer.taken] == [(r.key, (os.getpid(), 1)) for r in rollouts]


def given_rollout(unit: Rollout) -> Rollout:
    return unit


def read_trials(trials: tuple[int, ...], bad: bool) -> Reading:
    """A batch's reading: rollouts of these trials (the 2nd repeated: a duplicate), an unreadable unit if
    ``bad``, and a note."""
    units: list[Callable[[], Rollout | Skipped] | Skipped] = [
        partial(given_rollout, replace(rollout(("inc", {})), trial=trial)) for trial in (*trials, trials[1])
    ]
    if bad:
        units.append(Skipped("b.json:3", "not a conversation"))
    return units, None, f"prefix-exec: note: trials {trials} read"


@pytest.mark.parametrize("how", ["workers", "in-process"])
def test_batches_score_as_one_worker_scores_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Batches of units (a file's conversations) give the records, report and notes of one worker, whether worker
    processes read them or this one does (a ``prepare`` that cannot be sent to workers). Oracle: the same units
    given one by one, the notes by hand."""
    from prefix_exec.scoring.pool import dispatch as pool_dispatch

    monkeypatch.setattr(pool_dispatch, "REPLAY_HERE", False)  # every batch goes to a worker process
    env = CounterEnv()
    parts = [(0, 1, 2), (3, 4), (5, 6, 7)]
    units = [Batch(partial(read_trials, part, bad=index == 1), env) for index, part in enumerate(parts)]
    one_by_one = [unit for batch in units for unit in batch.expand()[0]]
    expected = score_to_file(
        one_by_one, tmp_path / "expected.jsonl", log=io.StringIO(), options=ScoreOptions(keep_going=True)
    )
    prepare = (lambda unit: unit) if how == "in-process" else None
    for workers in (1, 2):
        log = io.StringIO()
        out = tmp_path / f"{workers}.jsonl"
        report = score_to_file(
            units, out, log=log, prepare=prepare, options=ScoreOptions(keep_going=True, dispatch=pool_for(workers))
        )
        assert out.read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
        assert (report.written, len(report.skipped)) == (expected.written, len(expected.skipped)) == (8, 4)
        notes = [line for line in log.getvalue().splitlines() if "read" in line]
        assert notes == [f"prefix-exec: note: trials {part} read" for part in parts]


class Terminal(io.StringIO):
    """A stream that says it is a terminal (80 columns wide: see ``wide``)."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return 2


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """The terminal :class:`Terminal` stands for is 80 columns wide."""
    monkeypatch.setattr(os, "get_terminal_size", lambda fd=1: os.terminal_size((80, 24)))


@pytest.mark.usefixtures("wide")
def test_the_bar_draws_its_carriage_returns_raw_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command's stderr is an Escaping stream (prefix_exec.terminal): the bar draws on the stream under it, so
    each redraw returns to the line's start; escaped, every ``\\r`` would print as the two characters ``\\r``."""
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", Escaping(terminal))
    with progress_bar(3, "scoring toy") as bar:
        bar.update(1)
        bar.update(1)
    drawn = terminal.getvalue()
    assert drawn.count("\r") >= 2  # the first draw and the last (tqdm draws at most every 0.1 s between)
    assert "\\r" not in drawn
    assert "scoring toy:" in drawn and "2/3" in drawn


def test_no_bar_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off a terminal (a file, a pipe) the bar draws nothing and counts nothing, as tqdm's ``disable=None``."""
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", Escaping(stream))
    with progress_bar(3, "scoring toy") as bar:
        bar.update(1)
    assert stream.getvalue() == ""
