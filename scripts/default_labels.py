"""How many recorded errors the classifier leaves to its default label (docs/custom.md, "The classifier").

Reads tau2 results files (every tool message flagged ``error``) and AgentDojo-format runs (a JSON object or a
JSONL line with ``messages``: every ``tool`` message with a non-empty ``error``), and prints each rule's count
with today's table and with the table before issue 43 (without its ``format`` and ``nothing found`` rules and
without an exception's name read as the error's type), and the share left to the default.

    python scripts/default_labels.py ../shared/data/tau/*.json ../shared/data/tau/leaderboard/*.json
    python scripts/default_labels.py $(find runs -name '*.json')
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefix_exec.envs.custom.evidence import (
    DEFAULT_LABEL,
    DEFAULT_RULE,
    RULES,
    TEXT_CHARS,
    _normalized_type,
    classify,
    leading_exception,
)

#: The rules issue 43 added: without them (and without the exception's name as the type), the table before it.
ADDED = ("format", "nothing found")
#: The rules issue 43 widened, as they were.
WAS = {"validation error": r"\bvalidation (error|failed)\b|\bfailed validation\b|\bschema\b"}


def before(text: str) -> str:
    """The rule the table before issue 43 gives ``text`` (no error type: the logs name none)."""
    kind = _normalized_type(None)
    rules = [replace(r, pattern=WAS.get(r.name, r.pattern)) for r in RULES if r.name not in ADDED]
    return next((r.name for r in rules if r.matches(kind, text[:TEXT_CHARS])), DEFAULT_RULE)


def record_label_before(record: dict[str, Any], recorded_error: Callable[[], str]) -> str:
    """A scored record's first-failure label by the table before issue 43: a failure our own check found keeps its
    label; any other is labelled by the rule :func:`before` gives its recorded error (``recorded_error()``)."""
    verdict = record["verdicts"][record["fed"] - 1]
    if verdict["notes"][0].startswith("source: our check"):
        return str(record["label"])
    rule = before(recorded_error())
    labels = {r.name: r.label.value for r in RULES}
    return labels[rule] if rule != DEFAULT_RULE else DEFAULT_LABEL.value


def errors(path: Path) -> Iterator[str]:
    """The recorded error texts of one file (tau2 results, AgentDojo runs as JSON or JSONL)."""
    text = path.read_text(encoding="utf-8")
    try:
        documents: list[Any] = [json.loads(text)]
    except json.JSONDecodeError:
        documents = [json.loads(line) for line in text.splitlines() if line.strip()]
    for document in documents:
        simulations = document if isinstance(document, list) else document.get("simulations", [document])
        for simulation in simulations:
            for message in simulation.get("messages") or [] if isinstance(simulation, dict) else []:
                if not isinstance(message, dict) or message.get("role") != "tool":
                    continue
                if isinstance(message.get("error"), str) and message["error"]:
                    yield message["error"]  # AgentDojo: the exception beside an empty content
                elif message.get("error") is True:
                    yield str(message.get("content") or "")  # tau2: the flag, the text in the content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    texts = [t for path in parser.parse_args().files for t in errors(path)]
    old = Counter(before(t) for t in texts)
    new = Counter(classify(leading_exception(t), t).rule for t in texts)
    print(f"{len(texts)} recorded errors")
    for name in sorted(set(old) | set(new), key=lambda n: -new[n]):
        print(f"  {name:28} before {old[name]:5}  now {new[name]:5}")
    if texts:
        share_old, share_new = old[DEFAULT_RULE] / len(texts), new[DEFAULT_RULE] / len(texts)
        print(f"left to the default: before {share_old:.1%}, now {share_new:.1%}")


if __name__ == "__main__":
    main()
