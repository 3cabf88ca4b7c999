"""The custom driver reads its spec in any form load_spec reads: our YAML spec, an OpenAI array, an MCP list."""

from __future__ import annotations

from pathlib import Path

import yaml

from prefix_exec.drivers.custom import CustomDriver


def test_an_mcp_tools_list_gives_the_tools_of_the_yaml_spec(ticketing: Path) -> None:
    spec = CustomDriver(ticketing / "tools.yaml")
    mcp = CustomDriver(ticketing / "mcp-tools-list.json")  # a KeyError before: the file's own shape was read
    assert len(spec.tools) == 8
    assert [t.name for t in mcp.tools] == [t.name for t in spec.tools]
    assert all(t.description and t.parameters["type"] == "object" for t in mcp.tools)
    assert mcp.task_ids() == []  # an MCP list declares no tasks
    assert spec.task_ids() == list(yaml.safe_load((ticketing / "tools.yaml").read_text())["tasks"])
