"""The ``prefix-exec`` command line: ``main(argv) -> int``, one thin module per subcommand (its ``register``
adds the parser, its ``handle(args) -> int`` runs the command).

Exit codes: 0 success, 1 a check the user asked for failed (for example the demo's calibration), 2 bad
input or usage. A user's mistake is reported in one paragraph, never as a traceback.
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import sys
from collections.abc import Sequence
from typing import Any, Final

from prefix_exec.errors import InputError
from prefix_exec.extras import missing_message
from prefix_exec.records.redaction import redact_text
from prefix_exec.terminal import escaping_output

#: ``score`` subcommands, one module each under ``prefix_exec.cli``: (name, module).
SCORE_COMMANDS: tuple[tuple[str, str], ...] = (
    ("custom", "prefix_exec.cli.score_custom"),
    ("transcripts", "prefix_exec.cli.score_transcripts"),
    ("traces", "prefix_exec.cli.score_traces"),
    ("toolsandbox", "prefix_exec.cli.score_toolsandbox"),
    ("bfcl", "prefix_exec.cli.score_bfcl"),
    ("tau", "prefix_exec.cli.score_tau"),
    ("inspect", "prefix_exec.cli.score_inspect"),
)
#: Top-level subcommands other than ``score``.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("metrics", "prefix_exec.cli.metrics"),
    ("sample", "prefix_exec.cli.sample"),
    ("report", "prefix_exec.cli.report"),
    ("demo", "prefix_exec.cli.demo"),
    ("run", "prefix_exec.cli.run"),
    ("show", "prefix_exec.cli.show"),
    ("guard", "prefix_exec.cli.guard"),
    ("infer-spec", "prefix_exec.cli.infer_spec"),
)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; given the ``argv`` it will parse, only the subcommand that ``argv`` names is
    registered (each subcommand's module and what it imports load in a few tenths of a second together, paid by
    every command otherwise), and all of them when ``argv`` names none it knows (``--help``, a typo) or is
    ``None`` (never this process's ``sys.argv``: a caller that parses a list of its own gets every command)."""
    parser = argparse.ArgumentParser(
        prog="prefix-exec",
        description=(
            "Score tool-using agents by prefix executability. Replays each predicted tool-call sequence "
            "prefix by prefix against the benchmark's environment, and reports PEC, FED, TER, AUC-PEC and "
            "RR with task-level bootstrap confidence intervals."
        ),
        epilog="Run 'prefix-exec COMMAND --help' for the options of one command.",
    )
    parser.add_argument("--version", action=_Version, help="show the program's version number and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    score = commands.add_parser(
        "score",
        help="replay rollouts against a benchmark and write one scored record per rollout (JSONL)",
        description="Replay rollouts prefix by prefix and write scored records (JSONL), one per rollout.",
    )
    benchmarks = score.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    named = _named(argv)
    for name, module in SCORE_COMMANDS:
        if named is None or named == ("score", name):
            importlib.import_module(module).register(benchmarks, name)
    for name, module in COMMANDS:
        if named is None or named == (name,):
            importlib.import_module(module).register(commands, name)
    return parser


def _named(argv: Sequence[str] | None) -> tuple[str, ...] | None:
    """The subcommand ``argv`` names as its first words (``("score", "tau")``, ``("metrics",)``); ``None`` when
    they name none of them."""
    words = list(argv or ())
    if len(words) >= 2 and words[0] == "score":
        return ("score", words[1]) if words[1] in dict(SCORE_COMMANDS) else None
    if words and words[0] in dict(COMMANDS):
        return (words[0],)
    return None


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importlib.metadata takes 0.1 s)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        print(f"{parser.prog} {_version()}")  # on stdout, as argparse's own version action
        parser.exit()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("prefix-exec")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree without install
        return "unknown"


def os_error(exc: OSError) -> str:
    """One line for a file-system failure (read-only folder, full disk, a folder where a file goes)."""
    where = f" {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc)
    advice = {
        errno.ENOSPC: "free some disk space, then rerun with --resume",
        errno.EROFS: "choose an output in a writable folder",
        errno.EACCES: "check the permissions, or choose another output",
        errno.EISDIR: "pass a file path, not a folder",
        errno.EDQUOT: "free some quota, then rerun with --resume",
    }.get(exc.errno or 0, "check the path and the disk")
    return f"cannot access{where}: {reason}\n  hint: {advice}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting, for tests and embedding. Everything it prints goes
    through :func:`prefix_exec.terminal.escaping_output`: input's control characters are shown escaped."""
    with escaping_output():
        return _command(argv)


