"""Which driver runs a grid dataset: ``kind`` -> a factory from the dataset's options.

Factories import their benchmark lazily, so a grid without BFCL or tau needs neither package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefix_exec.drivers.base import Driver
from prefix_exec.errors import InputError
from prefix_exec.runner.grid import DatasetSpec, Grid

DriverFactory = Callable[[DatasetSpec, Grid], Driver]


def _custom(spec: DatasetSpec, grid: Grid) -> Driver:
    from prefix_exec.drivers.custom import CustomDriver

    if "spec" not in spec.options:
        raise InputError("a custom dataset needs 'spec' (the tool spec file)", field=f"datasets.{spec.name}.spec")
    return CustomDriver(grid.resolve(str(spec.options["spec"])), dataset=spec.name)


def _bfcl(spec: DatasetSpec, grid: Grid) -> Driver:
    from prefix_exec.drivers.bfcl import BfclDriver
    from prefix_exec.envs.bfcl.tasks import CATEGORIES

    unknown = sorted(set(spec.options) - {"categories", "subset"})
    if unknown:
        raise InputError(f"unknown BFCL option {unknown[0]!r}", field=f"datasets.{spec.name}.{unknown[0]}",
                         hint="BFCL options: categories (list), subset = \"paper\"")
    try:
        return BfclDriver(dataset=spec.name, categories=tuple(option(spec, "categories", CATEGORIES)),
                          subset=option(spec, "subset"))
    except KeyError as exc:
        raise InputError(str(exc.args[0]), field=f"datasets.{spec.name}") from None


DRIVERS: dict[str, DriverFactory] = {"custom": _custom, "bfcl": _bfcl}


def make_driver(spec: DatasetSpec, grid: Grid) -> Driver:
    factory = DRIVERS.get(spec.kind)
    if factory is None:
        raise InputError(
            f"unknown dataset kind {spec.kind!r}", field=f"datasets.{spec.name}.kind",
            hint="known kinds: " + ", ".join(sorted(DRIVERS)),
        )
    return factory(spec, grid)


def option(spec: DatasetSpec, name: str, default: Any = None) -> Any:
    return spec.options.get(name, default)
