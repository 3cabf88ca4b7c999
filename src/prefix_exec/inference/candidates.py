"""From evidence to a spec: which arguments are references, of which kind, which results produce each kind, and
which calls invalidate one. Every decision keeps its reason, for the side file's comments and ``--explain``.

**A consumer is a reference** (:func:`judge`) when the tool spec (if any) declares the argument, its schema does
not say it holds a plain value (:func:`prefix_exec.inference.names.plain_value`), at least ``min_support`` id-like
values were passed there and at least ``min_idlike`` of all its values were id-like, at most half of them are
several words unless it is named like an id (``likes tea`` is text, ``Mia Li`` may be a name), and one rule holds:

- ``flow``: at least ``min_support`` of its values flowed from an earlier result, and its *confidence*
  ``flow / (flow + prose + none - refused)`` (of the values the conversation did not give, the share an earlier
  result held, a value refused as unknown counting for it) is at least ``min_confidence``;
- ``name``: it is named like an id (``reservation_id``, ``item_ids``, ``flight_number``), some result path of the
  same name or stem produced at least ``min_support`` id-like values, and its values were *explained*,
  ``(flow + given + refused) / idlike``, at least ``min_confidence`` of the time (an id the user states, such as a
  user id, is a reference the conversation gives);
- ``refused``: (recorded errors on) at least ``min_support`` of its unexplained values were refused as unknown,
  some result path of its name or stem produces ids, and it is explained as for ``name``.

**Kinds** are the connected groups of references and the result paths that fed them: a reference joins the
producers whose edge holds ``min_support`` values or at least ``min_edge_share`` of its flow (at least one value),
or, for ``name`` and ``refused``, the producers of its name or stem. A kind is named by the stem
(:func:`~prefix_exec.inference.names.stem`) its references and the producers that fed them use most (a link's end
such as ``relations[*].from`` has no vote), made unique in order. Per tool, the kind's ``produces`` path is the one
that fed the most values (then one named like an id, then the shortest); a tool that produced ids at a path of the
kind's stem without feeding any observed call produces it too (``name``), as RESTler's convention would.

**Invalidates** (recorded errors on): a reference argument whose value, used again after its accepted call, was
refused as unknown or gone at least ``min_support`` times and at least ``min_confidence`` of the times it was used
again.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.envs.custom.session import argument_of
from prefix_exec.inference.evidence import Consumer, Evidence, Site
from prefix_exec.inference.names import ENDS, argument_schema, declared, id_named, id_shaped, plain_value, stem
from prefix_exec.inference.values import leaf_name


@dataclass(frozen=True)
class Thresholds:
    """The options that decide (module docstring), with their defaults."""

    min_support: int = 3
    min_confidence: float = 0.9
    min_edge_share: float = 0.05
    min_idlike: float = 0.9


DEFAULTS = Thresholds()


@dataclass(frozen=True)
class Decision:
    """One consumer's judgement: ``rule`` (``flow``, ``name``, ``refused``) when it is a reference, else ``None``
    with ``reason`` saying why not; ``confidence`` and ``explained`` as the module docstring defines them."""

    site: Site
    rule: str | None
    reason: str
    confidence: float | None
    explained: float | None


@dataclass(frozen=True)
class Reference:
    site: Site
    kind: str
    decision: Decision


@dataclass(frozen=True)
class Production:
    """Tool ``site[0]`` produces ``kind`` at path ``site[1]``: ``fed`` values of it fed later references;
    ``rule`` ``flow`` or ``name``; ``also`` other paths of the same tool that fed the kind."""

    site: Site
    kind: str
    fed: int
    rule: str
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Invalidates:
    site: Site
    kind: str
    refused: int
    later: int


@dataclass(frozen=True)
class Inferred:
    """The inferred spec: references, productions, invalidations, and every consumer's decision."""

    references: tuple[Reference, ...]
    productions: tuple[Production, ...]
    invalidations: tuple[Invalidates, ...]
    decisions: Mapping[Site, Decision] = field(default_factory=dict)


