"""The html format: one self-contained, offline page per document.

A report's page is interactive: a table per view plus three plots (CPU vs GPU time per phase,
per-phase time per iteration, and a zoomable timeline of a few iterations: CPU threads with nested
phases, GPU streams with the ops coloured by the phase that launched them), drawn by a small inline
script from the document's plots data. The other commands' pages are static: a section per figure
(inline SVG, :mod:`.figures`) and table. Everything (data, CSS, script) is inline: a page opens from
disk, offline, and references no network resource; text from an export is escaped.
"""

from __future__ import annotations

import html
import re

from nvtxsim.reporting.document import (
    ChangeList,
    Document,
    Figure,
    FindingsBlock,
    Prose,
    SourcePart,
    line_text,
)
from nvtxsim.reporting.escaping import html_json
from nvtxsim.reporting.renderers.base import Renderer
from nvtxsim.reporting.viewtable import ViewTable, cell


def table_html(t: ViewTable, limit: int | None = None) -> str:
    head = "".join(f'<th class="{"l" if c.text else "r"}">{html.escape(c.header)}</th>' for c in t.columns)
    rows = t.rows if limit is None else t.rows[:limit]
    body = []
    for i, row in enumerate(rows):
        tds = []
        for c in t.columns:
            v = row.get(c.key, c.default)
            sort = v if isinstance(v, (int, float)) else html.escape(str(v))
            text = html.escape(cell(c, row))
            if c.unit == "tree":
                text = "&nbsp;&nbsp;" * int(row.get("depth", 0)) + html.escape(str(v))
            cls = "l" if c.text else "r"
            tds.append(f'<td class="{cls}" data-v="{sort}">{text}</td>')
        anchor = f' id="{t.row_anchor}-{i}"' if t.row_anchor else ""  # findings link to their phase's row (by position)
        body.append(f"<tr{anchor}>" + "".join(tds) + "</tr>")
    more = (
        f'<p class="note">{len(t.rows) - len(rows)} more rows in the JSON/CSV output.</p>'
        if limit is not None and len(t.rows) > limit
        else ""
    )
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in t.notes if n)
    if not t.rows:
        return f'<p class="note">Nothing to show.</p>{notes}'
    sortable = " sortable" if t.sortable else ""
    return f'<div class="tw"><table class="data{sortable}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>{more}{notes}'


def standalone_page(title: str, heading: str, src: str, notes: str, main: str, css: str = "") -> str:
    """The shell of the one-export-set pages (compare, scaling, live): the report's style, a header, the
    sections, the footer. ``heading``, ``src``, ``notes`` and ``main`` are HTML already escaped by the caller."""
    from nvtxsim._version import __version__

    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<style>{_CSS}{css}</style></head><body><header><h1>{heading}</h1><p class="src">{src}</p>{notes}</header><main>'
        f"{main}</main><footer>made by nvtxsim {html.escape(__version__)} · self-contained, works offline</footer></body></html>\n"
    )


class HtmlRenderer(Renderer):
    """One self-contained page. A report's is interactive (its plots drawn by a small script from
    ``Document.plots``, a table per view); the others are static (inline SVG figures, their tables)."""

    kinds = frozenset({"report", "compare", "scaling", "live", "stacks"})
    suffixes = (".html", ".htm")
    shows_every_view = True
    needs_plots = True

    def views_shown(self, asked: list[str]) -> list[str]:
        """Whatever was asked for: every view but the per-process split, the per-thread one last."""
        from nvtxsim.reporting.views import VIEWS

        return [v for v in VIEWS if v not in ("threads", "processes")] + ["threads"]

    def render(self, doc: Document, *, width: int | None = None, color: bool = False) -> str:
        return report_page(doc) if doc.plots is not None else static_page(doc)


#: Rows of one table on the report's page (the rest are in the JSON and CSV output).
PAGE_ROWS = 400


