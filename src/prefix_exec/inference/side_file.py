"""The inferred spec as a ``--hooks`` side file: our YAML form (``tools:`` keyed by tool name, with ``refs``,
``produces`` and ``invalidates``), each entry under a comment that carries its evidence.

The text is made here, not by a YAML library, so that it is the same bytes for the same evidence (tools, keys and
entries sorted; numbers formatted one way) and so that every entry can sit under its own comment. Names from the
logs (tools, arguments, paths, kinds) are written plain when they are plain words and as JSON strings otherwise
(YAML reads a JSON string as that string); comments hold only one line each; a character YAML does not take as it
is (a control character, a line break of its own, a lone surrogate) is written as a ``\\uXXXX`` escape;
an example's value is left out when its argument's name names a secret
(:func:`prefix_exec.records.redaction.secret_name`) and URLs in it are redacted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from prefix_exec.inference.candidates import Inferred, Invalidates, Production, Reference, Thresholds
from prefix_exec.inference.evidence import Consumer, Evidence
from prefix_exec.records.redaction import redact_text, secret_name

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "tilde"})
#: What YAML does not take as it is (outside its printable set, or a line break of its own: NEL, LS, PS); written as
#: a ``\uXXXX`` escape (in a comment, for a reader; in a quoted scalar, YAML decodes it).
_UNPRINTABLE = re.compile("[^\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029]")


@dataclass(frozen=True)
class Header:
    """What the file's first comment says of the run: the inputs read and the options that decided."""

    files: int
    thresholds: Thresholds
    errors: bool


def scalar(text: str) -> str:
    """``text`` as a YAML scalar: plain when it is a plain word, else a JSON string."""
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return _escaped(json.dumps(text, ensure_ascii=False))


def comment(text: str) -> str:
    """One comment line: ``# text``, what YAML does not take as it is (a newline too) escaped."""
    return "# " + _escaped(text)


def _escaped(text: str) -> str:
    """``text`` with every character YAML does not take as it is written as ``\\uXXXX`` (all are in the BMP)."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def side_file(inferred: Inferred, evidence: Evidence, header: Header) -> str:
    """The side file's text (module docstring)."""
    lines = [comment(line) for line in _header(evidence, header)]
    entries = _by_tool(inferred)
    if not entries:
        lines.append("tools: {}  # no reference had enough evidence")
        return "\n".join(lines) + "\n"
    lines.append("tools:")
    for tool in sorted(entries):
        lines.append(f"  {scalar(tool)}:")
        refs, produces, invalidates = entries[tool]
        lines += _section("refs", [_ref_lines(r, evidence.consumers[r.site]) for r in refs])
        lines += _section("produces", [_production_lines(p) for p in produces])
        lines += _section("invalidates", [_invalidation_lines(i) for i in invalidates])
    return "\n".join(lines) + "\n"


def _header(evidence: Evidence, header: Header) -> list[str]:
    t = header.thresholds
    dropped = ", ".join(f"{n:,} {what}" for what, n in sorted(evidence.dropped.items()))
    return [
        f"Inferred by prefix-exec infer-spec from {evidence.conversations:,} conversations, {evidence.calls:,} calls "
        f"in {header.files:,} file{'s' if header.files != 1 else ''} (docs/custom.md, 'Inferring a side file').",
        f"Thresholds: --min-support {t.min_support}, --min-confidence {t.min_confidence:.2f}, "
        f"--min-edge-share {t.min_edge_share:.2f}, --min-idlike {t.min_idlike:.2f}; recorded errors as evidence: "
        f"{'on' if header.errors else 'off'}." + (f" Past the bounds, not tracked: {dropped}." if dropped else ""),
        "Each entry's comment gives its evidence: cases (distinct values per conversation passed there), flow (an "
        "earlier result held the value), given (only an earlier user or system message), prose (only a result that "
        "is not JSON), none (neither); confidence = (flow + refused) / (flow + prose + none).",
        "Inferred, not known: read each entry against what the tool does (prefix-exec infer-spec ... --explain "
        "TOOL.ARG says why).",
    ]


def _by_tool(
    inferred: Inferred,
) -> dict[str, tuple[list[Reference], list[Production], list[Invalidates]]]:
    entries: dict[str, tuple[list[Reference], list[Production], list[Invalidates]]] = {}
    for reference in inferred.references:
        entries.setdefault(reference.site[0], ([], [], []))[0].append(reference)
    for production in inferred.productions:
        entries.setdefault(production.site[0], ([], [], []))[1].append(production)
    for invalidation in inferred.invalidations:
        entries.setdefault(invalidation.site[0], ([], [], []))[2].append(invalidation)
    return entries


def _section(name: str, items: list[list[str]]) -> list[str]:
    if not items:
        return []
    return [f"    {name}:", *(f"      {line}" for item in items for line in item)]


def _ref_lines(reference: Reference, seen: Consumer) -> list[str]:
    d = reference.decision
    fed = ", ".join(f"{tool} {path} {n}" for (tool, path), n in _top(seen.edges.items()))
    refused = f", refused {seen.refused}" if seen.refused else ""
    facts = (
        f"{reference.kind} ({d.rule}): cases {seen.cases}, flow {seen.flow}, given {seen.given}, prose {seen.prose}, "
        f"none {seen.none}{refused}; confidence {_share(d.confidence)}"
    )
    lines = [comment(facts + (f"; fed by {fed}" if fed else ""))]
    lines += [comment(f"e.g. {example}") for example in examples(reference.site[1], seen, ("flow", "given"))[:1]]
    return [*lines, f"{scalar(reference.site[1])}: {scalar(reference.kind)}"]


def _production_lines(production: Production) -> list[str]:
    how = f"fed {production.fed} later references" if production.fed else "named like the kind; fed none observed"
    also = f"; also at {', '.join(production.also[:3])}" if production.also else ""
    return [comment(f"{how} ({production.rule}){also}"), f"{scalar(production.kind)}: {scalar(production.site[1])}"]


def _invalidation_lines(invalidation: Invalidates) -> list[str]:
    facts = f"used again {invalidation.later} times after this call, refused as unknown or gone {invalidation.refused}"
    return [comment(facts), f"{scalar(invalidation.kind)}: {scalar(invalidation.site[1])}"]


def examples(path: str, seen: Consumer, sources: Iterable[str]) -> list[str]:
    """The kept examples of the given sources, as ``where value how``; a secret argument's values left out."""
    hidden = secret_name(path)
    found = []
    for source in sources:
        for where, value, how in seen.examples.get(source, []):
            found.append(f"{redact_text(where)} {'(value hidden)' if hidden else redact_text(value)} {how}")
    return found


def _top(items: Iterable[tuple[tuple[str, str], int]], n: int = 3) -> list[tuple[tuple[str, str], int]]:
    return sorted(items, key=lambda item: (-item[1], item[0]))[:n]


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
