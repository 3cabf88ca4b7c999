"""Rollouts on a tool spec: what ``score custom``, ``score transcripts`` (``score openai``) and ``score inspect``'s
generic path score, and the run they share.

- :func:`read_units`: canonical rollouts (JSONL), each with its trial;
- :func:`spec_within`: a spec (``--tools`` with ``--hooks``) loaded within the rollout budget, and
  :func:`schema_only_note`, what to say when it declares schemas only;
- :func:`score_on_spec`: the scoring run, with the consistency report of our checks against the recorded outcomes
  (:func:`spec_consistency`, :func:`write_consistency`).

The options these take and what reads them are the command line's (:mod:`prefix_exec.cli.spec_options`); the
commands' modules parse, call these, and print the run's last lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TextIO

from prefix_exec import budget
from prefix_exec.envs.custom import evidence
from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.envs.custom.session import CustomEnvironment
from prefix_exec.envs.custom.spec_formats import FORM_NAMES
from prefix_exec.errors import InputError
from prefix_exec.importers.trials import FROM_INPUT, TrialError, TrialRule, trial_fields
from prefix_exec.records.codec import read_records, rollout_from_json
from prefix_exec.records.consistency import Consistency
from prefix_exec.records.jsonl import iter_json_lines
from prefix_exec.scoring.run import ScoreOptions, ScoreReport, score_to_file
from prefix_exec.scoring.units import ScoringUnit
from prefix_exec.trajectory import Rollout, Skipped


def read_units(
    paths: list[str],
    *,
    keep_going: bool,
    model: str | None,
    method: str | None,
    trials: TrialRule = FROM_INPUT,
) -> Iterator[Rollout | Skipped]:
    """Rollouts from canonical JSONL, their trial from ``trials`` (a path into the row; its own ``trial`` by
    default); with ``keep_going`` a malformed row becomes a ``Skipped``."""
    for path in paths:
        for number, data in iter_json_lines(path, tolerant=keep_going):
            try:
                if isinstance(data, InputError):
                    raise data
                rollout = rollout_from_json(data, path=path, line=number)
                try:
                    rollout = replace(rollout, **trial_fields(trials.read(data)))
                except TrialError as bad:
                    raise bad.input_error(path=path, line=number) from None
            except InputError as exc:
                if not keep_going:
                    raise
                yield Skipped(f"{path}:{number}", exc.detail())
                continue
            if model or method:
                rollout = replace(rollout, model=model or rollout.model, method=method or rollout.method)
            yield rollout


def spec_consistency(policy: EvidencePolicy) -> Consistency:
    """The consistency collector of the generic environment: our checks against the recorded outcomes."""
    return Consistency(partial(evidence.compare_custom, policy=policy), theirs="recorded outcome")


def write_consistency(
    consistency: Consistency, path: str, *, out: str, resume: bool, always: bool, log: TextIO
) -> None:
    """Write ``consistency``'s report to ``path`` (saying what it holds on ``log``) when a call had a recorded
    outcome or ``always`` (a path the user gave); with ``resume`` every record of the output ``out`` is compared
    again first (the kept ones were scored by an earlier run)."""
    if resume and Path(out).is_file():
        consistency.compare_again(read_records(out))
    if consistency.calls or always:
        consistency.write(path, log)


def score_on_spec(
    units: Iterable[ScoringUnit],
    out: str,
    *,
    policy: EvidencePolicy,
    desc: str,
    inputs: list[str | Path],
    report_path: str,
    report_always: bool,
    options: ScoreOptions,
    log: TextIO,
    total: int | None = None,
) -> ScoreReport:
    """Score ``units`` into ``out`` (``score_to_file`` with ``options``, the command's output options), write
    the consistency report to ``report_path`` (:func:`write_consistency`, comparing by ``policy``, the one the
    environments were built with; ``report_always``: even when no call had a recorded outcome) and return what
    the run did (the command says it and picks its exit code)."""
    consistency = spec_consistency(policy)
    report = score_to_file(units, out, total=total, desc=desc, on_record=consistency, inputs=inputs, options=options)
    write_consistency(consistency, report_path, out=out, resume=options.resume, always=report_always, log=log)
    return report


def schema_only_note(env: CustomEnvironment, path: str | Path) -> str | None:
    """The note that only schema checks apply, when the spec read from ``path`` declares no refs or hooks (else
    ``None``)."""
    if not env.schema_only:
        return None
    return (
        f"prefix-exec: note: {path} ({FORM_NAMES[env.form]}) declares argument schemas only: only schema checks "
        "apply (tool names, turn exposure, arguments); layer refs and hooks with --hooks (docs/custom.md)"
    )


def unlisted_note(env: CustomEnvironment, path: str | Path) -> str | None:
    """The warning that the hooks side file names tools the MCP listing at ``path`` lacks (their entries wait,
    :func:`~prefix_exec.envs.custom.spec_layers.split_unlisted`), else ``None``."""
    if not env.unlisted:
        return None
    names = ", ".join(repr(n) for n in env.unlisted[:12]) + (", ..." if len(env.unlisted) > 12 else "")
    return (
        f"prefix-exec: warning: the hooks side file names tools {path} does not list: {names}; their rules are not "
        "applied, and a call to them is refused as an unknown tool (schema). Check the names if these tools exist"
    )


def spec_within(tools: str, hooks: str | None, policy: EvidencePolicy, seconds: float) -> CustomEnvironment:
    """The environment of the spec at ``tools`` (with the side file ``hooks``), loaded within ``seconds`` (the
    rollout budget): compiling a spec's schemas is bounded work (:mod:`envs.custom.json_schema`), and a spec that
    still takes longer is refused (an :class:`InputError`)."""
    try:
        with budget.rollout_budget(seconds, 0):
            return load_spec(tools, hooks=hooks, policy=policy)
    except budget.OverBudget:
        raise InputError(
            f"the tool spec could not be loaded within --rollout-budget {seconds:g} s",
            path=tools,
            hint="its schemas are too costly to compile; simplify them, or raise --rollout-budget",
        ) from None
