"""Import what each extra needs, as ``make setup``'s last step: a broken or missing package shows here, not later.

    python scripts/check_setup.py [EXTRA...]      (default: every extra in :data:`MODULES`)

For each extra named, imports the modules prefix-exec itself imports from it (the deep ones: an import of a
package's top level alone can succeed where the part replay uses fails). Prints one line for the whole check when
everything imports, else one line per module that does not (``setup check: extra 'bfcl' needs
bfcl_eval.eval_checker...: No module named 'bfcl_eval'``, with what to run) and exits 1. ``core`` is what a plain
``pip install prefix-exec`` brings; ``dev`` is what the tests import, inspect_evals included (make setup installs it
with --no-deps from requirements/inspect-evals.txt).
"""

from __future__ import annotations

import importlib
import os
import sys

#: Extra -> modules to import, in order. Keys are pyproject.toml's extras, plus "core".
MODULES: dict[str, tuple[str, ...]] = {
    "core": ("numpy", "jsonschema", "yaml", "tqdm", "prefix_exec.cli"),
    "report": ("matplotlib.pyplot",),
    "llm": ("openai",),
    "ray": ("ray",),
    "bfcl": (
        "mpmath",
        "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils",
        "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker",
    ),
    "tau": ("loguru", "tau2.domains.airline.tools", "tau2.domains.retail.tools"),
    "tau-sim": ("litellm", "pandas"),
    "toolsandbox": ("polars", "tool_sandbox.common.execution_context"),
    "inspect": ("inspect_ai.log",),
    "guard": ("mcp.client.stdio", "mcp.server.stdio"),
    "otlp": ("opentelemetry.proto.collector.trace.v1.trace_service_pb2",),
    "dev": ("pytest", "xdist", "hypothesis", "scipy.stats", "mypy", "mcp_server_time", "inspect_evals.bfcl"),
}
#: What to run for a module of these extras that is missing, where prefix_exec.extras has no hint.
REMEDY = {
    "core": "re-run make setup",
    "dev": "re-run make setup (inspect_evals: pip install --no-deps -r requirements/inspect-evals.txt)",
}


def main(argv: list[str]) -> int:
    names = argv or list(MODULES)
    unknown = [name for name in names if name not in MODULES]
    if unknown:
        print(f"setup check: unknown extra(s) {', '.join(unknown)}; known: {', '.join(MODULES)}", file=sys.stderr)
        return 2
    os.environ.setdefault("MPLBACKEND", "Agg")  # importing pyplot must not look for a display
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm would fetch a price list at import
    try:  # tau2 logs at import (no .env file, its registry's contents); none of it is about the check
        from loguru import logger

        logger.disable("tau2")
    except ImportError:
        pass  # the 'tau' extra's check below reports loguru missing
    failures = [line for name in names for line in _check(name)]
    if failures:
        for line in failures:
            print(line, file=sys.stderr)
        return 1
    count = sum(len(MODULES[name]) for name in names)
    print(f"setup check: all {count} modules of {len(names)} extras import ({', '.join(names)})")
    return 0


def _check(extra: str) -> list[str]:
    """One line per module of ``extra`` that does not import."""
    lines = []
    for module in MODULES[extra]:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any failure to import is what this check reports, not only a missing module
            lines.append(f"setup check: extra '{extra}' needs {module}: {type(exc).__name__}: {exc} ({_remedy(extra)})")
    return lines


def _remedy(extra: str) -> str:
    if extra in REMEDY:
        return REMEDY[extra]
    try:
        from prefix_exec.extras import BY_NAME
    except ImportError:
        return "re-run make setup"
    known = BY_NAME.get(extra)
    return f"re-run make setup, or {known.hint()}" if known else "re-run make setup"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
