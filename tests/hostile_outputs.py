"""Hostile outputs for the sweep (tests/test_hostile_sweep.py): an output that is, links to or holds an input, or is
a special file. Every case must end with exit 2 and leave its inputs as they were (issue 29, item 5).

A case's links and FIFOs are made by its ``argv`` callable, at or under the case's output path, just before the
command runs (the sweep writes only regular files and counts what appears elsewhere as created).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hostile_files import FIFO, ZERO

ROW = {
    "kind": "record",
    "schema_version": 1,
    "dataset": "d",
    "model": "m",
    "trial": 0,
    "T": 2,
    "fed": 3,
    "success": 1,
    "executable": True,
    "label": None,
    "reason": "",
    "no_tool": False,
    "verdicts": [{"step": 1, "tool": "a", "accepted": True, "label": None, "causes": [], "reason": ""}],
    "actions": [{"name": "a", "arguments": {}, "turn": 0}],
}
RECORDS = "".join(json.dumps({**ROW, "task_id": f"t{i}", "method": m}) + "\n" for i in range(2) for m in ("a", "b"))
METRICS = ("--resamples", "20", "--format", "csv")
REPORT = ("--resamples", "20", "--no-plots", "--format", "md")
TICKETING = Path(__file__).resolve().parents[1] / "examples" / "ticketing"


def _proof(name: str, text: str) -> dict[str, Any]:
    data = text.encode()
    return {"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _link(make: Callable[[Path, Path], None], target: str, at: str, argv: list[str]) -> Callable[[Path], list[str]]:
    """argv that first makes ``at`` a link (``os.symlink`` or ``os.link``) to ``target``, both in the case folder."""

    def build(d: Path) -> list[str]:
        (d / at).parent.mkdir(parents=True, exist_ok=True)
        make(d / target, d / at)
        return [a.replace("{d}", str(d)) for a in argv]

    return build


def _fifo(at: str, argv: list[str]) -> Callable[[Path], list[str]]:
    def build(d: Path) -> list[str]:
        (d / at).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(d / at)
        return [a.replace("{d}", str(d)) for a in argv]

    return build


def _plain(argv: list[str]) -> Callable[[Path], list[str]]:
    return lambda d: [a.replace("{d}", str(d)) for a in argv]


def cases(case: Callable[..., Any]) -> Iterator[Any]:
    """The sweep's cases (``case``: its Case class: name, files, argv, out)."""
    metrics = ["metrics", "{d}/r.jsonl", *METRICS, "--out"]
    yield case("outputs:metrics-out-is-input", {"r.jsonl": RECORDS}, _plain([*metrics, "{d}/r.jsonl"]), "r.jsonl")
    yield case(
        "outputs:metrics-out-symlink", {"r.jsonl": RECORDS}, _link(os.symlink, "r.jsonl", "m", [*metrics, "{d}/m"]), "m"
    )
    yield case(
        "outputs:metrics-out-hardlink", {"r.jsonl": RECORDS}, _link(os.link, "r.jsonl", "m", [*metrics, "{d}/m"]), "m"
    )
    yield case("outputs:metrics-out-fifo", {"r.jsonl": RECORDS}, _fifo("m", [*metrics, "{d}/m"]), "m")
    yield case("outputs:metrics-out-folder", {"r.jsonl": RECORDS, "m/x": "x"}, _plain([*metrics, "{d}/m"]), "m")
    yield case("outputs:metrics-out-device", {"r.jsonl": RECORDS}, _plain([*metrics, "/dev/null"]), "m")
    report = ["report", "{d}/out/in.jsonl", *REPORT, "--out", "{d}/out"]
    for name, manifest in {"names": ["in.jsonl"], "proof": [_proof("in.jsonl", RECORDS)]}.items():
        for extra in ((), ("--overwrite",)):
            yield case(
                f"outputs:report-manifest-{name}-lists-input{''.join(extra)}",
                {"out/in.jsonl": RECORDS, "out/files.json": json.dumps(manifest)},
                _plain([*report, *extra]),
                "out",
            )
    summary = ["report", "{d}/out/summary.json", *REPORT, "--out", "{d}/out", "--overwrite"]
    yield case("outputs:report-input-named-summary", {"out/summary.json": RECORDS}, _plain(summary), "out")
    outside = ["report", "{d}/r.jsonl", *REPORT, "--out", "{d}/out", "--overwrite"]
    for make, kind in ((os.link, "hardlink"), (os.symlink, "symlink")):
        yield case(
            f"outputs:report-input-{kind}-as-report-html",
            {"r.jsonl": RECORDS, "out/notes.txt": "n"},
            _link(make, "r.jsonl", "out/report.html", outside),
            "out",
        )
    yield case(
        "outputs:report-out-is-input", {"r.jsonl": RECORDS}, _plain([*outside[:-3], "--out", "{d}/r.jsonl"]), "r.jsonl"
    )
    yield case("outputs:report-out-fifo", {"r.jsonl": RECORDS}, _fifo("out", outside[:-1]), "out")
    labels = json.dumps({"a": ["x"], "b": ["y"]})
    yield case(
        "outputs:sample-out-is-labels",
        {"l.json": labels},
        _plain(["sample", "{d}/l.json", "-n", "1", "--out", "{d}/l.json"]),
        "l.json",
    )
    yield case(
        "outputs:sample-out-fifo",
        {"l.json": labels},
        _fifo("s", ["sample", "{d}/l.json", "-n", "1", "--out", "{d}/s"]),
        "s",
    )
    rollouts = (TICKETING / "rollouts.jsonl").read_text(encoding="utf-8")
    score = ["score", "custom", "--tools", str(TICKETING / "tools.yaml"), "{d}/in.jsonl", "--out", "{d}/o.jsonl"]
    yield case(
        "outputs:score-consistency-is-input",
        {"in.jsonl": rollouts},
        _plain([*score, "--consistency", "{d}/in.jsonl"]),
        "o.jsonl",
    )
    yield case(
        "outputs:score-consistency-fifo",
        {"in.jsonl": rollouts},
        _fifo("o.jsonl.c", [*score, "--consistency", "{d}/o.jsonl.c"]),
        "o.jsonl",
    )
    yield case("outputs:score-out-fifo", {"in.jsonl": rollouts}, _fifo("o.jsonl", score), "o.jsonl")
    yield case(
        "outputs:score-out-hardlink",
        {"in.jsonl": rollouts},
        _link(os.link, "in.jsonl", "o.jsonl", [*score, "--overwrite"]),
        "o.jsonl",
    )


def unchanged(folder: Path, files: dict[str, str]) -> list[str]:
    """The case files (not the FIFO or /dev/zero stand-ins) that no longer hold their text: inputs a command lost or
    changed."""
    lost = []
    for name, text in files.items():
        path = folder / name
        if text not in (FIFO, ZERO) and (
            not path.is_file() or path.read_text(encoding="utf-8", errors="surrogatepass") != text
        ):
            lost.append(name)
    return lost
