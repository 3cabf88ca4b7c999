"""The experiment grid: datasets and their task samples, models with endpoints, methods, trials and seed.

A grid is a TOML file (``docs/runner.md`` documents it; ``examples/paper-grid.toml`` is the paper's grid).
A work unit is ``(dataset, task, model, method, trial)``. Paths in the grid are relative to the grid file,
or to the top-level ``base_dir`` when set (the run directory's copy of a grid sets it, so the copy resolves
paths as the original did).
Trial ``t`` of a model sends ``seed + t`` as the sampling seed, so trials differ and each one is
reproducible (and cached apart).
"""

from __future__ import annotations

import random
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from prefix_exec.agents.variants import AgentSettings
from prefix_exec.errors import InputError
from prefix_exec.json_types import JsonMapping, JsonObject
from prefix_exec.llm.config import EndpointConfig
from prefix_exec.methods import METHODS
from prefix_exec.records.jsonl import check_regular_file
from prefix_exec.runner.credentials import URL_ENV, endpoint_url
from prefix_exec.runner.plan_store import PLANS
from prefix_exec.trajectory import Unit

#: Upper bounds of a grid, each with a clear message: trials, agent step settings, a dataset's sample, the
#: expanded units, and the grid file's size.
MAX_TRIALS = 1000
MAX_AGENT_SETTING = 100_000
MAX_TASKS = 1_000_000
MAX_UNITS = 1_000_000
MAX_GRID_BYTES = 1_000_000
TOP_KEYS = {"seed", "trials", "methods", "agent", "datasets", "models", "run", "base_dir"}
#: Every ``[agent]`` setting is an integer field of :class:`AgentSettings`.
AGENT_KEYS = tuple(f.name for f in fields(AgentSettings))


@dataclass(frozen=True)
class DatasetSpec:
    """``kind`` selects the driver (``custom``, ``bfcl``, ``tau``); ``options`` are the driver's settings."""

    name: str
    kind: str
    options: JsonMapping = field(default_factory=dict)
    tasks: tuple[str, ...] | None = None
    sample: int | None = None


@dataclass(frozen=True)
class ModelSpec:
    """``name`` labels the records; ``endpoint.model`` is the name the server knows. Prices are USD per 1M tokens.

    ``condition`` false keeps the model out of the units (a verifier-only model).
    """

    name: str
    endpoint: EndpointConfig
    usd_per_mtok_prompt: float = 0.0
    usd_per_mtok_completion: float = 0.0
    condition: bool = True


@dataclass(frozen=True)
class Grid:
    datasets: tuple[DatasetSpec, ...]
    models: tuple[ModelSpec, ...]
    methods: tuple[str, ...]
    trials: int = 1
    seed: int | None = 0
    agent: AgentSettings = field(default_factory=AgentSettings)
    verifier_model: str | None = None
    cache: bool = True
    base_dir: Path = Path(".")
    #: The run directory while ``prefix-exec run`` runs the grid (drivers that write files put them there).
    run_dir: Path | None = None
    #: ``[run] plans``: the shared initial plans' store (:mod:`~prefix_exec.runner.plan_store`), resolved;
    #: ``None``: the run directory's own ``plans.sqlite``.
    plans: Path | None = None

    @property
    def plan_store(self) -> Path | None:
        """Where the units' shared initial plans are kept: ``plans``, else the run directory's
        ``plans.sqlite`` (``None`` outside a run: nothing is shared)."""
        if self.plans is not None:
            return self.plans
        return self.run_dir / PLANS if self.run_dir is not None else None

    def model(self, name: str) -> ModelSpec:
        return next(m for m in self.models if m.name == name)

    def endpoint(self, name: str, trial: int) -> EndpointConfig:
        """The endpoint of model ``name`` with trial ``trial``'s seed."""
        config = self.model(name).endpoint
        return config.with_seed(None if self.seed is None else self.seed + trial)

    def endpoint_caps(self) -> dict[str, int]:
        """Requests allowed in flight per endpoint URL for the whole run: the smallest ``max_concurrency`` of
        the grid models on that URL (models sharing a server share its cap)."""
        caps: dict[str, int] = {}
        for m in self.models:
            url, cap = m.endpoint.base_url, m.endpoint.max_concurrency
            caps[url] = min(cap, caps.get(url, cap))
        return caps

    def unit_settings(self) -> JsonObject:
        """Everything that shapes a unit's rollout, as JSON: the seed, agent settings, each dataset and each
        model's decoding settings. Keys, timeouts, retries, caps and prices are left out: they change how a
        unit runs, not what it produces. ``--resume`` refuses a grid whose settings differ from the run's."""
        return {
            "seed": self.seed,
            "agent": {**{k: getattr(self.agent, k) for k in AGENT_KEYS}, "verifier_model": self.verifier_model},
            "datasets": {
                d.name: {"kind": d.kind, "options": _resolved(self, d.options), "tasks": d.tasks, "sample": d.sample}
                for d in self.datasets
            },
            "models": {m.name: m.endpoint.decoding() for m in self.models},
        }

    def resolve(self, path: str) -> Path:
        p = Path(path)
        return p if p.is_absolute() else self.base_dir / p