def judge(site: Site, seen: Consumer, evidence: Evidence, schemas: Mapping[str, Any] | None, t: Thresholds) -> Decision:
    """The decision on one consumer (module docstring)."""
    tool, path = site
    explained = _share(seen.flow + seen.given + seen.refused, seen.cases)
    confidence = _share(seen.flow + seen.refused, seen.flow + seen.prose + seen.none)

    def no(reason: str) -> Decision:
        return Decision(site, None, reason, confidence, explained)

    parameters = schemas.get(tool) if schemas is not None else evidence.offered.get(tool)
    if schemas is not None and tool not in schemas:
        return no("the tool spec declares no such tool")
    if not declared(parameters, path):
        return no("the tool's schema declares no such argument")
    plain = plain_value(argument_schema(parameters, path))
    if plain is not None:
        return no(f"a plain value: {plain}")
    if seen.cases < t.min_support:
        return no(f"{seen.cases} id-like values passed, fewer than --min-support {t.min_support}")
    if seen.idlike < t.min_idlike * seen.calls:
        return no(f"mostly plain values: {seen.idlike} of {seen.calls} look like ids")
    if 2 * seen.worded > seen.cases and not id_named(leaf_name(path)):
        return no(f"text: {seen.worded} of its {seen.cases} cases are several words, and its name is no id's")
    if seen.flow >= t.min_support and confidence is not None and confidence >= t.min_confidence:
        if id_named(leaf_name(path)) or any(id_shaped(p[1]) for p in _fed_by(seen, t)):
            return Decision(site, "flow", "its values flowed from earlier results", confidence, explained)
        return no(
            "its values flowed from earlier results, but neither it nor a result path that fed it is named like an "
            "id (an attribute copied, such as a name or a city)"
        )
    well = explained is not None and explained >= t.min_confidence
    if well and id_named(leaf_name(path)) and _named_producers(site, evidence, t):
        return Decision(site, "name", "named like an id, a result of its name produces ids", confidence, explained)
    if well and seen.refused >= t.min_support and _named_producers(site, evidence, t):
        return Decision(site, "refused", "made-up values were refused as unknown", confidence, explained)
    return no(_why_not(seen, confidence, explained, t))


def _why_not(seen: Consumer, confidence: float | None, explained: float | None, t: Thresholds) -> str:
    if seen.flow < t.min_support:
        return (
            f"{seen.flow} values flowed from earlier results (fewer than --min-support {t.min_support}); "
            f"explained {_pct(explained)} (given {seen.given})"
        )
    return (
        f"confidence {_pct(confidence)} under --min-confidence {t.min_confidence:.2f} "
        f"(none {seen.none}, prose {seen.prose})"
    )


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%}"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole > 0 else None


def _named_producers(site: Site, evidence: Evidence, t: Thresholds) -> list[Site]:
    """Result paths whose name or stem is the consumer's and that produced at least ``min_support`` ids."""
    name, wanted = leaf_name(site[1]), stem(site[1])
    return [
        p
        for p, seen in sorted(evidence.producers.items())
        if seen.idlike >= t.min_support and (leaf_name(p[1]) == name or (wanted and stem(p[1]) == wanted))
    ]


def infer(evidence: Evidence, schemas: Mapping[str, Any] | None = None, thresholds: Thresholds = DEFAULTS) -> Inferred:
    """The spec the evidence supports (module docstring); ``schemas`` maps each tool of ``--tools`` to its
    argument schema (``None``: the conversations' own tools lists, where they have them, else none)."""
    decisions = {
        site: judge(site, seen, evidence, schemas, thresholds) for site, seen in sorted(evidence.consumers.items())
    }
    links = {site: _links(d, evidence, thresholds) for site, d in decisions.items() if d.rule is not None}
    for site in [s for s, producers in links.items() if not producers]:
        d = decisions[site]
        decisions[site] = Decision(site, None, "no result path produces its values", d.confidence, d.explained)
        del links[site]
    groups = _groups(links, evidence)
    references = tuple(
        sorted((Reference(site, g.kind, decisions[site]) for g in groups for site in g.consumers), key=_site)
    )
    productions = [p for g in groups for p in _productions(g, evidence)]
    productions += _named_productions(groups, productions, evidence, thresholds)
    invalidations = _invalidations(references, evidence, thresholds)
    return Inferred(references, tuple(sorted(productions, key=_site)), invalidations, decisions)


def _site(item: Reference | Production) -> tuple[Site, str]:
    return item.site, item.kind


def _links(d: Decision, evidence: Evidence, t: Thresholds) -> list[Site]:
    """The producers a reference joins (module docstring)."""
    if d.rule == "flow":
        return _fed_by(evidence.consumers[d.site], t)
    return _named_producers(d.site, evidence, t)


