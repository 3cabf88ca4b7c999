"""The drill-down part of ``report.html``: every rollout of every condition, grouped by first-failure label.

Each rollout is a ``<details>`` element listing its actions in order. The first rejected call is highlighted
with its label and the verdict's reason; the actions after it (never replayed: replay stops at the first
rejection) are shown as the recovery part of the rollout, with the benchmark's final success.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from prefix_exec.report.layout import Anchors
from prefix_exec.summary import Condition, ConditionSummary
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict

#: Longest text shown for one argument list, result or reason (characters).
CLIP = 400
GROUP_ORDER = (*(label.value for label in FailureLabel), None)


def _clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``task_9`` before ``task_10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def group_records(records: Iterable[PrefixRecord]) -> dict[Condition, list[PrefixRecord]]:
    """Records per condition, ordered by label group (labels in tie-break order, executable last), then
    task id (numbers in numeric order) and trial. The position in this list is the rollout's anchor index."""
    groups: dict[Condition, list[PrefixRecord]] = defaultdict(list)
    for r in records:
        groups[(r.dataset, r.model, r.method)].append(r)
    for rows in groups.values():
        rows.sort(key=lambda r: (GROUP_ORDER.index(r.label.value if r.label else None), natural(r.task_id), r.trial))
    return groups


def _verdict_cell(verdict: Verdict | None, failing: bool) -> str:
    e = html.escape
    if verdict is None:
        return '<td class="muted">not replayed</td>'
    if verdict.accepted:
        notes = f' <span class="muted">({e(", ".join(verdict.notes))})</span>' if verdict.notes else ""
        return f"<td>accepted{notes}</td>"
    label = verdict.label.value if verdict.label else "?"
    causes = ", ".join(c.value for c in verdict.causes)
    first = "first failure: " if failing else ""
    return (f'<td><span class="label">{e(first)}{e(label)}</span> <span class="muted">causes: {e(causes)}</span>'
            f'<div class="reason">{e(_clip(verdict.reason))}</div></td>')


def _action_row(step: int, call: ToolCall | None, verdict: Verdict | None, css: str, failing: bool) -> str:
    e = html.escape
    if call is None:
        tool, args, turn = "(no tool call: terminal action)", "", ""
    else:
        tool = call.name
        args = call.raw if call.parse_error and call.raw else _json(dict(call.arguments))
        if call.parse_error:
            args += f"  [parse error: {call.parse_error}]"
        turn = str(call.turn)
    return (f'<tr class="{css}"><td>{step}</td><td>{e(turn)}</td><td><code>{e(tool)}</code></td>'
            f"<td><code>{e(_clip(args))}</code></td>{_verdict_cell(verdict, failing)}</tr>")


def rollout_html(record: PrefixRecord, anchor: str) -> str:
    """One rollout: a summary line and its actions, the first failing call highlighted (class ``fail``)."""
    e = html.escape
    label = record.label.value if record.label else "executable"
    failed = not record.executable
    outcome = "success" if record.success else "failure"
    recovery = ""
    if failed:
        recovery = " · recovered" if record.success else " · not recovered"
    summary = (f"<summary><code>{e(record.task_id)}</code> trial {record.trial} · FED {record.fed} / T {record.T}"
               f' · <span class="label">{e(label)}</span> · final {outcome}{recovery}</summary>')
    parts = [f'<details class="rollout" id="{e(anchor)}" data-task="{e(record.task_id)}">', summary]
    if record.metadata:
        meta = "; ".join(f"{k}={_json(v)}" for k, v in record.metadata.items())
        parts.append(f'<p class="muted meta">metadata: {e(_clip(meta))}</p>')
    if failed:
        parts.append(f'<p class="reason">First failing call: step {record.fed} '
                     f"({e(label)}): {e(_clip(record.reason or ''))}</p>")
    parts.append('<table class="actions"><thead><tr><th>step</th><th>turn</th><th>tool</th><th>arguments</th>'
                 "<th>verdict</th></tr></thead><tbody>")
    calls: Sequence[ToolCall | None] = record.actions or [None]
    for i, call in enumerate(calls):
        step = i + 1
        verdict = record.verdicts[i] if i < len(record.verdicts) else None
        if failed and step == record.fed:
            css = "fail"
        elif failed and step > record.fed:
            css = "after"
        else:
            css = "ok"
        if failed and step == record.fed + 1:
            parts.append('<tr class="divider"><td colspan="5">after the first failure (not replayed): the rollout '
                         f"went on and ended in {outcome}</td></tr>")
        parts.append(_action_row(step, call, verdict, css, failed and step == record.fed))
    parts.append("</tbody></table></details>")
    return "".join(parts)


def condition_section(c: ConditionSummary, records: Sequence[PrefixRecord], anchors: Anchors) -> str:
    """``<section class="cond" id="c<i>">`` with one ``<div id="c<i>-<label>">`` per label group present."""
    e = html.escape
    cond = c.condition
    parts = [f'<section class="cond" id="{anchors.condition(cond)}">',
             f"<h3>Rollouts: {e(c.dataset)} / {e(c.model)} / {e(c.method)} <span class=\"muted\">"
             f"({c.N} rollouts, {c.N - sum(c.labels.values())} fully executable)</span></h3>"]
    by_label: dict[str | None, list[tuple[int, PrefixRecord]]] = defaultdict(list)
    for i, r in enumerate(records):
        by_label[r.label.value if r.label else None].append((i, r))
    for label in GROUP_ORDER:
        if label not in by_label:
            continue
        title = f"first failure: {label}" if label else "fully executable"
        parts.append(f'<div class="group" id="{anchors.label(cond, label)}"><h4>{e(title)} '
                     f"({len(by_label[label])})</h4>")
        parts += [rollout_html(r, anchors.rollout(cond, i)) for i, r in by_label[label]]
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)