def _resolved(grid: Grid, options: JsonMapping) -> JsonObject:
    """Dataset options with file options as absolute paths, so two copies of one grid compare equal."""
    return {k: str(grid.resolve(v)) if k in PATH_OPTIONS and isinstance(v, str) else v for k, v in options.items()}


#: Dataset options that name files or folders, resolved against the grid's folder.
PATH_OPTIONS = ("spec", "tau2_data")


def load_grid(path: str | Path) -> Grid:
    p = Path(path)
    if not p.exists():
        raise InputError("no such grid file", path=p)
    check_regular_file(p)
    if p.stat().st_size > MAX_GRID_BYTES:
        raise InputError(
            f"a grid file over {MAX_GRID_BYTES:,} bytes is refused",
            path=p,
            hint="a grid is a few lines of TOML; list many task ids in a file instead",
        )
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=p) from None
    except RecursionError:
        raise InputError("not usable TOML: nested too deeply", path=p) from None
    try:
        base = data.get("base_dir", str(p.resolve().parent))
        if not isinstance(base, str) or not Path(base).is_absolute():
            raise InputError(f"must be an absolute path, got {base!r}", field="base_dir")
        return parse_grid(data, base_dir=Path(base))
    except InputError as exc:
        raise InputError(exc.message, path=p, field=exc.field, hint=exc.hint) from None


def parse_grid(data: JsonMapping, *, base_dir: Path) -> Grid:
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", field=unknown[0], hint="known: " + ", ".join(sorted(TOP_KEYS)))
    methods = tuple(_list(data, "methods", str))
    for i, method in enumerate(methods):
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}", field=f"methods[{i}]", hint="known: " + ", ".join(METHODS))
    _unique(methods, "methods")
    models = tuple(_model(m, i) for i, m in enumerate(_list(data, "models", dict)))
    _unique([m.name for m in models], "models", what="model name")
    if not any(m.condition for m in models):
        raise InputError(
            "the grid selects no unit: every model has condition = false",
            field="models",
            hint="set condition = true (the default) on the models to run",
        )
    settings, verifier = _agent_table(_table(data, "agent"), models)
    datasets = tuple(_dataset(d, i) for i, d in enumerate(_list(data, "datasets", dict)))
    _unique([d.name for d in datasets], "datasets", what="dataset name")
    cache, plans = _run_table(_table(data, "run"))
    trials = integer_at_least(data.get("trials", 1), "trials", minimum=1, maximum=MAX_TRIALS)
    seed = integer_at_least(data.get("seed", 0), "seed", minimum=0, maximum=2**63 - 1)
    return Grid(
        datasets=datasets,
        models=models,
        methods=methods,
        trials=trials,
        seed=seed,
        agent=settings,
        verifier_model=verifier,
        cache=cache,
        base_dir=base_dir,
        plans=None if plans is None else _under(base_dir, plans),
    )


def _agent_table(table: JsonMapping, models: Sequence[ModelSpec]) -> tuple[AgentSettings, str | None]:
    """The ``[agent]`` table: the agents' settings and the verifier model (a grid model's name, or ``None``)."""
    agent = dict(table)
    verifier = agent.pop("verifier_model", None)
    if verifier is not None and verifier not in {m.name for m in models}:
        raise InputError(f"verifier_model {verifier!r} is not a model of the grid", field="agent.verifier_model")
    unknown = sorted(set(agent) - set(AGENT_KEYS))
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r}",
            field=f"agent.{unknown[0]}",
            hint="known: " + ", ".join((*AGENT_KEYS, "verifier_model")),
        )
    settings = AgentSettings(
        **{
            k: integer_at_least(agent[k], f"agent.{k}", minimum=1, maximum=MAX_AGENT_SETTING)
            for k in AGENT_KEYS
            if k in agent
        }
    )
    return settings, verifier


def _run_table(run: JsonMapping) -> tuple[bool, str | None]:
    """The ``[run]`` table: whether LLM answers are cached, and the plan store to share (a path as written)."""
    unknown = sorted(set(run) - {"cache", "plans"})
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", field=f"run.{unknown[0]}", hint="known: cache, plans")
    cache = run.get("cache", True)
    if not isinstance(cache, bool):
        raise InputError("must be true or false", field="run.cache")
    plans = run.get("plans")
    if plans is not None and (not isinstance(plans, str) or not plans.strip()):
        raise InputError(
            f"must be a file path, got {plans!r:.60}",
            field="run.plans",
            hint="the plans.sqlite of the run whose initial plans this one reuses",
        )
    return cache, plans


