"""A mutation check of the core arithmetic: plant one small bug at a time and see whether the tests notice.

Not part of CI. It mutates a copy of ``src/prefix_exec`` (the working tree is never touched), puts the copy
first on ``PYTHONPATH`` and runs only the test modules that cover the mutated file, so one mutant costs seconds,
not a whole suite. A mutant is *killed* when those tests fail (or time out), *survives* when they pass.

Files and the tests run for them are in ``TARGETS``: metrics.py, stats.py, summary.py, replay.py, and the
index arithmetic of the importers (only lines that compute turns, steps, depths, positions or counts).
Operators: ``+``/``-`` and ``*``/``/`` swapped, comparisons flipped at their boundary (``<``/``<=``, ``>``/``>=``,
``==``/``!=``, ``is``/``is not``, ``in``/``not in``), small integer constants moved by one, ``min``/``max`` and
``and``/``or`` swapped, ``not`` dropped, ``+=``/``-=`` swapped. Some mutants are equivalent (no test can kill
them); the survivors are printed with their line so a reader can judge each one.

Run (bounded; it shares the machine):
    .venv/bin/python benchmarks/mutation.py --max 60 --seed 0 [--files analysis/stats.py analysis/summary.py] [--list]
Prints one line per mutant and, last, the kill rate per file and overall.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "prefix_exec"

#: Lines of an importer that do index arithmetic (turns, steps, depths, positions, counts).
INDEX_LINES = re.compile(r"turn|step|index|enumerate|depth|position|offset|first_error|users|len\(|[+-] 1\b")

#: file (under src/prefix_exec) -> (only lines matching, the test paths that cover it)
TARGETS: dict[str, tuple[re.Pattern[str] | None, tuple[str, ...]]] = {
    "analysis/metrics.py": (
        None,
        ("tests/analysis/test_metrics.py", "tests/analysis/test_summary.py", "tests/analysis/test_stats_bootstrap.py"),
    ),
    "analysis/stats.py": (
        None,
        ("tests/analysis/test_stats.py", "tests/analysis/test_stats_bootstrap.py", "tests/analysis/test_summary.py"),
    ),
    "analysis/summary.py": (
        None,
        (
            "tests/analysis/test_summary.py",
            "tests/analysis/test_summary_domains.py",  # the per-domain view (Summary.domains)
            "tests/analysis/test_stats_bootstrap.py",
            "tests/report/test_report_tables.py",
        ),
    ),
    "replay.py": (None, ("tests/test_replay.py", "tests/envs/test_custom.py", "tests/importers")),
    "importers/tau.py": (INDEX_LINES, ("tests/importers/test_tau_import.py",)),
    "importers/bfcl.py": (INDEX_LINES, ("tests/importers/test_bfcl_importer.py",)),
    "importers/toolsandbox/importer.py": (INDEX_LINES, ("tests/importers/test_toolsandbox_import.py",)),
}

SWAP_BIN = {ast.Add: "-", ast.Sub: "+", ast.Mult: "/", ast.Div: "*", ast.FloorDiv: "*"}
BIN_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//"}
SWAP_CMP = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
}


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    start: int  # offsets into the file's text
    end: int
    new: str
    old: str

    def describe(self) -> str:
        return f"{self.file}:{self.line}: {self.old!r} -> {self.new!r}"


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _skipped_spans(tree: ast.AST) -> list[tuple[int, int]]:
    """Line spans whose arithmetic only builds messages or types: raise statements, f-strings, annotations."""
    spans = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Raise | ast.JoinedStr):
            targets.append(node)
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            targets.append(node.annotation)
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            targets.append(node.returns)
        spans += [(t.lineno, t.end_lineno or t.lineno) for t in targets]
    return spans


def mutants_of(file: str, only: re.Pattern[str] | None) -> list[Mutant]:
    text = (SRC / file).read_text(encoding="utf-8")
    lines = text.splitlines()
    starts = _offsets(text)
    tree = ast.parse(text)
    skipped = _skipped_spans(tree)

    def at(line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets; the files are ASCII where it matters, and this is checked below
        return starts[line - 1] + col

    def wanted(line: int) -> bool:
        if any(a <= line <= b for a, b in skipped):
            return False
        return only is None or bool(only.search(lines[line - 1]))

    out: list[Mutant] = []

    def token_between(left: ast.AST, right: ast.AST, token: str, new: str) -> None:
        a = at(left.end_lineno or left.lineno, left.end_col_offset or 0)
        b = at(right.lineno, right.col_offset)
        gap = text[a:b]
        pattern = re.escape(token).replace(r"\ ", r"\s+")
        found = re.search(rf"(?<![<>=!*/]){pattern}(?![=*/])", gap)
        if found:
            out.append(
                Mutant(file, left.end_lineno or left.lineno, a + found.start(), a + found.end(), new, found.group(0))
            )

    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is None or not wanted(line):
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in SWAP_BIN:
            token_between(node.left, node.right, BIN_TEXT[type(node.op)], SWAP_BIN[type(node.op)])
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Sub):
            old = "+=" if isinstance(node.op, ast.Add) else "-="
            a, b = (
                at(node.target.end_lineno or line, node.target.end_col_offset or 0),
                at(node.value.lineno, node.value.col_offset),
            )
            found = text.find(old, a, b)
            if found >= 0:
                out.append(Mutant(file, line, found, found + 2, "-=" if old == "+=" else "+=", old))
        elif isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if type(op) in SWAP_CMP:
                    old, new = SWAP_CMP[type(op)]
                    token_between(left, right, old, new)
                left = right
        elif isinstance(node, ast.BoolOp):
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            token_between(node.values[0], node.values[1], old, new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            a = at(line, node.col_offset)
            if text.startswith("not ", a):
                out.append(Mutant(file, line, a, a + 4, "", "not "))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            a = at(line, node.func.col_offset)
            out.append(Mutant(file, line, a, a + 3, "max" if node.func.id == "min" else "min", node.func.id))
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and 0 <= node.value <= 2
            and node.end_col_offset is not None
            and node.end_col_offset - node.col_offset == 1
        ):
            a = at(line, node.col_offset)
            out.append(Mutant(file, line, a, a + 1, str(node.value + 1), str(node.value)))
            if node.value > 0:
                out.append(Mutant(file, line, a, a + 1, str(node.value - 1), str(node.value)))
    return [m for m in out if text[m.start : m.end] == m.old]


def run_tests(src_root: Path, tests: tuple[str, ...], timeout: float, with_slow: bool) -> tuple[str, str]:
    """Run ``tests`` against the package under ``src_root``: ("passed" | "failed" | "timeout", output tail)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src_root), os.environ.get("PYTHONPATH", "")]))
    # -n 0: one mutant runs a few modules, which two pytest-xdist workers would only slow down (start-up).
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", *tests]
    if not with_slow:
        cmd += ["-m", "not slow"]
    try:
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return ("passed" if done.returncode == 0 else "failed"), (done.stdout + done.stderr)[-2000:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", default=None, help="a subset of TARGETS (e.g. analysis/stats.py)")
    parser.add_argument("--max", type=int, default=60, help="mutants to run, sampled evenly across files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant (a timeout is a kill)")
    parser.add_argument("--with-slow", action="store_true", help="also run the tests marked slow")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args()

    files = [f for f in (args.files or TARGETS) if (SRC / f).is_file()]
    pools = {f: mutants_of(f, TARGETS[f][0]) for f in files}
    if args.list:
        for pool in pools.values():
            for m in pool:
                print(m.describe())
        print(f"{sum(map(len, pools.values()))} mutants in {len(files)} files")
        return 0
    rng = random.Random(args.seed)
    for pool in pools.values():
        rng.shuffle(pool)
    chosen: list[Mutant] = []
    while len(chosen) < args.max and any(pools.values()):
        for f in files:
            if pools[f] and len(chosen) < args.max:
                chosen.append(pools[f].pop())

    with tempfile.TemporaryDirectory(prefix="prefix-exec-mutants-") as tmp:
        root = Path(tmp) / "src"
        shutil.copytree(SRC, root / "prefix_exec", ignore=shutil.ignore_patterns("__pycache__"))
        for f in files:  # the unmutated copy must pass the tests it is judged by
            if not any(m.file == f for m in chosen):
                continue
            outcome, output = run_tests(root, TARGETS[f][1], args.timeout, args.with_slow)
            if outcome != "passed":
                print(output, file=sys.stderr)
                print(f"baseline: the tests of {f} {outcome} without a mutant; fix that first", file=sys.stderr)
                return 2
        tally: dict[str, list[int]] = {}
        survivors: list[Mutant] = []
        for i, m in enumerate(chosen, 1):
            target = root / "prefix_exec" / m.file
            original = (SRC / m.file).read_text(encoding="utf-8")
            target.write_text(original[: m.start] + m.new + original[m.end :], encoding="utf-8")
            started = time.monotonic()
            outcome, _ = run_tests(root, TARGETS[m.file][1], args.timeout, args.with_slow)
            target.write_text(original, encoding="utf-8")
            killed = outcome != "passed"
            tally.setdefault(m.file, [0, 0])
            tally[m.file][0] += killed
            tally[m.file][1] += 1
            if not killed:
                survivors.append(m)
            verdict = "killed" if killed else "SURVIVED"
            print(
                f"[{i}/{len(chosen)}] {verdict:8} {outcome:7} {time.monotonic() - started:5.1f}s {m.describe()}",
                flush=True,
            )
    print("\nsurvivors (equivalent, or a gap in the tests):")
    for m in survivors:
        print(f"  {m.describe()}    | {(SRC / m.file).read_text().splitlines()[m.line - 1].strip()}")
    print("\nkill rate per file:")
    for f, (k, n) in tally.items():
        print(f"  {f:26} {k}/{n}")
    killed = sum(k for k, _ in tally.values())
    total = sum(n for _, n in tally.values())
    print(f"overall: {killed}/{total} killed = {killed / max(total, 1):.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
