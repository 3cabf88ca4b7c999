"""Conversations scored on the tools lists they carry (no ``--tools``): ``score transcripts``' conversations and
``score inspect``'s samples of other tasks.

:class:`OwnLists` pairs each rollout with the environment of its own list, one per distinct list (by its digest,
:func:`~prefix_exec.importers.transcripts.tools_digest`): an
:class:`~prefix_exec.envs.custom.environment.OwnTools`, built when its first rollout is replayed (inside that
rollout's budget; a list that cannot be built is that rollout's input error) and, pickled as the list, once in each
worker process. Each rollout's metadata says so: ``spec_note`` (schema checks only) and ``tools_digest``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from prefix_exec.envs.custom.environment import OwnTools
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.importers.transcripts import tools_digest
from prefix_exec.json_types import JsonObject
from prefix_exec.scoring.units import Scorable
from prefix_exec.trajectory import Rollout


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
