"""Shared by the runner tests: the scripted OpenAI-protocol server playing the ticketing example."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes import ticketing_agent
from fakes.openai_server import ScriptedServer


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(ticketing_agent.respond) as s:
        yield s
