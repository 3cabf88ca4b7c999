"""``--explain TOOL.ARG``: why an argument is, or is not, an inferred reference, in words and counts."""

from __future__ import annotations

from prefix_exec.errors import InputError
from prefix_exec.inference.candidates import Decision, Inferred, Thresholds
from prefix_exec.inference.evidence import Evidence, Site
from prefix_exec.inference.side_file import examples


def site_of(name: str, evidence: Evidence) -> Site:
    """The consumer ``TOOL.ARG`` names (``book_reservation.flights[*].flight_number``): the split at a ``.`` whose
    left side is a tool seen called, the longest such; an :class:`InputError` naming close ones otherwise."""
    cuts = [i for i, c in enumerate(name) if c == "."]
    for cut in reversed(cuts):
        site = (name[:cut], name[cut + 1 :])
        if site in evidence.consumers:
            return site
    tool = next((name[:cut] for cut in reversed(cuts) if name[:cut] in evidence.tools), name.split(".", 1)[0])
    known = sorted(path for t, path in evidence.consumers if t == tool)
    if known:
        hint = f"arguments of {tool} seen: {', '.join(known[:12])}" + (", ..." if len(known) > 12 else "")
    else:
        shown = sorted(evidence.tools)[:12]
        hint = f"tools seen called: {', '.join(shown)}" if shown else "no tool call was read"
    raise InputError(f"--explain {name!r}: no call passed such an argument", hint=hint)


def explain(name: str, inferred: Inferred, evidence: Evidence, thresholds: Thresholds) -> str:
    """What ``--explain`` prints for ``TOOL.ARG`` (lines, ending with a newline)."""
    site = site_of(name, evidence)
    decision = inferred.decisions[site]
    seen = evidence.consumers[site]
    reference = next((r for r in inferred.references if r.site == site), None)
    head = (
        f"{site[0]}.{site[1]}: a reference to {reference.kind} (rule: {decision.rule})"
        if reference is not None
        else f"{site[0]}.{site[1]}: not a reference"
    )
    lines = [
        head,
        f"  why: {decision.reason}",
        f"  passed {seen.calls} values, {seen.idlike} id-like, {seen.cases} cases (distinct per conversation): flow "
        f"{seen.flow}, given {seen.given}, prose {seen.prose}, none {seen.none}, refused {seen.refused}",
        f"  confidence {_share(decision)} = (flow + refused) / (flow + prose + none); explained "
        f"{_explained(decision)} = (flow + given + refused) / cases",
        f"  distinct values: {len(seen.values)}{'+' if seen.distinct_cut else ''}",
    ]
    if seen.edges:
        fed = sorted(seen.edges.items(), key=lambda item: (-item[1], item[0]))[:8]
        lines.append("  fed by: " + "; ".join(f"{tool} {path} ({n})" for (tool, path), n in fed))
    if reference is not None:
        made = [p for p in inferred.productions if p.kind == reference.kind]
        lines.append(
            f"  {reference.kind} is produced by: " + "; ".join(f"{p.site[0]} {p.site[1]} (fed {p.fed})" for p in made)
        )
    lines += [f"  e.g. {example}" for example in examples(site[1], seen, ("flow", "given", "prose", "none"))]
    lines.append(
        f"  thresholds: --min-support {thresholds.min_support}, --min-confidence {thresholds.min_confidence:.2f}, "
        f"--min-edge-share {thresholds.min_edge_share:.2f}, --min-idlike {thresholds.min_idlike:.2f}"
    )
    return "\n".join(lines) + "\n"


def _share(decision: Decision) -> str:
    return "n/a" if decision.confidence is None else f"{decision.confidence:.2f}"


def _explained(decision: Decision) -> str:
    return "n/a" if decision.explained is None else f"{decision.explained:.2f}"
