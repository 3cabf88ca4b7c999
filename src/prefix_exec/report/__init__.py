"""Reports: the paper's tables and figure, cost tables, and one self-contained ``report.html``.

- :mod:`.inputs` reads records files and run directories;
- :mod:`.layout` fixes blocks, method order and HTML anchors;
- :mod:`.cells` is a table as data (cells with text, sort value, bold flag and link);
- :mod:`.formats` renders a table as Markdown, CSV, LaTeX or HTML;
- :mod:`.metric_tables` builds Table 2, PEC@k checkpoints, label counts and the decomposition;
- :mod:`.ranking` ranks conditions by success against prefix metrics, with Kendall's tau and its interval;
- :mod:`.paired` tabulates paired differences of any two conditions;
- :mod:`.leaderboard` builds the view across models of one dataset;
- :mod:`.cost` builds the cost and verifier-sensitivity tables from call telemetry;
- :mod:`.plans` tabulates where each planning method's plans went before the executor;
- :mod:`.plots` draws Figure 1, the leaderboard figure and the ranking charts (matplotlib, Agg), with what every
  figure shares in :mod:`.drawing`;
- :mod:`.html` and :mod:`.rollouts` assemble the page and its drill-down;
- :mod:`.build` writes everything, after leaving out the rollouts an infrastructure failure ended (or keeping them
  under their own label: :mod:`prefix_exec.records.infrastructure`).
"""

from prefix_exec.report.build import Options, Report, write_report
from prefix_exec.report.inputs import load

__all__ = ["Options", "Report", "load", "write_report"]
