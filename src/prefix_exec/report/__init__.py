"""Reports: the paper's tables and figure, cost tables, and one self-contained ``report.html``.

- :mod:`.inputs` reads records files and run directories;
- :mod:`.layout` fixes blocks, method order and HTML anchors;
- :mod:`.table` is a table as data with Markdown, CSV, LaTeX and HTML renderers;
- :mod:`.tables` builds Table 2, PEC@k checkpoints, label counts, decomposition, ranking and paired tables;
- :mod:`.cost` builds the cost and verifier-sensitivity tables from call telemetry;
- :mod:`.plots` draws Figure 1 and the ranking chart (matplotlib, Agg);
- :mod:`.html` and :mod:`.rollouts` assemble the page and its drill-down;
- :mod:`.build` writes everything.
"""

from prefix_exec.report.build import Options, Report, write_report
from prefix_exec.report.inputs import load

__all__ = ["Options", "Report", "load", "write_report"]
