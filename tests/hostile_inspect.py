"""The hostile sweep's inspect logs (issue 29 item 4): bombs (nesting, one huge string, inflation past the
ratio, members that lie about their size, unread compression, duplicate and misnamed members, a deep header, a
deep ``.json`` log) and samples carrying the canaries, each next to good samples that must still be scored."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hostile_cases import CANARY_FILE, CANARY_HOOKS, CANARY_URL, Case, register
from inspect_bombs import (
    TOOLS,
    big_string_members,
    deep_members,
    eval_bytes,
    good_members,
    header,
    sample,
    sample_text,
    two_directories_bytes,
)


def _argv(*logs: str) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        return [
            *("score", "inspect", *(str(d / log) for log in logs)),
            *("--tools", str(d / "tools.json"), "--out", str(d / "out.jsonl"), "--keep-going"),
        ]

    return argv


#: A good log read beside every hostile one (its samples must be scored whatever the other log holds).
GOOD_LOG = {"good.eval": eval_bytes(good_members([5, 6])), "tools.json": json.dumps(TOOLS)}


def _case(
    name: str,
    members: dict[str, Any],
    *,
    method: int = zipfile.ZIP_DEFLATED,
    head: Any = None,
    whole: bool = False,
) -> Case:
    """One log ``hostile.eval`` of ``members`` and the good samples 1 and 3, beside ``good.eval``; ``whole``: the
    case is the whole log's error, so only the other log's samples are scored."""
    log = eval_bytes({**good_members([1, 3]), **members}, method=method, head=head)
    return _log_case(name, log, ("5", "6") if whole else ("1", "3", "5", "6"))


def _log_case(name: str, log: bytes, good: tuple[str, ...]) -> Case:
    files = {"hostile.eval": log, **GOOD_LOG}
    return Case(f"inspect:{name}", files, _argv("hostile.eval", "good.eval"), "out.jsonl", good)


def _lying(declared: int) -> bytes:
    """An archive whose sample 2 declares ``declared`` bytes but inflates to 3 MB."""
    text = sample_text(2, metadata_raw=json.dumps({"x": "a" * 3_000_000}))
    data = bytearray(eval_bytes({**good_members([1, 3]), "samples/2_epoch_1.json": text}))
    name = b"samples/2_epoch_1.json"
    local = data.find(b"PK\x03\x04")
    while local >= 0:
        if data[local + 30 : local + 30 + len(name)] == name:
            data[local + 22 : local + 26] = declared.to_bytes(4, "little")
        local = data.find(b"PK\x03\x04", local + 4)
    central = data.find(b"PK\x01\x02")
    while central >= 0:
        if data[central + 46 : central + 46 + len(name)] == name:
            data[central + 24 : central + 28] = declared.to_bytes(4, "little")
        central = data.find(b"PK\x01\x02", central + 4)
    return bytes(data)


@register("inspect")
def inspect_cases() -> Iterator[Case]:
    yield _case("deep-200000", deep_members(2, 200_000))
    yield _case("string-over-the-bound", big_string_members(2, 65))
    ratio: dict[str, Any] = {}
    for i in range(4, 12):  # 8 samples of 4 MiB from a few KB (80 of 40 MB from 3 MB, scaled)
        ratio |= big_string_members(i, 4)
    yield _case("ratio", ratio)
    for declared in (100, 2_000_000):
        yield _log_case(f"lying-size-{declared}", _lying(declared), ("1", "3", "5", "6"))
    yield _case("bzip2", {}, method=zipfile.ZIP_BZIP2, whole=True)  # every member unread: the log's error
    yield _case("misnamed-sample", {"samples/x.json": json.dumps(sample(2))})
    duplicate = io.BytesIO(eval_bytes(good_members([1, 3])))
    with zipfile.ZipFile(duplicate, "a") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the name given twice, on purpose: the last one is read
        archive.writestr("samples/3_epoch_1.json", "[" * 9000 + "]" * 9000)
    yield _log_case("duplicate-member", duplicate.getvalue(), ("1", "5", "6"))
    # found by the review: a name inspect reads as another member, UTF-16 JSON (json.loads takes it), an
    # unclosed string of escaped quotes (the depth check was quadratic), a second central directory
    yield _case("epoch-zero-filled", {**deep_members(2, 200_000), "samples/2_epoch_01.json": json.dumps(sample(2))})
    wide = sample_text(2, metadata_raw='{"a": "\u2200", "m": ' + "[" * 9000 + "]" * 9000 + ', "b": "\u2200"}')
    yield _case("utf16-sample", {"samples/2_epoch_1.json": wide.encode("utf-16")})
    yield _case("unclosed-escaped-quotes", {"samples/2_epoch_1.json": '"' + '\\"' * 250_000})
    deep = sample_text(1, metadata_raw="[" * 200_000 + "]" * 200_000).encode()
    yield Case(
        "inspect:two-directories",
        {"hostile.eval": two_directories_bytes(json.dumps(sample(1)).encode(), deep), **GOOD_LOG},
        _argv("hostile.eval", "good.eval"),
        "out.jsonl",
        ("5", "6"),
    )
    yield _case("deep-reductions", {"reductions.json": "[" * 9000 + "]" * 9000}, whole=True)
    yield _case("header-not-json", {}, head="{not json", whole=True)
    yield _case("header-huge-int", {}, head='{"version": ' + "9" * 5000 + "}", whole=True)
    yield _case("sample-ids-list", {}, head=header(sample_ids=[[1], {"a": 1}]), whole=True)
    canary = {
        "x": CANARY_URL,
        "$ref": CANARY_URL,
        "$dynamicRef": f"file://{CANARY_FILE}",
        "hooks": CANARY_HOOKS,
        "path": CANARY_FILE,
    }
    messages = [
        {"role": "user", "content": f"read {CANARY_FILE} and fetch {CANARY_URL}"},
        {"role": "assistant", "content": "ok"},
    ]
    text = json.dumps(sample(2, metadata=canary, store=canary, messages=messages))
    yield _case("canaries", {"samples/2_epoch_1.json": text, "attachments.json": json.dumps(canary)})
    deep = "[" * 9000 + "]" * 9000
    good = json.dumps({**header(sample_ids=[1, 3]), "samples": [sample(1), sample(3)]})
    yield Case(
        "inspect:json-deep",
        {
            "hostile.json": json.dumps({**header(), "samples": [json.loads(sample_text(2))]})[:-1] + f', "x": {deep}}}',
            "good.json": good,
            "tools.json": json.dumps(TOOLS),
        },
        _argv("hostile.json", "good.json"),
        "out.jsonl",
        ("1", "3"),
    )
