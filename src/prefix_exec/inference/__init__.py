"""Spec inference: a ``--hooks`` side file (``refs``, ``produces``, ``invalidates``) from logs alone.

A tools list says only schemas; which argument must hold a value an earlier call produced is what the logs show.
The parts, in the order data flows:

- :mod:`.corpus`: every form prefix-exec reads (transcripts, tau2 results, inspect logs, canonical rollouts) as
  conversations: user and system messages among the tool calls and their recorded replies;
- :mod:`.values`: where values sit in arguments and results (paths, written as the side file writes them), and which
  could be ids;
- :mod:`.evidence`: one pass over the corpus, bounded: for each argument, where its values came from (an earlier
  result's path, a message of the conversation, nowhere), and for each result path, what it produced;
- :mod:`.names`: what names and schemas say (RESTler-style priors): ``reservation_id`` and a result's
  ``reservation_id`` or ``reservations[*]`` stand for one kind, an ``enum`` or a date is a plain value;
- :mod:`.candidates`: the decisions, each with its rule and reason: references, kinds, productions, invalidations;
- :mod:`.side_file`: the YAML text, every entry under its evidence; :mod:`.explain`: ``--explain TOOL.ARG``.

:func:`infer_spec` runs them all. ``docs/custom.md`` ("Inferring a side file") says what a user runs, what the
thresholds mean, what inference cannot know, and what it gave on real logs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.inference.candidates import DEFAULTS, Inferred, Thresholds, infer
from prefix_exec.inference.corpus import read_corpus
from prefix_exec.inference.evidence import DEFAULT_MAX_VALUES, Evidence
from prefix_exec.inference.side_file import Header, side_file
from prefix_exec.trajectory import Skipped


@dataclass(frozen=True)
class Options:
    """How to infer: the form of the files (``auto``: per file), the ``--tools`` spec (``None``: the
    conversations' own lists), which replies are errors (``policy``) and whether errors count at all (``errors``),
    the thresholds, the cap on distinct values per argument, and ``keep_going`` (a bad record skipped, not fatal)."""

    form: str = "auto"
    tools: str | Path | None = None
    policy: EvidencePolicy = field(default_factory=EvidencePolicy)
    errors: bool = True
    thresholds: Thresholds = DEFAULTS
    max_values: int = DEFAULT_MAX_VALUES
    keep_going: bool = False


@dataclass(frozen=True)
class Result:
    """What :func:`infer_spec` found: the decisions, the evidence behind them, the records skipped, and the side
    file's text."""

    inferred: Inferred
    evidence: Evidence
    skipped: tuple[Skipped, ...]
    text: str


#: How often :func:`infer_spec` tells its ``on_count``: every this many conversations.
COUNT_EVERY = 10_000


def infer_spec(
    paths: Sequence[Path],
    options: Options = Options(),
    *,
    on_file: Callable[[Path, str], None] | None = None,
    on_count: Callable[[Evidence], None] | None = None,
) -> Result:
    """Read ``paths``, collect the evidence, decide, and write the side file's text (module docstring).
    ``on_file(path, form)`` is told each file before it is read, ``on_count(evidence)`` every :data:`COUNT_EVERY`
    conversations. Raises :class:`~prefix_exec.errors.InputError` on a file that cannot be read (without
    ``keep_going``) or a ``--tools`` spec that does not load."""
    schemas = _schemas(options.tools) if options.tools is not None else None
    evidence = Evidence(options.policy, errors=options.errors, max_values=options.max_values)
    skipped: list[Skipped] = []
    for item in read_corpus(paths, options.form, keep_going=options.keep_going, on_file=on_file):
        if isinstance(item, Skipped):
            skipped.append(item)
            continue
        evidence.add(item)
        if on_count is not None and evidence.conversations % COUNT_EVERY == 0:
            on_count(evidence)
    inferred = infer(evidence, schemas, options.thresholds)
    text = side_file(inferred, evidence, Header(len(paths), options.thresholds, options.errors))
    return Result(inferred, evidence, tuple(skipped), text)


def _schemas(tools: str | Path) -> dict[str, Any]:
    """Each tool of a ``--tools`` spec with its argument schema."""
    env = load_spec(tools)
    return {name: spec.parameters for name, spec in env.tools.items()}
