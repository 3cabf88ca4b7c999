"""Which driver runs a grid dataset: ``kind`` -> a factory from the dataset's options.

Factories import their benchmark lazily, so a grid without BFCL or tau needs neither package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefix_exec.drivers.base import Driver
from prefix_exec.errors import InputError
from prefix_exec.runner.grid import DatasetSpec, Grid, integer_at_least

DriverFactory = Callable[[DatasetSpec, Grid], Driver]


def _custom(spec: DatasetSpec, grid: Grid) -> Driver:
    from prefix_exec.drivers.custom import CustomDriver

    check_options(spec, "custom", {"spec"}, hint="spec (the tool spec file)")
    if not isinstance(spec.options.get("spec"), str):
        raise InputError("a custom dataset needs 'spec' (the tool spec file)", field=f"datasets.{spec.name}.spec")
    return CustomDriver(grid.resolve(str(spec.options["spec"])), dataset=spec.name)


def _bfcl(spec: DatasetSpec, grid: Grid) -> Driver:
    from prefix_exec.drivers.bfcl import BfclDriver
    from prefix_exec.envs.bfcl.tasks import CATEGORIES

    check_options(spec, "BFCL", {"categories", "subset"}, hint='categories (list), subset = "stratified-200"')
    try:
        return BfclDriver(
            dataset=spec.name, categories=tuple(option(spec, "categories", CATEGORIES)), subset=option(spec, "subset")
        )
    except KeyError as exc:
        raise InputError(str(exc.args[0]), field=f"datasets.{spec.name}") from None


def _tau(spec: DatasetSpec, grid: Grid) -> Driver:
    from prefix_exec.drivers.tau import TauDriver
    from prefix_exec.envs.tau.pooled import TAU_DOMAINS

    check_options(
        spec, "tau", {"domain", "user_model", "judge_model", "max_steps", "max_errors", "max_turns", "tau2_data"}
    )
    for key in ("domain", "user_model"):
        if key not in spec.options:
            raise InputError("missing", field=f"datasets.{spec.name}.{key}")
    for key in ("user_model", "judge_model"):
        if key in spec.options:
            check_grid_model(spec, grid, key)
    domain = spec.options["domain"]
    domains = [domain] if isinstance(domain, str) else domain
    if not isinstance(domains, list) or not domains or any(d not in TAU_DOMAINS for d in domains):
        raise InputError(
            f"expected {' or '.join(map(repr, TAU_DOMAINS))}, or a list of them, got {domain!r}",
            field=f"datasets.{spec.name}.domain",
            hint='the paper\'s tau3 is domain = ["airline", "retail"] (164 tasks, ids like "airline/18")',
        )
    if len(set(domains)) != len(domains):
        raise InputError(f"a domain is listed twice: {domain!r}", field=f"datasets.{spec.name}.domain")
    judge = option(spec, "judge_model")
    limits = {
        key: integer_at_least(spec.options[key], f"datasets.{spec.name}.{key}", minimum=1)
        for key in ("max_steps", "max_errors", "max_turns")
        if key in spec.options
    }
    return TauDriver(
        tuple(domains),
        user=grid.endpoint(str(spec.options["user_model"]), 0),
        judge=grid.endpoint(str(judge), 0) if judge else None,
        dataset=spec.name,
        **limits,
        data=str(grid.resolve(str(option(spec, "tau2_data")))) if option(spec, "tau2_data") else None,
    )


def _toolsandbox(spec: DatasetSpec, grid: Grid) -> Driver:
    from prefix_exec.drivers.toolsandbox import ToolSandboxDriver

    check_options(spec, "ToolSandbox", {"subset", "user_model", "similarity_threshold"})
    if "user_model" not in spec.options:
        raise InputError(
            "missing (the model of ToolSandbox's simulated user)", field=f"datasets.{spec.name}.user_model"
        )
    user = check_grid_model(spec, grid, "user_model")
    from prefix_exec.envs.toolsandbox.sample import SUBSET

    subset = option(spec, "subset")
    if subset not in (None, SUBSET):
        raise InputError(
            f"unknown subset {subset!r}",
            field=f"datasets.{spec.name}.subset",
            hint=f'the one subset is "{SUBSET}" (our seeded stratified 200)',
        )
    threshold = option(spec, "similarity_threshold", 1.0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
        raise InputError(
            f"expected a number in [0, 1], got {threshold!r}", field=f"datasets.{spec.name}.similarity_threshold"
        )
    return ToolSandboxDriver(
        user=grid.endpoint(str(user), 0),
        dataset=spec.name,
        subset=subset,
        similarity_threshold=float(threshold),
        files=grid.run_dir / "toolsandbox" if grid.run_dir is not None else None,
    )


DRIVERS: dict[str, DriverFactory] = {"custom": _custom, "bfcl": _bfcl, "tau": _tau, "toolsandbox": _toolsandbox}


def make_driver(spec: DatasetSpec, grid: Grid) -> Driver:
    factory = DRIVERS.get(spec.kind)
    if factory is None:
        raise InputError(
            f"unknown dataset kind {spec.kind!r}",
            field=f"datasets.{spec.name}.kind",
            hint="known kinds: " + ", ".join(sorted(DRIVERS)),
        )
    return factory(spec, grid)


def check_options(spec: DatasetSpec, benchmark: str, known: set[str], *, hint: str | None = None) -> None:
    """Raise an :class:`InputError` at the first (alphabetical) option of ``spec`` not in ``known``.

    The hint lists the ``benchmark``'s options: ``hint`` when given, else the ``known`` names sorted.
    """
    unknown = sorted(set(spec.options) - known)
    if unknown:
        raise InputError(
            f"unknown {benchmark} option {unknown[0]!r}",
            field=f"datasets.{spec.name}.{unknown[0]}",
            hint=f"{benchmark} options: " + (hint or ", ".join(sorted(known))),
        )


def check_grid_model(spec: DatasetSpec, grid: Grid, key: str) -> Any:
    """The model name option ``key`` of ``spec`` holds; an :class:`InputError` unless the grid declares it."""
    name = spec.options[key]
    if name not in {m.name for m in grid.models}:
        raise InputError(
            f"{name!r} is not a model of the grid",
            field=f"datasets.{spec.name}.{key}",
            hint="declare it under [[models]] (with condition = false to keep it out of the units)",
        )
    return name


def option(spec: DatasetSpec, name: str, default: Any = None) -> Any:
    return spec.options.get(name, default)
