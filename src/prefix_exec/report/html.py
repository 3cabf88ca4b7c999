"""``report.html``: one self-contained file (inline CSS and JS, plots as base64 data URIs, no network).

Every table is sortable by clicking a header. Table cells link to ``#c<i>`` (a condition's rollouts) or
``#c<i>-<label>`` (its rollouts with that first-failure label); following a link reveals that condition's
rollouts and opens the target. Everything works from ``file://`` with scripts on; without scripts the tables
still read and the rollouts are all shown.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prefix_exec.report.cells import Table
from prefix_exec.report.formats import to_html
from prefix_exec.report.layout import Anchors, ordered_conditions
from prefix_exec.report.plots import SYNTHETIC_MARK
from prefix_exec.report.rollouts import condition_section, group_records
from prefix_exec.summary import Summary
from prefix_exec.trajectory import PrefixRecord

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;
margin:0 auto;max-width:1400px;padding:0 18px 60px;color:#1d2329}
h1{font-size:22px;margin:18px 0 4px}h2{margin-top:34px;border-bottom:1px solid #ccd;padding-bottom:3px}
.synthetic{background:#b3261e;color:#fff;padding:8px 12px;font-weight:600;border-radius:4px;
position:sticky;top:0;z-index:5}
.muted{color:#66707a}.caption{font-weight:600;margin:6px 0 0}.note{color:#4a535c;font-size:13px;max-width:1100px}
nav a{margin-right:12px}[id]{scroll-margin-top:48px}
table{border-collapse:collapse;margin:8px 0 4px;font-size:13px}
th,td{border:1px solid #d6dae0;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eef1f5;cursor:pointer;user-select:none;white-space:nowrap}
th.asc:after{content:" ▲"}th.desc:after{content:" ▼"}
td.max{background:#fff6d6}td[data-v]{white-space:nowrap}
td a{color:inherit;text-decoration:none;border-bottom:1px dotted #7a8599}
td a:hover{background:#dde8ff}
tr[data-block]{border-top:1px solid #d6dae0}
img.plot{max-width:100%;border:1px solid #e2e5ea;margin:6px 0}
.cond{display:none;border:1px solid #c8d1dc;border-radius:6px;padding:4px 12px;margin:12px 0;background:#fbfcfd}
.cond.shown,body.all .cond{display:block}body.nojs .cond{display:block}
details.rollout{margin:6px 0;border-left:3px solid #c8d1dc;padding-left:8px}
details.rollout[open]{border-left-color:#3d6fd8}summary{cursor:pointer}
table.actions td{font-size:12px}table.actions code{white-space:pre-wrap;word-break:break-word}
table.actions td:nth-child(3) code{white-space:nowrap;word-break:normal}
tr.fail{background:#ffd9d6;outline:2px solid #c62828}tr.after{background:#f2f2f2;color:#555}
tr.divider td{background:#fff;border:none;font-style:italic;color:#7a4b00;padding-top:6px}
.label{font-weight:600;color:#9c1c13}.reason{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap}
p.reason{background:#fff3f2;padding:4px 8px;border-radius:4px}
"""

JS = """
document.body.classList.remove('nojs');
function cellValue(td){var v=td.getAttribute('data-v');return v===null?null:parseFloat(v);}
function sortBy(th){var table=th.closest('table'),idx=Array.prototype.indexOf.call(th.parentNode.children,th);
 var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);var asc=!th.classList.contains('asc');
 th.parentNode.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
 th.classList.add(asc?'asc':'desc');
 rows.sort(function(a,b){var x=a.cells[idx],y=b.cells[idx],vx=cellValue(x),vy=cellValue(y),r;
  if(vx!==null&&vy!==null){r=vx-vy;}else if(vx!==null){r=-1;}else if(vy!==null){r=1;}
  else{r=x.textContent.localeCompare(y.textContent);} return asc?r:-r;});
 rows.forEach(function(r){body.appendChild(r);});}
document.querySelectorAll('table.sortable th').forEach(function(th){
 th.addEventListener('click',function(){sortBy(th);});});
function reveal(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;var el=document.getElementById(id);
 if(!el)return;var cond=el.closest('.cond');
 document.querySelectorAll('.cond.shown').forEach(function(c){if(c!==cond)c.classList.remove('shown');});
 if(cond){cond.classList.add('shown');}
 if(el.tagName==='DETAILS'){el.open=true;}
 var inner=el.querySelectorAll('details.rollout');if(inner.length===1){inner[0].open=true;}
 el.scrollIntoView();}
window.addEventListener('hashchange',reveal);reveal();
document.getElementById('show-all').addEventListener('click',function(ev){ev.preventDefault();
 document.body.classList.toggle('all');});
"""


@dataclass(frozen=True)
class Section:
    """One titled part of the page: tables, plots (paths to SVG or PNG files) and a lead paragraph."""

    id: str
    title: str
    tables: Sequence[Table] = ()
    plots: Sequence[Path] = ()
    lead: str = ""


def data_uri(path: Path) -> str:
    kind = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    return f"data:{kind};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _section(section: Section) -> str:
    e = html.escape
    parts = [f'<h2 id="{e(section.id)}">{e(section.title)}</h2>']
    if section.lead:
        parts.append(f'<p class="note">{e(section.lead)}</p>')
    for table in section.tables:
        if len(section.tables) > 1:
            parts.append(f"<h3>{e(table.title)}</h3>")
        elif table.title != section.title:
            parts.append(f'<p class="caption">{e(table.title)}</p>')
        parts.append(to_html(table))
        if table.note:
            parts.append(f'<p class="note">{e(table.note)}</p>')
    for plot in section.plots:
        parts.append(f'<img class="plot" alt="{e(plot.stem)}" src="{data_uri(plot)}">')
    return "".join(parts)


def render(
    summary: Summary,
    records: Sequence[PrefixRecord],
    sections: Sequence[Section],
    *,
    title: str,
    subtitle: str,
    synthetic: bool,
) -> str:
    """The whole page as one string."""
    e = html.escape
    anchors = Anchors.of(summary)
    grouped = group_records(records)
    banner = f'<div class="synthetic">{e(SYNTHETIC_MARK)}</div>' if synthetic else ""
    nav = " ".join(f'<a href="#{e(s.id)}">{e(s.title)}</a>' for s in sections)
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{CSS}</style></head>",
        '<body class="nojs">',
        banner,
        f"<h1>{e(title)}</h1>",
        f'<p class="muted">{e(subtitle)}</p>',
        f"<nav>{nav} <a href=\"#rollouts\">Rollouts</a></nav>",
        *(_section(s) for s in sections),
        '<h2 id="rollouts">Rollouts</h2>',
        '<p class="note">Click any table cell to see the rollouts behind it. '
        '<a href="#rollouts" id="show-all">Show or hide all rollouts</a>. The first failing call is highlighted '
        "in red with its label and reason; grey rows come after it (not replayed) and show whether the rollout "
        "recovered.</p>",
        *(condition_section(c, grouped.get(c.condition, []), anchors) for c in ordered_conditions(summary)),
        f"<script>{JS}</script>",
        "</body></html>",
    ]
    return "\n".join(body) + "\n"
