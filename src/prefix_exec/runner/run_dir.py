"""Run a grid into a run directory, resumably.

``RUN_DIR`` holds ``rollouts.jsonl`` (canonical rollouts with transcript and cost), ``records.jsonl`` (the same
rollouts scored by :func:`prefix_exec.replay.replay`), ``failures.jsonl`` (units that raised, with the error;
``--resume`` retries them, and the file keeps only units that still fail), ``cache.sqlite`` (LLM responses),
``plans.sqlite`` (the shared initial plans, :mod:`~prefix_exec.runner.plan_store`), ``grid.toml`` (a copy that
resolves paths as the original, its URLs without credentials: see :mod:`.credentials`) and ``settings.json``
(what shapes the rollouts: ``--resume`` refuses a grid whose settings differ).

Only this process writes, one fsynced line per finished unit: the rollout first, then its record. A lock keeps a
second run out of the directory. A kill -9 loses the units in flight and nothing else. On ``resume``: units with
a rollout are skipped; a rollout whose record was not written yet (killed between the two lines) is scored from
the file; a torn last line is cut and its unit redone. So the finished directory has each unit exactly once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from prefix_exec.drivers.base import Driver
from prefix_exec.errors import InputError
from prefix_exec.json_types import loads
from prefix_exec.llm.cache import ResponseCache
from prefix_exec.records import outputs
from prefix_exec.records.codec import first_unpooled, record_to_json, rollout_from_json, rollout_to_json
from prefix_exec.records.jsonl import JsonlWriter, check_regular_file, completed_keys, iter_json_lines, latest_by_unit
from prefix_exec.records.line_bound import MAX_WRITTEN_BYTES, bounded_line
from prefix_exec.records.values import noting_zeroed, zeroed_lines
from prefix_exec.replay import replay
from prefix_exec.runner.credentials import needs_redaction, write_grid_copy
from prefix_exec.runner.datasets import make_driver
from prefix_exec.runner.grid import Grid, expand, load_grid, select_tasks
from prefix_exec.runner.launchers import launch
from prefix_exec.runner.plan_store import PLANS, PlanStore
from prefix_exec.runner.progress import Progress
from prefix_exec.runner.run_report import FAILURES, RunReport, charge
from prefix_exec.runner.worker import UnitResult
from prefix_exec.trajectory import Unit, UnitKey

ROLLOUTS, RECORDS, CACHE, GRID_COPY = ("rollouts.jsonl", "records.jsonl", "cache.sqlite", "grid.toml")
SETTINGS, LOCK = "settings.json", ".lock"


def plan_units(grid: Grid) -> list[Unit]:
    tasks = {d.name: select_tasks(d, make_driver(d, grid).task_ids(), grid.seed) for d in grid.datasets}
    return expand(grid, tasks)


def run_grid(
    grid_path: str | Path,
    out: str | Path,
    *,
    resume: bool = False,
    launcher: str = "local",
    max_concurrency: int = 4,
    max_consecutive_failures: int = 20,
    log: TextIO | None = None,
) -> RunReport:
    """Run every unit of the grid at ``grid_path`` not yet in ``out``; see the module docstring for the files.

    ``launcher`` is where units run (:data:`~prefix_exec.cluster.LAUNCHERS`: ``local`` or ``ray``).

    ``max_consecutive_failures`` stops the run after that many failed units in a row (a dead endpoint, an
    exhausted quota), so a broken setup fails in minutes, not after every unit; 0 never stops.
    Raises :class:`InputError` for a bad grid, a missing API key, a busy or unusable ``out``, or a grid whose
    settings differ from those the run directory was made with.
    """
    log = log if log is not None else sys.stderr
    started = time.perf_counter()
    grid = load_grid(grid_path)
    check_api_keys(grid)
    out = Path(out)
    grid = replace(grid, run_dir=out.resolve())
    open_run_directory(out, Path(grid_path))
    with run_lock(out):
        check_resumable(grid, out, resume)
        keep_grid_copy(Path(grid_path), grid, out)
        units = plan_units(grid)
        report = RunReport(planned=len(units))
        cache = open_stores(grid, out, log)
        done = _run_units(
            grid,
            out,
            units,
            lambda todo: launch(launcher, grid, cache, todo, max_concurrency),
            report,
            max_consecutive_failures=max_consecutive_failures,
            log=log,
        )
        compact_failures(out / FAILURES, done)
    report.seconds = time.perf_counter() - started
    return report


def _run_units(
    grid: Grid,
    out: Path,
    units: list[Unit],
    run: Callable[[list[Unit]], Iterable[UnitResult]],
    report: RunReport,
    *,
    max_consecutive_failures: int,
    log: TextIO,
) -> set[UnitKey]:
    """Run (``run``) and write the ``units`` ``out`` does not hold yet, after scoring the rollouts a kill left
    without a record and charging the resumed ones to ``report``; progress on ``log``, and a stop after
    ``max_consecutive_failures`` failed units in a row. Returns the keys of the units with a rollout."""
    rollouts_path, records_path = out / ROLLOUTS, out / RECORDS
    with (
        JsonlWriter(rollouts_path, append=True) as rollouts,
        JsonlWriter(records_path, append=True) as records,
        JsonlWriter(out / FAILURES, append=True) as failures,
    ):
        done = completed_keys(rollouts_path)
        todo = [u for u in units if u.key not in done]
        report.resumed = len(units) - len(todo)
        with noting_zeroed() as zeroed:
            orphans, resumed = done - completed_keys(records_path), {u.key for u in units} & done
            _catch_up(grid, rollouts_path, orphans, resumed, records, report)
        for line in zeroed_lines(zeroed):  # totals an older version wrote: counted as 0, and said so
            print(f"prefix-exec run: warning: {line}", file=log, flush=True)
        progress = Progress(len(units), report.resumed, log, report)
        _write_results(
            run(todo),
            lambda result: _write(result, rollouts, records, failures, report, grid),
            done,
            progress,
            max_consecutive_failures,
            report,
        )
    return done


def open_run_directory(out: Path, grid_path: Path) -> None:
    """Make ``out`` (a new folder, or one an earlier run made) and read what a resume will read, so a bad file
    is refused before anything is written (:func:`check_run_files` too); a folder made here is removed again on
    that error."""
    if out.exists() and not out.is_dir():
        raise InputError("--out must be a directory, and this is a file", path=out, hint="pass a new folder name")
    check_run_files(out, grid_path)
    check_run_directory(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        completed_keys(out / ROLLOUTS)
        completed_keys(out / RECORDS)
    except InputError:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise


def check_run_files(out: Path, grid_path: Path) -> None:
    """Refuse a run directory where a file the run writes is the grid file (the run's own copy, ``grid.toml``,
    excepted: a run is resumed from it) or is no regular file (a FIFO as ``.lock`` would block the run)."""
    for name in RUN_FILES:
        outputs.check_file(out / name, [] if name == GRID_COPY else [grid_path], option="--out")


def check_resumable(grid: Grid, out: Path, resume: bool) -> None:
    """Refuse a run directory with rollouts unless ``resume``, one with units of before tau3 was pooled, and
    one whose settings differ from the grid's (else record the grid's settings in it)."""
    rollouts = out / ROLLOUTS
    if not resume and rollouts.exists() and rollouts.stat().st_size:
        raise InputError(
            "the run directory already has rollouts",
            path=out,
            hint="pass --resume to continue it, or a fresh --out",
        )
    check_pooled_ids(grid, completed_keys(rollouts), out)
    check_settings(grid, out)


def keep_grid_copy(grid_path: Path, grid: Grid, out: Path) -> None:
    """Write the run directory's copy of the grid, once; an older copy that still holds credentials is
    rewritten without them."""
    copy = out / GRID_COPY
    if not copy.exists():
        write_grid_copy(grid_path, grid.base_dir, copy)
    elif needs_redaction(copy):  # an earlier version copied credentials: the copy keeps none from now on
        write_grid_copy(copy, grid.base_dir, copy)


def open_stores(grid: Grid, out: Path, log: TextIO) -> Path | None:
    """Create the response cache (its path is returned; ``None`` with ``cache = false``) and the plan store
    here, once, before workers open them concurrently; a file that is neither, or a stored plan this version
    cannot read, is an input error here. A plan's cost an older version stored out of range is said on ``log``
    (it is read as 0)."""
    cache = out / CACHE if grid.cache else None
    if cache is not None:
        open_cache(cache)
    if grid.plan_store is not None:
        with noting_zeroed() as zeroed:
            PlanStore(grid.plan_store).check()
        for line in zeroed_lines(zeroed):
            print(f"prefix-exec run: warning: {line}", file=log, flush=True)
    return cache


def _write_results(
    results: Iterable[UnitResult],
    write: Callable[[UnitResult], None],
    done: set[UnitKey],
    progress: Progress,
    max_consecutive_failures: int,
    report: RunReport,
) -> None:
    """Write each unit's result as it finishes (adding the key of each written one to ``done``) until all are
    written or ``max_consecutive_failures`` failed in a row (``report.aborted`` then says so)."""
    in_a_row = 0
    try:
        for result in results:
            write(result)
            if result.error is None:
                done.add(result.unit.key)
            progress.update()
            in_a_row = in_a_row + 1 if result.error is not None else 0
            if max_consecutive_failures and in_a_row >= max_consecutive_failures:
                report.aborted = (
                    f"{in_a_row} units failed in a row; the last error: {result.error} (fix the cause, then --resume)"
                )
                break
    finally:
        progress.close()


#: The files a run directory may hold (and their temporary and journal siblings).
RUN_FILES = (ROLLOUTS, RECORDS, FAILURES, CACHE, PLANS, GRID_COPY, SETTINGS, LOCK)


def check_run_directory(out: Path) -> None:
    """Refuse an existing folder that holds files but is not a run directory (no settings.json) before
    anything is written into it: a run there would leave its cache and settings among someone else's files."""
    if not out.is_dir() or (out / SETTINGS).is_file():
        return
    others = sorted(p.name for p in out.iterdir() if not p.name.startswith(RUN_FILES))
    if others:
        raise InputError(
            f"this folder is not a run directory (no {SETTINGS}) and holds other files ({', '.join(others[:3])}"
            f"{', ...' if len(others) > 3 else ''})",
            path=out,
            hint="pass a new or empty folder as --out, or the folder of an earlier run",
        )