def _command(argv: Sequence[str] | None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # A lone surrogate in a name from a file is printed escaped, never a UnicodeEncodeError.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command == "score" and getattr(args, "workers", 1) is None:  # no --workers: what pays (sizing)
        from prefix_exec.scoring.pool.sizing import default_for
        from prefix_exec.scoring.pool.spawn import usable_cores

        ray = getattr(args, "launcher", "local") != "local"  # a cluster's actors: the cores, as before
        args.workers = usable_cores() if ray else default_for(list(argv), usable_cores())
    try:
        code: int = args.handler(args)
    except InputError as exc:
        # A message may quote a value from a file: a URL in it loses its credentials (prefix_exec.records.redaction).
        print(f"prefix-exec: error: {redact_text(exc.describe())}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(
            f"prefix-exec: error: an input file is not UTF-8 text ({exc.reason} at byte {exc.start})", file=sys.stderr
        )
        return 2
    except ModuleNotFoundError as exc:
        print(f"prefix-exec: error: {missing_message(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"prefix-exec: error: {os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("prefix-exec: interrupted; records written so far are kept (use --resume)", file=sys.stderr)
        return 130
    return code


def console() -> None:
    """Console-script entry point."""
    from prefix_exec.cli import common

    common.COMMAND_PROCESS = True
    start_workers(sys.argv[1:])
    code = main()
    leave_quickly()
    sys.exit(code)


def leave_quickly() -> None:
    """Spare the interpreter's collections at exit: it collects garbage again and again as it takes the modules
    apart, going through every object the imports made (measured on 2026-12-08: the exit of a Python that had
    imported what ``score transcripts`` imports took 45 ms, and 7 ms with the objects frozen; every command pays
    it). Everything this process writes is closed before this (the outputs by their ``with``); the interpreter
    still flushes stdout and stderr and runs the exit handlers (ending the workers started early)."""
    gc.freeze()  # the objects alive now are skipped by every later collection; refcounting still frees them


#: Modules a worker started early may import while it waits for its settings, by the ``score`` subcommand that
#: starts it (:func:`start_workers`): what unpickling its settings and environment would import anyway. Names never
#: come from input.
WARM: Final[dict[str, tuple[str, ...]]] = {
    "custom": ("prefix_exec.scoring.pool.worker", "prefix_exec.envs.custom.environment"),
    "transcripts": (
        "prefix_exec.scoring.pool.worker",
        "prefix_exec.envs.custom.environment",
        "prefix_exec.importers.transcripts",
    ),
    "traces": (
        "prefix_exec.scoring.pool.worker",
        "prefix_exec.envs.custom.environment",
        "prefix_exec.importers.transcripts",
    ),
    "bfcl": ("prefix_exec.scoring.pool.worker", "prefix_exec.envs.bfcl"),
    "tau": ("prefix_exec.scoring.pool.worker", "prefix_exec.envs.tau"),
    "toolsandbox": ("prefix_exec.scoring.pool.worker",),
    "inspect": ("prefix_exec.scoring.pool.worker",),
}


def start_workers(argv: Sequence[str]) -> None:
    """For ``score``, spawn now the worker processes it will start at once (``--workers``, by default what pays:
    :mod:`prefix_exec.scoring.pool.sizing`; none with ``--launcher ray``), so that their start (a Python start and
    the imports, about 0.3 s each) overlaps this process's instead of following it
    (:mod:`prefix_exec.scoring.pool.spawn`). ``argv`` is read before parsing: an option spelled otherwise (an
    abbreviation) is not seen, and a worker started for nothing (a usage error, a quick input) is ended at exit."""
    if len(argv) < 2 or argv[0] != "score" or any(arg in ("-h", "--help") for arg in argv):
        return
    from prefix_exec.scoring.pool.sizing import default_for
    from prefix_exec.scoring.pool.spawn import start_early, usable_cores

    options: dict[str, str] = {}
    for at, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if name in ("--workers", "--launcher"):
            options[name] = value if equals else (argv[at + 1] if at + 1 < len(argv) else "")
    if argv[1] not in WARM or options.get("--launcher", "local") != "local":
        return
    cores = usable_cores()
    wanted = options.get("--workers", "")
    # isdecimal and ASCII, not isdigit: '²' is a digit int() refuses; argparse then reports the bad value itself
    workers = (
        int(wanted) if wanted.isascii() and wanted.isdecimal() and len(wanted) <= 4 else default_for(list(argv), cores)
    )
    # the pool: this process replays too; forked, as nothing is imported yet (pool.spawn)
    start_early(min(workers, cores) - 1, WARM[argv[1]], pool=workers - 1, fork=True)
