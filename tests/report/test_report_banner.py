"""In real headless Chromium: a synthetic report's red banner and a condition's sticky heading both stay in view,
the heading below the banner, not under it. PREFIX_EXEC_SCREENSHOTS=DIR keeps the screenshot."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from report_browser import Browser, ensure_chromium
from report_records import record

from prefix_exec.report.build import Options, write_report

pytestmark = pytest.mark.slow


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    try:
        ensure_chromium()
    except Exception as exc:  # an install failure must fail the test loudly, not skip it
        pytest.fail(f"cannot get headless chromium: {exc}")
    b = Browser(tmp_path / "profile", width=1000, height=700)
    try:
        yield b
    finally:
        b.close()


def _box(browser: Browser, selector: str) -> tuple[float, float]:
    top, bottom = browser.evaluate(
        f"(function(){{var r=document.querySelector('{selector}').getBoundingClientRect();return [r.top,r.bottom]}})()"
    )
    return float(top), float(bottom)


def test_the_sticky_condition_heading_stays_below_the_synthetic_banner(browser: Browser, tmp_path: Path) -> None:
    # 40 rollouts of one condition, so that its section is long enough to scroll under its heading
    rows = [replace(record("react", f"t{i}", T=3, fed=2, success=0), metadata={"synthetic": True}) for i in range(40)]
    write_report(rows, tmp_path / "out", Options(resamples=50, plots=False))
    browser.open((tmp_path / "out" / "report.html").as_uri())
    assert browser.evaluate("document.querySelector('.synthetic') !== null")
    cell = "#t-table2 tbody tr:nth-child(1) td:nth-child(5) a"  # TER of the one condition -> its rollouts
    browser.click(cell)
    browser.wait_for("document.querySelectorAll('#c0 details.rollout').length >= 40")
    browser.evaluate("document.querySelectorAll('#c0 details.rollout').forEach(function(d){d.open=true})")
    # scroll to the middle of the condition's rollouts: both headers are now stuck to the top of the view
    browser.evaluate("document.querySelectorAll('#c0 details.rollout')[20].scrollIntoView()")
    banner, heading = _box(browser, ".synthetic"), _box(browser, "#c0 h3")
    shot = browser.screenshot(tmp_path / "report-synthetic-sticky.png")
    keep = os.environ.get("PREFIX_EXEC_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / shot.name).write_bytes(shot.read_bytes())
    assert abs(banner[0]) < 1, banner  # the banner is stuck at the top
    assert heading[0] >= banner[1] - 0.5, (banner, heading)  # the heading below it, not hidden under it
    assert heading[0] < banner[1] + 40, (banner, heading)  # and stuck there, not scrolled away
