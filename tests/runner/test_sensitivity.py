"""The sensitivity study end to end (paper 3.3, Table F.3): a BFCL grid of plan-conditioned, dual-loop and the
accept-all control on a scripted server, with the response cache off and a planner that never answers twice
the same; a verifier rerun in a second run directory that reuses the first run's plans; the F.3 table of
``report`` and ``metrics`` checked against a hand computation from the records."""

from __future__ import annotations

import csv
import io
import itertools
import json
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from fakes.bfcl_agent import BfclScript
from fakes.openai_server import ScriptedServer, text_message
from grid_files import served_model, table
from prefix_exec.cli import main
from prefix_exec.records.codec import read_records
from prefix_exec.runner.plan_store import PlanStore
from prefix_exec.runner.run_dir import run_grid
from prefix_exec.trajectory import PrefixRecord

TASKS = ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_3", "multi_turn_base_4"]
#: The verifier rejects every plan of this task; its executor, handed a rejected plan, makes a call to a tool
#: that does not exist before the ground truth (so dual-loop fails its prefix there, the others do not).
REJECTED = "multi_turn_base_1"
BAD_CALL = {"id": "bad", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}}
METHODS = ["plan-conditioned", "dual-loop", "dual-loop-accept-all"]


class Sensitivity:
    """Ground-truth play (:class:`BfclScript`), with a request number in every planner answer, the verifier
    rejecting :data:`REJECTED`, and the executor's bad call after a rejected plan."""

    def __init__(self) -> None:
        self.script = BfclScript(TASKS)
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        system = str(messages[0].get("content") or "")
        if system.startswith("You are the PLANNER"):
            with self.lock:
                n = next(self.numbers)
            plan = json.loads(str(self.script(body)["content"]))
            return text_message(json.dumps({**plan, "request": n}))
        if system.startswith("You are the VERIFIER"):
            goal = str(messages[1]["content"]).split("Goal:\n", 1)[1].split("\n\nTools:", 1)[0]
            if self.script.by_goal[goal][0] == REJECTED:
                issue = {"step": 1, "check": "precondition", "message": "scripted rejection"}
                return text_message(json.dumps({"approved": False, "issues": [issue]}))
            return self.script(body)
        answer = self.script(body)
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        rejected = "not approved by the verifier" in str(messages[last]["content"])
        if rejected and last == len(messages) - 1 and answer.get("tool_calls"):
            return {**answer, "tool_calls": [BAD_CALL, *answer["tool_calls"]]}
        return answer


def write_grid(path: Path, url: str, *, methods: list[str], k_val: int, extra: str = "") -> Path:
    path.write_text(
        f"methods = {json.dumps(methods)}\n[agent]\nk_val = {k_val}\n[run]\ncache = false\n{extra}\n"
        + table("datasets", name="bfcl", kind="bfcl", tasks=TASKS)
        + served_model("m", url)
    )
    return path


