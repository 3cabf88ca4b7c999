"""Two small inspect tasks of no benchmark prefix-exec knows, for ``score inspect``'s generic path
(tests/fakes/inspect_logs.py runs them with ``inspect eval``; this file is loaded by inspect, never by pytest).

- ``notes``: a note-taking tool set (``create_note`` returns ``{"note_id": "N-1"}``; ``append_note`` raises
  inspect's ``ToolError`` for any other id, which inspect records as a ``ToolCallError``); one sample uses the
  tools, one answers without a call;
- ``qa``: a question answered in text, with no tool offered at all (the model events' tool list is empty).
"""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import Tool, ToolError, tool


@tool
def create_note() -> Tool:
    async def execute(text: str) -> str:
        """Create a note.

        Args:
          text: The note's text.
        """
        return '{"note_id": "N-1"}'

    return execute


@tool
def append_note() -> Tool:
    async def execute(note_id: str, text: str) -> str:
        """Append text to a note.

        Args:
          note_id: The note's id.
          text: The text to append.
        """
        if note_id != "N-1":
            raise ToolError(f"note {note_id} not found")
        return "appended"

    return execute


@task
def notes() -> Task:
    samples = [
        Sample(id="write", input="Make a note saying hi, then add 'bye' to it.", target="done"),
        Sample(id="ask", input="What is two plus two?", target="4"),
    ]
    return Task(dataset=samples, solver=[use_tools(create_note(), append_note()), generate()], scorer=includes())


@task
def qa() -> Task:
    return Task(
        dataset=[Sample(id="q1", input="What is two plus two?", target="4")], solver=[generate()], scorer=includes()
    )
