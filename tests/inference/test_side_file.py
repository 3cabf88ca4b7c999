"""The side file's text: any names the logs hold read back exactly (YAML parses what we write, a comment stays one
line), the file loads as a --hooks side file, the evidence bounds hold, and the same evidence gives the same bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from prefix_exec.envs.custom.environment import layered_environment
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.envs.custom.spec_formats import to_spec
from prefix_exec.inference import evidence as evidence_module
from prefix_exec.inference.candidates import DEFAULTS, infer
from prefix_exec.inference.corpus import Conversation
from prefix_exec.inference.evidence import MAX_PRODUCERS_PER_VALUE, Evidence
from prefix_exec.inference.side_file import Header, comment, scalar, side_file
from prefix_exec.trajectory import Observation, ToolCall

NAMES = st.text(min_size=1, max_size=12).filter(lambda n: not any(c in n for c in ".[]") and n != "$")


def evidence_of(producer: str, consumer: str, argument: str, n: int = 4) -> Evidence:
    evidence = Evidence(EvidencePolicy(error_pattern=None))
    for i in range(n):
        made = ToolCall(producer, {}, observation=Observation(json.dumps({"item_id": f"I{i}x9"})))
        used = ToolCall(consumer, {argument: f"I{i}x9"}, observation=Observation("ok"))
        evidence.add(Conversation(f"c{i}\n# evil: 1", (made, used)))
    return evidence


@settings(max_examples=150, deadline=None)
@given(NAMES, NAMES, NAMES)
def test_any_names_read_back_exactly(producer: str, consumer: str, argument: str) -> None:
    evidence = evidence_of(producer, consumer, argument)
    text = side_file(infer(evidence), evidence, Header(1, DEFAULTS, True))
    tools = yaml.safe_load(text)["tools"]
    (kind,) = tools[consumer]["refs"].values()
    assert tools[consumer]["refs"] == {argument: kind}
    assert tools[producer]["produces"][kind] == "item_id"
    for line in text.splitlines():
        assert line.lstrip().startswith("#") or ":" in line


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_a_comment_is_one_line(text: str) -> None:
    line = comment(text)
    assert "\n" not in line and "\r" not in line and yaml.safe_load(line + "\nx: 1") == {"x": 1}


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=20))
def test_a_scalar_reads_back_as_itself(text: str) -> None:
    assert yaml.safe_load(f"k: {scalar(text)}") == {"k": text}


def test_the_file_loads_as_a_side_file_and_is_the_same_bytes_twice(tmp_path: Path) -> None:
    evidence = evidence_of("search", "order", "item_id")
    text = side_file(infer(evidence), evidence, Header(1, DEFAULTS, True))
    assert text == side_file(infer(evidence_of("search", "order", "item_id")), evidence, Header(1, DEFAULTS, True))
    (tmp_path / "side.yaml").write_text(text)
    tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("search", "order")]
    data, form = to_spec({"tools": tools}, path=tmp_path / "tools.json")
    env = layered_environment(data, tmp_path / "tools.json", form=form, hooks=tmp_path / "side.yaml")
    assert env.tools["order"].refs == {"item_id": "item"}


def test_nothing_inferred_is_an_empty_tools_map() -> None:
    evidence = Evidence(EvidencePolicy())
    assert yaml.safe_load(side_file(infer(evidence), evidence, Header(0, DEFAULTS, True))) == {"tools": {}}


def test_the_bounds_hold(monkeypatch: Any) -> None:
    monkeypatch.setattr(evidence_module, "MAX_CONSUMERS", 3)
    evidence = Evidence(EvidencePolicy(), max_values=5)
    result = {f"f{i}": "ID1" for i in range(20)}  # one value at 20 paths
    calls = [ToolCall("open", {}, observation=Observation(json.dumps(result)))]
    calls += [ToolCall(f"t{i}", {"a": f"V{i}xx", "b": "ID1"}) for i in range(10)]
    calls += [ToolCall("t0", {"a": f"W{i}xx"}) for i in range(10)]
    evidence.add(Conversation("c", tuple(calls)))
    assert sorted(evidence.consumers) == [("t0", "a"), ("t0", "b"), ("t1", "a")]
    assert evidence.dropped["consumers"] == 17  # t1.b, then t2..t9's two arguments
    seen = evidence.consumers[("t0", "a")]
    assert len(seen.values) == 5 and seen.distinct_cut
    assert len(evidence.consumers[("t0", "b")].edges) == MAX_PRODUCERS_PER_VALUE
