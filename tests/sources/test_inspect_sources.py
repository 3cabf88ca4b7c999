"""The environment of a sample's own tool list (:class:`prefix_exec.sources.inspect.InspectSources`, no
``--tools``) is built when the sample is replayed, inside its rollout's budget, as ``score transcripts`` does:
reading a log builds nothing, and a list that cannot be built is that sample's input error at replay."""

from __future__ import annotations

import io

import pytest

from prefix_exec.errors import InputError
from prefix_exec.importers.inspect.log import InspectLog, InspectSample
from prefix_exec.scoring.units import Scorable
from prefix_exec.sources.inspect import InspectSources

GOOD = {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}
BAD = {"type": "function", "function": {"name": 5}}


def _sample(name: str, tools: list[dict[str, object]]) -> InspectSample:
    return InspectSample(
        where=f"sample {name} epoch 1", id=name, epoch=1, messages=(), metadata={}, store={}, y=1, tools=tuple(tools)
    )


def _units(*samples: InspectSample) -> tuple[InspectSources, list[Scorable]]:
    sources = InspectSources(notes=io.StringIO())
    log = InspectLog(path="log.eval", task="notes", model="m", method="x", status="success", samples=samples)
    sources.read(log, model="m", method="x")
    units = [unit for unit in sources.units if isinstance(unit, Scorable)]
    assert len(units) == len(samples)
    return sources, units


def test_reading_a_log_builds_no_environment_until_replay() -> None:
    sources, (first, second) = _units(_sample("a", [GOOD]), _sample("b", [GOOD]))
    assert sources.own is not None
    (own,) = sources.own.lists.values()  # one per distinct list
    assert own.built is None  # nothing built while reading: the build belongs to a rollout's budget
    env = first.environment(first.rollout)
    assert own.built is env
    assert second.environment(second.rollout) is env


def test_a_list_that_cannot_be_built_is_its_samples_input_error_at_replay() -> None:
    sources, (bad, good) = _units(_sample("bad", [BAD]), _sample("good", [GOOD]))
    with pytest.raises(InputError, match=r"name"):
        bad.environment(bad.rollout)
    assert good.environment(good.rollout) is not None  # the other samples are unaffected
    assert sources.own is not None
    assert len(sources.own.lists) == 2
