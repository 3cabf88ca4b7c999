"""A worker's results are records (a Rollout and its PrefixRecord) that survive pickling unchanged, as they must
to cross to a spawned process or a Ray actor; the run's writer turns them into the same JSON lines either way."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from fakes import ticketing_agent
from fakes.bfcl_agent import BfclScript
from fakes.openai_server import ScriptedServer
from grid_files import served_model, table
from prefix_exec.json_types import dumps
from prefix_exec.methods import METHODS
from prefix_exec.records.codec import record_to_json, rollout_to_json
from prefix_exec.runner import load_grid
from prefix_exec.runner.run_dir import plan_units
from prefix_exec.runner.worker import UnitResult, UnitWorker
from prefix_exec.trajectory import PrefixRecord, Rollout, Unit

REPO = Path(__file__).resolve().parents[2]
BFCL_TASKS = ["multi_turn_base_0", "multi_turn_miss_func_1"]


def results(tmp_path: Path, base_url: str, dataset: str) -> list[UnitResult]:
    """Every unit of a one-dataset grid (every method, two trials), run by one worker."""
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f"seed = 3\ntrials = 2\nmethods = {json.dumps(list(METHODS))}\n[agent]\nk_val = 2\n"
        + dataset
        + served_model("m", base_url, max_retries=0)
    )
    loaded = load_grid(grid)
    worker = UnitWorker(loaded, tmp_path / "cache.sqlite")
    return [worker.run(unit) for unit in plan_units(loaded)]


def assert_survive_pickling(done: list[UnitResult]) -> None:
    for result in done:
        assert result.error is None, result.error
        assert isinstance(result.rollout, Rollout)
        assert isinstance(result.record, PrefixRecord)
        copy = pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        assert copy == result
        assert copy.rollout is not None and copy.record is not None
        assert dumps(rollout_to_json(copy.rollout)) == dumps(rollout_to_json(result.rollout))
        assert dumps(record_to_json(copy.record)) == dumps(record_to_json(result.record))


def test_ticketing_results_are_records_that_pickle(tmp_path: Path) -> None:
    spec = REPO / "examples" / "ticketing" / "tools.yaml"
    with ScriptedServer(ticketing_agent.respond) as server:
        done = results(tmp_path, server.base_url, table("datasets", name="ticketing", kind="custom", spec=str(spec)))
    assert len(done) == 6 * len(METHODS) * 2
    assert {r.record.label for r in done if r.record is not None} != {None}  # rejected verdicts are in the mix
    assert_survive_pickling(done)


def test_bfcl_results_are_records_that_pickle(tmp_path: Path) -> None:
    """BFCL's verdicts carry what its Python classes returned, not JSON."""
    with ScriptedServer(BfclScript(BFCL_TASKS)) as server:
        done = results(tmp_path, server.base_url, table("datasets", name="bfcl", kind="bfcl", tasks=BFCL_TASKS))
    assert len(done) == len(BFCL_TASKS) * len(METHODS) * 2
    assert any(v.result is not None for r in done if r.record is not None for v in r.record.verdicts)
    assert_survive_pickling(done)


def test_a_failed_unit_pickles_with_its_error() -> None:
    failed = UnitResult(Unit("d", "t", "m", "react", 0), error="BackendError: no answer", seconds=1.5, retries=2)
    assert pickle.loads(pickle.dumps(failed)) == failed
