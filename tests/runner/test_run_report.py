"""What a run did, in the line ``prefix-exec run`` prints last (:class:`prefix_exec.runner.run_report.RunReport`)."""

from __future__ import annotations

from prefix_exec.runner.run_report import RunReport


def test_the_description_names_only_what_happened() -> None:
    quiet = RunReport(planned=3, written=3, tokens=120, seconds=2.04)
    assert quiet.describe() == "3 of 3 units written in 2.0 s; the run holds 120 agent tokens"
    busy = RunReport(10, 4, failed=2, resumed=3, rescored=1, tokens=9, usd=0.125, retries=5, aborted="429 storm")
    assert busy.describe() == (
        "4 of 10 units written in 0.0 s; the run holds 9 agent tokens, $0.12, 5 LLM requests retried "
        "(429/5xx/408/409/timeouts/connection/bad answers); 3 already done (--resume); 1 rollouts scored from "
        "the file; 2 failed (see failures.jsonl; --resume retries them); stopped early: 429 storm"
    )
