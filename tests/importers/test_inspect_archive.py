"""inspect logs that are bombs (issue 29 item 4): each is refused from its bytes before inspect's reader parses
it, as that sample's input error (the others read and scored) or the whole log's, quickly and without growing
the process; the bounds' own arithmetic (nesting depth, bounded inflation) against hand oracles."""

from __future__ import annotations

import contextlib
import io
import json
import resource
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from inspect_bombs import (
    TOOLS,
    ZSTD,
    big_string_members,
    deep_members,
    eval_bytes,
    good_members,
    header,
    json_log,
    sample,
    sample_text,
    two_directories,
    write_eval,
)
from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.importers.inspect import archive as inspect_archive
from prefix_exec.importers.inspect.archive import MAX_DEPTH, ReadBounds, ReadFailed, check_eval, nesting_depth
from prefix_exec.importers.inspect.reader import read_log

pytest.importorskip("inspect_ai")


def command(tmp_path: Path, logs: tuple[Path, ...], extra: tuple[str, ...]) -> tuple[list[str], Path]:
    """The arguments of ``score inspect LOGS --tools TOOLS --keep-going`` (the tools written into ``tmp_path``),
    and its output file."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = ["score", "inspect", *map(str, logs), "--tools", str(tools), "--out", str(out), "--keep-going", *extra]
    return argv, out


def scored_tasks(out: Path) -> set[str]:
    """The task ids of the records in ``out`` (none when it was not written)."""
    return {json.loads(line)["task_id"] for line in out.read_text().splitlines()} if out.exists() else set()


def score(tmp_path: Path, *logs: Path, extra: tuple[str, ...] = ()) -> tuple[int, str, set[str]]:
    """``score inspect LOGS --tools TOOLS --keep-going``: exit code, stderr, the task ids scored."""
    argv, out = command(tmp_path, logs, extra)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue(), scored_tasks(out)


def score_in_a_process(tmp_path: Path, *logs: Path, extra: tuple[str, ...] = ()) -> tuple[int, str, set[str]]:
    """As :func:`score`, run by ``python -m prefix_exec`` in a process of its own."""
    argv, out = command(tmp_path, logs, extra)
    done = subprocess.run(
        [sys.executable, "-m", "prefix_exec", *argv], capture_output=True, text=True, timeout=300, check=False
    )
    return done.returncode, done.stderr, scored_tasks(out)


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("{}", 1),
        ("[[], {}]", 2),
        ('{"a": "[[[[", "b": [1, {"c": "]]}}"}]}', 3),  # brackets inside strings do not count
        ('["\\"[[[", [[]]]', 3),  # nor after an escaped quote
        ("1", 0),
        ("[" * 300 + "]" * 300, 300),
    ],
)
def test_nesting_depth_skips_strings(text: str, depth: int) -> None:
    assert nesting_depth(text.encode()) == depth


@pytest.mark.parametrize(
    "text",
    [
        '"' + '\\"' * 40_000,  # a string never closed, of escaped quotes: each quote used to start a new scan
        '"' + '\\"' * 40_000 + "\\",  # the same, ending in a lone backslash
    ],
)
def test_nesting_depth_is_linear_in_a_string_never_closed(text: str) -> None:
    # 80 KB took 40 s (the string pattern retried from every quote, each scan to the end), in the parent,
    # before any bound applied; a string left open runs to the end, as a parser reads it, so no bracket after
    # it counts (before the fix each of its quotes failed to match and the brackets after it were counted)
    assert nesting_depth(text.encode()) == 0
    assert nesting_depth(b"[[" + text.encode() + b"[[[") == 2


def test_nesting_depth_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inspect_archive, "_CHUNK", 7)
    text = "[" * 20 + '"x"' + "]" * 20 + "[[]]"
    assert nesting_depth(text.encode()) == 20


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, ZSTD], ids=["stored", "deflate", "zstd"])
def test_a_good_log_is_read_sample_by_sample_in_inspects_order(method: int, tmp_path: Path) -> None:
    log = write_eval(tmp_path / "good.eval", good_members([10, 2, "a"]), method=method)
    read = read_log(log)
    assert [s.id for s in read.samples] == ["2", "10", "a"]  # epoch, then the id zero-filled, as inspect sorts
    assert all(s.y == 1 and s.unscorable is None for s in read.samples)
    assert check_eval(log).unread == {}


def test_a_sample_nested_200000_deep_is_refused_and_the_others_scored(tmp_path: Path) -> None:
    log = write_eval(tmp_path / "deep.eval", {**good_members([1, 3]), **deep_members(2, 200_000)})
    assert log.stat().st_size < 4000  # a 3 KB bomb, as in the issue
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, err, scored = score(tmp_path, log)
    assert code == 2
    assert f"samples/2_epoch_1.json: is nested 200002 deep, past the bound of {MAX_DEPTH}" in err
    assert scored == {"1", "3"}
    assert "Traceback" not in err
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) < 500 * 1024  # KiB: no GBs


def test_a_deep_header_or_json_log_is_the_whole_logs_error(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    archive = write_eval(tmp_path / "head.eval", {**good_members([1]), "reductions.json": deep})
    with pytest.raises(InputError, match=r"member 'reductions.json' is nested 5000 deep"):
        read_log(archive)
    log = json_log(tmp_path / "deep.json", [sample_text(1, metadata_raw=deep)])
    with pytest.raises(InputError, match="nested 5003 deep, past the bound of 256"):
        read_log(log)


def test_a_string_over_the_member_bound_is_refused_without_inflating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspect_archive, "MAX_DOCUMENT_BYTES", 4 << 20)  # 4 MiB: the same logic as 64
    log = write_eval(tmp_path / "big.eval", {**good_members([1, 3]), **big_string_members(2, 8)})
    code, err, scored = score(tmp_path, log)
    assert code == 2
    assert "samples/2_epoch_1.json: declares 8,388," in err and "over the bound of 4,194,304" in err
    assert scored == {"1", "3"}


@pytest.mark.slow
def test_a_260_kb_log_holding_a_256_mb_string(tmp_path: Path) -> None:
    log = write_eval(tmp_path / "big.eval", {**good_members([1, 3]), **big_string_members(2, 256)})
    assert log.stat().st_size < 300_000
    code, err, scored = score(tmp_path, log)
    assert (code, scored) == (2, {"1", "3"})
    assert "samples/2_epoch_1.json: declares 268,435," in err and "over the bound of 67,108,864" in err


def test_samples_inflating_past_the_ratio_are_each_refused(tmp_path: Path) -> None:
    # 8 samples of 4 MiB in a file of ~40 KB (the 80 of 40 MB in 3 MB, scaled down: the same ratio)
    members = {**good_members([0])}
    for i in range(1, 9):
        members |= big_string_members(i, 4)
    log = write_eval(tmp_path / "many.eval", members)
    assert log.stat().st_size < 100_000
    code, err, scored = score(tmp_path, log)
    assert code == 2
    assert err.count("past the compression ratio bound of 100") == 8
    assert scored == {"0"}


def test_many_members_inflating_far_in_all_are_the_whole_logs_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspect_archive, "RATIO_SLACK_BYTES", 1 << 20)
    monkeypatch.setattr(inspect_archive, "MAX_DOCUMENT_BYTES", 2 << 20)
    members = {**good_members([0])}
    for i in range(1, 4):  # each within its own bounds, 3 MiB in all from a few KB
        members |= big_string_members(i, 1)
    with pytest.raises(InputError, match=r"the archive's members declare .* past the compression ratio bound"):
        read_log(write_eval(tmp_path / "wide.eval", members))


def _declare(path: Path, member: str, size: int) -> None:
    """Rewrite ``member``'s declared inflated size (local header and central directory) to ``size``."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    struct.pack_into("<L", data, info.header_offset + 22, size)
    central = data.find(b"PK\x01\x02" + bytes(data[info.header_offset + 4 : info.header_offset + 8]))
    while central >= 0:
        name_length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + name_length] == member.encode():
            struct.pack_into("<L", data, central + 24, size)
            break
        central = data.find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("declared", [100, 50_000_000], ids=["smaller", "larger"])
