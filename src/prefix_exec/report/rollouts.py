"""The drill-down part of ``report.html``: every rollout of every condition, grouped by first-failure label.

The page holds, per condition, a static skeleton (``<section id="c<i>">`` with its sticky header and one
``<div id="c<i>-<label>">`` per label group, so every table link lands) and the condition's rollouts as
gzip-compressed JSON in base64, which the page's script decompresses (``DecompressionStream``) and renders
only when the condition is opened or searched. That keeps the file near 1 KB per rollout and quick to open
at 10,000 rollouts; it is still one offline file.

Payload of a condition: a JSON list in the order of :func:`group_records` (position j is the anchor
``c<i>-r<j>``), one list per rollout::

    [task_id, trial, fed, T, label or "", success (null: not recorded), reason, metadata text, actions]

and one list per action: ``[turn, tool, arguments text, verdict]`` where ``verdict`` is ``0`` (not replayed),
``[1, notes]`` (accepted) or ``[0, label, causes, reason]`` (rejected). Texts are clipped at :data:`CLIP`
characters. The script renders the first rejected call highlighted (``tr.fail``) with its label and reason,
and the actions after it (never replayed: replay stops at the first rejection) greyed (``tr.after``) under a
line saying how the rollout ended, so recovery is visible.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from prefix_exec.analysis.selection import Condition
from prefix_exec.analysis.summary import ConditionSummary
from prefix_exec.records import infrastructure
from prefix_exec.report.layout import Anchors
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict

#: Longest text kept for one argument list, result or reason (characters).
CLIP = 400
#: The label groups in page order: the five labels in tie-break order, the rollouts an infrastructure failure ended
#: (kept with --keep-infrastructure-failures: apart from the five), the fully executable ones.
GROUP_ORDER = (*(label.value for label in FailureLabel), infrastructure.LABEL, None)


def _clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``task_9`` before ``task_10``."""
    return tuple((0, int(part)) if part.isdecimal() else (1, part) for part in re.split(r"(\d+)", text) if part)


def group_records(records: Iterable[PrefixRecord]) -> dict[Condition, list[PrefixRecord]]:
    """Records per condition, ordered by label group (labels in tie-break order, executable last), then
    task id (numbers in numeric order) and trial. The position in this list is the rollout's anchor index."""
    groups: dict[Condition, list[PrefixRecord]] = defaultdict(list)
    for r in records:
        groups[r.condition].append(r)
    for rows in groups.values():
        rows.sort(key=lambda r: (GROUP_ORDER.index(infrastructure.record_label(r)), natural(r.task_id), r.trial))
    return groups


def _verdict(verdict: Verdict | None) -> Any:
    if verdict is None:
        return 0
    if verdict.accepted:
        return [1, ", ".join(verdict.notes)]
    label = verdict.label.value if verdict.label else "?"
    return [0, label, ", ".join(c.value for c in verdict.causes), _clip(verdict.reason)]


def _action(call: ToolCall | None, verdict: Verdict | None) -> list[Any]:
    if call is None:
        return ["", "(no tool call: terminal action)", "", _verdict(verdict)]
    args = call.raw if call.parse_error and call.raw else _json(dict(call.arguments))
    if call.parse_error:
        args += f"  [parse error: {call.parse_error}]"
    return [str(call.turn), call.name, _clip(args), _verdict(verdict)]


def rollout_row(record: PrefixRecord) -> list[Any]:
    """One rollout as the payload's list (module docstring). One an infrastructure failure ended shows that
    label and its text, on the rollout and on its first rejected call (whose causes and reason are replay's)."""
    meta = "; ".join(f"{k}={_json(v)}" for k, v in record.metadata.items())
    calls: Sequence[ToolCall | None] = record.actions or [None]
    actions = [_action(call, record.verdicts[i] if i < len(record.verdicts) else None) for i, call in enumerate(calls)]
    label, reason = infrastructure.record_labelled(record)
    failing = actions[record.fed - 1][3] if not record.executable else None
    if label == infrastructure.LABEL and isinstance(failing, list):  # the system's: none of the five is shown
        failing[1:] = [label, "", f"what replay saw ({failing[2]}, not counted): {failing[3]}"]
    return [
        record.task_id,
        record.trial,
        record.fed,
        record.T,
        label or "",
        record.success,
        _clip(reason or ""),
        _clip(meta),
        actions,
    ]


def payload(records: Sequence[PrefixRecord]) -> str:
    """A condition's rollouts (already in :func:`group_records` order) as base64 of gzip of JSON.

    Deterministic: gzip's header time is 0."""
    text = json.dumps([rollout_row(r) for r in records], ensure_ascii=False, separators=(",", ":"))
    data = text.encode("utf-8", "backslashreplace")  # a lone surrogate becomes a JSON \\u escape
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


def decode(data: str) -> list[list[Any]]:
    """The inverse of :func:`payload` (for tests and tools that read a report)."""
    rows: list[list[Any]] = json.loads(gzip.decompress(base64.b64decode(data)).decode("utf-8"))
    return rows


def condition_section(c: ConditionSummary, records: Sequence[PrefixRecord], anchors: Anchors) -> str:
    """``<section class="cond" id="c<i>">``: a sticky header and one ``<div id="c<i>-<label>">`` per label
    group present, each with an empty ``.items`` box the script fills from the payload."""
    e = html.escape
    cond = c.condition
    parts = [
        f'<section class="cond" id="{anchors.condition(cond)}">',
        f'<h3>Rollouts: {e(c.dataset)} / {e(c.model)} / {e(c.method)} <span class="muted">'
        f"({c.N} rollouts, {c.N - sum(c.labels.values())} fully executable)</span></h3>",
    ]
    counts: dict[str | None, int] = defaultdict(int)
    for r in records:
        counts[infrastructure.record_label(r)] += 1
    for label in GROUP_ORDER:
        if label not in counts:
            continue
        title = f"first failure: {label}" if label else "fully executable"
        if label == infrastructure.LABEL:
            title = "ended by an infrastructure failure (the system's, not the agent's)"
        parts.append(
            f'<div class="group" id="{anchors.label(cond, label)}"><h4>{e(title)} ({counts[label]})</h4>'
            '<div class="items"></div></div>'
        )
    parts.append("</section>")
    return "".join(parts)
