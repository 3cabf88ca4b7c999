"""Comparing models on real public runs: BFCL glyphh vs airev, and tau2 airline leaderboard files.

The numbers are checked against hand computations on the records themselves (per-task values, the shared
resample-count matrix drawn again from the dataset's seed), not against the summary's own code path.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prefix_exec.analysis.stats import dataset_rng, resample_counts
from prefix_exec.analysis.summary import summarize
from prefix_exec.cli import main
from prefix_exec.errors import InputError
from prefix_exec.records.codec import read_records, write_records
from prefix_exec.report.inputs import metric_rows
from prefix_exec.report.layout import leaderboard_blocks
from prefix_exec.report.leaderboard import against_reference, leaderboard
from prefix_exec.report.ranking import agreement
from prefix_exec.trajectory import PrefixRecord

pytest.importorskip("bfcl_eval")

GLYPHH, AIREV = "glyphh-ada-1.1", "airev-agent-0.8b"
TAU_FILES = ("azure-gpt-4o_airline", "qwen2.5-7b_airline", "whissle_airline_run1", "ft-gpt-4.1-sft_airline")
IRONFORGE = (
    "ironforge-o3_airline",
    "ironforge-gpt-5.4_airline",
    "ironforge-sonnet-4.6_airline",
    "ironforge-deepseek_airline",
    "ironforge-grok3_airline",
)


@pytest.fixture(scope="module")
def bfcl_base(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[PrefixRecord]:
    """Both models on BFCL's base category (200 tasks each); airev keeps only the even-numbered tasks, so
    the two share 100 tasks."""
    out = tmp_path_factory.mktemp("bfcl")
    records: list[PrefixRecord] = []
    for model in (GLYPHH, AIREV):
        source = shared_data / "bfcl" / model / "BFCL_v4_multi_turn_base_result.json"
        assert main(["score", "bfcl", str(source), "--out", str(out / f"{model}.jsonl")]) == 0
        records += read_records(out / f"{model}.jsonl")
    return [r for r in records if r.model == GLYPHH or int(r.task_id.rsplit("_", 1)[1]) % 2 == 0]


def _score_tau(shared_data: Path, out: Path, names: tuple[str, ...]) -> list[PrefixRecord]:
    records: list[PrefixRecord] = []
    for name in names:
        path = out / f"{name}.jsonl"
        assert (
            main(["score", "tau", str(shared_data / "tau" / "leaderboard" / f"{name}.json"), "--out", str(path)]) == 0
        )
        records += read_records(path)
    return records


@pytest.fixture(scope="module")
def tau_airline(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[PrefixRecord]:
    return _score_tau(shared_data, tmp_path_factory.mktemp("tau"), TAU_FILES)


def test_cross_model_paired_difference_equals_a_hand_computation(bfcl_base: list[PrefixRecord]) -> None:
    resamples, seed = 400, 3
    s = summarize(metric_rows(bfcl_base), resamples=resamples, seed=seed)
    (found,) = s.paired(GLYPHH, AIREV)
    assert found.a[1:] == (GLYPHH, "FC")
    assert found.b[1:] == (AIREV, "prompting")
    # by hand: one rollout per task; the tasks both ran; TER and success per task
    by = {m: {r.task_id: r for r in bfcl_base if r.model == m} for m in (GLYPHH, AIREV)}
    common = sorted(set(by[GLYPHH]) & set(by[AIREV]))
    assert found.common_tasks == len(common) == 100
    tasks = sorted({r.task_id for r in bfcl_base})  # the dataset's task list: the columns of its draws
    counts = resample_counts(len(tasks), resamples, dataset_rng(seed, "bfcl"))
    cols = [tasks.index(t) for t in common]
    for name, value in (("TER", lambda r: float(r.fed == r.T + 1)), ("success", lambda r: float(r.success))):
        xa = np.array([value(by[GLYPHH][t]) for t in common])
        xb = np.array([value(by[AIREV][t]) for t in common])
        point = sum(xa) / len(common) - sum(xb) / len(common)
        c = counts[:, cols].astype(float)
        diffs = (c @ xa - c @ xb) / c.sum(axis=1)
        low, high = np.percentile(diffs, [2.5, 97.5])
        got = found.differences[name]
        assert got.point == pytest.approx(point, abs=1e-12)
        assert (got.low, got.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert found.differences["TER"].low > 0  # glyphh's calls stay executable far more often


def metrics_json(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> dict[str, Any]:
    """``prefix-exec metrics PATH --format json OPTIONS``: its exit code must be 0; the parsed output."""
    capsys.readouterr()
    assert main(["metrics", str(path), "--format", "json", *options]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_metrics_compare_two_models_and_say_how_many_tasks(
    bfcl_base: list[PrefixRecord], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "both.jsonl"
    write_records(path, bfcl_base)
    compare = ("--compare", f"{GLYPHH}:{AIREV}", "--compare", f"{AIREV}/prompting:{GLYPHH}")
    first, second = metrics_json(capsys, path, "--resamples", "200", *compare)["paired"]
    assert first["common_tasks"] == second["common_tasks"] == 100
    assert first["differences"]["TER"]["point"] == pytest.approx(-second["differences"]["TER"]["point"])
    assert main(["metrics", str(path), "--compare", f"{GLYPHH}:nobody"]) == 2
    err = capsys.readouterr().err
    assert "the right side 'nobody' names no condition (the left side does)" in err
    assert f"{AIREV}/prompting" in err


def test_an_ambiguous_selector_lists_the_candidates(bfcl_base: list[PrefixRecord]) -> None:
    # the same glyphh rollouts as a second method: "glyphh-ada-1.1" now names two conditions
    rows = bfcl_base + [dataclasses.replace(r, method="FC-retry") for r in bfcl_base if r.model == GLYPHH]
    s = summarize(metric_rows(rows), resamples=50, seed=0)
    with pytest.raises(InputError) as info:
        s.paired(GLYPHH, AIREV)
    assert f"it names {GLYPHH}/FC, {GLYPHH}/FC-retry" in info.value.describe()
    assert len(s.paired(f"{GLYPHH}/FC-retry", AIREV)) == 1


def test_model_names_with_colons_and_slashes(
    tau_airline: list[PrefixRecord], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tau.jsonl"
    write_records(path, tau_airline)
    qwen, azure = "ollama_chat/qwen2.5:7b", "azure/gpt-4o-2024-11-20"
    (pair,) = metrics_json(capsys, path, "--resamples", "100", "--compare", f"{qwen}:{azure}")["paired"]
    assert (pair["a"]["model"], pair["b"]["model"], pair["common_tasks"]) == (qwen, azure, 50)


def test_tau_interval_contains_the_point_and_shrinks_with_more_tasks(tau_airline: list[PrefixRecord]) -> None:
    # four models on the airline domain, then the same rollouts with every task present four times over
    # (fresh task ids): the point is unchanged and the interval must narrow.
    rows = metric_rows(tau_airline)
    more = [dataclasses.replace(r, task_id=f"{r.task_id}#{k}") for r in rows for k in range(4)]
    widths = []
    for data in (rows, more):
        s = summarize(data, resamples=1000, seed=0)
        (block,) = leaderboard_blocks(s)
        a = agreement(s, block)
        for tau in (a.tau_auc, a.tau_ter):
            assert tau is not None
            assert tau.low <= tau.point <= tau.high
        assert a.tau_auc is not None
        widths.append((a.tau_auc.point, a.tau_auc.high - a.tau_auc.low))
    (point, wide), (point_more, narrow) = widths
    assert point_more == pytest.approx(point)
    assert narrow < 0.75 * wide


def test_tied_leaders_do_not_diverge(shared_data: Path, tmp_path: Path) -> None:
    # Five ironforge runs: o3 leads by success (0.33); o3, gpt-5.4, deepseek and grok-3 are tied for the lead
    # by AUC-PEC (1.00). The success leader is among the AUC-PEC leaders: no divergence.
    records = _score_tau(shared_data, tmp_path, IRONFORGE)
    s = summarize(metric_rows(records), resamples=500, seed=0)
    (block,) = leaderboard_blocks(s)
    a = agreement(s, block)
    assert a.leaders_success == ("o3/ironforge",)
    assert "o3/ironforge" in a.leaders_auc
    assert len(a.leaders_auc) == 4
    assert a.diverges == "no"


def test_leaderboard_view_on_real_files(tau_airline: list[PrefixRecord]) -> None:
    s = summarize(metric_rows(tau_airline), resamples=300, seed=0)
    t = leaderboard(s)
    models = [r[1].text for r in t.rows]
    assert models[0] == "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm"  # best success first
    assert models[-1] == "ollama_chat/qwen2.5:7b"
    success = [float(r[9].text.split()[0]) for r in t.rows]
    assert success == sorted(success, reverse=True)
    assert [r[9].bold for r in t.rows] == [True, False, False, False]  # one block maximum over all models
    # default reference: ft ran 20 tasks, under half of the 50 the others ran, so whissle (0.56) is it
    paired = against_reference(s)
    assert {r[2].text for r in paired.rows} == {"whissle/whissle"}
    assert {r[3].text for r in paired.rows} >= {"50", "20"}
