"""Write every report file for a set of records: tables (md, csv, tex), plots (png, svg), report.html."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.analysis.selection import Condition
from prefix_exec.analysis.stats import DEFAULT_RESAMPLES
from prefix_exec.analysis.summary import DEFAULT_CI_DEPTH, Summary, summarize, to_json
from prefix_exec.errors import InputError
from prefix_exec.records import infrastructure
from prefix_exec.records.infrastructure import Exclusion
from prefix_exec.report import plots
from prefix_exec.report.cells import Table
from prefix_exec.report.cost import condition_costs, cost_tables
from prefix_exec.report.drawing import SYNTHETIC_MARK
from prefix_exec.report.formats import RENDERERS
from prefix_exec.report.html import Section, render
from prefix_exec.report.inputs import is_synthetic, metric_rows
from prefix_exec.report.layout import Anchors, leaderboard_blocks
from prefix_exec.report.leaderboard import against_reference, check_reference, leaderboard
from prefix_exec.report.metric_tables import (
    DEFAULT_CHECKPOINTS,
    checkpoints,
    decomposition,
    label_counts,
    reach,
    table2,
    table2_domains,
)
from prefix_exec.report.outdir import OutputFolder
from prefix_exec.report.paired import paired_differences, resolve_pairs, sensitivity_rows, sensitivity_table
from prefix_exec.report.plans import plans_table
from prefix_exec.report.ranking import ranking, ranking_agreement
from prefix_exec.trajectory import PrefixRecord

FORMATS = tuple(RENDERERS)


@dataclass(frozen=True)
class Options:
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    formats: tuple[str, ...] = FORMATS
    #: ``A:B`` texts (a model, method or model/method on each side); ``None``: every pair within each block.
    pairs: tuple[str, ...] | None = None
    #: The leaderboard's reference condition (a selector); ``None``: the best by final success.
    reference: str | None = None
    checkpoints: tuple[int, ...] = DEFAULT_CHECKPOINTS
    title: str = "prefix-exec report"
    plots: bool = True
    #: Write into a non-empty folder that an earlier report did not write (see :mod:`.outdir`).
    overwrite: bool = False
    #: Count the rollouts an infrastructure failure ended, under their own label (``--keep-infrastructure-failures``;
    #: :mod:`prefix_exec.records.infrastructure`); by default they are left out.
    keep_infrastructure: bool = False


@dataclass(frozen=True)
class Report:
    """What :func:`write_report` wrote; ``infrastructure`` the rollouts an infrastructure failure ended that it
    left out or kept, and ``counted`` the rollouts it counted."""

    summary: Summary
    tables: tuple[Table, ...]
    files: tuple[Path, ...]
    synthetic: bool
    infrastructure: Exclusion = field(default_factory=Exclusion)
    counted: int = 0


def build_tables(
    summary: Summary,
    records: Sequence[PrefixRecord],
    options: Options,
    pairs: Sequence[tuple[Condition, Condition]] | None = None,
    infrastructure: str | None = None,
) -> list[Section]:
    """The report's sections in page order, each with its tables (figures are added by :func:`write_report`);
    the per-domain, leaderboard, cost and sensitivity sections only where the summary has something for them.
    ``infrastructure`` (what was done with infrastructure failures) ends Table 2's note."""
    anchors = Anchors.of(summary)
    costs = cost_tables(summary, records, anchors)
    sections = [Section("table2", "Table 2", [table2(summary, anchors, note=infrastructure)])]
    if summary.domains is not None:
        sections.append(
            Section(
                "table2-domains",
                "Table 2 per domain",
                [table2_domains(summary.domains)],
                lead="Pooled datasets (tau3 = 50 airline + 114 retail tasks) are reported pooled, as in the paper; "
                "this extra view splits them by domain, each domain with its own bootstrap.",
            )
        )
    sections += _leaderboard_section(summary, anchors, options.reference)
    sections += [
        Section(
            "ranking",
            "Ranking divergence",
            [ranking_agreement(summary), ranking(summary, anchors)],
            lead="Outcome-only evaluation ranks methods by final success; prefix-level evaluation by how long "
            "their rollouts stay executable. Where the two disagree, a method that reaches the goal "
            "often does so only after invalid calls.",
        ),
        Section("figure1", "Figure 1: PEC curves"),
        Section(
            "checkpoints",
            "PEC@k checkpoints (Table G.1)",
            [checkpoints(summary, anchors, options.checkpoints), reach(summary, options.checkpoints)],
        ),
        Section("labels", "First-failure labels", [label_counts(summary, anchors)]),
        *_plans_section(summary, records, anchors),
        Section("decomposition", "Decomposition q, s, r", [decomposition(summary, anchors)]),
        Section("paired", "Paired differences", [paired_differences(summary, pairs, anchors)]),
    ]
    if costs:
        sections.append(Section("cost", "Cost", costs))
    sections += _sensitivity_section(summary, records, anchors)
    return sections