def initial_planner_requests(server: ScriptedServer, start: int) -> int:
    """Planner requests that are a turn's first proposal (a revision carries the earlier plan)."""
    return sum(
        1
        for b in server.requests[start:]
        if str(b["messages"][0]["content"]).startswith("You are the PLANNER")
        and not any(m["role"] == "assistant" for m in b["messages"])
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("sensitivity")
    with ScriptedServer(Sensitivity()) as server:
        first = write_grid(tmp / "grid.toml", server.base_url, methods=METHODS, k_val=1)
        report = run_grid(first, tmp / "run", max_concurrency=3)
        assert (report.written, report.failed) == (12, 0)
        initial = initial_planner_requests(server, 0)
        start = len(server.requests)
        plans = json.dumps(str(tmp / "run" / "plans.sqlite"))
        rerun = write_grid(
            tmp / "rerun.toml", server.base_url, methods=["dual-loop"], k_val=2, extra=f"plans = {plans}"
        )
        assert run_grid(rerun, tmp / "rerun", max_concurrency=2).written == 4
        rerun_initial = initial_planner_requests(server, start)
    return {
        "tmp": tmp,
        "records": list(read_records(tmp / "run" / "records.jsonl")),
        "rerun": list(read_records(tmp / "rerun" / "records.jsonl")),
        "initial": initial,
        "rerun_initial": rerun_initial,
    }


def test_the_three_methods_of_a_task_carry_one_plan_made_once(runs: dict[str, Any]) -> None:
    by_task: dict[str, dict[str, PrefixRecord]] = defaultdict(dict)
    for r in runs["records"]:
        by_task[r.task_id][r.method] = r
    planned = 0
    for task, methods in by_task.items():
        digests = {m: r.metadata["plan_digest"] for m, r in methods.items()}
        assert len({json.dumps(d) for d in digests.values()}) == 1, (task, digests)
        turns = len(methods["plan-conditioned"].metadata["planned_turns"])
        assert len(digests["dual-loop"]) == turns
        sources = sorted(s for r in methods.values() for s in r.metadata["plan_source"])
        assert sources == sorted(["generated"] * turns + ["shared"] * 2 * turns)
        planned += turns
    # the planner was asked once per (task, turn), with the cache off and a server that never repeats itself
    assert runs["initial"] == planned == len(PlanStore(runs["tmp"] / "run" / "plans.sqlite"))


def test_a_verifier_rerun_elsewhere_reuses_the_first_runs_plans(runs: dict[str, Any]) -> None:
    first = {r.task_id: r for r in runs["records"] if r.method == "dual-loop"}
    assert runs["rerun_initial"] == 0
    for r in runs["rerun"]:
        assert r.metadata["k_val"] == 2
        assert r.metadata["plan_digest"] == first[r.task_id].metadata["plan_digest"]
        assert set(r.metadata["plan_source"]) == {"shared"}
        assert set(r.metadata["plan_generated_by"]) <= set(METHODS)
    rejected = next(r for r in runs["rerun"] if r.task_id == REJECTED)
    assert rejected.metadata["verification_rounds"][0] == 2  # the rerun's budget: one revision
    assert first[REJECTED].metadata["verification_rounds"][0] == 1


def test_the_control_approves_every_plan_in_one_round(runs: dict[str, Any]) -> None:
    control = [r for r in runs["records"] if r.method == "dual-loop-accept-all"]
    plan = {r.task_id: r for r in runs["records"] if r.method == "plan-conditioned"}
    for r in control:
        turns = len(r.metadata["planned_turns"])
        assert r.metadata["verification_rounds"] == [1] * turns
        assert r.metadata["plan_approved"] == [True] * turns
        assert not [c for c in r.cost if c.role == "verifier"]
        # same plan, same prompts: the executor's calls and their tokens are plan-conditioned's
        other = plan[r.task_id]
        assert [(c.role, c.prompt_tokens, c.completion_tokens) for c in r.cost] == [
            (c.role, c.prompt_tokens, c.completion_tokens) for c in other.cost
        ]
        assert (r.fed, r.T, r.success) == (other.fed, other.T, other.success)


def by_hand(records: list[PrefixRecord], method: str) -> dict[str, float]:
    """TER, AUC-PEC, PEC@4 and Y (means of per-rollout values, one rollout per task) and mean agent tokens and
    seconds, straight from the definitions."""
    rs = [r for r in records if r.method == method]
    agent = [[c for c in r.cost if c.role in ("planner", "verifier", "executor")] for r in rs]
    return {
        "TER": sum(r.fed == r.T + 1 for r in rs) / len(rs),
        "AUC_PEC": sum((r.fed - 1) / r.T for r in rs) / len(rs),
        "PEC@4": sum(r.fed > 4 for r in rs) / len(rs),
        "success": sum(r.success for r in rs) / len(rs),
        "tokens": sum(c.prompt_tokens + c.completion_tokens for cs in agent for c in cs) / len(rs),
        "seconds": sum(c.latency_s for cs in agent for c in cs) / len(rs),
    }


def test_the_f3_table_of_report_has_the_three_differences_by_hand(runs: dict[str, Any]) -> None:
    tmp = runs["tmp"]
    assert main(["report", str(tmp / "run"), "--out", str(tmp / "report"), "--no-plots"]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp / "report" / "sensitivity.csv").read_text())))
    assert [(r["A"], r["B"]) for r in rows] == [
        ("dual-loop", "dual-loop-accept-all"),
        ("dual-loop-accept-all", "plan-conditioned"),
        ("dual-loop", "plan-conditioned"),
    ]
    hand = {m: by_hand(runs["records"], m) for m in METHODS}
    for row in rows:
        a, b = hand[row["A"]], hand[row["B"]]
        assert (row["dataset"], row["model"], row["common_tasks"]) == ("bfcl", "m", "4")
        for statistic in ("TER", "AUC_PEC", "PEC@4", "success"):
            assert float(row[f"d_{statistic}"]) == pytest.approx(a[statistic] - b[statistic], abs=1e-6)
            assert float(row[f"d_{statistic}_low"]) <= float(row[f"d_{statistic}"]) <= float(row[f"d_{statistic}_high"])
        assert float(row["d_tokens"]) == pytest.approx(a["tokens"] - b["tokens"], abs=1e-6)
        assert float(row["d_seconds"]) == pytest.approx(a["seconds"] - b["seconds"], abs=1e-6)
    # dual-loop fails its prefix on the one rejected task of four, the others never
    dual_control = rows[0]
    assert float(dual_control["d_TER"]) == pytest.approx(-0.25)
    # a mean over 4 task draws of (-1, 0, 0, 0): every replicate is -j/4; 0 is the upper bound (P(j=0) = 0.32),
    # and the lower one lies at -3/4 or -1/2 (P(j >= 3) = 0.051, P(j >= 2) = 0.26)
    assert float(dual_control["d_TER_high"]) == 0.0
    assert -0.75 <= float(dual_control["d_TER_low"]) <= -0.5
    assert float(dual_control["d_tokens"]) > 0  # the verifier calls
    control_plan = rows[1]
    assert [float(control_plan[f"d_{s}"]) for s in ("TER", "AUC_PEC", "PEC@4", "success", "tokens")] == [0.0] * 5
    md = (tmp / "report" / "report.md").read_text()
    assert "Sensitivity controls (Table F.3)" in md
    assert "Sensitivity controls (Table F.3)" in (tmp / "report" / "report.html").read_text()


