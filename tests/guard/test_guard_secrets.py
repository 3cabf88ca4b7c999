"""A secret given to the guarded server any way (a secret-named variable or option, a value that starts with a
dash, a header, a ``--bearer``-style flag, a URL's credentials) never appears in any file under ``--record DIR``,
however the server echoes it back (as is, or JSON-escaped once, twice, three times, with non-ASCII as
``\\uXXXX``): a property over secrets, ways and echoes through the journal, then the real guard, one case a way.

The check is independent of the scrubber: it looks for the secret in each file's text and in that text
unescaped one JSON level at a time, up to five levels."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from guard_client import HOSTILE_SERVER
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_guard import RawGuard

from prefix_exec.cli.guard import record_secrets
from prefix_exec.guard.journal import Journal

#: Each way of giving a secret to the server: (its command line after the server's own, its environment).
Way = Callable[[str], tuple[list[str], dict[str, str]]]
WAYS: dict[str, Way] = {
    "dash-value": lambda s: (["--password", s], {}),  # the secret is given starting with a dash
    "header": lambda s: (["--header", f"Authorization: Bearer {s}"], {}),
    "header-equals": lambda s: ([f"--header=X-Api-Key: {s}"], {}),
    "short-header": lambda s: (["-H", f"Cookie: {s}"], {}),
    "bearer": lambda s: (["--bearer", s], {}),
    "option-equals": lambda s: ([f"--client-secret={s}"], {}),
    "env-assignment": lambda s: ([f"GH_PAT={s}"], {}),
    "gh-pat": lambda s: ([], {"GH_PAT": s}),
    "session-cookie": lambda s: ([], {"SESSION_COOKIE": s}),
    "app-session": lambda s: ([], {"APP_SESSION": s}),
    "api-key": lambda s: ([], {"OPENAI_API_KEY": s}),
    "token": lambda s: ([], {"SLACK_TOKEN": s}),
    "url-userinfo": lambda s: ([f"https://user:{quote(s, safe='')}@example.invalid/v1"], {}),  # percent-encoded
}


def _escape(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def echoes(secret: str) -> list[str]:
    """How a server may send the secret back: as is, inside a JSON text (non-ASCII kept or escaped), and that
    JSON text inside a JSON text again."""
    once = json.dumps({"k": secret})
    return [
        f"your key is {secret}",
        once,
        json.dumps({"k": secret}, ensure_ascii=False),
        json.dumps({"wrapped": once}),
        json.dumps({"wrapped": json.dumps({"again": once})}),
        re.sub(r"\\u[0-9a-f]{4}", lambda m: "\\u" + m.group()[2:].upper(), _escape(secret, True)),  # upper-case hex
    ]


_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/"}


def _unescape(text: str) -> str:
    """One level of JSON string escapes undone anywhere in ``text`` (surrogate pairs joined)."""
    undone = _ESCAPE.sub(lambda m: chr(int(m[1], 16)) if m[1] else _SIMPLE[m[2]], text)
    return undone.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def leaks(secret: str, folder: Path) -> list[str]:
    """The files under ``folder`` that hold ``secret`` in any escaping (their text unescaped up to 5 levels)."""
    found = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        for _ in range(6):
            if secret in text:
                found.append(path.name)
                break
            text = _unescape(text)
    return found


#: Secrets: at least 8 characters, letters of several scripts, digits and the punctuation JSON escapes.
SECRETS = st.text(alphabet=st.sampled_from("abcXYZ019éßж漢🔑/\\\"'+=-_.:"), min_size=8, max_size=24).filter(
    lambda s: s.strip() == s and not s.startswith("-") and " " not in s
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secret=SECRETS, way=st.sampled_from(sorted(WAYS)))
def test_a_secret_given_any_way_never_reaches_the_journal(secret: str, way: str) -> None:
    secret = f"-{secret}" if way == "dash-value" else secret
    argv, environ = WAYS[way](secret)
    shown, secrets = record_secrets(["server", *argv], None, environ)
    assert not any(secret in arg for arg in shown), shown
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(Path(folder), secrets=secrets)
        tools = [{"name": f"t{i}", "description": text, "command": shown} for i, text in enumerate(echoes(secret))]
        journal.add_tools(tools)
        journal.close()
        assert leaks(secret, Path(folder)) == []


def test_the_check_sees_each_echo_unscrubbed(tmp_path: Path) -> None:
    """The leak check can fail: every echo, written without scrubbing, is found."""
    secret = "clé-🔑/\"x'"
    for i, text in enumerate(echoes(secret)):
        (tmp_path / f"{i}.json").write_text(json.dumps({"tools": [{"description": text}]}), encoding="utf-8")
    assert len(leaks(secret, tmp_path)) == len(echoes(secret))


@pytest.mark.slow
@pytest.mark.parametrize("way", sorted(WAYS))
def test_the_guard_records_no_secret_its_server_echoes(
    way: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = ("-" if way == "dash-value" else "") + "Sécret/🔑-" + way
    argv, environ = WAYS[way](secret)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    record = tmp_path / "record"
    with RawGuard(["--record", str(record)], [*HOSTILE_SERVER, *argv], tmp_path / "stderr.txt") as g:
        g.initialize()
        g.request(1, "tools/list")
        for i, text in enumerate(echoes(secret), start=2):
            answer = g.request(i, "tools/call", {"name": "echo", "arguments": {"text": text}})
            assert answer["result"]["content"][0]["text"] == text  # the client gets the server's answer as is
        assert g.close() == 0
    assert sorted(p.name for p in record.iterdir() if not p.name.startswith(".")) == [
        "journal",  # the append-only journal, then what is derived from it when the session ends
        "records.jsonl",
        "rollouts.jsonl",
        "tools.json",
    ]
    assert leaks(secret, record) == [], way
    assert os.environ.get("GH_PAT") == environ.get("GH_PAT", os.environ.get("GH_PAT"))