def check_pooled_ids(grid: Grid, done: set[UnitKey], out: Path) -> None:
    """Refuse to resume tau units made before tau3 was pooled (``tau3-airline``, task ``18``): the grid now
    names them ``airline/18``, so they would silently run again beside the old ones."""
    tau = {d.name for d in grid.datasets if d.kind == "tau"}
    old = first_unpooled(key for key in done if key[0] in tau)
    if old is not None:
        raise InputError(
            f"this run directory holds tau units made before tau3 was pooled (dataset {old[0]}, task {old[1]}); "
            "task ids are now domain-qualified (airline/18), so --resume cannot continue them",
            path=out,
            hint="start a fresh --out for tau (this version no longer reads records in the old layout)",
        )


def check_api_keys(grid: Grid) -> None:
    """Every grid model's key is set, so a missing key is one clear error before anything runs, not one failed
    unit per unit."""
    for model in grid.models:
        model.endpoint.api_key()


@contextlib.contextmanager
def run_lock(out: Path) -> Iterator[None]:
    """Hold ``out/.lock`` for the run: two processes appending to one directory would duplicate units."""
    with (out / LOCK).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "another prefix-exec run is using this run directory",
                path=out,
                hint="wait for it to finish (or stop it), then --resume",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def check_settings(grid: Grid, out: Path) -> None:
    """Record the grid's unit settings in ``out/settings.json``, or check them against the recorded ones.

    A resumed grid may add datasets and models (their units are new); a dataset, model, seed or agent setting
    that both know must be unchanged, or the directory would mix rollouts made under different settings.
    """
    path = out / SETTINGS
    now = json.loads(json.dumps(grid.unit_settings(), default=list))  # as read back: tuples become lists
    if path.exists():
        before = _recorded_settings(path)
        changed = [name for name in ("seed", "agent") if before.get(name) != now[name]]
        for group in ("datasets", "models"):
            changed += [
                f"{group}.{k}" for k, v in now[group].items() if k in before.get(group, {}) and before[group][k] != v
            ]
        if changed:
            raise InputError(
                f"the grid's settings differ from those this run was made with: {', '.join(changed)}",
                path=out,
                hint=f"resume with the grid the run was started with ({out / GRID_COPY}), or use a fresh --out",
            )
        now = {**now, **{g: {**before.get(g, {}), **now[g]} for g in ("datasets", "models")}}
    # A new file of a random name beside it, renamed over it: never written through a link planted there.
    outputs.write_new(path, (json.dumps(now, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def _recorded_settings(path: Path) -> dict[str, Any]:
    """``settings.json`` as an earlier run wrote it, read as any input is (regular file, UTF-8, bounded JSON: depth,
    digits) with its groups objects; else an :class:`InputError` naming it."""
    check_regular_file(path)
    try:
        before = loads(path.read_bytes().decode("utf-8"))
    except ValueError as exc:  # not UTF-8, not JSON, too deep, too many digits
        raise InputError(f"not valid JSON ({str(exc)[:200]})", path=path, hint="restore it, or a fresh --out") from None
    if isinstance(before, dict) and all(isinstance(before.get(g, {}), dict) for g in ("datasets", "models")):
        return before
    raise InputError("not the settings prefix-exec writes", path=path, hint="restore it, or start a fresh --out")


def open_cache(path: Path) -> None:
    try:
        ResponseCache(path)
    except sqlite3.DatabaseError as exc:
        hint = "delete it (answers are requested again), or set cache = false under [run]"
        raise InputError(f"the response cache cannot be opened: {exc}", path=path, hint=hint) from None


def compact_failures(path: Path, done: set[UnitKey]) -> None:
    """Keep in ``failures.jsonl`` only the units that still have no rollout, each with its latest error."""
    if not path.exists():
        return
    kept = "".join(line for key, line in latest_by_unit(path).items() if key not in done)
    outputs.write_new(path, kept.encode("utf-8"))


def _catch_up(
    grid: Grid, path: Path, orphans: set[UnitKey], resumed: set[UnitKey], records: JsonlWriter, report: RunReport
) -> None:
    """One pass over the rollouts a resumed run holds: score those whose record a kill lost (``orphans``,
    counted in ``report.rescored``), and add the tokens, cost and retries of those the grid plans
    (``resumed``) to the run's totals."""
    if not orphans and not resumed:
        return
    drivers: dict[str, Driver] = {}
    for number, data in iter_json_lines(path):
        rollout = rollout_from_json(data, path=str(path), line=number)
        if rollout.key in orphans:
            if not drivers:
                drivers = {d.name: make_driver(d, grid) for d in grid.datasets}
            scored = bounded_line(record_to_json(replay(rollout, drivers[rollout.dataset].env_for(rollout))))
            if scored is not None:  # a record that cannot fit stays an orphan, as after a kill
                records.write_line(scored)
                report.rescored += 1
            orphans.discard(rollout.key)
        if rollout.key in resumed:
            charge(report, grid, rollout, (str(path), number))


def _write(
    result: UnitResult,
    rollouts: JsonlWriter,
    records: JsonlWriter,
    failures: JsonlWriter,
    report: RunReport,
    grid: Grid,
) -> None:
    u = result.unit
    key = {"dataset": u.dataset, "task_id": u.task_id, "model": u.model, "method": u.method, "trial": u.trial}
    lines = None
    if result.error is None and result.rollout is not None and result.record is not None:
        # Lines kept under the bound (records.line_bound): --resume never refuses a line this run wrote.
        lines = bounded_line(rollout_to_json(result.rollout)), bounded_line(record_to_json(result.record))
    if lines is None or lines[0] is None or lines[1] is None or result.rollout is None:
        error = result.error or (
            f"the unit's rollout or record does not fit in a line of {MAX_WRITTEN_BYTES:,} bytes even with its "
            "texts cut (records.line_bound): it holds too much that is not text"
        )
        failures.write({**key, "error": error, "seconds": result.seconds, "retries": result.retries})
        report.failed += 1
        report.retries += result.retries
        return
    rollouts.write_line(lines[0])
    records.write_line(lines[1])
    report.written += 1
    charge(report, grid, result.rollout)
