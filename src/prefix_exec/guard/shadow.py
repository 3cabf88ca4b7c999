"""The guard's picture of one MCP connection: the environment built from the server's tools, and its live state.

The server's ``tools/list`` result is read into a spec exactly as ``score custom --tools LIST`` reads a saved
list (:func:`~prefix_exec.envs.custom.spec_formats.to_spec`), and the side file is layered on by the same function
``--hooks`` uses (:func:`envs.custom.environment.layered_environment`). A paginated listing is collected page
by page and read when its last page arrives; a listing equal to the current one changes nothing, and a
different one (the server's tools changed) keeps the session's state and produced values.

Per ``tools/call``: :meth:`Shadow.check` gives our checks' verdict on a fork, with no observation (the call has
not run); after the server answers, :meth:`Shadow.settle` steps the live session with the call and its
:class:`~prefix_exec.trajectory.Observation` (the text of the result's content blocks, or its
``structuredContent``, and ``isError``): the step offline replay takes for the same call from a log.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from prefix_exec.envs.custom.environment import layered_environment
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.envs.custom.session import CustomEnvironment, CustomSession
from prefix_exec.envs.custom.spec_formats import to_spec
from prefix_exec.errors import InputError, ReplayError
from prefix_exec.json_types import JsonMapping, JsonObject, JsonValue
from prefix_exec.replay import check, check_action
from prefix_exec.trajectory import Observation, ToolCall, Verdict

#: Most pages one listing may have (a server whose cursors never end is refused, not followed forever).
MAX_PAGES = 100


class Shadow:
    """The environment and live session of one MCP connection.

    ``tools_from`` names where the tools came from in messages (the ``tools.json`` the journal writes, or the
    server's command). ``hooks`` is the side file, ``task`` the side file's task (``None``: its only one).
    Until a complete listing arrives, :attr:`session` is ``None``; when the side file does not fit the
    server's tools, :attr:`problem` holds the error and no call can be checked.
    """

    def __init__(
        self, tools_from: Path, *, hooks: Path | None = None, task: str | None = None, require_tools: bool = False
    ) -> None:
        self.tools_from, self.hooks, self.task = tools_from, hooks, task
        #: How the server's answers count (MCP's isError is the flag; ``require_tools``: a connection without calls).
        self.policy = EvidencePolicy(require_tools=require_tools)
        self.env: CustomEnvironment | None = None
        self.session: CustomSession | None = None
        self.problem: InputError | None = None
        #: The raw MCP tools of the last complete listing, in the server's order.
        self.tools: list[JsonObject] = []
        #: How many different listings were read (a journal saves ``tools`` when it changes).
        self.listings = 0
        #: An episode's earlier calls (``--episode``), stepped into the session when it is first built.
        self.replay: list[ToolCall] = []
        #: What the connection heard of the conversation (:mod:`prefix_exec.guard.hearing`), message N at index N.
        self.said: list[str] = []
        self._pages: list[JsonObject] = []
        self._page_count = 0

    @property
    def ready(self) -> bool:
        """True when calls can be checked (a listing was read and the side file fits it)."""
        return self.session is not None and self.problem is None

    def begin_listing(self) -> None:
        """A ``tools/list`` request without a cursor: a new listing starts."""
        self._pages, self._page_count = [], 0

    def add_page(self, result: JsonMapping) -> bool:
        """One ``tools/list`` result page; True when it was the last (and the listing has been read)."""
        tools = result.get("tools")
        if isinstance(tools, list):
            self._pages.extend(t for t in tools if isinstance(t, dict))
        self._page_count += 1
        more = result.get("nextCursor") is not None
        if more and self._page_count < MAX_PAGES:
            return False
        listing, self._pages, self._page_count = self._pages, [], 0
        if more:  # a listing cut short would refuse the tools past it as unknown: fail closed, saying why
            self.tools, self.env, self.session = listing, None, None
            self.problem = InputError(
                f"the server's tools/list went past {MAX_PAGES} pages",
                path=self.tools_from,
                hint="a server whose cursors never end cannot be guarded; check the server",
            )
            return True
        self.adopt(listing)
        return True

    def adopt(self, tools: list[JsonObject]) -> None:
        """Read a complete tools list: (re)build the environment unless it is the current one."""
        if tools == self.tools and (self.session is not None or self.problem is not None):
            return
        self.tools = tools
        self.listings += 1
        try:
            data, form = to_spec({"tools": tools}, path=self.tools_from)
            env = layered_environment(data, self.tools_from, form=form, hooks=self.hooks, policy=self.policy)
            session = _start(env, self.task)
        except InputError as exc:
            self.problem, self.env, self.session = exc, None, None
            return
        if self.session is not None:  # the server's tools changed: the state so far carries over
            old = self.session
            session.state, session.produced, session.heard = old.state, old.produced, old.heard
        else:  # what was heard so far, then an episode's earlier calls, stepped as replay steps them
            for index, text in enumerate(self.said):
                session.hear(index, text)
            for call in self.replay:
                try:
                    check_action(session, call)
                except (InputError, ReplayError):  # a hook that fails on a recorded call: it fails live too
                    continue
        self.problem, self.env, self.session = None, env, session

    def hear(self, text: str) -> None:
        """The conversation said ``text`` (:mod:`prefix_exec.guard.hearing`): its values satisfy later ``refs``."""
        self.said.append(text)
        if self.session is not None:
            self.session.hear(len(self.said) - 1, text)

    def check(self, call: ToolCall) -> Verdict:
        """Our checks' verdict on ``call`` in the current state (on a fork); needs :attr:`ready`."""
        assert self.session is not None
        return check(self.session, call)

    def settle(self, call: ToolCall, observation: Observation) -> Verdict:
        """Step the live session with ``call`` and the server's answer; returns the step's verdict."""
        assert self.session is not None
        return check_action(self.session, replace(call, observation=observation))

    def finish_without_tools(self) -> Verdict:
        """The verdict on a connection that made no tool call (the terminal no-tool action)."""
        if self.session is None:
            return Verdict.accept(notes=("no tool was listed or called",))
        return self.session.finish_without_tools()


def _start(env: CustomEnvironment, task: str | None) -> CustomSession:
    if task is None and env.tasks:
        raise InputError(
            f"the hooks file declares tasks ({', '.join(sorted(env.tasks)[:8])}) and no task was chosen",
            hint="pass --task with the task this session plays",
        )
    try:
        return env.start(task or "")
    except KeyError:
        raise InputError(
            f"no task {task!r} in the hooks file", hint=f"its tasks are: {', '.join(sorted(env.tasks)[:12])}"
        ) from None


def call_of(params: JsonMapping | None, call_id: str) -> ToolCall:
    """The :class:`ToolCall` of a ``tools/call`` request's params (turn 0: a proxy sees no user turns). A name
    that is not a string or arguments that are not an object make a call with a ``parse_error``, which every
    check rejects as ``schema``."""
    params = params or {}
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str):
        return ToolCall(str(name), {}, call_id=call_id, parse_error="params.name is not a string")
    if arguments is not None and not isinstance(arguments, dict):
        problem = f"params.arguments is a {type(arguments).__name__}, not an object"
        return ToolCall(name, {}, call_id=call_id, parse_error=problem)
    return ToolCall(name, arguments or {}, call_id=call_id)


def observation_of(result: JsonMapping) -> Observation:
    """A ``tools/call`` result as the call's observation: its ``structuredContent`` when present, else the text
    of its content blocks; ``error`` is ``isError``."""
    structured = result.get("structuredContent")
    content: JsonValue = structured if structured is not None else content_text(result.get("content"))
    return Observation(content, error=bool(result.get("isError", False)))


def content_text(blocks: Any) -> str:
    """The text of MCP content blocks, one per line; a block that is not text is named by its kind and type
    (``[image image/png]``), a resource by its text or URI."""
    if not isinstance(blocks, list):
        return ""
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            parts.append(str(resource.get("text") or f"[resource {resource.get('uri', '')}]"))
        else:
            parts.append(f"[{kind} {block.get('mimeType') or block.get('uri') or ''}]".replace(" ]", "]"))
    return "\n".join(parts)
