"""The grid runner: expand a grid into units and run them locally or on Ray, resumably."""

from prefix_exec.runner.grid import Grid, load_grid
from prefix_exec.runner.run_dir import run_grid
from prefix_exec.runner.run_report import RunReport
from prefix_exec.trajectory import Unit

__all__ = ["Grid", "RunReport", "Unit", "load_grid", "run_grid"]
