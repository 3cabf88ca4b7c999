"""The hostile sweep's registration point and its canaries (tests/test_hostile_sweep.py runs every case).

A module of cases registers a function that yields :class:`Case` values under a kind (the part of each case's
name before the first ``:``)::

    from hostile_cases import Case, register, CANARY_URL

    @register("schemas")
    def schema_cases() -> Iterator[Case]:
        yield Case("schemas:dynamic-ref", {"tools.json": ...}, lambda d: [...], "out.jsonl", good=("g0",))

``HOSTILE_KINDS=schemas,outputs pytest -n 0 tests/test_hostile_sweep.py`` runs only those kinds (the case count
test still sees them all). The sweep imports the optional modules named in :data:`OPTIONAL_MODULES`
(``tests/hostile_schemas.py``, ``tests/hostile_outputs.py``) when they exist, so adding one is all another
helper does.

Case files may hold the canary tokens: the sweep replaces them, in every file and argument, by a loopback URL
whose listener must never see a connection (:data:`CANARY_URL`), the path of a file whose content must never
appear in any output (:data:`CANARY_FILE`), and the path of a hooks module that would create a marker file if
anything imported it (:data:`CANARY_HOOKS`). Every case is checked for all three, whether it plants them or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

#: Canary tokens, replaced by the sweep in case files and arguments.
CANARY_URL = "@@CANARY_URL@@"  # http://127.0.0.1:PORT/canary (a listener that must see no connection)
CANARY_HOST = "@@CANARY_HOST@@"  # 127.0.0.1:PORT, for inputs that take a host and port
CANARY_FILE = "@@CANARY_FILE@@"  # the absolute path of a file whose content must never appear in an output
CANARY_HOOKS = "@@CANARY_HOOKS@@"  # the absolute path of a hooks module that creates a marker when imported
#: Modules of other helpers' cases, imported when present.
OPTIONAL_MODULES = ("hostile_schemas", "hostile_outputs", "hostile_traces", "hostile_bounds")


@dataclass(frozen=True)
class Case:
    """One hostile input: its files (relative path -> text or bytes; text may hold the canary tokens, and
    ``hostile_files.FIFO``/``ZERO`` stand for special files), the CLI arguments given the case folder, the
    output's relative path (files created elsewhere in the folder are a failure), and the task ids the output
    must hold (scoring commands: the good rows around the bad one)."""

    name: str
    files: dict[str, str | bytes]
    argv: Callable[[Path], list[str]]
    out: str
    good: tuple[str, ...] = ()


CaseSource = Callable[[], Iterable[Case]]
#: The registered case sources, by kind.
SOURCES: dict[str, CaseSource] = {}


def register(kind: str) -> Callable[[CaseSource], CaseSource]:
    """Register a source of cases of ``kind`` (each case's name must start with ``kind:``)."""

    def add(source: CaseSource) -> CaseSource:
        if kind in SOURCES and SOURCES[kind] is not source:
            raise ValueError(f"hostile case kind {kind!r} is registered twice")
        SOURCES[kind] = source
        return source

    return add
