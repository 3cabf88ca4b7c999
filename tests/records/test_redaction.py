"""Credentials in URLs: the rules of :mod:`prefix_exec.records.redaction`, and ``report`` and ``metrics`` on records
written before redaction existed (or by another tool), whose metadata, names and actions still hold secrets:
no output file and no line on stdout or stderr repeats one, and the input files are left as they were."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prefix_exec.cli import main
from prefix_exec.records.codec import record_to_json
from prefix_exec.records.redaction import redact_json, redact_text, redact_url
from prefix_exec.report.rollouts import decode
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict

SECRETS = ("s3cret-pw", "sk-TOPSECRET", "hunter2", "tok-QQQ", "sig-ZZZ")


def test_urls_lose_userinfo_and_secret_parameters() -> None:
    assert (
        redact_url("https://user:s3cret@example.com:8443/v1?api_key=abc&x=1")
        == "https://***@example.com:8443/v1?api_key=***&x=1"
    )
    assert redact_url("http://h/cb#access_token=abc&state=1") == "http://h/cb#access_token=***&state=1"
    assert redact_url("http://u:p@[::1/v1") == "http://***@[::1/v1"  # urlsplit refuses it; cut by text
    plain = "http://localhost:8000/v1?model=x"
    assert redact_url(plain) is plain
    assert redact_url("not a url") == "not a url"
    assert (
        redact_text('base "http://a:pw1@h/v1", then https://h/x?Token=pw2 and ftp://b@c.')
        == 'base "http://***@h/v1", then https://h/x?Token=*** and ftp://***@c.'
    )


def test_json_values_are_redacted_in_place_at_any_depth() -> None:
    data = json.loads('{"http://a:pw@h": ["x", {"u": "https://h/?key=pw"}], "n": 1, "b": true, "z": null}')
    assert redact_json(data) == {"http://***@h": ["x", {"u": "https://h/?key=***"}], "n": 1, "b": True, "z": None}
    deep: Any = "http://a:pw@h/"
    for _ in range(5000):  # deeper than the recursion limit: the walk keeps its own stack
        deep = [deep]
    out = redact_json(deep)
    for _ in range(5000):
        out = out[0]
    assert out == "http://***@h/"


_PART = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~%!$", min_size=4)


@given(user=_PART, password=_PART, name=st.sampled_from(["api_key", "token", "X-Auth", "password", "sig"]))
def test_no_credential_survives(user: str, password: str, name: str) -> None:
    url = f"https://{user}:{password}@api.example.com/v1?{name}={password}x&model=m"
    text = redact_text(f"[{url}] and {url}")
    assert password not in text
    assert user not in text.replace("api.example.com", "")


def _records() -> list[dict[str, Any]]:
    """Two conditions as an older prefix-exec (no redaction) or another tool wrote them: secrets in metadata
    (base_url with user:pass@, a settings block with ?api_key=), in a model name, an action argument, an
    observation and a verdict reason."""
    rows = []
    for t in ("t1", "t2", "t3"):
        for model in ("plain-model", "llama at http://bob:hunter2@gpu.lan:8000/v1"):
            actions = (
                ToolCall("fetch", {"url": "https://h/data?token=tok-QQQ"}, turn=0),
                ToolCall("post", {"x": 1}, turn=1),
            )
            ok = t == "t3"  # t1, t2: the second call is rejected; t3: both run, and the task succeeds
            second = Verdict.accept() if ok else Verdict.reject(FailureLabel.SCHEMA, "bad: https://h/?sig=sig-ZZZ")
            record = PrefixRecord(
                "custom_demo",
                t,
                model,
                "react",
                0,
                2,
                3 if ok else 2,
                int(ok),
                (Verdict.accept(result="ok"), second),
                actions,
                metadata={
                    "base_url": "http://alice:s3cret-pw@example.com/v1",
                    "settings": {"url": "https://api.example.com/v1?api_key=sk-TOPSECRET", "temperature": 0},
                },
            )
            rows.append(record_to_json(record))
    return rows


def _rollout_texts(page: str) -> str:
    """The drill-down payloads of report.html, decompressed (they are gzip in base64, so a secret in them
    would not show as bytes of the file)."""
    script = re.search(r'<script[^>]*id="rollout-data"[^>]*>(.*?)</script>', page, re.S)
    assert script is not None
    return json.dumps([decode(data) for data in json.loads(script.group(1)).values()])


def _leaks(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name == "report.html":
                data += _rollout_texts(data.decode("utf-8")).encode()
            found += [f"{path.name}: {s}" for s in SECRETS if s.encode() in data]
    return found


@pytest.mark.parametrize("plots", [True, False])
def test_report_and_metrics_show_no_credential_of_old_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plots: bool
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    source = run / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    before = source.read_bytes()
    assert all(s.encode() in before for s in SECRETS)  # the input does hold every secret
    out = tmp_path / "report"
    args = ["report", str(run), "--out", str(out), "--resamples", "50"] + ([] if plots else ["--no-plots"])
    assert main(args) == 0
    assert (out / "report.html").is_file()
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "llama at http://***@gpu.lan:8000/v1" in page
    shown = _rollout_texts(page)
    assert "http://***@example.com/v1" in shown  # the metadata is still shown, without its credentials
    assert "api_key=***" in shown
    assert "token=***" in shown
    assert "sig=***" in shown
    metrics = tmp_path / "metrics"
    for fmt in ("json", "md", "csv"):
        assert main(["metrics", str(source), "--format", fmt, "--resamples", "50", "--out", str(metrics / fmt)]) == 0
        assert main(["metrics", str(source), "--format", fmt, "--resamples", "50"]) == 0
    assert "http://***@gpu.lan" in (metrics / "json").read_text(encoding="utf-8")
    captured = capsys.readouterr()
    assert [s for s in SECRETS if s in captured.out + captured.err] == []
    assert _leaks(out) == []
    assert _leaks(metrics) == []
    assert source.read_bytes() == before  # the user's input is not rewritten


def test_an_error_quoting_a_secret_url_is_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "records.jsonl"
    row = _records()[0]
    row["T"] = "http://alice:s3cret-pw@example.com/v1"  # a wrong type: the error quotes the value
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    for command in (["metrics", str(path)], ["report", str(path), "--out", str(tmp_path / "o"), "--no-plots"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "T" in err
        assert "s3cret-pw" not in err


def test_scored_records_keep_no_credential_of_their_rollouts_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ticketing = Path(__file__).resolve().parents[2] / "examples" / "ticketing"
    rows = [json.loads(line) for line in (ticketing / "rollouts.jsonl").read_text().splitlines()]
    rows[0].setdefault("metadata", {})["agent"] = {"api_base": "http://alice:s3cret-pw@example.com/v1"}
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "records.jsonl"
    assert main(["score", "custom", "--tools", str(ticketing / "tools.yaml"), str(rollouts), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "s3cret-pw" not in text
    assert "http://***@example.com/v1" in text
    assert len(text.splitlines()) == len(rows)
    assert "s3cret-pw" not in capsys.readouterr().err


def test_commands_lose_dash_values_headers_bearer_flags_and_named_variables() -> None:
    from prefix_exec.records.redaction import redact_command, secret_environment

    shown, removed = redact_command(
        [
            *("srv", "--password", "-X9", "--header", "Authorization: Bearer tok-1", "--bearer", "b-2", "-H"),
            *("Cookie: c=3", "--header=X-Api-Key:k-4", "GH_PAT=p-5", "http://example.invalid/a:b", "--verbose"),
            "PATH=/bin",
        ]
    )
    assert shown == [
        "srv",
        "--password",
        "***",
        "--header",
        "Authorization: ***",
        "--bearer",
        "***",
        "-H",
        "Cookie: ***",
        "--header=X-Api-Key: ***",
        "GH_PAT=***",
        "http://example.invalid/a:b",
        "--verbose",
        "PATH=/bin",
    ]
    assert removed == ["-X9", "Bearer tok-1", "tok-1", "b-2", "c=3", "k-4", "p-5"]
    environ = {"GH_PAT": "1", "SESSION_COOKIE": "2", "APP_SESSION": "3", "PATH": "4", "SESSIONS_DIR": "5", "X_SID": "6"}
    assert secret_environment(environ) == ["1", "2", "3", "6"]


def test_secret_forms_cover_every_json_escaping() -> None:
    from prefix_exec.records.redaction import secret_forms

    forms = secret_forms(["clé/1", ""])
    once = json.dumps("clé/1")[1:-1]
    assert {"clé/1", once, "cl\\u00E9/1", json.dumps(once)[1:-1], "clé\\/1"} <= set(forms)
    assert json.dumps(json.dumps(once)[1:-1])[1:-1] in forms and "" not in forms
    assert forms == sorted(forms, key=len, reverse=True)
