"""The agent variants' names: one :class:`Method` per variant, and how a free-form method name maps onto one.

A method's value is the name a grid, a rollout and a record use (``"dual-loop"``). What each variant does per
turn is registered in :data:`prefix_exec.agents.variants.VARIANTS`; this module holds only the names, so the
report (which reads method names from records files, written by any tool) needs no agent code.

Records name methods freely (``"Plan-Cond. ReAct"``, ``"dual-loop [verifier=M, K_val=3]"``): :func:`method_of`
maps such a name onto a variant by its :func:`method_key` prefix, or to ``None``; the longest matching key
wins, so ``dual-loop-accept-all`` is the control and not ``dual-loop``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from enum import StrEnum

from prefix_exec.json_types import JsonMapping

#: ``(verifier model or rule, K_val)`` as text: what a dual-loop or accept-all rollout notes of its setting.
Setting = tuple[str, str]


class Method(StrEnum):
    """An agent variant, by the name grids and records use."""

    REACT = "react"
    PROMPT_PLANNING = "prompt-planning"
    PLAN_CONDITIONED = "plan-conditioned"
    DUAL_LOOP = "dual-loop"
    #: The acceptance-wrapper control of the sensitivity study: dual-loop with the verifier replaced by a rule
    #: that approves every plan (no verifier call, one round).
    DUAL_LOOP_ACCEPT_ALL = "dual-loop-accept-all"
    GUARDED_REACT = "guarded-react"

    @property
    def key(self) -> str:
        """The name as :func:`method_key` writes it (``dual_loop``)."""
        return method_key(self.value)


#: Every method's name, in the paper's order (the grid's allow-list).
METHODS = tuple(m.value for m in Method)
#: Short forms of a method's key that a record's free-form name may start with.
_ALIASES = {Method.PLAN_CONDITIONED: ("plan_cond",)}


def method_key(name: str) -> str:
    """``Plan-Cond. ReAct`` -> ``plan_cond_react``: lower case, runs of other characters become ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def method_of(name: str) -> Method | None:
    """The variant a free-form method name stands for: the :class:`Method` whose key, or an alias of it
    (``plan_cond``), is the longest that starts the name's :func:`method_key` (``dual_loop_accept_all_x`` is
    :attr:`Method.DUAL_LOOP_ACCEPT_ALL`, ``dual_loop_x`` :attr:`Method.DUAL_LOOP`); ``None`` for none."""
    key = method_key(name)
    best: tuple[int, Method] | None = None
    for method in Method:
        for k in (method.key, *_ALIASES.get(method, ())):
            if key.startswith(k) and (best is None or len(k) > best[0]):
                best = (len(k), method)
    return None if best is None else best[1]


def verifier_setting(metadata: JsonMapping) -> Setting | None:
    """``(verifier model, K_val)`` from ``metadata.verifier_model`` (or ``verifier_rule``: the accept-all control's
    ``accept-all``) and ``metadata.k_val`` (or ``K_val``); ``None`` when neither is there."""
    model = metadata.get("verifier_model", metadata.get("verifier_rule"))
    k_val = metadata.get("k_val", metadata.get("K_val"))
    if model is None and k_val is None:
        return None
    return (str(model or ""), str(k_val if k_val is not None else ""))


def split_verifier_variants[T](
    items: Sequence[T],
    condition: Callable[[T], tuple[str, str, str]],
    setting: Callable[[T], Setting | None],
    renamed: Callable[[T, str], T],
) -> list[T]:
    """A condition whose items carry two or more verifier settings (verifier reruns under one method name)
    becomes one method per setting, named ``dual-loop [verifier=M, K_val=K]`` (``renamed(item, name)``), so
    each setting is its own condition. Items of a condition with one setting are returned unchanged."""
    found: dict[tuple[str, str, str], set[Setting]] = {}
    for item in items:
        value = setting(item)
        if value is not None:
            found.setdefault(condition(item), set()).add(value)
    varied = {cond for cond, values in found.items() if len(values) > 1}
    if not varied:
        return list(items)
    out = []
    for item in items:
        value = setting(item)
        cond = condition(item)
        if cond in varied and value is not None:
            item = renamed(item, f"{cond[2]} [verifier={value[0]}, K_val={value[1]}]")
        out.append(item)
    return out
