"""Which ToolSandbox scenarios run here, and the paper's sample of 200 drawn from them.

**RapidAPI.** 38 of the 129 base scenarios need RapidAPI search tools (weather, locations, stocks, currency),
which raise ``PermissionError`` without ``RAPID_API_KEY``. A scenario *uses* RapidAPI when its base scenario's
tools (the ``NO_DISTRACTION_TOOLS`` variant's allow list, which ToolSandbox treats as the necessary tools) hold one
of the tools of ``tool_sandbox.tools.rapid_api_search_tools``; its distraction and scrambled augmentations then use
it too. Without the key these scenarios are left out of every list here, and :func:`rapid_api_note` says so.

**Our stratified sample.** ``subset = "stratified-200"`` is 200 scenarios
chosen by our greedy multi-label stratifier
(:func:`prefix_exec.sampling.stratified_sample`, seed :data:`PAPER_SEED`) over the scenarios' category labels,
from the runnable scenarios of all 1032 (base and augmented). It is deterministic for a given ToolSandbox
version and key setting; it is ours, not the list the paper's authors used (which is not published).
"""

from __future__ import annotations

import os
import re

from prefix_exec.json_types import JsonMapping
from prefix_exec.sampling import stratified_sample

RAPID_API_KEY = "RAPID_API_KEY"
PAPER_SIZE = 200
PAPER_SEED = 20260
#: The sample's name in a grid's ``subset`` (ours: the paper publishes no ids).
SUBSET = "stratified-200"
#: Suffixes ToolSandbox's ``named_scenarios`` appends to a base scenario's name for its augmentations.
_AUGMENTATION = re.compile(
    r"_(3_distraction_tools(_tool_description_scrambled|_arg_type_scrambled|"
    r"_arg_description_scrambled|_tool_name_scrambled)?|10_distraction_tools|all_tools)$"
)


def subset_name(name: str) -> str:
    """:data:`SUBSET` for ``name``; ``KeyError`` for any other name."""
    if name == SUBSET:
        return SUBSET
    raise KeyError(f"unknown ToolSandbox subset {name!r}; the one subset is {SUBSET!r}")


def base_name(name: str) -> str:
    """The base scenario an augmented scenario's name comes from (a base name is its own)."""
    return _AUGMENTATION.sub("", name)


def rapid_api_tools() -> frozenset[str]:
    from prefix_exec.envs.toolsandbox.live import toolsandbox_module

    module = toolsandbox_module("tool_sandbox.tools.rapid_api_search_tools")
    return frozenset(
        name
        for name, value in vars(module).items()
        if callable(value) and getattr(value, "__module__", "") == module.__name__ and hasattr(value, "visible_to")
    )


def uses_rapid_api(name: str, scenarios: JsonMapping, tools: frozenset[str]) -> bool:
    base = scenarios.get(base_name(name), scenarios[name])
    return bool(set(base.starting_context.tool_allow_list or ()) & tools)


def runnable(scenarios: JsonMapping) -> list[str]:
    """The scenarios that can run here: all, or all but the RapidAPI ones when ``RAPID_API_KEY`` is unset."""
    if os.environ.get(RAPID_API_KEY):
        return sorted(scenarios)
    tools = rapid_api_tools()
    return sorted(name for name in scenarios if not uses_rapid_api(name, scenarios, tools))


def paper_sample(scenarios: JsonMapping) -> list[str]:
    """Our deterministic stratified 200 of the runnable scenarios (see the module docstring)."""
    pool = {name: [str(c) for c in scenarios[name].categories] for name in runnable(scenarios)}
    return stratified_sample(pool, min(PAPER_SIZE, len(pool)), seed=PAPER_SEED)


def rapid_api_note() -> str:
    """What the lists above did with the RapidAPI scenarios, for logs and docs."""
    if os.environ.get(RAPID_API_KEY):
        return "RapidAPI scenarios included (RAPID_API_KEY is set)"
    return "RapidAPI scenarios excluded: RAPID_API_KEY is not set (their search tools would raise PermissionError)"