def _under(base_dir: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else base_dir / p


def integer_at_least(value: Any, where: str, *, minimum: int, maximum: int | None = None) -> int:
    """``value`` when it is an integer (not a bool) in ``minimum..maximum``; else an :class:`InputError`
    naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"must be an integer >= {minimum}, got {value!r:.40}", field=where)
    if maximum is not None and value > maximum:
        raise InputError(
            f"must be at most {maximum:,}, got {value:.3g}",
            field=where,
            hint="a sane upper bound keeps a typo from asking for billions of units",
        )
    return value


def _table(data: JsonMapping, key: str) -> JsonMapping:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise InputError(f"must be a table ([{key}]), got {value!r}", field=key)
    return value


def _unique(values: Sequence[str], where: str, *, what: str = "entry") -> None:
    seen: set[str] = set()
    for i, value in enumerate(values):
        if value in seen:
            raise InputError(
                f"duplicate {what} {value!r}",
                field=f"{where}[{i}]",
                hint="each must appear once, or the grid runs the same units twice",
            )
        seen.add(value)


def _list(data: JsonMapping, key: str, kind: type) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, kind) for v in value):
        raise InputError(f"must be a non-empty list of {'tables' if kind is dict else kind.__name__}", field=key)
    return value


def _price(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise InputError(f"must be a number >= 0 (USD per 1M tokens), got {value!r}", field=where)
    return float(value)


def _model(raw: JsonMapping, i: int) -> ModelSpec:
    raw = dict(raw)
    name = str(raw.pop("name", raw.get("model", "")))
    prices = {
        k: _price(raw.pop(k), f"models[{i}].{k}")
        for k in ("usd_per_mtok_prompt", "usd_per_mtok_completion")
        if k in raw
    }
    if "seed" in raw:
        raise InputError(
            "a model table cannot set the seed",
            field=f"models[{i}].seed",
            hint="the grid's top-level seed is sent, plus the trial number",
        )
    condition = raw.pop("condition", True)
    if not isinstance(condition, bool):
        raise InputError("must be true or false", field=f"models[{i}].condition")
    endpoint = EndpointConfig.from_mapping(
        endpoint_url(raw, f"models[{i}]"),
        where=f"models[{i}]",
        caller_keys=("name", "condition", "usd_per_mtok_prompt", "usd_per_mtok_completion", URL_ENV),
        refused_keys=("seed",),
    )
    return ModelSpec(name=name or endpoint.model, endpoint=endpoint, condition=condition, **prices)


def _dataset(raw: JsonMapping, i: int) -> DatasetSpec:
    options = dict(raw)
    for key in ("name", "kind"):
        if not isinstance(options.get(key), str):
            raise InputError("missing or not a string", field=f"datasets[{i}].{key}")
    tasks = options.pop("tasks", None)
    if tasks is not None:
        if (
            not isinstance(tasks, list)
            or not tasks
            or not all(isinstance(t, str | int) and not isinstance(t, bool) for t in tasks)
        ):
            raise InputError(
                f"must be a non-empty list of task ids, got {tasks!r}",
                field=f"datasets[{i}].tasks",
                hint='for example tasks = ["a", "b"]',
            )
        tasks = [str(t) for t in tasks]
        _unique(tasks, f"datasets[{i}].tasks", what="task")
    sample = options.pop("sample", None)
    if sample is not None:
        sample = integer_at_least(sample, f"datasets[{i}].sample", minimum=1, maximum=MAX_TASKS)
    return DatasetSpec(
        name=options.pop("name"),
        kind=options.pop("kind"),
        options=options,
        tasks=tuple(tasks) if tasks is not None else None,
        sample=sample,
    )


def select_tasks(spec: DatasetSpec, available: list[str], seed: int | None) -> list[str]:
    """The dataset's tasks: the listed ones, else a seeded sample of ``sample``, else all; in a stable order."""
    if spec.tasks is not None:
        missing = [t for t in spec.tasks if t not in set(available)]
        if missing:
            raise InputError(
                f"dataset {spec.name!r} has no task {missing[0]!r}",
                field="datasets.tasks",
                hint=f"its task ids look like {', '.join(map(repr, available[:3]))}" if available else None,
            )
        return list(spec.tasks)
    if spec.sample is not None and spec.sample < len(available):
        return sorted(random.Random(f"{seed}:{spec.name}").sample(sorted(available), spec.sample))
    return list(available)


def expand(grid: Grid, tasks: Mapping[str, list[str]]) -> list[Unit]:
    """Every unit, dataset by dataset, task, model (the grid's conditions), method and trial.

    More than :data:`MAX_UNITS` units is an :class:`InputError`, raised before any is built."""
    models = sum(1 for m in grid.models if m.condition)
    count = sum(len(tasks[d.name]) for d in grid.datasets) * models * len(grid.methods) * grid.trials
    if count > MAX_UNITS:
        raise InputError(
            f"the grid expands to {count:,} units, above the bound of {MAX_UNITS:,}",
            field="trials",
            hint="fewer trials, models, methods or tasks; or split the grid",
        )
    return [
        Unit(d.name, t, m.name, method, trial)
        for d in grid.datasets
        for t in tasks[d.name]
        for m in grid.models
        if m.condition
        for method in grid.methods
        for trial in range(grid.trials)
    ]
