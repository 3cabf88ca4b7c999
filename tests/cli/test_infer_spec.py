"""``prefix-exec infer-spec`` on real logs: tau-bench's gpt-4o airline file (transcripts), tau2 results files (an
object and a bare list), the same conversations as canonical rollouts; the side file scores as it is with
``score transcripts --hooks``; its output rules (never an input, never overwritten unasked, same bytes twice);
``--explain``; and ``score transcripts --infer-spec`` in one run."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml

from prefix_exec.cli import main
from prefix_exec.importers.transcripts import TranscriptFile
from prefix_exec.inference.corpus import ANONYMOUS
from prefix_exec.records.codec import write_rollouts

ROOT = Path(__file__).resolve().parents[2]
TAU_BENCH = ROOT / "tests" / "data" / "tau-bench"
CONVERSATIONS = TAU_BENCH / "gpt-4o-airline.json"
TOOLS = TAU_BENCH / "airline-tools.json"
#: What inference gives on tau-bench's file, read by hand against tau-bench's airline tools (each refuses an id
#: it does not know): every one is a real reference; update_reservation_passengers.reservation_id is one the file
#: holds too little evidence of (2 cases).
TAU_BENCH_REFS = {
    "book_reservation": {
        "flights[*].flight_number": "flight",
        "payment_methods[*].payment_id": "payment",
        "user_id": "user",
    },
    "cancel_reservation": {"reservation_id": "reservation"},
    "get_reservation_details": {"reservation_id": "reservation"},
    "get_user_details": {"user_id": "user"},
    "send_certificate": {"user_id": "user"},
    "update_reservation_baggages": {"payment_id": "payment", "reservation_id": "reservation"},
    "update_reservation_flights": {
        "flights[*].flight_number": "flight",
        "payment_id": "payment",
        "reservation_id": "reservation",
    },
}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def refs_of(side: Path) -> dict[str, dict[str, str]]:
    tools = yaml.safe_load(side.read_text(encoding="utf-8"))["tools"]
    return {name: entry["refs"] for name, entry in tools.items() if "refs" in entry}


@pytest.fixture(scope="module")
def side(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("infer") / "side.yaml"
    code, _, err = run("infer-spec", str(CONVERSATIONS), "--tools", str(TOOLS), "--out", str(path))
    assert code == 0, err
    assert "[1/1] reading" in err and "-> " in err and "from 200 conversations (1,164 calls)" in err
    return path


def test_the_inferred_references_of_tau_bench_airline(side: Path) -> None:
    assert refs_of(side) == TAU_BENCH_REFS
    text = side.read_text(encoding="utf-8")
    assert "# reservation (flow): cases 376, flow 284, given 92" in text  # get_reservation_details.reservation_id


def test_the_side_file_scores_as_it_is(side: Path, tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    code, _, err = run(
        "score", "transcripts", str(CONVERSATIONS), "--tools", str(TOOLS), "--hooks", str(side),
        "--model", "gpt-4o", "--no-error-pattern", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    stopped = [r for r in records if r["label"] == "dependency"]
    assert len(records) == 200 and len(stopped) == 4, err
    given = [n for r in records for v in r["verdicts"] for n in v.get("notes", []) if "given by the conversation" in n]
    assert given  # ids the user typed satisfy the inferred refs


def test_the_same_input_gives_the_same_bytes(side: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.yaml"
    assert run("infer-spec", str(CONVERSATIONS), "--tools", str(TOOLS), "--out", str(again))[0] == 0
    assert again.read_bytes() == side.read_bytes()


def test_canonical_rollouts_give_the_same_references(side: Path, tmp_path: Path) -> None:
    rollouts = tmp_path / "rollouts.jsonl"
    write_rollouts(rollouts, (t.rollout for t in TranscriptFile(CONVERSATIONS, ANONYMOUS, tolerant=False)))
    out = tmp_path / "from-rollouts.yaml"
    code, _, err = run("infer-spec", str(rollouts), "--tools", str(TOOLS), "--out", str(out))
    assert code == 0 and "(rollouts)" in err, err
    assert refs_of(out) == refs_of(side)


def test_an_existing_side_file_is_never_overwritten_unasked(side: Path, tmp_path: Path) -> None:
    out = tmp_path / "side.yaml"
    out.write_text("mine\n")
    code, _, err = run("infer-spec", str(CONVERSATIONS), "--tools", str(TOOLS), "--out", str(out))
    assert code == 2 and "already exists" in err and "--overwrite" in err
    assert out.read_text() == "mine\n"
    assert run("infer-spec", str(CONVERSATIONS), "--tools", str(TOOLS), "--out", str(out), "--overwrite")[0] == 0
    assert out.read_bytes() == side.read_bytes()


def test_an_input_is_never_the_output(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_bytes(TOOLS.read_bytes())
    code, _, err = run("infer-spec", str(CONVERSATIONS), "--tools", str(tools), "--out", str(tools), "--overwrite")
    assert code == 2 and "also an input" in err
    assert tools.read_bytes() == TOOLS.read_bytes()


def test_explain_says_why(side: Path) -> None:
    code, out, err = run(
        "infer-spec", str(CONVERSATIONS), "--tools", str(TOOLS),
        "--explain", "get_user_details.user_id", "--explain", "search_direct_flight.origin",
    )  # fmt: skip
    assert code == 0, err
    assert "get_user_details.user_id: a reference to user (rule: flow)" in out
    assert "search_direct_flight.origin: not a reference" in out and "named like an id" in out
    assert "fed by: get_reservation_details flights[*].origin" in out
    code, _, err = run("infer-spec", str(CONVERSATIONS), "--explain", "get_user_details.nothing")
    assert code == 2 and "arguments of get_user_details seen: user_id" in err


def test_tau2_results_files_and_a_bare_list(shared_data: Path, tmp_path: Path) -> None:
    files = [shared_data / "tau" / "gpt-4.1_airline_1trial.json"]
    files.append(shared_data / "tau" / "leaderboard" / "adaptive-agent-opus-4.6_airline_bare-list.json")
    out = tmp_path / "tau2.yaml"
    code, _, err = run("infer-spec", *map(str, files), "--out", str(out))
    assert code == 0, err
    assert err.count("(tau2)") == 2 and "from 70 conversations" in err
    found = refs_of(out)
    assert found["get_reservation_details"] == {"reservation_id": "reservation"}
    assert found["update_reservation_flights"]["flights[*].flight_number"] == "flight"


def test_score_transcripts_infers_and_scores_in_one_run(side: Path, tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    argv = ["score", "transcripts", str(CONVERSATIONS), "--tools", str(TOOLS), "--infer-spec", "--model", "gpt-4o"]
    code, _, err = run(*argv, "--out", str(out))
    assert code == 0, err
    beside = tmp_path / "records.jsonl.spec.yaml"
    assert f"-> {beside}" in err
    assert refs_of(beside) == TAU_BENCH_REFS
    assert len(out.read_text().splitlines()) == 200
    code, _, err = run(*argv, "--out", str(out))
    assert code == 2 and "already" in err  # the records file and its side file are kept
    assert run(*argv, "--out", str(out), "--resume")[0] == 0  # the same inputs infer the same side file


@pytest.mark.slow
def test_an_inspect_log_is_read_with_its_own_tool_lists(inspect_notes: tuple[Path, Path], tmp_path: Path) -> None:
    """A real inspect log (tests/fakes/inspect_notes_task.py): create_note answers ``{"note_id": "N-1"}``, the
    model appends to ``N-9`` (inspect records the tool's refusal) and then to ``N-1``. With one conversation the
    default --min-support finds nothing; at 1 the flow makes append_note.note_id a reference, and the refused
    ``N-9`` is counted as refused, not as a value nobody explained."""
    notes, _ = inspect_notes
    out = tmp_path / "notes.yaml"
    code, stdout, err = run(
        "infer-spec", str(notes), "--min-support", "1", "--out", str(out), "--explain", "append_note.note_id"
    )
    assert code == 0, err
    assert "(inspect)" in err and "from 2 conversations (3 calls)" in err
    assert refs_of(out) == {"append_note": {"note_id": "note"}}
    assert "flow 1, given 0, prose 0, none 1, refused 1" in stdout