def test_the_f3_table_splits_the_verifier_reruns(runs: dict[str, Any]) -> None:
    tmp = runs["tmp"]
    out = tmp / "report-both"
    assert main(["report", str(tmp / "run"), str(tmp / "rerun"), "--out", str(out), "--no-plots"]) == 0
    rows = list(csv.DictReader(io.StringIO((out / "sensitivity.csv").read_text())))
    one, two = "dual-loop [verifier=m, K_val=1]", "dual-loop [verifier=m, K_val=2]"
    assert [(r["A"], r["B"]) for r in rows] == [
        (one, "dual-loop-accept-all"),
        (two, "dual-loop-accept-all"),
        ("dual-loop-accept-all", "plan-conditioned"),
        (one, "plan-conditioned"),
        (two, "plan-conditioned"),
    ]
    # the rerun revises once more on the rejected task and costs more; its prefix fails there all the same
    assert float(rows[1]["d_TER"]) == pytest.approx(-0.25)
    assert float(rows[1]["d_tokens"]) > float(rows[0]["d_tokens"])


def test_metrics_shows_the_f3_table_in_every_format(runs: dict[str, Any]) -> None:
    records = str(runs["tmp"] / "run" / "records.jsonl")
    out = runs["tmp"] / "metrics"
    assert main(["metrics", records, "--format", "json", "--out", str(out / "m.json")]) == 0
    doc = json.loads((out / "m.json").read_text())
    hand = {m: by_hand(runs["records"], m) for m in METHODS}
    found = [(row["a"]["method"], row["b"]["method"]) for row in doc["sensitivity"]]
    assert found == [
        ("dual-loop", "dual-loop-accept-all"),
        ("dual-loop-accept-all", "plan-conditioned"),
        ("dual-loop", "plan-conditioned"),
    ]
    for row in doc["sensitivity"]:
        a, b = hand[row["a"]["method"]], hand[row["b"]["method"]]
        assert row["differences"]["TER"]["point"] == pytest.approx(a["TER"] - b["TER"])
        assert row["differences"]["PEC@4"]["point"] == pytest.approx(a["PEC@4"] - b["PEC@4"])
        assert row["d_tokens"] == pytest.approx(a["tokens"] - b["tokens"])
    assert main(["metrics", records, "--out", str(out / "m.md")]) == 0
    assert "Sensitivity controls (Table F.3)" in (out / "m.md").read_text()


def test_metrics_splits_the_verifier_reruns_as_the_report_does(runs: dict[str, Any]) -> None:
    tmp = runs["tmp"]
    both = [str(tmp / "run" / "records.jsonl"), str(tmp / "rerun" / "records.jsonl")]
    assert main(["metrics", *both, "--format", "json", "--out", str(tmp / "both.json")]) == 0
    doc = json.loads((tmp / "both.json").read_text())
    methods = sorted(c["method"] for c in doc["conditions"])
    one, two = "dual-loop [verifier=m, K_val=1]", "dual-loop [verifier=m, K_val=2]"
    assert methods == sorted([one, two, "dual-loop-accept-all", "plan-conditioned"])
    assert [(r["a"]["method"], r["b"]["method"]) for r in doc["sensitivity"]] == [
        (one, "dual-loop-accept-all"),
        (two, "dual-loop-accept-all"),
        ("dual-loop-accept-all", "plan-conditioned"),
        (one, "plan-conditioned"),
        (two, "plan-conditioned"),
    ]
    # a records file passed twice is still two copies of each rollout
    assert main(["metrics", both[0], both[0]]) == 2
