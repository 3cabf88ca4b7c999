"""A small MCP server on the official SDK (``MCPServer``), for the guard's tests: notes with ids.

``create_note(text)`` returns ``{"note_id": "N-<n>", "text"}`` (structured content, and the same JSON as text),
``append_note(note_id, text)`` and ``delete_note(note_id)`` fail (``isError``) on an id that does not exist,
``list_notes()`` lists them. State lives in the process, so each server process (each session) starts empty.

Run as a script: stdio by default; ``--http`` serves Streamable HTTP at ``/mcp`` on a free loopback port and
prints ``PORT <n>`` on stdout when it listens.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes", version="1.0")
_notes: dict[str, str] = {}


@server.tool()
def create_note(text: str) -> dict[str, Any]:
    """Create a note; returns its id."""
    note_id = f"N-{len(_notes) + 1}"
    _notes[note_id] = text
    return {"note_id": note_id, "text": text}


@server.tool()
def append_note(note_id: str, text: str) -> dict[str, Any]:
    """Append text to an existing note."""
    if note_id not in _notes:
        raise ValueError(f"no note {note_id}")
    _notes[note_id] += text
    return {"note_id": note_id, "text": _notes[note_id]}


@server.tool()
def delete_note(note_id: str) -> dict[str, Any]:
    """Delete a note."""
    if note_id not in _notes:
        raise ValueError(f"no note {note_id}")
    del _notes[note_id]
    return {"deleted": note_id}


@server.tool()
def list_notes() -> dict[str, Any]:
    """Every note, by id."""
    return {"notes": dict(_notes)}


def main() -> None:
    if "--http" not in sys.argv:
        server.run()
        return
    import anyio
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