def _fed_by(seen: Consumer, t: Thresholds) -> list[Site]:
    """The producers that fed a consumer ``min_support`` of its values, or at least ``min_edge_share`` of its flow
    (and at least one value)."""
    least = max(1, min(t.min_support, math.ceil(t.min_edge_share * seen.flow)))
    return sorted(p for p, n in seen.edges.items() if n >= least)


@dataclass
class _Group:
    """A kind: its references and the producers that fed them, and its name."""

    consumers: list[Site]
    producers: list[Site]
    kind: str = ""


def _groups(links: Mapping[Site, list[Site]], evidence: Evidence) -> list[_Group]:
    """The connected groups of references and producers (union-find over the links), in order of their first
    reference, each named (:func:`_name`) uniquely."""
    parent: dict[tuple[str, Site], tuple[str, Site]] = {}

    def root(node: tuple[str, Site]) -> tuple[str, Site]:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for consumer, producers in sorted(links.items()):
        for producer in producers:
            a, b = root(("c", consumer)), root(("p", producer))
            if a != b:
                parent[max(a, b)] = min(a, b)
    by_root: dict[tuple[str, Site], _Group] = {}
    for node in sorted(parent):
        group = by_root.setdefault(root(node), _Group([], []))
        (group.consumers if node[0] == "c" else group.producers).append(node[1])
    groups = sorted(by_root.values(), key=lambda g: g.consumers[:1])
    taken: set[str] = set()
    for group in groups:
        group.kind = _name(group, evidence, taken)
    return groups


def _name(group: _Group, evidence: Evidence, taken: set[str]) -> str:
    """The stem its references and producers use most (a reference by its cases, a producer by the values it fed
    them; a link's end, ``relations[*].from``, has no vote), unique among ``taken`` (then added)."""
    votes: Counter[str] = Counter()
    for site in group.consumers:
        if leaf_name(site[1]).lower() not in ENDS:
            votes[stem(site[1]) or stem(site[0]) or "value"] += evidence.consumers[site].cases
    for producer in group.producers:
        if leaf_name(producer[1]).lower() not in ENDS and stem(producer[1]):
            votes[stem(producer[1])] += sum(evidence.consumers[c].edges.get(producer, 0) for c in group.consumers)
    best = min(votes.items(), key=lambda item: (-item[1], item[0]))[0] if votes else "value"
    name, n = best, 2
    while name in taken:
        name, n = f"{best}_{n}", n + 1
    taken.add(name)
    return name


def _productions(group: _Group, evidence: Evidence) -> list[Production]:
    """Per tool of the group's producers, the path that fed its references most (module docstring)."""
    fed: dict[str, Counter[str]] = {}
    for producer in group.producers:
        fed.setdefault(producer[0], Counter())[producer[1]] = sum(
            evidence.consumers[c].edges.get(producer, 0) for c in group.consumers
        )
    return [_production(group.kind, tool, paths) for tool, paths in sorted(fed.items())]


def _production(kind: str, tool: str, paths: Counter[str]) -> Production:
    ranked = sorted(paths.items(), key=lambda item: (-item[1], not id_named(leaf_name(item[0])), len(item[0]), item[0]))
    best, n = ranked[0]
    return Production((tool, best), kind, n, "flow" if n else "name", tuple(p for p, _ in ranked[1:]))


def _named_productions(
    groups: list[_Group], productions: list[Production], evidence: Evidence, t: Thresholds
) -> list[Production]:
    """Tools that produced ids at a path whose stem is a kind's name, and produce that kind nowhere yet."""
    producing = {(p.kind, p.site[0]) for p in productions}
    found: dict[tuple[str, str], Counter[str]] = {}
    for kind in sorted(g.kind for g in groups):
        for site, seen in sorted(evidence.producers.items()):
            if seen.idlike >= t.min_support and stem(site[1]) == kind and (kind, site[0]) not in producing:
                found.setdefault((kind, site[0]), Counter())[site[1]] = 0
    return [_production(kind, tool, paths) for (kind, tool), paths in sorted(found.items())]


def _invalidations(references: tuple[Reference, ...], evidence: Evidence, t: Thresholds) -> tuple[Invalidates, ...]:
    found = []
    for reference in references:
        seen = evidence.invalidations.get(reference.site)
        path = reference.site[1]
        if seen is None or path != argument_of(path) or seen.refused < t.min_support:
            continue
        if seen.refused >= t.min_confidence * seen.later:
            found.append(Invalidates(reference.site, reference.kind, seen.refused, seen.later))
    return tuple(found)
