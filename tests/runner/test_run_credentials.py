"""A grid whose endpoint URL carries credentials: the run directory holds none of them in any file (the grid
copy, settings, rollouts, records, failures, the SQLite cache and its journal), and ``--resume`` still
finishes: with the user's grid, or from the copy when the URL comes from ``base_url_env``. The copy of a URL
whose credentials were removed is refused with what to do."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_run import write_grid

from fakes.openai_server import ScriptedServer
from prefix_exec.cli import main
from prefix_exec.runner import load_grid
from prefix_exec.runner.credentials import to_toml, write_grid_copy

SECRETS = ("alice-user", "s3cret-pw", "sk-COMMENTSECRET")
COMMENT = "# the old endpoint was https://api.example.com/v1?api_key=sk-COMMENTSECRET\n"


def leaks(folder: Path) -> list[str]:
    """Every (file, secret) pair where the secret's bytes occur in a file below ``folder``."""
    return [
        f"{path.name}: {secret}"
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        for secret in SECRETS
        if secret.encode() in path.read_bytes()
    ]


def keep_first(path: Path, n: int) -> None:
    """Cut a JSONL file to its first ``n`` lines, as a kill would leave it."""
    path.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")


def units(path: Path) -> list[str]:
    return sorted(json.loads(line)["task_id"] for line in path.read_text(encoding="utf-8").splitlines())


def test_no_credential_in_the_run_directory_and_resume_finishes(
    server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server.base_url.replace("http://", "http://alice-user:s3cret-pw@")
    grid = write_grid(tmp_path, url, methods=["react"])
    grid.write_text(COMMENT + grid.read_text())
    out = tmp_path / "run"
    assert main(["run", str(grid), "--out", str(out)]) == 0
    done = units(out / "records.jsonl")
    assert len(done) == 6
    assert (out / "cache.sqlite").stat().st_size > 0
    assert leaks(out) == []
    copy = (out / "grid.toml").read_text(encoding="utf-8")
    assert "http://***@127.0.0.1" in copy
    assert "api_key=***" in copy  # the comment's URL too
    assert tomllib.loads(copy)["models"][0]["base_url"] == url.replace("alice-user:s3cret-pw@", "***@")

    # A kill after two units: --resume with the user's grid (the settings compare the redacted URL) finishes
    # the rest from the cache, and still writes no secret.
    keep_first(out / "rollouts.jsonl", 2)
    keep_first(out / "records.jsonl", 2)
    asked = len(server.requests)
    assert main(["run", str(grid), "--out", str(out), "--resume"]) == 0
    assert units(out / "records.jsonl") == done
    assert len(server.requests) == asked  # every answer came from the cache, whose keys are hashes
    assert leaks(out) == []

    # The copy cannot call the endpoint: refused before anything runs, saying what to do.
    keep_first(out / "rollouts.jsonl", 5)
    assert main(["run", str(out / "grid.toml"), "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "credentials of this URL were removed" in err
    assert "base_url_env" in err
    assert "Traceback" not in err
    assert len(units(out / "rollouts.jsonl")) == 5
    assert not [s for s in SECRETS if s in err]


def test_base_url_env_keeps_the_url_out_of_every_file_and_resumes_from_the_copy(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = write_grid(tmp_path, "unused", methods=["react"])
    text = grid.read_text().replace('base_url = "unused"', 'base_url_env = "PREFIX_EXEC_TEST_URL"')
    grid.write_text(text)
    out = tmp_path / "run"
    monkeypatch.delenv("PREFIX_EXEC_TEST_URL", raising=False)
    assert main(["run", str(grid), "--out", str(out)]) == 2
    assert "PREFIX_EXEC_TEST_URL holding the base URL is not set" in capsys.readouterr().err
    assert not out.exists()
    monkeypatch.setenv("PREFIX_EXEC_TEST_URL", server.base_url.replace("http://", "http://alice-user:s3cret-pw@"))
    assert main(["run", str(grid), "--out", str(out)]) == 0
    assert 'base_url_env = "PREFIX_EXEC_TEST_URL"' in (out / "grid.toml").read_text()
    keep_first(out / "rollouts.jsonl", 3)
    keep_first(out / "records.jsonl", 3)
    assert main(["run", str(out / "grid.toml"), "--out", str(out), "--resume"]) == 0
    assert len(units(out / "records.jsonl")) == 6
    assert leaks(out) == []
    # base_url and base_url_env together are one input error
    grid.write_text(text.replace('base_url_env = "PREFIX_EXEC_TEST_URL"', 'base_url_env = "X"\nbase_url = "http://h"'))
    with pytest.raises(Exception, match="set base_url or base_url_env, not both"):
        load_grid(grid)


def test_an_earlier_copy_with_credentials_is_redacted_on_resume(server: ScriptedServer, tmp_path: Path) -> None:
    url = server.base_url.replace("http://", "http://alice-user:s3cret-pw@")
    grid = write_grid(tmp_path, url, methods=["react"])
    out = tmp_path / "run"
    assert main(["run", str(grid), "--out", str(out)]) == 0
    (out / "grid.toml").write_text(grid.read_text())  # as a version before this one copied it
    assert main(["run", str(grid), "--out", str(out), "--resume"]) == 0
    assert leaks(out) == []
    assert load_grid(grid).models == load_grid(grid).models  # the user's grid is untouched and still loads
    assert "s3cret-pw" in grid.read_text()


@pytest.mark.parametrize("link", ["symlink", "hard link"])
def test_a_copy_that_links_to_the_users_grid_is_replaced_not_written_through(
    server: ScriptedServer, tmp_path: Path, link: str
) -> None:
    """The run folder's grid.toml a link to the grid with credentials: its redacted rewrite once went through
    the link, and the user's grid lost its credentials (and gained a base_dir line)."""
    url = server.base_url.replace("http://", "http://alice-user:s3cret-pw@")
    grid = write_grid(tmp_path, url, methods=["react"])
    text = grid.read_text()
    out = tmp_path / "run"
    assert main(["run", str(grid), "--out", str(out)]) == 0
    (out / "grid.toml").unlink()
    if link == "symlink":
        (out / "grid.toml").symlink_to(grid)
    else:
        os.link(grid, out / "grid.toml")
    assert main(["run", str(grid), "--out", str(out), "--resume"]) == 0
    assert grid.read_text() == text
    assert not (out / "grid.toml").is_symlink()
    assert leaks(out) == []


def test_a_url_spelled_with_toml_escapes_is_copied_as_generated_toml(tmp_path: Path) -> None:
    source = tmp_path / "grid.toml"
    # \u0040 is "@": the text holds no URL with credentials, the parsed grid does.
    source.write_text('seed = 1\n[[models]]\nname = "m"\nbase_url = "http://alice-user:s3cret-pw\\u0040h/v1"\n')
    target = tmp_path / "copy.toml"
    write_grid_copy(source, tmp_path, target)
    text = target.read_text()
    assert "s3cret-pw" not in text
    assert tomllib.loads(text) == {
        "seed": 1,
        "base_dir": str(tmp_path),
        "models": [{"name": "m", "base_url": "http://***@h/v1"}],
    }


_SCALARS = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(st.characters(exclude_categories=("Cs",))),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), _VALUES, max_size=6))
def test_generated_toml_reads_back_equal(data: dict[str, Any]) -> None:
    assert tomllib.loads(to_toml(data)) == data
