"""tau-bench results (sierra-research/tau-bench, the first tau-bench), read into the common form.

A results file is a JSON list of ``{"task_id", "reward", "info", "traj", "trial"}``: ``traj`` holds the
conversation as OpenAI Chat messages (read by :mod:`.openai_chat`), ``reward`` is Y by the tau rule (1 when
it is 1 within 1e-9, else 0), ``task_id`` and ``trial`` identify the run. The record names no model: give
``--model``. Tool replies carry no error flag; tau-bench's environment answers a refused call with text that
begins ``Error:``, which the evidence policy reads (not this reader).
"""

from __future__ import annotations

from prefix_exec.importers.transcripts.decoder import Fail, Message
from prefix_exec.importers.transcripts.openai_chat import read_messages
from prefix_exec.json_types import JsonMapping

NAME = "tau-bench"
LABEL = "tau-bench results"


def read(record: JsonMapping, fail: Fail) -> list[Message]:
    """The record's ``traj`` in the common form."""
    return read_messages(record, fail, key="traj")
