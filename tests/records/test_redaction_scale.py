""":func:`prefix_exec.records.redaction.redact_text` is linear in its input: a 400,000-character message with a URL
and a long run of letters (a quoted ``$schema``, a model's output) is redacted at once, where the earlier
regular expression retried from every letter of the run (153 s on 200,000 characters). The new scanner finds
exactly the URLs the old expression found: the old implementation is kept here as the oracle."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

import prefix_exec
from prefix_exec.records.redaction import _url_secrets, redact_text, redact_url, secret_name

# The implementation before the fix, kept as the oracle for ordinary (bounded) inputs.
_OLD_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>`]+")


def _old_redact_text(text: str) -> str:
    if "://" not in text:
        return text
    return _OLD_URL.sub(lambda match: redact_url(match.group()), text)


_CHILD = """
from prefix_exec.records.redaction import redact_command, redact_text
run = "a" * 400_000
assert redact_text("see https://u:pw@h/x " + run) == "see https://***@h/x " + run
assert redact_text(run + "1://" + run).startswith(run)
shown, removed = redact_command(["x", "https://u:pw@h/ " + run + "+" * 1000 + "://"])
assert removed == ["u:pw", "pw"], removed  # the userinfo and its password
print("ok")
"""


def test_a_long_message_is_redacted_in_linear_time() -> None:
    # In a child with a timeout, so a quadratic scan fails the test instead of hanging the suite. The old
    # expression took over 5 minutes on these inputs; the scan takes milliseconds (the timeout is for a busy
    # machine's interpreter start, not a measurement).
    source = str(Path(prefix_exec.__file__).parents[1])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env={"PYTHONPATH": source, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


_PIECES = st.sampled_from(
    [
        "://",
        "http",
        "https://",
        "u:p@",
        "@",
        "?",
        "#",
        "&",
        "=",
        "api_key=",
        "token=",
        "/",
        ":",
        " ",
        "\n",
        '"',
        "'",
        "<",
        ">",
        "`",
        "+",
        ".",
        "-",
        "1",
        "é",
        "\u00a0",
        "[",
        "]",
        "a",
        "Z",
        "x-1.b+c",
    ]
)
_TEXTS = st.lists(_PIECES, max_size=40).map("".join) | st.text(max_size=80)


@settings(max_examples=400)
@given(_TEXTS)
def test_the_scan_finds_what_the_old_expression_found(text: str) -> None:
    assert redact_text(text) == _old_redact_text(text)


def _old_url_secrets(text: str) -> list[str]:
    found: list[str] = []
    for match in _OLD_URL.finditer(text):
        try:
            parts = urlsplit(match.group())
        except ValueError:
            continue
        if "@" in parts.netloc:
            found.append(parts.netloc.rpartition("@")[0])
        for chunk in (parts.query, parts.fragment):
            for item in chunk.split("&"):
                name, sep, value = item.partition("=")
                if sep and value and secret_name(name):
                    found.append(value)
    return found


@given(_TEXTS)
def test_the_secrets_of_a_command_are_those_the_old_expression_found(text: str) -> None:
    assert _url_secrets(text) == _old_url_secrets(text)
