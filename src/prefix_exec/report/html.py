"""``report.html``: one self-contained file (inline CSS and JS, plots as base64 data URIs, no network).

Every table is sortable by clicking a header. Table cells link to ``#c<i>`` (a condition's rollouts) or
``#c<i>-<label>`` (its rollouts with that first-failure label); following a link decompresses that
condition's rollouts (:mod:`.rollouts`), reveals them and opens the target; the condition's header stays in
view while scrolling its rollouts. A filter box finds rollouts by task id, label or tool across every
condition. Everything works from ``file://``; without scripts the tables still read, the rollouts do not.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prefix_exec.analysis.summary import Summary
from prefix_exec.report.cells import Table
from prefix_exec.report.drawing import SYNTHETIC_MARK
from prefix_exec.report.formats import to_html
from prefix_exec.report.layout import Anchors, ordered_conditions
from prefix_exec.report.rollouts import condition_section, group_records, payload
from prefix_exec.trajectory import PrefixRecord

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;
margin:0 auto;max-width:1400px;padding:0 18px 60px;color:#1d2329}
h1{font-size:22px;margin:18px 0 4px}h2{margin-top:34px;border-bottom:1px solid #ccd;padding-bottom:3px}
.synthetic{background:#b3261e;color:#fff;padding:8px 12px;font-weight:600;border-radius:4px;
position:sticky;top:0;z-index:5;height:20px;line-height:20px;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis}
body:has(>.synthetic){--banner:36px}
.muted{color:#66707a}.caption{font-weight:600;margin:6px 0 0}.note{color:#4a535c;font-size:13px;max-width:1100px}
nav a{margin-right:12px}[id]{scroll-margin-top:calc(48px + var(--banner,0px))}
table{border-collapse:collapse;margin:8px 0 4px;font-size:13px}
th,td{border:1px solid #d6dae0;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eef1f5;cursor:pointer;user-select:none;white-space:nowrap}
th.asc:after{content:" ▲"}th.desc:after{content:" ▼"}
td.max{background:#fff6d6}td[data-v]{white-space:nowrap}
td a{color:inherit;text-decoration:none;border-bottom:1px dotted #7a8599}
td a:hover{background:#dde8ff}
tr[data-block]{border-top:1px solid #d6dae0}
img.plot{max-width:100%;border:1px solid #e2e5ea;margin:6px 0}
.cond{display:none;border:1px solid #c8d1dc;border-radius:6px;padding:0 12px 4px;margin:12px 0;background:#fbfcfd}
.cond.shown,body.all .cond{display:block}.jsonly{display:none}body.nojs .jsonly{display:block}
.cond h3{position:sticky;top:var(--banner,0px);z-index:3;background:#fbfcfd;margin:0 -12px;padding:8px 12px;
border-bottom:1px solid #e2e5ea}
#filter{font:inherit;padding:4px 8px;width:28em;max-width:100%}#hits{margin:6px 0 0 0;padding-left:18px}
#hits li{margin:2px 0}
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
var DATA=JSON.parse(document.getElementById('rollout-data').textContent);
var TITLES=JSON.parse(document.getElementById('rollout-titles').textContent);
var loaded={};
function el(tag,cls,text){var n=document.createElement(tag);if(cls)n.className=cls;
 if(text!==undefined&&text!==null)n.textContent=String(text);return n;}
function inflate(b64){var bin=atob(b64),bytes=new Uint8Array(bin.length);
 for(var i=0;i<bin.length;i++)bytes[i]=bin.charCodeAt(i);
 var stream=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
 return new Response(stream).text().then(JSON.parse);}
function verdictCell(v,failing){var td=el('td');
 if(v===0){td.className='muted';td.textContent='not replayed';return td;}
 if(v[0]===1){td.textContent='accepted';if(v[1])td.appendChild(el('span','muted',' ('+v[1]+')'));return td;}
 td.appendChild(el('span','label',(failing?'first failure: ':'')+v[1]));
 if(v[2])td.appendChild(el('span','muted',' causes: '+v[2]));td.appendChild(el('div','reason',v[3]));return td;}
function fill(d,r){var fed=r[2],failed=r[4]!=='',
 outcome=r[5]===null?'an outcome not recorded':(r[5]?'success':'failure');
 if(r[7])d.appendChild(el('p','muted meta','metadata: '+r[7]));
 if(failed)d.appendChild(el('p','reason','First failing call: step '+fed+' ('+r[4]+'): '+r[6]));
 var t=el('table','actions'),head=el('tr');['step','turn','tool','arguments','verdict'].forEach(function(h){
  head.appendChild(el('th',null,h));});var th=el('thead');th.appendChild(head);t.appendChild(th);
 var body=el('tbody');r[8].forEach(function(a,i){var step=i+1;
  if(failed&&step===fed+1){var div=el('tr','divider'),td=el('td',null,
   'after the first failure (not replayed): the rollout went on and ended in '+outcome);td.colSpan=5;
   div.appendChild(td);body.appendChild(div);}
  var css=failed&&step===fed?'fail':(failed&&step>fed?'after':'ok'),tr=el('tr',css);
  tr.appendChild(el('td',null,step));tr.appendChild(el('td',null,a[0]));
  var tool=el('td');tool.appendChild(el('code',null,a[1]));tr.appendChild(tool);
  var args=el('td');args.appendChild(el('code',null,a[2]));tr.appendChild(args);
  tr.appendChild(verdictCell(a[3],failed&&step===fed));body.appendChild(tr);});
 t.appendChild(body);d.appendChild(t);}
function rolloutElement(cid,j,r){var d=el('details','rollout');d.id=cid+'-r'+j;d.setAttribute('data-task',r[0]);
 var s=el('summary'),label=r[4]||'executable',failed=r[4]!=='';s.appendChild(el('code',null,r[0]));
 s.appendChild(document.createTextNode(' trial '+r[1]+' · FED '+r[2]+' / T '+r[3]+' · '));
 s.appendChild(el('span','label',label));
 s.appendChild(document.createTextNode(r[5]===null?' · final success not recorded':
  ' · final '+(r[5]?'success':'failure')+(failed?(r[5]?' · recovered':' · not recovered'):'')));d.appendChild(s);
 d.addEventListener('toggle',function(){if(d.open&&!d.filled){d.filled=true;fill(d,r);}});return d;}
function render(cid,rows){rows.forEach(function(r,j){
 var box=document.querySelector('#'+cid+'-'+(r[4]||'executable')+' .items');
 if(box)box.appendChild(rolloutElement(cid,j,r));});}
function load(cid){if(!loaded[cid]){loaded[cid]=inflate(DATA[cid]).then(function(rows){render(cid,rows);return rows;});}
 return loaded[cid];}
function reveal(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;var cid=id.split('-')[0];
 if(!(cid in DATA)){var plain=document.getElementById(id);if(plain)plain.scrollIntoView();return;}
 load(cid).then(function(){var el=document.getElementById(id);if(!el)return;var cond=el.closest('.cond');
  document.querySelectorAll('.cond.shown').forEach(function(c){if(c!==cond)c.classList.remove('shown');});
  if(cond){cond.classList.add('shown');}
  if(el.tagName==='DETAILS'){el.open=true;}
  var inner=el.querySelectorAll('details.rollout');if(inner.length===1){inner[0].open=true;}
  el.scrollIntoView();});}
var filterTimer=null;
function runFilter(){var q=document.getElementById('filter').value.trim().toLowerCase(),
 hits=document.getElementById('hits'),count=document.getElementById('hit-count');hits.textContent='';if(!q){count.textContent='';return;}
 count.textContent='searching…';var ids=Object.keys(DATA);
 Promise.all(ids.map(load)).then(function(all){var found=0,shown=0;
  all.forEach(function(rows,c){rows.forEach(function(r,j){
   var tools=r[8].map(function(a){return a[1].toLowerCase();});
   var hit=r[0].toLowerCase().indexOf(q)>=0||(r[4]||'executable').indexOf(q)>=0||
    tools.some(function(t){return t.indexOf(q)>=0;});if(!hit)return;found++;if(shown>=200)return;shown++;
   var li=el('li'),a=el('a',null,TITLES[ids[c]]+' · '+r[0]+' · trial '+r[1]+' · '+(r[4]||'executable')+' · FED '+
    r[2]+' / T '+r[3]);a.href='#'+ids[c]+'-r'+j;li.appendChild(a);hits.appendChild(li);});});
  count.textContent=found+' rollouts match'+(found>shown?' (first '+shown+' listed)':'');});}
document.getElementById('filter').addEventListener('input',function(){clearTimeout(filterTimer);
 filterTimer=setTimeout(runFilter,200);});
window.addEventListener('hashchange',reveal);reveal();
document.getElementById('show-all').addEventListener('click',function(ev){ev.preventDefault();
 var all=document.body.classList.toggle('all');if(all){Object.keys(DATA).forEach(load);}});
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


#: What JSON inside ``<script>`` must not hold as such: ``<`` (``</script>`` ends the element, ``<!--`` starts
#: the parser's escaped state, which a later ``<script>`` turns into one that no ``</script>`` ends), ``>`` and
#: ``&`` (as most frameworks escape them), and U+2028/U+2029 (line breaks to older JavaScript parsers). Each
#: can only sit inside a JSON string, where its ``\\uXXXX`` escape reads back as the same character.
_SCRIPT_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})


def _script_json(value: object) -> str:
    """JSON safe inside ``<script>``: no ``<``, ``>``, ``&``, U+2028 or U+2029 as such (escaped as ``\\u003c``...)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).translate(_SCRIPT_ESCAPES)


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
    conditions = ordered_conditions(summary)
    data = {anchors.condition(c.condition): payload(grouped.get(c.condition, [])) for c in conditions}
    titles = {anchors.condition(c.condition): f"{c.dataset} / {c.model} / {c.method}" for c in conditions}
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
        f'<nav>{nav} <a href="#rollouts">Rollouts</a></nav>',
        *(_section(s) for s in sections),
        '<h2 id="rollouts">Rollouts</h2>',
        '<p class="note">Click any table cell to see the rollouts behind it. '
        '<a href="#rollouts" id="show-all">Show or hide all rollouts</a>. The first failing call is highlighted '
        "in red with its label and reason; grey rows come after it (not replayed) and show whether the rollout "
        "recovered.</p>",
        '<p class="note jsonly">The rollouts are stored compressed in this page: turn on JavaScript to see them.</p>',
        '<p><input id="filter" type="search" placeholder="find rollouts by task id, label or tool" '
        'aria-label="find rollouts by task id, label or tool"> <span id="hit-count" class="muted"></span></p>',
        '<ol id="hits"></ol>',
        *(condition_section(c, grouped.get(c.condition, []), anchors) for c in conditions),
        f'<script type="application/json" id="rollout-data">{_script_json(data)}</script>',
        f'<script type="application/json" id="rollout-titles">{_script_json(titles)}</script>',
        f"<script>{JS}</script>",
        "</body></html>",
    ]
    return "\n".join(body) + "\n"