def test_a_member_that_lies_about_its_size_is_refused(declared: int, tmp_path: Path) -> None:
    text = sample_text(2, metadata_raw=json.dumps({"x": "a" * 3_000_000}))
    log = write_eval(tmp_path / "lie.eval", {**good_members([1]), "samples/2_epoch_1.json": text})
    _declare(log, "samples/2_epoch_1.json", declared)
    found = check_eval(log)
    problem = found.unread.get("samples/2_epoch_1.json", "")
    assert "bytes than the" in problem or "past the compression ratio" in problem
    assert [s.id for s in read_log(log).samples if s.unscorable is None] == ["1"]


def test_a_sample_name_inspect_would_read_as_another_member_is_refused(tmp_path: Path) -> None:
    # inspect reads sample (2, epoch 1) from the member named samples/2_epoch_1.json: a member named with the
    # epoch zero-filled (checked, small) sent inspect to the deep member, refused under its own name
    members = {**good_members([1]), **deep_members(2, 200_000)}
    members["samples/2_epoch_01.json"] = json.dumps(sample(2))
    found = check_eval(write_eval(tmp_path / "alias.eval", members))
    assert set(found.unread) == {"samples/2_epoch_1.json", "samples/2_epoch_01.json"}
    assert found.unread["samples/2_epoch_01.json"] == "a sample member not named <id>_epoch_<n>.json"


