"""``prefix-exec run`` under hostile answers and folders: a poison answer fails or escapes within its unit and
never blocks --resume; a folder that is not a run directory is refused with nothing written; credentials in
a base_url never reach settings.json, rollouts or records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_run import write_grid

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer
from prefix_exec.cli import main
from prefix_exec.records.redaction import redact_url


def poisoned(body: dict[str, Any]) -> dict[str, Any]:
    """The ticketing agent, except that every answer about the VPN ticket carries a lone surrogate."""
    message = ticketing_agent.respond(body)
    if "vpn" in json.dumps(body).lower():
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = call["function"]["arguments"].replace('"sam"', '"sam\\ud800"')
        if isinstance(message.get("content"), str):
            message["content"] += " \ud800"
    return message


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_a_poison_answer_stays_in_its_unit_and_resume_finishes(tmp_path: Path, capsys: Any) -> None:
    with ScriptedServer(poisoned) as server:
        grid = write_grid(tmp_path, server.base_url, methods=["react"])
        out = tmp_path / "run"
        first = main(["run", str(grid), "--out", str(out)])
        err = capsys.readouterr().err
        assert first in (0, 2)
        assert "Traceback" not in err
        done = {(r["task_id"]) for r in lines(out / "rollouts.jsonl")}
        failed = {(r["task_id"]) for r in lines(out / "failures.jsonl")}
        assert len(done | failed) == 6
        assert len(done) >= 5  # every unit is accounted for, the others scored
        assert any("\ud800" in json.dumps(r, ensure_ascii=False) for r in lines(out / "rollouts.jsonl")) or failed
        # The resume replays the poison answers from the cache: it ends, and writes nothing twice.
        again = main(["run", str(grid), "--out", str(out), "--resume"])
        assert again in (0, 2)
        assert "Traceback" not in capsys.readouterr().err
        keys = [r["task_id"] for r in lines(out / "rollouts.jsonl")]
        assert len(keys) == len(set(keys))
        assert len(set(keys) | failed) == 6
        (out / "records.jsonl").read_bytes().decode("utf-8")  # valid UTF-8 on disk


def test_a_folder_that_is_not_a_run_directory_is_refused_with_nothing_written(tmp_path: Path, capsys: Any) -> None:
    with ScriptedServer(ticketing_agent.respond) as server:
        grid = write_grid(tmp_path, server.base_url, methods=["react"])
        folder = tmp_path / "papers"
        folder.mkdir()
        (folder / "notes.txt").write_text("mine")
        assert main(["run", str(grid), "--out", str(folder)]) == 2
        assert "not a run directory" in capsys.readouterr().err
        assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
        # A rollouts.jsonl that is not a run's (a records file from elsewhere, torn): refused, nothing added.
        other = tmp_path / "other"
        other.mkdir()
        (other / "rollouts.jsonl").write_text("not json\n")
        assert main(["run", str(grid), "--out", str(other), "--resume"]) == 2
        assert sorted(p.name for p in other.iterdir()) == ["rollouts.jsonl"]
        assert server.requests == []


def test_credentials_in_a_base_url_are_never_written(tmp_path: Path) -> None:
    assert (
        redact_url("https://user:s3cret@example.com:8443/v1?api_key=abc&x=1")
        == "https://***@example.com:8443/v1?api_key=***&x=1"
    )
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"
    with ScriptedServer(ticketing_agent.respond) as server:
        url = server.base_url.replace("http://", "http://alice:s3cret@")
        grid = write_grid(tmp_path, url, methods=["react"])
        out = tmp_path / "run"
        assert main(["run", str(grid), "--out", str(out)]) == 0
        for name in ("settings.json", "rollouts.jsonl", "records.jsonl", "failures.jsonl"):
            path = out / name
            if path.exists():
                text = path.read_text(encoding="utf-8")
                assert "s3cret" not in text, name
        assert "***@" in (out / "settings.json").read_text()


def test_a_link_planted_at_a_temporary_name_in_the_run_directory_is_not_written_through(tmp_path: Path) -> None:
    """settings.json and failures.jsonl are rewritten through a temporary file beside them: a symlink someone
    left at the old fixed names (settings.tmp, failures.tmp) must not carry the text into another file."""
    from prefix_exec.runner.run_dir import run_grid

    with ScriptedServer(ticketing_agent.respond) as server:
        grid = write_grid(tmp_path, server.base_url, methods=["react"])
        out = tmp_path / "run"
        run_grid(grid, out, max_concurrency=1)
        (out / "failures.jsonl").write_text("", encoding="utf-8")
        victims = {}
        for name in ("settings.tmp", "failures.tmp"):
            victims[name] = tmp_path / f"victim-{name}"
            victims[name].write_text("keep me\n", encoding="utf-8")
            (out / name).symlink_to(victims[name])
        run_grid(grid, out, resume=True, max_concurrency=1)
    for name, victim in victims.items():
        assert victim.read_text(encoding="utf-8") == "keep me\n", name
    assert json.loads((out / "settings.json").read_text(encoding="utf-8"))["models"]
