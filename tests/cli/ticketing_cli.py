"""The CLI tests' common first step: ``prefix-exec score custom`` on the ticketing example (examples/ticketing)."""

from __future__ import annotations

from pathlib import Path

from prefix_exec.cli import main


def score_example(ticketing: Path, out: Path, *extra: str) -> int:
    """Score the example's 12 rollouts against its tools.yaml into ``out``; ``extra`` options are appended.

    Returns the CLI's exit code (0 when every rollout was scored).
    """
    return main(
        [
            "score",
            "custom",
            "--tools",
            str(ticketing / "tools.yaml"),
            str(ticketing / "rollouts.jsonl"),
            "--out",
            str(out),
            *extra,
        ]
    )
