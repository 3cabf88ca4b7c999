"""``prefix-exec report`` on files and run directories, and its input errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from report_records import crafted, record

from prefix_exec.cli import main
from prefix_exec.records.codec import write_records


def _listed(folder: Path) -> list[str]:
    """The names a report's files.json lists (each entry: name, bytes, sha256)."""
    return [entry["name"] for entry in json.loads((folder / "files.json").read_text())]


def test_report_from_run_dir_and_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rows = crafted()
    run = tmp_path / "run" / "grid"
    write_records(run / "records-a.jsonl", rows[:10])
    write_records(tmp_path / "other.jsonl", rows[10:])
    code = main(
        [
            "report",
            str(tmp_path / "run"),
            str(tmp_path / "other.jsonl"),
            "--out",
            str(tmp_path / "out"),
            "--resamples",
            "100",
            "--format",
            "md,csv",
            "--pair",
            "dual-loop:react",
            "--no-plots",
        ]
    )
    assert code == 0
    assert "report on 20 rollouts in 5 conditions" in capsys.readouterr().err
    written = set(_listed(tmp_path / "out"))
    assert {"table2.md", "table2.csv", "report.html", "summary.json"} <= written
    assert "table2.tex" not in written
    paired = (tmp_path / "out" / "paired.csv").read_text().splitlines()
    assert len(paired) == 3  # header + the chosen pair in each of the two blocks


def test_empty_run_dir_and_duplicates_are_input_errors(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "no records*.jsonl files" in capsys.readouterr().err
    write_records(tmp_path / "r.jsonl", crafted())
    assert main(["report", str(tmp_path / "r.jsonl"), str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "o")]) == 2
    assert "appears twice" in capsys.readouterr().err


def test_bad_options_are_usage_errors(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pytest

    for bad in (["--pair", "dual-loop"], ["--format", "docx"], ["--checkpoints", "0,2"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["report", str(tmp_path), "--out", str(tmp_path / "o"), *bad])
        assert exit_info.value.code == 2
    assert "expected A:B" in capsys.readouterr().err


def test_pairs_of_unknown_or_identical_methods_are_input_errors(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rows = [*crafted(), record("solo", "t1", T=1, fed=2, success=1, model="m3")]
    write_records(tmp_path / "r.jsonl", rows)
    base = ["report", str(tmp_path / "r.jsonl"), "--resamples", "50", "--no-plots"]
    listing = "m1/dual-loop, m1/plan-conditioned, m1/react, m2/dual-loop, m2/react, m3/solo"
    cases = [
        ("nope:react", "--pair nope:react: the left side 'nope' names no condition (the right side does)", listing),
        ("nope:gone", "--pair nope:gone: neither side names a condition (left 'nope', right 'gone')", listing),
        ("react:react", "--pair react:react pairs a name with itself", ""),
        # solo (model m3) and react (models m1 and m2) share no model: react alone is ambiguous
        (
            "solo:react",
            "--pair solo:react: 'react' is ambiguous in dataset 'bfcl_demo': it names m1/react, m2/react",
            "name one condition as model/method",
        ),
    ]
    for i, (pair, message, hint) in enumerate(cases):
        out = tmp_path / f"o{i}"
        assert main([*base, "--out", str(out), "--pair", "dual-loop:react", "--pair", pair]) == 2, pair
        err = capsys.readouterr().err
        assert message in err, err
        assert hint in err, err
        assert "Traceback" not in err, err
        assert not out.exists()  # refused before anything was written
    assert main([*base, "--out", str(tmp_path / "ok"), "--pair", "solo:m1/react"]) == 0
    paired = (tmp_path / "ok" / "paired.csv").read_text().splitlines()
    assert paired[1].startswith("bfcl_demo,m3/solo,m1/react,1,")  # solo ran t1 only: one common task


def test_an_out_that_is_a_file_is_an_input_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    write_records(tmp_path / "r.jsonl", crafted())
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    for out in (afile, afile / "sub"):
        assert main(["report", str(tmp_path / "r.jsonl"), "--out", str(out), "--no-plots"]) == 2
        err = capsys.readouterr().err
        assert str(afile) in err, err
        assert "Traceback" not in err, err
    assert afile.read_text() == "keep me"


def test_a_negative_seed_is_a_usage_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pytest

    write_records(tmp_path / "r.jsonl", crafted())
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "o"), "--seed", "-1"])
    assert exit_info.value.code == 2
    assert "must be >= 0, got -1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_out_refuses_a_folder_it_did_not_write_and_replaces_its_own(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    write_records(tmp_path / "r.jsonl", crafted())
    base = ["report", str(tmp_path / "r.jsonl"), "--resamples", "50", "--no-plots"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main([*base, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is not empty and was not written by prefix-exec (it holds notes.txt)" in err
    assert "--overwrite" in err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # nothing touched
    # with --overwrite it writes, keeps the foreign file, and lists only its own files
    assert main([*base, "--out", str(out), "--overwrite"]) == 0
    listed = _listed(out)
    assert "notes.txt" not in listed
    assert "table2.md" in listed
    assert (out / "notes.txt").read_text() == "mine"
    # a report's own folder is rewritten without --overwrite, and the earlier files go first: a table that
    # the new report no longer writes does not survive (here: the .tex files, dropped by --format md)
    clean = tmp_path / "clean"
    assert main([*base, "--out", str(clean)]) == 0
    assert (clean / "table2.tex").exists()
    assert main([*base, "--out", str(clean), "--format", "md"]) == 0
    assert not (clean / "table2.tex").exists()
    assert sorted(p.name for p in clean.iterdir()) == sorted([*_listed(clean), "files.json"])
    # a manifest naming files outside the folder never removes them
    size, sha = len((tmp_path / "r.jsonl").read_bytes()), hashlib.sha256((tmp_path / "r.jsonl").read_bytes())
    entry = {"bytes": size, "sha256": sha.hexdigest()}
    names = ["../r.jsonl", "/etc/hosts", str(tmp_path / "r.jsonl"), "table2.md"]
    (clean / "files.json").write_text(json.dumps([*names, *({"name": n, **entry} for n in names)]))
    assert main([*base, "--out", str(clean), "--overwrite"]) == 0
    assert (tmp_path / "r.jsonl").exists()