def report_page(doc: Document) -> str:
    """The interactive page: header (source, warnings, navigation), the findings, the plots, a section per table."""
    from nvtxsim._version import __version__

    tables = doc.tables()
    sections = [
        f'<section id="v-{t.name}"><h2>{html.escape(t.heading)}</h2><p class="sub">{html.escape(t.title)}</p>'
        f"{table_html(t, PAGE_ROWS)}</section>"
        for t in tables
    ]
    findings = "".join(block_html(b) for b in doc.blocks() if isinstance(b, FindingsBlock))
    nav = " · ".join(f'<a href="#v-{t.name}">{html.escape(t.heading)}</a>' for t in tables)
    return fill_page(
        _TEMPLATE,
        TITLE=html.escape(doc.head.title),
        HEADING=html.escape(doc.head.heading),
        SOURCE=source_html(doc.head.source),
        VERSION=html.escape(__version__),
        WARNINGS=notes_html(doc.head.notes),
        NAV=nav,
        SECTIONS="\n".join(sections),
        FINDINGS=findings,
        CSS=_CSS,
        JS=_JS,
        DATA=html_json(doc.plots),
    )


def static_page(doc: Document) -> str:
    """A page without script: a section per figure and table, in the document's order."""
    from nvtxsim.reporting.renderers.figures import figure_css

    main = "".join(block_html(b) for b in doc.blocks())
    css = "".join(dict.fromkeys(figure_css(b) for b in doc.blocks() if isinstance(b, Figure)))
    h = doc.head
    return standalone_page(h.title, html.escape(h.heading), source_html(h.source), notes_html(h.notes), main, css)


def block_html(block: object) -> str:
    """One block as a section of the page (prose: in the page's header, not here)."""
    if isinstance(block, ViewTable):
        return f"<section><h2>{html.escape(block.heading)}</h2>{table_html(block)}</section>"
    if isinstance(block, Figure):
        from nvtxsim.reporting.renderers.figures import draw

        return (
            f'<section><h2>{html.escape(block.title)}</h2><p class="sub">{html.escape(block.subtitle)}</p>'
            f"{draw(block)}</section>"
        )
    if isinstance(block, FindingsBlock):
        from nvtxsim.reporting.findings import findings_html

        return findings_html(block.findings, block.phases)
    if isinstance(block, ChangeList):
        items = "".join(f"<li><b>{html.escape(what)}</b> {html.escape(text)}</li>" for what, text in block.items)
        return (
            f'<section><h2>{html.escape(block.title)}</h2><p class="sub">{html.escape(block.summary)}</p>'
            f"<ul>{items}</ul></section>"
        )
    return ""


def source_html(parts: list[SourcePart]) -> str:
    """The line under the heading; a bidi override in a name stays inside its part."""
    out = []
    for p in parts:
        label = f"{html.escape(p.label)}: " if p.label is not None else ""
        out.append(label + (f"<bdi>{html.escape(p.text)}</bdi>" if p.isolated else html.escape(p.text)))
    return " · ".join(out)


def notes_html(notes: list[Prose]) -> str:
    """The header's notes, a paragraph per line: warnings stand out."""
    return "".join(
        f'<p class="{"warn" if p.kind == "warning" else "sub"}">{html.escape(line_text(line))}</p>'
        for p in notes
        for line in p.lines
    )


_PLACEHOLDER = re.compile(r"%([A-Z]+)%")


def fill_page(template: str, **parts: str) -> str:
    """The template with each ``%NAME%`` replaced in one pass: inserted text is never scanned again,
    so data that looks like a placeholder stays text."""
    pieces = _PLACEHOLDER.split(template)  # literal, name, literal, name, ..., literal
    for k in range(1, len(pieces), 2):
        pieces[k] = parts[pieces[k]]
    return "".join(pieces)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>%TITLE%</title><style>%CSS%</style></head>
