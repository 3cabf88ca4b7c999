"""Open report.html in real headless Chromium, click from a Table 2 cell to a rollout, and screenshot it.

Chromium is Debian's package; the fixture installs it with apt-get when it is missing (as root). Set
PREFIX_EXEC_SCREENSHOTS=DIR to keep the screenshots.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from report_browser import Browser, ensure_chromium
from report_records import crafted

from prefix_exec.report.build import Options, write_report
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict


@pytest.fixture(scope="session")
def chromium() -> Path:
    try:
        return ensure_chromium()
    except Exception as exc:  # an install failure must fail the test loudly, not skip it
        pytest.fail(f"cannot get headless chromium: {exc}")


@pytest.fixture
def browser(chromium: Path, tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


def _report(out: Path) -> Path:
    rows = [r for r in crafted() if not (r.method == "dual-loop" and r.model == "m1" and r.task_id == "t4")]
    actions = (
        ToolCall("cd", {"folder": "documents"}),
        ToolCall("mv", {"source": "report.txt"}),
        ToolCall("mv", {"source": "report.txt", "destination": "archive"}),
        ToolCall("ls", {}),
    )
    rows.append(
        PrefixRecord(
            "bfcl_demo",
            "t4",
            "m1",
            "dual-loop",
            0,
            4,
            2,
            1,
            (
                Verdict.accept("None"),
                Verdict.reject(FailureLabel.SCHEMA, "mv() missing required argument 'destination'"),
            ),
            actions,
        )
    )
    write_report(rows, out, Options(resamples=200))
    return out / "report.html"


def _keep(path: Path) -> None:
    keep = os.environ.get("PREFIX_EXEC_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / path.name).write_bytes(path.read_bytes())


def test_click_table2_cell_to_rollout(browser: Browser, tmp_path: Path) -> None:
    page = _report(tmp_path / "report")
    browser.open(page.as_uri())
    # nothing from the rollouts is shown before a click
    assert browser.evaluate("document.querySelectorAll('.cond.shown').length") == 0
    assert browser.evaluate("document.querySelector('#c2').offsetParent === null")
    first = browser.screenshot(tmp_path / "report-top.png")
    _keep(first)

    # Table 2, block m1, row dual-loop (the third row), TER cell -> that condition's rollouts
    cell = "#t-table2 tbody tr:nth-child(3) td:nth-child(5) a"
    assert browser.evaluate(f"document.querySelector('{cell}').getAttribute('href')") == "#c2"
    browser.click(cell)
    browser.wait_for("location.hash === '#c2'")
    browser.wait_for("document.querySelector('#c2').offsetParent !== null")
    assert "dual-loop" in browser.evaluate("document.querySelector('#c2 h3').textContent")

    # open the recovered rollout t4 and check its highlighted first failure and the steps after it
    assert browser.evaluate("document.querySelectorAll('#c2 details.rollout[open]').length") == 0
    browser.click('#c2 details.rollout[data-task="t4"] summary')
    browser.wait_for("document.querySelector('#c2 details.rollout[open] tr.fail') !== null")
    fail_text = browser.evaluate("document.querySelector('#c2 details.rollout[open] tr.fail').textContent")
    assert "mv" in fail_text
    assert "missing required argument" in fail_text
    assert "schema" in fail_text
    assert browser.evaluate("document.querySelectorAll('#c2 details.rollout[open] tr.after').length") == 2
    browser.evaluate("document.querySelector('#c2 details.rollout[open]').scrollIntoView()")
    shot = browser.screenshot(tmp_path / "report-rollout.png")
    _keep(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000


def test_sorting_a_column(browser: Browser, tmp_path: Path) -> None:
    page = _report(tmp_path / "report")
    browser.open(page.as_uri())
    col = "Array.from(document.querySelectorAll('#t-table2 tbody tr td:nth-child(7)')).map(td => td.dataset.v)"
    browser.click("#t-table2 thead th:nth-child(7)")  # AUC-PEC ascending
    values = [float(v) for v in browser.evaluate(col)]
    assert values == sorted(values)
    browser.click("#t-table2 thead th:nth-child(7)")
    values = [float(v) for v in browser.evaluate(col)]
    assert values == sorted(values, reverse=True)


def test_a_10000_rollout_report_opens_and_drills_down_to_a_failing_call(
    browser: Browser, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    from report_records import synthetic

    rows = synthetic(10_000, conditions=10)
    write_report(rows, tmp_path / "big", Options(resamples=200, plots=False))
    write_report(rows[:1], tmp_path / "one", Options(resamples=200, plots=False))
    page = tmp_path / "big" / "report.html"
    size, base = page.stat().st_size, (tmp_path / "one" / "report.html").stat().st_size
    per_rollout = (size - base) / len(rows)
    record_property("report_html_bytes", size)
    record_property("bytes_per_rollout_beyond_base", round(per_rollout))
    assert per_rollout <= 1024, per_rollout  # the page's budget: about 1 KB per rollout beyond a fixed base

    start = time.monotonic()
    browser.open(page.as_uri(), timeout=120)
    loaded = time.monotonic() - start
    record_property("load_seconds", round(loaded, 2))
    # the leaderboard's first row links to the best condition; follow it and open its first failing rollout
    cell = "#t-leaderboard tbody tr:nth-child(1) td:nth-child(5) a"
    target = browser.evaluate(f"document.querySelector('{cell}').getAttribute('href')")
    browser.click(cell)
    browser.wait_for(f"document.querySelector('{target}').offsetParent !== null", timeout=60)
    rollout = f"{target} .group:first-of-type details.rollout"
    browser.click(f"{rollout} summary")
    browser.wait_for(f"document.querySelector('{rollout}[open] tr.fail') !== null", timeout=30)
    fail = browser.evaluate(f"document.querySelector('{rollout}[open] tr.fail').textContent")
    assert "first failure" in fail
    assert "check on argument 'path'" in fail
    # the condition's header stays in view while its rollouts scroll under it
    browser.evaluate(f"document.querySelector('{rollout}').scrollIntoView()")
    top = browser.evaluate(f"document.querySelector('{target} h3').getBoundingClientRect().top")
    assert abs(top) < 2, top
    # the filter finds rollouts by tool across every condition, and a hit opens its rollout
    browser.evaluate(
        "var f=document.getElementById('filter');f.value='book_reservation';f.dispatchEvent(new Event('input'))"
    )
    browser.wait_for("/rollouts match/.test(document.getElementById('hit-count').textContent)", timeout=60)
    count = browser.evaluate("document.getElementById('hit-count').textContent")
    expected = sum(1 for r in rows if any(a.name == "book_reservation" for a in r.actions))
    assert count.startswith(f"{expected} rollouts match"), count
    browser.click("#hits li:first-child a")
    browser.wait_for("document.querySelector('details.rollout[open]') !== null", timeout=30)
    shot = browser.screenshot(tmp_path / "report-10000.png")
    _keep(shot)
    print(
        f"\n10,000-rollout report.html: {size / 1e6:.2f} MB ({per_rollout:.0f} B per rollout beyond a "
        f"{base / 1e3:.0f} KB base), opened in {loaded:.2f} s"
    )


def test_hostile_names_leave_the_script_running_and_every_rollout_rendered(browser: Browser, tmp_path: Path) -> None:
    from report_records import record

    # each name once as a dataset, a model, a method and in a task id: the page embeds them all in its JSON
    names = ("<!--<script>", "</script><script>document.title='owned'</script>", "<!--", "<script>", "a\u2028b&")
    rows = [
        record(method, f"{name}-{i}", T=2, fed=2, success=i % 2, model=name, dataset=f"{name}-data")
        for name in names
        for method in (name, "react")
        for i in range(2)
    ]
    write_report(rows, tmp_path / "out", Options(resamples=20, plots=False))
    browser.open((tmp_path / "out" / "report.html").as_uri())
    assert browser.evaluate("document.body.classList.contains('nojs')") is False  # the page's script ran
    assert browser.evaluate("document.title") == "prefix-exec report"
    browser.click("#show-all")
    browser.wait_for(f"document.querySelectorAll('details.rollout').length === {len(rows)}")
    shown = browser.evaluate("Array.from(document.querySelectorAll('details.rollout')).map(d => d.dataset.task)")
    assert sorted(shown) == sorted(r.task_id for r in rows)
    heads = browser.evaluate("Array.from(document.querySelectorAll('.cond h3')).map(h => h.textContent).join(' | ')")
    assert all(f"{name}-data" in heads for name in names)
