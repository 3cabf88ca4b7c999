"""One guarded MCP connection: its shadow (environment and live state), its log, and where the log is saved."""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError
from prefix_exec.guard.hearing import MAX_HEARD_MESSAGES, Elicitations
from prefix_exec.guard.journal import Journal
from prefix_exec.guard.log import ConnectionLog
from prefix_exec.guard.options import GuardOptions
from prefix_exec.guard.shadow import Shadow
from prefix_exec.json_types import JsonObject
from prefix_exec.records.codec import rollout_from_json


@dataclass
class GuardedConnection:
    """``shadow`` checks and steps the calls, ``log`` keeps them; :meth:`save` hands the log to the journal
    (when there is one). ``dataset`` names the rollouts (default: the server's name, else ``mcp``)."""

    shadow: Shadow
    log: ConnectionLog
    journal: Journal | None = None
    dataset: str | None = None
    _listings_saved: int = 0
    elicitations: Elicitations = field(default_factory=Elicitations)

    def hear(self, text: str, source: str) -> None:
        """The conversation said ``text`` (:mod:`prefix_exec.guard.hearing`): the live state and the record hear it,
        up to :data:`~prefix_exec.guard.hearing.MAX_HEARD_MESSAGES` messages (later ones are counted, not heard)."""
        if len(self.shadow.said) >= MAX_HEARD_MESSAGES:
            unheard = self.log.info.get("unheard")
            self.log.info["unheard"] = (unheard if isinstance(unheard, int) else 0) + 1
            return
        self.shadow.hear(text)
        self.log.hear(text, source)

    def from_client(self, message: Any) -> None:
        """A message the client sends that answers the server: an accepted elicitation's values are heard."""
        text = self.elicitations.answered(message)
        if text is not None:
            self.hear(text, "elicitation")

    def save(self) -> None:
        if self.journal is None:
            return
        if self.shadow.listings != self._listings_saved:
            self._listings_saved = self.shadow.listings
            self.journal.add_tools(self.shadow.tools)
        server = self.log.info.get("server")
        name = server.get("name") if isinstance(server, dict) else None
        no_tool = None if self.log.actions else self.shadow.finish_without_tools()
        self.journal.update(self.log.snapshot(self.dataset or str(name or "mcp"), no_tool))

    def finish(self) -> None:
        """The connection ended: save it, and derive the record folder's files (``rollouts.jsonl``, ...)."""
        self.save()
        if self.journal is not None:
            self.journal.derive()


def new_connection(
    options: GuardOptions,
    journal: Journal | None,
    *,
    transport: str,
    origin: JsonObject,
    connection_id: str | None = None,
    dataset: str | None = None,
) -> GuardedConnection:
    """A fresh guarded connection. ``origin`` says where the server is (``{"command": [...]}`` with its secrets
    removed, or ``{"upstream": URL}``); ``connection_id`` is the MCP session id (MCP's own name for it) where
    the transport has one.

    The rollout's task is the connection (its id), or with ``--task`` that task of the side file, in a trial of
    its own (:meth:`Journal.trial_for`), so ``score custom`` replays it on that task.
    """
    sid = connection_id or f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}"
    tools_from = journal.tools_path if journal is not None else Path("tools.json")
    shadow = Shadow(tools_from, hooks=options.hooks, task=options.task, require_tools=options.require_tools)
    info: JsonObject = {"mode": options.mode, "transport": transport, **origin, "session": sid}
    if options.require_tools:
        info["require_tools"] = True
    earlier = None
    if options.episode is not None and journal is not None:
        info["episode"] = options.episode
        earlier = journal.episode(options.episode)
    task_id, trial = sid if options.episode is None else options.episode, 0
    if options.task is not None:
        task_id = info["task"] = options.task
        trial = journal.trial_for(options.task) if journal is not None and earlier is None else 0
    log = ConnectionLog(task_id, method=f"guard-{options.mode}", info=info, trial=trial)
    log.model_name = options.model
    if earlier is not None:  # the episode goes on: its rollout continues, and its state is replayed at the listing
        try:
            actions = list(rollout_from_json(json.loads(earlier.lines()[0])).actions)
        except InputError as exc:
            raise InputError(
                f"episode {options.episode!r} cannot be continued: its journal holds a call this guard cannot read "
                f"({exc.describe()})",
                path=options.record,
                hint="start a new episode key, or remove the episode's lines from DIR/journal/",
            ) from None
        log.resume(earlier, actions)
        shadow.replay = actions
        heard = log.info.get("heard")
        shadow.said = [str(h.get("text", "")) for h in heard if isinstance(h, dict)] if isinstance(heard, list) else []
    connection = GuardedConnection(shadow, log, journal, dataset)
    if options.given is not None and options.given not in shadow.said:  # an episode heard it in its first session
        connection.hear(options.given, "--given")
    return connection
