"""BFCL's API classes (MathAPI, TwitterAPI, ...: what BFCL calls its backend), loaded into fresh private
instances per rollout.

BFCL's own execution code keeps instances in module globals keyed by model and task, so state leaks between
runs in one process; and its long_context padding (``func_source_code/long_context.py``) is a set of
module-level objects that the loaded instances share by reference (TravelAPI's extra credit cards, for
example, whose balances a booking then changes). Here:

- each task's initial instances are built once, with ``_load_scenario(config, long_context=...)`` exactly
  as BFCL's execution code calls it, and pickled right away into a private *template* that shares nothing
  with BFCL's modules (:func:`pickled_template`);
- before a long_context template is built, the long_context constants are checked against a pristine copy
  of that module (loaded from its file into a module object that is never registered) and restored in
  place if anything (BFCL's own execution code, say) changed them;
- every session gets a private copy of the template. Copies keep each instance's seeded
  ``random.Random`` state, so forks and rebuilds replay deterministically.

Copies are pickle round trips (:func:`clone`): the same result as ``copy.deepcopy`` for these plain
classes, and several times faster, mostly because ``deepcopy`` walks each ``random.Random`` state (625
integers) in Python. A ``random.Random`` is pickled as its state and restored onto a generator seeded
with 0 (:func:`_restored_random`): pickle's own way seeds it from ``os.urandom`` twice before setting the
same state, at several times the cost.
"""

from __future__ import annotations

import copy
import copyreg
import functools
import importlib
import importlib.util
import inspect
import io
import pickle
import random
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from prefix_exec.envs.bfcl.tasks import DOC_FILES, BfclTask, bfcl_module
from prefix_exec.json_types import JsonMapping, JsonObject

_API_PACKAGE = "eval_checker.multi_turn_eval.func_source_code"
_MODULES: Mapping[str, str] = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
#: Classes BFCL builds without loading a scenario (its ``STATELESS_CLASSES``).
STATELESS: frozenset[str] = frozenset({"MathAPI"})

Instances = dict[str, Any]


@functools.cache
def api_class(class_name: str) -> type:
    """BFCL's API class ``class_name`` (one of the eight multi-turn classes)."""
    if class_name not in _MODULES:
        raise KeyError(f"unknown BFCL backend class {class_name!r}")
    module = bfcl_module(f"{_API_PACKAGE}.{_MODULES[class_name]}")
    cls: type = getattr(module, class_name)
    return cls


@functools.cache
def public_methods(class_name: str) -> Mapping[str, inspect.Signature]:
    """The public tool methods of a class (what BFCL's execution code maps), with their signatures minus ``self``."""
    cls = api_class(class_name)
    methods: dict[str, inspect.Signature] = {}
    for name, function in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_"):
            continue
        signature = inspect.signature(function)
        methods[name] = signature.replace(parameters=list(signature.parameters.values())[1:])
    return methods


@functools.cache
def method_owners() -> Mapping[str, str]:
    """Every multi-turn tool name -> the class that defines it (names are unique across the classes)."""
    return {name: cls for cls in DOC_FILES for name in public_methods(cls)}


def positional_names(function: str) -> tuple[str, ...] | None:
    """Parameter names of a BFCL tool in signature order (how a positional argument binds), else ``None``."""
    owner = method_owners().get(function)
    if owner is None:
        return None
    return tuple(public_methods(owner)[function].parameters)


def _fresh_module(live: ModuleType) -> ModuleType:
    """A second copy of an installed module, loaded from its file and never registered in ``sys.modules``."""
    spec = importlib.util.spec_from_file_location(f"_prefix_exec_pristine_{live.__name__}", live.__file__)
    if spec is None or spec.loader is None:  # pragma: no cover - a broken installation
        raise ImportError(f"cannot reload {live.__file__}")
    fresh: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh


@functools.cache
def _pristine_long_context() -> JsonMapping:
    """The long_context constants as shipped."""
    fresh = _fresh_module(bfcl_module(f"{_API_PACKAGE}.long_context"))
    return {name: value for name, value in vars(fresh).items() if name.isupper()}


@functools.cache
def _mutable_defaults(class_name: str) -> Mapping[str, JsonMapping]:
    """Method -> {parameter: default} for list/dict/set defaults, as shipped (from a fresh module copy)."""
    fresh = _fresh_module(bfcl_module(f"{_API_PACKAGE}.{_MODULES[class_name]}"))
    cls = getattr(fresh, class_name)
    found: dict[str, JsonObject] = {}
    for name in public_methods(class_name):
        for parameter in inspect.signature(getattr(cls, name)).parameters.values():
            if isinstance(parameter.default, list | dict | set):
                found.setdefault(name, {})[parameter.name] = parameter.default
    return found


