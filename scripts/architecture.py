"""The architecture table of docs/architecture.md, drawn from the import-linter contracts and the real imports.

The floors are the ``layers`` contract in pyproject.toml (``[tool.importlinter]``, id ``layers``): a part imports only
from the floors below it, and parts on one floor (``a | b``) never import each other. The arrows are the imports
the code really makes, read by grimp (import-linter's graph), one per pair of parts. ``lint-imports`` (make lint)
proves the code keeps the contract; this script keeps the page equal to both:

    python scripts/architecture.py            # rewrite the table between the markers in docs/architecture.md
    python scripts/architecture.py --check    # exit 1 if the page is out of date (make lint runs it)

Run with the package importable (the venv of make setup, or PYTHONPATH=src).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "prefix_exec"
DOC = REPO / "docs" / "architecture.md"
BEGIN = "<!-- architecture:begin (scripts/architecture.py writes this table; do not edit by hand) -->"
END = "<!-- architecture:end -->"


def floors(pyproject: Path = REPO / "pyproject.toml") -> list[list[str]]:
    """The ``layers`` contract's floors, top first, each a list of part names (``["runner", "guard"]``)."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract.get("id") == "layers":
            return [[part.strip() for part in floor.split("|")] for floor in contract["layers"]]
    raise SystemExit(f"{pyproject}: no import-linter contract with id 'layers'")


def part_of(module: str) -> str:
    """``records`` for ``prefix_exec.records.codec``; a top-level module is its own part."""
    return module.split(".")[1]


def arrows() -> tuple[set[str], dict[str, set[str]]]:
    """Every part, and for each the other parts it imports from (direct imports, function-level ones included)."""
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    parts = {part_of(module) for module in graph.modules if module != PACKAGE}
    out: dict[str, set[str]] = defaultdict(set)
    for module in graph.modules:
        if module == PACKAGE:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != PACKAGE and part_of(imported) != part_of(module):
                out[part_of(module)].add(part_of(imported))
    return parts, out


def summary_of(part: str) -> str:
    """The first sentence of a part's docstring (its package ``__init__`` or its module)."""
    base = REPO / "src" / PACKAGE / part
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split()).split(". ", 1)[0].rstrip(".")
    # reStructuredText to Markdown: :data:`~x.NAME` and ``code`` become `NAME` and `code`.
    first = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`.]+)`", r"`\1`", first).replace("``", "`")
    return first.replace("|", "\\|")


def modules_in(part: str) -> int:
    base = REPO / "src" / PACKAGE / part
    return sum(1 for _ in base.rglob("*.py")) if base.is_dir() else 1


def table() -> str:
    """The Markdown block: one row per part, top floor first, with what it imports from."""
    layout = floors()
    known = {part for floor in layout for part in floor}
    parts, imports = arrows()
    loose = sorted(parts - known - {"__init__"})
    if loose:
        raise SystemExit(f"parts missing from the layers contract in pyproject.toml: {', '.join(loose)}")
    rows = [
        "| floor | part | modules | what it is | imports from |",
        "|---|---|---|---|---|",
    ]
    for number, floor in enumerate(layout, start=1):
        for part in floor:
            below = sorted(imports.get(part, ()), key=lambda name: (_floor_index(layout, name), name))
            # An arrow to the same floor or above breaks the contract: lint-imports fails, and the page says so too.
            named = [f"`{name}`" + (" (UP)" if _floor_index(layout, name) < number else "") for name in below]
            rows.append(
                f"| {number} | `{part}` | {modules_in(part)} | {summary_of(part)} | "
                f"{', '.join(named) or '(nothing of ours)'} |"
            )
    return "\n".join([BEGIN, *rows, END])


def _floor_index(layout: list[list[str]], part: str) -> int:
    for index, floor in enumerate(layout):
        if part in floor:
            return index
    return len(layout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/architecture.md is out of date")
    args = parser.parse_args(argv)
    page = DOC.read_text(encoding="utf-8")
    if BEGIN not in page or END not in page:
        print(f"{DOC}: the markers are missing ({BEGIN} ... {END})", file=sys.stderr)
        return 2
    head, rest = page.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    fresh = head + table() + tail
    if args.check:
        if fresh != page:
            print(f"{DOC} is out of date: run python scripts/architecture.py", file=sys.stderr)
            return 1
        return 0
    if fresh != page:
        DOC.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
