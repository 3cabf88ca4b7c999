"""The guard's settings, shared by both transports (``prefix-exec guard --help`` documents each)."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from prefix_exec.errors import InputError

#: What the guard does with a call its checks reject: ``enforce`` answers it with a block and never forwards
#: it; ``observe`` forwards it anyway and records the verdict.
MODES = ("enforce", "observe")
#: Default bound on one request's wait for the server's answer, in seconds.
DEFAULT_CALL_TIMEOUT_S = 120.0
#: The environment variable a client configuration can set once instead of ``--episode``.
EPISODE_VARIABLE = "PREFIX_EXEC_GUARD_EPISODE"
#: Default bound on one message, in bytes (a client's line, a server's tools/call result, an HTTP body).
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class GuardOptions:
    """``mode``: one of :data:`MODES`. ``hooks``: the side file layered onto the server's tools (None: schema
    checks only). ``task``: the side file's task the connection plays (required when it declares ``tasks``).
    ``record``: the folder ``--record`` writes (None: nothing is written). ``call_timeout_s``: the longest wait
    for the server's answer to one request. ``max_message_bytes``: the largest message passed on.
    ``require_tools``: a connection without a tool call fails (``--require-tools``, as for ``score custom``).
    ``episode``: the episode key (``--episode``): connections with one key continue one rollout and one live state,
    across MCP sessions and guard processes, rebuilt from the record folder. ``model``: the records' model
    (``--model``; default: the client's name). ``allow_tools``/``deny_tools``: :meth:`offered`."""

    mode: str = "enforce"
    hooks: Path | None = None
    task: str | None = None
    record: Path | None = None
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    require_tools: bool = False
    episode: str | None = None
    model: str | None = None
    allow_tools: tuple[str, ...] | None = None
    deny_tools: tuple[str, ...] = ()
    #: ``--given FILE``'s text: what the user gave, heard as the connection's first message (guard.hearing).
    given: str | None = None

    def offered(self, name: str) -> bool:
        """Whether the tool ``name`` is offered through the guard (``--allow-tools``/``--deny-tools``: names or
        shell patterns, ``git_*``); a tool not offered is hidden from the listing and refused if called."""
        allowed = self.allow_tools is None or any(fnmatchcase(name, p) for p in self.allow_tools)
        return allowed and not any(fnmatchcase(name, p) for p in self.deny_tools)

    @property
    def enforce(self) -> bool:
        return self.mode == "enforce"


def given_text(path: str | None) -> str | None:
    """``--given FILE``'s text (:func:`prefix_exec.guard.hearing.read_given`), read now: a mistake is an exit 2."""
    from prefix_exec.guard.hearing import read_given

    return read_given(Path(path)) if path is not None else None


def checked_side_file(path: str | None, task: str | None) -> Path | None:
    """The side file, read and validated now, so a mistake is an exit 2 before any server starts."""
    if path is None:
        return None
    from prefix_exec.envs.custom.spec_layers import read_side_file

    side_path = Path(path)
    if not side_path.is_file():
        raise InputError("no such hooks file", path=side_path, hint="pass --hooks with a YAML or JSON file")
    side = read_side_file(side_path)
    tasks = side.get("tasks") or {}
    if tasks and task is None:
        raise InputError(
            f"the hooks file declares tasks ({', '.join(sorted(tasks)[:8])})",
            path=side_path,
            field="tasks",
            hint="pass --task with the task the guarded session plays",
        )
    if task is not None and task not in tasks:
        raise InputError(f"--task {task!r}: the hooks file declares no such task", path=side_path, field="tasks")
    return side_path