def test_a_central_directory_inspect_reads_otherwise_is_the_whole_logs_error(tmp_path: Path) -> None:
    # zipfile (the checks) saw a good sample 1; inspect's reader read sample 1 nested 200,000 deep, unchecked
    deep = sample_text(1, metadata_raw="[" * 200_000 + "]" * 200_000).encode()
    log = two_directories(tmp_path / "two.eval", json.dumps(sample(1)).encode(), deep)
    with zipfile.ZipFile(log) as archive:  # the archive is what it claims to be, to zipfile
        assert archive.read("samples/1_epoch_1.json") == json.dumps(sample(1)).encode()
    with pytest.raises(InputError, match="central directory"):
        check_eval(log)
    prefixed = tmp_path / "prefixed.eval"  # data before an archive: zipfile shifts, inspect finds no members
    prefixed.write_bytes(b"#!junk\n" + eval_bytes(good_members([1])))
    with pytest.raises(InputError, match="central directory"):
        check_eval(prefixed)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16", "utf-32"])
def test_a_member_in_utf16_or_utf32_is_refused(encoding: str, tmp_path: Path) -> None:
    # inspect reads a sample member with json.loads(bytes), which takes UTF-16 and UTF-32 too; the depth check
    # reads bytes as UTF-8, and a character holding a quote byte (U+2200) hid 1,000 levels from it (depth 1)
    text = sample_text(2, metadata_raw='{"a": "\u2200", "m": ' + "[" * 1000 + "]" * 1000 + ', "b": "\u2200"}')
    assert json.loads(text.encode(encoding))["id"] == 2
    found = check_eval(
        write_eval(tmp_path / "wide.eval", {**good_members([1]), "samples/2_epoch_1.json": text.encode(encoding)})
    )
    assert set(found.unread) == {"samples/2_epoch_1.json"}
    assert "NUL" in found.unread["samples/2_epoch_1.json"]
    log = tmp_path / "wide.json"
    log.write_bytes(json.dumps({**header(), "samples": [json.loads(sample_text(1))]}).encode(encoding))
    with pytest.raises(InputError, match="NUL"):
        read_log(log)


def test_members_sharing_their_bytes_are_the_whole_logs_error(tmp_path: Path) -> None:
    # central directory entries pointing at one member's bytes: each was read whole by the checks, so 100,000
    # entries on a 64 MiB member read 6 TB in the parent (2,000 on 10 MiB: 6 s), before any bound applied
    data, name = json.dumps(sample(1)).encode(), b"samples/1_epoch_1.json"
    crc = zlib.crc32(data)
    body = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0)
    body += name + data
    directory = b""
    for member in [b"header.json", b"samples/1_epoch_1.json", b"samples/2_epoch_1.json"]:
        fixed = (20, 20, 0, 0, 0, 0, crc, len(data), len(data), len(member), 0, 0, 0, 0, 0, 0)
        directory += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", *fixed) + member
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 3, 3, len(directory), len(body), 0)
    log = tmp_path / "shared.eval"
    log.write_bytes(body + directory + end)
    with pytest.raises(InputError, match="overlap"):
        check_eval(log)


def test_an_unknown_compression_method_is_refused(tmp_path: Path) -> None:
    log = write_eval(tmp_path / "bz.eval", good_members([1]))
    with zipfile.ZipFile(log, "a") as archive:
        archive.writestr("samples/2_epoch_1.json", sample_text(2), compress_type=zipfile.ZIP_BZIP2)
    assert "uses compression method 12" in check_eval(log).unread["samples/2_epoch_1.json"]
    with pytest.raises(InputError, match=r"member 'header.json' uses compression method 12"):
        check_eval(write_eval(tmp_path / "all-bz.eval", good_members([1]), method=zipfile.ZIP_BZIP2))


def test_a_read_past_its_bounds_is_stopped() -> None:
    with pytest.raises(ReadFailed, match=r"not read within the rollout budget of 0.5 s"):
        ReadBounds(seconds=0.5).run(lambda: time.sleep(30))
    with pytest.raises(ReadFailed, match="memory bound of 64 MiB"):
        ReadBounds(memory_mb=64).run(lambda: bytearray(512 << 20))
    assert ReadBounds(seconds=30).run(lambda: {"a": [1]}) == {"a": [1]}
    with pytest.raises(ReadFailed, match="ValueError: bad"):
        ReadBounds().run(lambda: (_ for _ in ()).throw(ValueError("bad\nsecond line")))


def test_a_sample_over_the_memory_bound_is_that_samples_error(tmp_path: Path) -> None:
    """Run as a command of its own: the bound is memory above the process's size, and a test process that ran
    other tests may hold freed heap, or a size measured while another thread held more, that the read's child (a
    fork) reads within (in-process, this passed 40 MB under a 48 MiB bound once in six full runs)."""
    log = write_eval(
        tmp_path / "stored.eval", {**good_members([1]), **big_string_members(2, 40)}, method=zipfile.ZIP_STORED
    )
    code, err, scored = score_in_a_process(tmp_path, log, extra=("--call-memory", "48"))
    assert code == 2
    assert "sample 2 epoch 1: input error: samples/2_epoch_1.json: inspect cannot read it" in err
    assert "memory bound of 48 MiB" in err
    assert scored == {"1"}