<body>
<header><h1>%HEADING%</h1><p class="src">%SOURCE%</p>%WARNINGS%<nav>Plots · %NAV%</nav></header>
<main>
%FINDINGS%
<section id="plots">
<div class="plot"><h2>CPU vs GPU per phase</h2><p class="sub">total CPU range time, GPU busy time (union of the ops launched inside) and GPU projected span</p><div id="bars"></div></div>
<div class="plot"><h2>Per-phase time per iteration</h2><p class="sub" id="it-sub"></p><div class="ctl" id="it-ctl"></div><div id="lines"></div></div>
<div class="plot wide"><h2>Timeline</h2><p class="sub" id="tl-sub"></p><p class="hint">GPU ops are coloured by the phase that launched them (grey: launched outside every phase, e.g. from another thread) · wheel: zoom · drag: pan · double-click: reset · hover: details</p><div id="timeline"></div></div>
</section>
%SECTIONS%
</main>
<footer>made by nvtxsim %VERSION% · self-contained, works offline</footer>
<div id="tip"></div>
<script type="application/json" id="data">%DATA%</script>
<script>%JS%</script>
</body></html>
"""

_CSS = """
:root{--fg:#1d2330;--mut:#5d6678;--bd:#dde1e8;--bg:#fff;--alt:#f6f7f9;--acc:#2f6fdf}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:18px 28px 10px;border-bottom:1px solid var(--bd);background:var(--alt)}h1{margin:0 0 4px;font-size:20px}
.src{margin:0;color:var(--mut);word-break:break-all}nav{margin-top:8px;color:var(--mut);font-size:13px}nav a{color:var(--acc);text-decoration:none}
main{padding:8px 28px 30px}section{margin:22px 0}#plots{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:8px 32px}.plot.wide{grid-column:1/-1}h2{font-size:16px;margin:0 0 2px}.sub,.note,.hint{color:var(--mut);margin:2px 0 8px;font-size:12.5px}
.warn{margin:6px 0 0;color:#8a5300;font-size:13px}.plot{margin:0 0 26px}
.tw{overflow-x:auto;max-height:560px;overflow-y:auto;border:1px solid var(--bd);border-radius:6px}
table.data{border-collapse:collapse;font-size:12.5px;width:100%;font-variant-numeric:tabular-nums}
table.data th{position:sticky;top:0;background:var(--alt);border-bottom:1px solid var(--bd);padding:5px 8px;white-space:nowrap;font-weight:600}
table.sortable th{cursor:pointer}table.data td{padding:3px 8px;border-bottom:1px solid #eef0f3;white-space:nowrap}
table.data tr:hover td{background:#f0f5ff}.l{text-align:left}.r{text-align:right}
svg text{font:11px system-ui,sans-serif;fill:var(--fg)}svg .ax{stroke:#c5cad3}svg .grid{stroke:#eceef2}
.ctl{font-size:12px;margin:0 0 6px}.ctl label{margin-right:10px;cursor:pointer;white-space:nowrap}.ctl .sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
#timeline{border:1px solid var(--bd);border-radius:6px;cursor:grab;user-select:none}#timeline.drag{cursor:grabbing}
ol.findings{margin:4px 0 0;padding-left:22px}ol.findings li{margin:0 0 6px}.f-high b{color:#b3261e}.f-medium b{color:#8a5300}.f-low b{color:var(--mut)}.adv{color:var(--mut)}
#tip{position:fixed;pointer-events:none;background:#1d2330;color:#fff;font-size:12px;padding:5px 8px;border-radius:4px;display:none;max-width:520px;z-index:9;white-space:pre-line}
footer{color:var(--mut);font-size:12px;padding:10px 28px 24px}
"""

_JS = r"""
(function(){
"use strict";
var D=JSON.parse(document.getElementById('data').textContent);
var tip=document.getElementById('tip');
function esc(s){return String(s).replace(/[&<>"']/g,function(c){return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c];});}
function fmt(ns){var a=Math.abs(ns);if(a===0)return '0';if(a<1e3)return ns.toFixed(0)+' ns';if(a<1e6)return (ns/1e3).toFixed(1)+' µs';if(a<1e9)return (ns/1e6).toFixed(2)+' ms';return (ns/1e9).toFixed(3)+' s';}
function show(e,text){tip.textContent=text;tip.style.display='block';var x=e.clientX+14,y=e.clientY+14;if(x+tip.offsetWidth>innerWidth-8)x=e.clientX-tip.offsetWidth-14;if(y+tip.offsetHeight>innerHeight-8)y=e.clientY-tip.offsetHeight-14;tip.style.left=x+'px';tip.style.top=y+'px';}
function hide(){tip.style.display='none';}
function step(x){if(!(x>0))return 1;var p=Math.pow(10,Math.floor(Math.log10(x))),m=x/p;return (m<=1?1:m<=2?2:m<=2.5?2.5:m<=5?5:10)*p;}
function axis(max,n){var st=step(max/n);return {st:st,top:Math.max(Math.ceil(max/st),1)*st};}
function width(el){return Math.max(el.clientWidth||0,420);}

// ---------------------------------------------------------------- CPU vs GPU bars
function bars(){
  var el=document.getElementById('bars'),ph=D.phases;
  if(!ph.length){el.innerHTML='<p class="note">No phases.</p>';return;}
  var W=width(el),L=Math.min(220,W*0.32),R=70,bh=8,gap=9,rowH=3*bh+gap,H=ph.length*rowH+40;
  var max=0;ph.forEach(function(p){max=Math.max(max,p.cpu_total,p.gpu_busy,p.gpu_proj);});
  var ax=axis(max,5),top=ax.top,sx=function(v){return L+(W-L-R)*v/top;};
  var s='<svg width="'+W+'" height="'+H+'">';
  for(var v=0;v<=top+ax.st/2;v+=ax.st){var x=sx(v);s+='<line class="grid" x1="'+x+'" x2="'+x+'" y1="18" y2="'+(H-18)+'"/><text x="'+x+'" y="'+(H-4)+'" text-anchor="middle">'+fmt(v)+'</text>';}
  var kinds=[['cpu_total','CPU','#4a5568'],['gpu_busy','GPU busy','#2f6fdf'],['gpu_proj','GPU proj','#9fbdf0']];
  kinds.forEach(function(kd,i){s+='<rect x="'+(L+i*90)+'" y="2" width="10" height="10" fill="'+kd[2]+'"/><text x="'+(L+i*90+14)+'" y="11">'+kd[1]+'</text>';});
  ph.forEach(function(p,i){
    var y=22+i*rowH;
    s+='<rect x="4" y="'+(y+3)+'" width="8" height="'+(3*bh-6)+'" rx="2" fill="'+p.color+'"/>';
    s+='<text x="16" y="'+(y+2*bh-1)+'">'+esc(p.label.length>30?p.label.slice(0,29)+'…':p.label)+'</text>';
    kinds.forEach(function(kd,j){var v=p[kd[0]];var w=Math.max(sx(v)-L,v>0?1:0);
      s+='<rect class="hb" data-t="'+esc(p.label+' · '+kd[1]+': '+fmt(v))+'" x="'+L+'" y="'+(y+j*bh)+'" width="'+w+'" height="'+(bh-1)+'" fill="'+kd[2]+'"/>';
      if(j===0)s+='<text x="'+(L+w+4)+'" y="'+(y+bh-1)+'" style="fill:#5d6678">'+fmt(v)+'</text>';});
  });
  el.innerHTML=s+'</svg>';
  el.onmousemove=function(e){var t=e.target.getAttribute&&e.target.getAttribute('data-t');if(t)show(e,t);else hide();};
  el.onmouseleave=hide;
}

// ---------------------------------------------------------------- per-iteration lines
function lines(){
  var el=document.getElementById('lines'),it=D.iterations,ctl=document.getElementById('it-ctl'),sub=document.getElementById('it-sub');
  if(!it){sub.textContent=D.iterations_note||'No iterations.';return;}
  sub.textContent=it.series.length+' phases over '+it.count+' iterations of "'+it.key+'"'+(it.skipped?' (first '+it.skipped+(it.warm_up?' set aside as warm-up; --keep-warm-up keeps them)':' skipped)'):'')+(it.warm_up_kept?' (the first '+it.warm_up_kept+', shaded, are the warm-up the findings set aside)':'')+'; CPU time per iteration, summed over the phase\'s ranges'+(it.per_point>1?'; each point is the max of '+it.per_point+' iterations':'');
  var on=it.series.map(function(s,i){return i<7;}),metric='cpu';
  function controls(){
    var h='<label><input type="radio" name="m" value="cpu"'+(metric==='cpu'?' checked':'')+'> CPU</label><label><input type="radio" name="m" value="gpu"'+(metric==='gpu'?' checked':'')+'> GPU busy</label> · ';
    it.series.forEach(function(s,i){h+='<label><input type="checkbox" data-i="'+i+'"'+(on[i]?' checked':'')+'><span class="sw" style="background:'+s.color+'"></span>'+esc(s.phase)+'</label>';});
    ctl.innerHTML=h;
    ctl.onchange=function(e){var t=e.target;if(t.name==='m')metric=t.value;else on[+t.getAttribute('data-i')]=t.checked;draw();};
  }
  function draw(){
    var W=width(el),H=280,L=64,R=12,T=12,B=30,n=it.index.length;
    var max=0;it.series.forEach(function(s,i){if(on[i])s[metric].forEach(function(v){if(v>max)max=v;});});
    var ax=axis(max,4),top=ax.top,sx=function(k){return L+(W-L-R)*(n>1?k/(n-1):0.5);},sy=function(v){return T+(H-T-B)*(1-v/top);};
    var s='<svg width="'+W+'" height="'+H+'">';
    for(var v=0;v<=top+ax.st/2;v+=ax.st){var y=sy(v);s+='<line class="grid" x1="'+L+'" x2="'+(W-R)+'" y1="'+y+'" y2="'+y+'"/><text x="'+(L-6)+'" y="'+(y+4)+'" text-anchor="end">'+fmt(v)+'</text>';}
    var step=Math.max(1,Math.ceil(n/10));
    for(var k=0;k<n;k+=step){s+='<text x="'+sx(k)+'" y="'+(H-10)+'" text-anchor="middle">'+it.index[k]+'</text>';}
    s+='<line class="ax" x1="'+L+'" x2="'+(W-R)+'" y1="'+(H-B)+'" y2="'+(H-B)+'"/>';
    var wk=0;if(it.warm_up_kept){var last=it.index[0]+it.warm_up_kept;while(wk<n&&it.index[wk]<last)wk++;}
    if(wk>0){var x0=n>1?L:sx(0)-8,x1=wk<n?(sx(wk-1)+sx(wk))/2:W-R;
      s+='<rect class="wu" x="'+x0.toFixed(1)+'" y="'+T+'" width="'+Math.max(2,x1-x0).toFixed(1)+'" height="'+(H-T-B)+'" fill="#f0b429" fill-opacity="0.13"/>';
      s+='<text x="'+(x0+4).toFixed(1)+'" y="'+(T+12)+'" style="fill:#8a6d1a">warm-up ('+it.warm_up_kept+')</text>';}
    it.series.forEach(function(se,i){if(!on[i])return;var d='';se[metric].forEach(function(v,k){d+=(k?'L':'M')+sx(k).toFixed(1)+' '+sy(v).toFixed(1);});
      s+='<path d="'+d+'" fill="none" stroke="'+se.color+'" stroke-width="'+(i===0?2:1.4)+'"'+(i===0?' stroke-dasharray="5 3"':'')+'/>';});
    s+='<line id="cur" x1="0" x2="0" y1="'+T+'" y2="'+(H-B)+'" stroke="#888" style="display:none"/></svg>';
    el.innerHTML=s;
    var cur=el.querySelector('#cur');
    el.onmousemove=function(e){var r=el.getBoundingClientRect(),x=e.clientX-r.left;if(x<L||x>W-R||n===0){hide();cur.style.display='none';return;}
      var k=Math.round((x-L)/(W-L-R)*(n-1));if(n===1)k=0;var X=sx(k);cur.setAttribute('x1',X);cur.setAttribute('x2',X);cur.style.display='';
      var t='iteration '+it.index[k];it.series.forEach(function(se,i){if(on[i])t+='\n'+se.phase+': '+fmt(se[metric][k]);});show(e,t);};
    el.onmouseleave=function(){hide();cur.style.display='none';};
  }
  controls();draw();window.addEventListener('resize',draw);
}

// ---------------------------------------------------------------- zoomable timeline
function timeline(){
  var el=document.getElementById('timeline'),tl=D.timeline,sub=document.getElementById('tl-sub');
  if(!tl.lanes.length){el.innerHTML='<p class="note">Nothing to draw.</p>';return;}
  sub.textContent=tl.title+' · '+fmt(tl.span)+(tl.truncated?' · (truncated to keep the file small)':'');
  var N=tl.names,v0=0,v1=tl.span,rowH=14,laneGap=8,L=190,HL=null;
  // HL: the phase a finding's link picked; its ranges and the GPU ops they launched stay lit
  // ('(outside phases)': the ops launched outside every phase).
  function lit(ln,a){if(HL===null)return true;if(ln.kind!=='gpu')return N[a[3]]===HL;var p=a.length>5?N[a[5]]:null;return HL==='(outside phases)'?!p:p===HL;}
  var lanes=tl.lanes,y=22,pos=[];
  lanes.forEach(function(ln){pos.push(y);y+=ln.depth*rowH+laneGap;});
  var H=y+4;
  function draw(){
    var W=width(el),sx=function(t){return L+(W-L-6)*(t-v0)/(v1-v0);};
    var s='<svg width="'+W+'" height="'+H+'">';
    var span=v1-v0,st=step(span/8);
    for(var t=Math.ceil(v0/st)*st;t<=v1;t+=st){var x=sx(t);s+='<line class="grid" x1="'+x+'" x2="'+x+'" y1="16" y2="'+H+'"/><text x="'+x+'" y="12" text-anchor="middle">'+fmt(t)+'</text>';}
    lanes.forEach(function(ln,li){
      var y0=pos[li];
      s+='<rect x="0" y="'+(y0-2)+'" width="'+(L-6)+'" height="'+(ln.depth*rowH)+'" fill="'+(ln.kind==='gpu'?'#eef3fc':'#f4f5f7')+'"/>';
      s+='<text x="6" y="'+(y0+10)+'">'+esc(ln.label.length>28?ln.label.slice(0,27)+'…':ln.label)+'</text>';
      ln.items.forEach(function(a,k){
        if(a[1]<v0||a[0]>v1)return;
        var x0=Math.max(sx(a[0]),L),x1=Math.min(sx(a[1]),W-6),w=Math.max(x1-x0,0.6);
        var yy=y0+a[2]*rowH;
        var op=(ln.kind==='gpu'?0.85:0.75);if(!lit(ln,a))op=0.12;
        s+='<rect data-l="'+li+'" data-k="'+k+'" x="'+x0.toFixed(1)+'" y="'+yy+'" width="'+w.toFixed(1)+'" height="'+(rowH-2)+'" fill="'+esc(N[a[4]])+'" fill-opacity="'+op+'"/>';
        if(w>40){var label=N[a[3]];var maxc=Math.floor(w/6.2);if(label.length>maxc)label=label.slice(0,Math.max(maxc-1,1))+'…';s+='<text x="'+(x0+3)+'" y="'+(yy+10)+'" style="pointer-events:none">'+esc(label)+'</text>';}
      });
    });
    el.innerHTML=s+'</svg>';
  }
  function at(e){var r=el.getBoundingClientRect();var W=width(el);return v0+(v1-v0)*(e.clientX-r.left-L)/(W-L-6);}
  el.addEventListener('wheel',function(e){e.preventDefault();var c=at(e),f=e.deltaY<0?0.8:1.25;var n0=c-(c-v0)*f,n1=c+(v1-c)*f;if(n1-n0<100)return;v0=Math.max(n0,-tl.span*0.05);v1=Math.min(n1,tl.span*1.05);draw();},{passive:false});
  var drag=null;
  el.addEventListener('mousedown',function(e){drag={x:e.clientX,v0:v0,v1:v1};el.classList.add('drag');});
  window.addEventListener('mouseup',function(){drag=null;el.classList.remove('drag');});
  el.addEventListener('mousemove',function(e){
    if(drag){var W=width(el);var dt=(e.clientX-drag.x)*(drag.v1-drag.v0)/(W-L-6);v0=drag.v0-dt;v1=drag.v1-dt;draw();hide();return;}
    var t=e.target,l=t.getAttribute&&t.getAttribute('data-l');
    if(l===null||l===undefined){hide();return;}
    var ln=lanes[+l],a=ln.items[+t.getAttribute('data-k')];
    var txt=N[a[3]]+'\n'+fmt(a[1]-a[0])+' · at '+fmt(a[0]);
    if(ln.kind==='gpu'&&a.length>5&&N[a[5]])txt+='\nlaunched in '+N[a[5]];
    txt+='\n'+(ln.title?ln.title+' · ':'')+ln.label;show(e,txt);});
  el.addEventListener('mouseleave',hide);
  el.addEventListener('dblclick',function(){v0=0;v1=tl.span;HL=null;draw();});
  // A finding's "timeline" link: that phase's ranges and the GPU ops they launched stand out (double-click: all).
  document.querySelectorAll('a.tl-phase').forEach(function(a){a.addEventListener('click',function(){HL=a.getAttribute('data-phase');draw();});});
  draw();window.addEventListener('resize',draw);
}

// ---------------------------------------------------------------- sortable tables
function sortable(){
  document.querySelectorAll('table.sortable').forEach(function(tb){
    tb.querySelectorAll('th').forEach(function(th,ci){var dir=1;th.addEventListener('click',function(){
      var body=tb.tBodies[0],rows=Array.prototype.slice.call(body.rows);dir=-dir;
      rows.sort(function(a,b){var x=a.cells[ci].getAttribute('data-v'),y=b.cells[ci].getAttribute('data-v');var fx=parseFloat(x),fy=parseFloat(y);
        if(!isNaN(fx)&&!isNaN(fy))return (fx-fy)*dir;return String(x).localeCompare(String(y))*dir;});
      rows.forEach(function(r){body.appendChild(r);});});});
  });
}
bars();lines();timeline();sortable();
window.addEventListener('resize',bars);
})();
"""