def call_arguments(class_name: str, method: str, arguments: JsonMapping) -> JsonObject:
    """The arguments to pass to the API: private copies of list/dict values, and of omitted mutable defaults.

    The API keeps argument objects in its state (a tweet keeps its ``tags`` list) and mutates them later
    (``mention`` extends a tweet's ``mentions``). Without private copies a rollout's ToolCall would change
    under it, and TwitterAPI's ``post_tweet(tags=[], mentions=[])`` defaults, stored in every tweet posted
    without them, would carry one rollout's mentions into every later rollout of the process (BFCL's own
    execution code has that leak).
    """
    copied = {k: copy.deepcopy(v) if isinstance(v, list | dict) else v for k, v in arguments.items()}
    defaults = _mutable_defaults(class_name).get(method)
    if defaults:
        for key, value in defaults.items():
            if key not in copied:
                copied[key] = copy.deepcopy(value)
    return copied


def restore_long_context() -> list[str]:
    """Put BFCL's long_context constants back to their shipped values, in place. Returns the names fixed."""
    live = bfcl_module(f"{_API_PACKAGE}.long_context")
    fixed: list[str] = []
    for name, pristine in _pristine_long_context().items():
        current = getattr(live, name)
        if current == pristine:
            continue
        if isinstance(current, dict):
            current.clear()
            current.update(copy.deepcopy(pristine))
        elif isinstance(current, list):
            current[:] = copy.deepcopy(pristine)
        else:
            setattr(live, name, copy.deepcopy(pristine))
        fixed.append(name)
    return fixed


def pickled_template(task: BfclTask) -> bytes:
    """The task's classes in their initial state, pickled (:func:`_pickled`): each load is a set of fresh
    instances sharing nothing with BFCL's modules (long_context instances share its constants until then)."""
    if task.long_context:
        restore_long_context()
    instances: Instances = {}
    for class_name in task.involved_classes:
        instance = api_class(class_name)()
        if class_name not in STATELESS:
            config = copy.deepcopy(dict(task.initial_config.get(class_name, {})))
            instance._load_scenario(config, long_context=task.long_context)
        instances[class_name] = instance
    return _pickled(instances)


class StateTooDeep(ValueError):
    """The instances nest deeper than the interpreter's stack can copy (hundreds of nested folders)."""


def clone(instances: Instances) -> Instances:
    """An independent copy of a set of API instances (sharing no mutable object with them).

    Raises :class:`StateTooDeep` when the state nests past Python's recursion limit (a rollout of hundreds
    of ``mkdir`` + ``cd`` pairs builds one folder per level), instead of a RecursionError.
    """
    try:
        copied: Instances = pickle.loads(_pickled(instances))
    except RecursionError:
        raise StateTooDeep("the backend state nests too deeply to copy (hundreds of nested folders?)") from None
    return copied


def _restored_random(state: tuple[object, ...]) -> random.Random:
    """A ``random.Random`` in ``state`` (its ``getstate()``): what unpickling one gives, without the two
    ``os.urandom`` seedings that unpickling does first (``state`` replaces the whole generator state,
    ``gauss_next`` included)."""
    generator = random.Random(0)
    generator.setstate(state)
    return generator


def _reduce_random(generator: random.Random) -> tuple[Callable[..., random.Random], tuple[object, ...]]:
    return _restored_random, (generator.getstate(),)


#: Pickle's reducers, with exact ``random.Random`` instances written as :func:`_reduce_random` says
#: (subclasses keep their own way).
_REDUCERS: dict[type, Callable[[Any], Any]] = {**copyreg.dispatch_table, random.Random: _reduce_random}


def _pickled(instances: Instances) -> bytes:
    """``pickle.dumps(instances)`` at the highest protocol, with :data:`_REDUCERS`."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _REDUCERS
    pickler.dump(instances)
    return buffer.getvalue()


class Templates:
    """Initial instances per task, built once and kept pickled; :meth:`fresh` hands out private copies."""

    def __init__(self) -> None:
        self._templates: dict[str, bytes] = {}

    def fresh(self, task: BfclTask) -> Instances:
        template = self._templates.get(task.id)
        if template is None:
            template = self._templates[task.id] = pickled_template(task)
        instances: Instances = pickle.loads(template)
        return instances


def public_state(instance: Any) -> JsonObject:
    """The attributes BFCL's state checker compares: ``vars(instance)`` without ``_``-prefixed names."""
    return {name: value for name, value in vars(instance).items() if not name.startswith("_")}
