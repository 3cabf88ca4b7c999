"""Lay out inspect_evals' BFCL cache from the installed bfcl-eval package, so ``inspect eval`` runs offline.

inspect_evals' BFCL task downloads two folders of the Gorilla repository with ``git`` on first use, into
``$INSPECT_EVALS_CACHE_DIR/BFCL`` (default: the platform's user cache folder): the data (``bfcl_eval/data``) and
the multi-turn backend sources (``.../multi_turn_eval/func_source_code``, whose ``from bfcl_eval....`` imports
it rewrites to plain module imports, since it loads them by file path). It skips each download when the folder
is already there. bfcl-eval's wheel (installed by ``make setup``) ships both, so this script builds the same
layout from it: the data files as symbolic links, the backend sources as rewritten copies. Then::

    python scripts/inspect_evals_cache.py ~/.cache/inspect-offline
    INSPECT_EVALS_CACHE_DIR=~/.cache/inspect-offline inspect eval inspect_evals/bfcl -T categories=multi_turn_base ...

The data is bfcl-eval's release (2026.3.23 here), not the Gorilla commit inspect_evals pins; the multi-turn
files are the same v4-named BFCL v3 categories. tau2 needs none of this: inspect_evals ships its tau2 data.
See docs/inspect.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

#: The import prefix inspect_evals' downloader rewrites to a plain ``from <module> import ...``.
PACKAGE_PREFIX = "from bfcl_eval.eval_checker.multi_turn_eval.func_source_code."


def bfcl_eval_root() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23 mpmath")
    return Path(next(iter(spec.submodule_search_locations)))


def populate(cache: Path) -> Path:
    """Create ``cache/BFCL`` (data links and backend sources); returns it. Existing entries are kept."""
    root = bfcl_eval_root()
    target = cache / "BFCL"
    target.mkdir(parents=True, exist_ok=True)
    for item in sorted((root / "data").iterdir()):
        link = target / item.name
        if not link.exists() and not link.is_symlink():
            link.symlink_to(item, target_is_directory=item.is_dir())
    sources = target / "func_source_code"
    sources.mkdir(exist_ok=True)
    for module in sorted((root / "eval_checker" / "multi_turn_eval" / "func_source_code").glob("*.py")):
        text = module.read_text(encoding="utf-8").replace(PACKAGE_PREFIX, "from ")
        (sources / module.name).write_text(text, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache", type=Path, help="the folder to use as INSPECT_EVALS_CACHE_DIR (created if missing)")
    args = parser.parse_args(argv)
    print(populate(args.cache.expanduser().resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