def _leaderboard_section(summary: Summary, anchors: Anchors, reference: str | None) -> list[Section]:
    """The leaderboard section (none when no dataset holds several models)."""
    boards = leaderboard_blocks(summary)
    if not boards:
        return []
    return [
        Section(
            "leaderboard",
            "Leaderboard",
            [
                leaderboard(summary, anchors, boards),
                ranking_agreement(summary, boards, name="leaderboard_agreement"),
                against_reference(summary, anchors, reference),
            ],
            lead="A dataset that holds several models gets one view across all its conditions: Table 2's "
            "columns, outcome rank against prefix rank, and paired differences against a reference.",
        )
    ]


def _plans_section(summary: Summary, records: Sequence[PrefixRecord], anchors: Anchors) -> list[Section]:
    """The plans section (none when no record planned: :mod:`.plans`)."""
    table = plans_table(summary, records, anchors)
    if table is None:
        return []
    return [
        Section(
            "plans",
            "Plans before the executor",
            [table],
            lead="Where each planning method's plans went before its executor acted: refused by the structure "
            "check, rejected by the verifier, revised, accepted. A method whose plans never pass leaves only "
            "its executor's rollouts in the tables above.",
        )
    ]


def _sensitivity_section(summary: Summary, records: Sequence[PrefixRecord], anchors: Anchors) -> list[Section]:
    """The sensitivity controls' section (none when no block holds the dual-loop-accept-all control)."""
    sensitivity = sensitivity_rows(summary, condition_costs(records))
    if not sensitivity:
        return []
    return [
        Section(
            "sensitivity",
            "Sensitivity controls (Table F.3)",
            [sensitivity_table(sensitivity, anchors)],
            lead="Where a block holds the dual-loop-accept-all control: the effect of verification "
            "(dual-loop − control) apart from that of the dual-loop wrapper (control − plan-conditioned), "
            "on the same initial plans.",
        )
    ]


