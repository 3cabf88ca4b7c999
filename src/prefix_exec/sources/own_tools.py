"""Conversations scored on the tools lists they carry (no ``--tools``): ``score transcripts``' conversations and
``score inspect``'s samples of other tasks.

:class:`OwnLists` pairs each rollout with the environment of its own list, one per distinct list (by its digest,
:func:`~prefix_exec.importers.transcripts.tools_digest`): an
:class:`~prefix_exec.envs.custom.environment.OwnTools`, built when its first rollout is replayed (inside that
rollout's budget; a list that cannot be built is that rollout's input error) and, pickled as the list, once in each
worker process. Each rollout's metadata says so: ``spec_note`` (schema checks only) and ``tools_digest``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import Any

from prefix_exec.envs.custom.environment import OwnTools
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.errors import InputError
from prefix_exec.importers.transcripts import Transcript, tools_digest
from prefix_exec.json_types import JsonObject
from prefix_exec.scoring.units import Scorable
from prefix_exec.trajectory import Rollout

#: The records' ``spec_note`` of a conversation scored on its own tools list (``score transcripts``, ``score traces``).
SCHEMA_ONLY_NOTE = "schema checks only: the conversation's own tools list served as the spec (no --tools)"


@dataclass
class OwnLists:
    """The environments of the tools lists one run met, by digest (``lists``), built under ``policy``; ``note``
    is the records' ``spec_note``."""

    policy: EvidencePolicy
    note: str
    lists: dict[str, OwnTools] = field(default_factory=dict)

    def pair(self, rollout: Rollout, tools: Any, where: JsonObject) -> Scorable:
        """``rollout`` with the environment of ``tools`` (an OpenAI or MCP tools list; ``[]`` declares none), its
        metadata saying so. ``where`` names the list in the errors and the no-tool rule (the keywords of
        :func:`~prefix_exec.envs.custom.environment.environment_from_tools` but ``tools`` and ``policy``); it is
        kept with the first rollout of each list."""
        digest = tools_digest(tools)
        if digest not in self.lists:  # one per distinct list, so that a worker process builds each once
            self.lists[digest] = OwnTools(tools, where, self.policy)
        metadata = {**rollout.metadata, "spec_note": self.note, "tools_digest": digest}
        return Scorable(replace(rollout, metadata=metadata), self.lists[digest])

    def pair_transcript(self, item: Transcript) -> Scorable:
        """A conversation read (``score transcripts``, ``score traces``) with the environment of its own tools
        list (:meth:`pair`). A conversation with no tools list and no tool call is scored on an empty list (one
        no-tool action, allowed as for any tools-list spec); one with calls but no list raises
        :class:`InputError`: there is nothing to check its calls against. The first pairing says on stderr that
        only schema checks apply."""
        tools = item.tools
        if tools is None and not item.rollout.actions:
            tools = []
        if tools is None:
            raise InputError(
                "no --tools was given and this conversation carries no 'tools' list of its own: there is nothing to "
                "check its tool calls against",
                path=item.path,
                line=item.line,
                field=item.prefix + "tools",
                hint="pass --tools SPEC (the tool list offered, or our spec)",
            )
        first = not self.lists
        where: JsonObject = {"name": item.rollout.dataset, "path": item.path, "line": item.line, "prefix": item.prefix}
        unit = self.pair(item.rollout, tools, where)
        if first:  # said once, when the first conversation is checked against its own list (not before it is read)
            print(
                "prefix-exec: note: no --tools: each conversation's own tools list is its spec, so only schema checks "
                "apply (tool names, arguments); the records say so in metadata.spec_note",
                file=sys.stderr,
            )
        return unit