def write_report(
    records: Sequence[PrefixRecord],
    out: str | Path | OutputFolder,
    options: Options = Options(),
    *,
    inputs: Iterable[str | Path] = (),
) -> Report:
    """Summarize ``records`` and write every file into ``out`` (created; or a folder already claimed, whose
    manifest then lists the caller's files too). Returns what was written.

    An ``options.pairs`` or ``options.reference`` name that matches no condition or several, an ``out`` that
    is not a folder, or a non-empty folder an earlier report did not write (without ``options.overwrite``),
    is an :class:`InputError`, raised before anything is written (:mod:`.outdir`); so is a folder holding one of
    ``inputs``, the files the records were read from. Rollouts an infrastructure failure ended are left out
    first, or kept under their own label (``options.keep_infrastructure``: :func:`counted_records`); records that
    are all such failures, with none kept, are an :class:`InputError` too."""
    exclusion = Exclusion(keep=options.keep_infrastructure)
    records = counted_records(records, exclusion)
    if not records:
        raise InputError("every record is an infrastructure failure", hint="--keep-infrastructure-failures")
    said = exclusion.sentence(len(records))
    ci_depth = max(DEFAULT_CI_DEPTH, *options.checkpoints)
    summary = summarize(metric_rows(records), resamples=options.resamples, seed=options.seed, ci_depth=ci_depth)
    pairs = None if options.pairs is None else resolve_pairs(summary, options.pairs, option="--pair")
    check_reference(summary, options.reference)
    if isinstance(out, OutputFolder):
        folder = out
    else:
        folder = OutputFolder.claim(out, overwrite=options.overwrite, inputs=inputs)
    synthetic = is_synthetic(records)
    sections = build_tables(summary, records, options, pairs, said)
    all_tables = [t for s in sections for t in s.tables]
    _write_tables(folder, all_tables, options.formats, synthetic)
    folder.write_text("summary.json", _summary_json(summary, exclusion.as_json(len(records))))
    mark = f"> **{SYNTHETIC_MARK}**\n" if synthetic else ""
    md = [f"# {options.title}\n", mark, *([f"{said}\n"] if said else [])]
    md += [RENDERERS["md"](t) for t in all_tables]
    folder.write_text("report.md", "\n".join(md))
    shown = draw_figures(summary, folder, synthetic, said or "") if options.plots else {}
    sections = [Section(s.id, s.title, s.tables, shown.get(s.id, ()), s.lead) for s in sections]
    subtitle = (
        f"{len(records)} rollouts, {len(summary.conditions)} conditions; 95% task-level percentile bootstrap "
        f"({summary.resamples} resamples, seed {summary.seed})." + (f" {said}" if said else "")
    )
    page = render(summary, records, sections, title=options.title, subtitle=subtitle, synthetic=synthetic)
    folder.write_text("report.html", page)
    folder.finish()
    return Report(summary, tuple(all_tables), tuple(folder.files), synthetic, exclusion, len(records))


def counted_records(records: Iterable[PrefixRecord], exclusion: Exclusion) -> list[PrefixRecord]:
    """``records`` less those an infrastructure failure ended (or all of them, when ``exclusion`` keeps them),
    each one met noted on ``exclusion`` (:mod:`prefix_exec.records.infrastructure`)."""
    return list(exclusion.filter(records, lambda r: r.key, lambda r: infrastructure.failure_of(r.metadata)))


def _write_tables(folder: OutputFolder, tables: Sequence[Table], formats: Sequence[str], synthetic: bool) -> None:
    """Every table in every format, marked as synthetic where the records are."""
    for table in tables:
        for fmt in formats:
            text = RENDERERS[fmt](table)
            if synthetic and fmt == "md":
                text = f"> **{SYNTHETIC_MARK}**\n\n{text}"
            elif synthetic and fmt == "tex":
                text = f"% {SYNTHETIC_MARK}\n{text}"
            folder.write_text(f"{table.name}.{fmt}", text)


def _summary_json(summary: Summary, met: dict[str, Any] | None) -> str:
    """summary.json: :func:`to_json`, with what was done with infrastructure failures when any was met."""
    text = to_json(summary)
    if met is None:
        return text
    return json.dumps({**json.loads(text), "infrastructure": met}, indent=2)


def draw_figures(summary: Summary, folder: OutputFolder, synthetic: bool, note: str = "") -> dict[str, list[Path]]:
    """Draw every figure into ``folder`` (PNG and SVG, each added to its manifest) and return the SVGs each page
    section shows, by section id: ``figure1``, ``ranking`` (within a model) and ``leaderboard`` (its curves, then
    the across-model rankings). ``note`` (what was done with infrastructure failures) ends the PEC curves'
    captions."""
    drawn = {
        "figure1": plots.figure1(summary, folder.path, synthetic=synthetic, note=note),
        "ranking": plots.ranking_chart(summary, folder.path, synthetic=synthetic),
        "leaderboard": plots.leaderboard_figure(summary, folder.path, synthetic=synthetic, note=note),
    }
    for paths in drawn.values():
        for path in paths:
            folder.add(path.name)
    # the page shows the SVGs; across-model rankings belong to the leaderboard section
    svg = {key: [p for p in paths if p.suffix == ".svg"] for key, paths in drawn.items()}
    return {
        "figure1": svg["figure1"],
        "ranking": [p for p in svg["ranking"] if not p.name.startswith("leaderboard-")],
        "leaderboard": svg["leaderboard"] + [p for p in svg["ranking"] if p.name.startswith("leaderboard-")],
    }
