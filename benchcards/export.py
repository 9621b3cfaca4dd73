"""Static HTML results site, generated from the same database, tables and charts as the app.

Usage: python -m benchcards.export OUT [--db FILE] [--no-raw]

Writes ``OUT/index.html`` (every setup), ``OUT/quality.html`` (quality across setups
with margins), one ``OUT/setups/<id>.html`` card per setup, the raw files under
``OUT/raw/<sha256>/<name>`` and the Vega bundle (from vl-convert, so no network is
needed to view it) under ``OUT/assets/``. Charts are the very specs of
``benchcards.charts`` with its theme, so the export looks like the app.
"""

from __future__ import annotations

import argparse
import html
import json
import shutil
import sys
from pathlib import Path

import altair as alt
import pandas as pd

from benchcards import card as cardmod
from benchcards import charts, flags, queries, views
from benchcards.paths import DEFAULT_DB

CSS = """
:root { --fg: #1d2129; --muted: #5f6672; --bg: #ffffff; --line: #d9dce1; --accent: #0072B2; --card: #f6f7f9; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e8eb; --muted: #a3a9b3; --bg: #14161a; --line: #2e3239; --accent: #56B4E9; --card: #1c1f24; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); }
main { max-width: 1180px; margin: 0 auto; padding: 24px; }
nav a, a { color: var(--accent); }
nav { margin-bottom: 16px; display: flex; gap: 16px; }
h1 { font-size: 28px; margin: 8px 0; } h2 { margin-top: 32px; border-bottom: 1px solid var(--line); }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; border: 1px solid var(--line); }
.tiles { display: grid; grid-template-columns: repeat(3, 1fr); gap: 12px; }
.tile { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px; }
.tile b { display: block; font-size: 26px; font-weight: 600; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 4px; font-size: 14px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--card); cursor: pointer; }
pre { background: var(--card); border: 1px solid var(--line); padding: 12px; overflow-x: auto; }
.chart { width: 100%; margin: 12px 0; }
input { padding: 6px 8px; width: 320px; max-width: 100%; }
"""

SORT_JS = """
document.querySelectorAll('table.sortable th').forEach((th, i) => th.addEventListener('click', () => {
  const body = th.closest('table').tBodies[0];
  const rows = Array.from(body.rows);
  const asc = th.dataset.asc !== '1'; th.dataset.asc = asc ? '1' : '0';
  const val = r => { const t = r.cells[i].innerText.trim(); const n = parseFloat(t.replace(/,/g, ''));
                     return isNaN(n) ? t.toLowerCase() : n; };
  rows.sort((a, b) => (val(a) > val(b) ? 1 : val(a) < val(b) ? -1 : 0) * (asc ? 1 : -1));
  rows.forEach(r => body.appendChild(r));
}));
const q = document.getElementById('filter');
if (q) q.addEventListener('input', () => document.querySelectorAll('table.sortable tbody tr').forEach(
  r => { r.style.display = r.innerText.toLowerCase().includes(q.value.toLowerCase()) ? '' : 'none'; }));
"""


def _table(df: pd.DataFrame, sortable: bool = False, links: dict[str, str] | None = None) -> str:
    """An HTML table; ``links`` maps a column to a column of URLs for it."""
    if df is None or df.empty:
        return '<p class="muted">Nothing recorded.</p>'
    cols = [c for c in df.columns if not (links and c in links.values())]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    rows = []
    for _, r in df.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            if v is None or (isinstance(v, float) and pd.isna(v)):
                text = ""
            elif isinstance(v, bool):
                text = str(v)
            elif isinstance(v, (int, float)) or hasattr(v, "dtype"):
                f = float(v)
                text = f"{f:,.0f}" if f.is_integer() and abs(f) >= 1000 else f"{f:g}"
            else:
                text = html.escape(str(v))
            if links and c in links:
                text = f'<a href="{html.escape(str(r[links[c]]))}">{text}</a>'
            cells.append(f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cls = ' class="sortable"' if sortable else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


class _Page:
    def __init__(self, title: str, depth: int):
        self.title = title
        self.up = "../" * depth
        self.parts: list[str] = []
        self.charts: list[tuple[str, dict]] = []

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def chart(self, chart: alt.TopLevelMixin) -> None:
        cid = f"chart{len(self.charts)}"
        spec = chart.to_dict()
        spec["width"] = "container"
        self.charts.append((cid, spec))
        self.parts.append(f'<div class="chart" id="{cid}"></div>')

    def render(self) -> str:
        embeds = "\n".join(f"vegaEmbed('#{cid}', {json.dumps(spec)}, {{actions: false, renderer: 'svg'}});"
                           for cid, spec in self.charts)
        return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{html.escape(self.title)} · benchcards</title>"
                f"<link rel=\"stylesheet\" href=\"{self.up}assets/style.css\">"
                f"<script src=\"{self.up}assets/vega.js\"></script></head><body><main>"
                f"<nav><a href=\"{self.up}index.html\">All setups</a><a href=\"{self.up}quality.html\">Quality</a></nav>"
                + "\n".join(self.parts)
                + f"</main><script>(() => {{\n{SORT_JS}\n{embeds}\n}})();</script></body></html>")


def _card_page(store: queries.Store, sid: str, raw_links: dict[str, str]) -> str:
    c = queries.card(store, sid)
    s = c.setup
    p = _Page(s.title, 1)
    badge = queries.badges(c.row)
    p.add(f"<h1>{html.escape(s.title)}</h1><p><span class=\"badge\">{badge}</span> "
          f"<span class=\"muted\">{html.escape(s.provenance or '')}</span></p>")
    p.add(f"<p class=\"muted\">{html.escape(str(c.row['gpu']))} · {html.escape(s.engine.name)} "
          f"{html.escape(s.engine.version or '')} · {html.escape(s.model.name)} {html.escape(s.model.quant or '')} · "
          f"measured {html.escape(', '.join(s.measured_at) or 'date unknown')}</p>")
    p.add("<h2>Speed</h2><div class=\"tiles\">" + "".join(
        f"<div class=\"tile\" title=\"{html.escape(t.help)}\">{html.escape(t.label)}<b>{html.escape(t.value)}</b></div>"
        for t in cardmod.headline_tiles(c)) + "</div>")
    p.add(_table(cardmod.speed_table(c)))
    for title, df in (("Named tasks", cardmod.task_table(c)), ("Client vs server", cardmod.client_vs_server(c)),
                      ("Time to first token vs the server's prompt time", cardmod.ttft_gap_table(c)),
                      ("Long prompts", cardmod.long_prompt_table(c)), ("Requests at once", cardmod.conc_table(c))):
        if not df.empty:
            p.add(f"<h3>{html.escape(title)}</h3>" + _table(df))
            if title.startswith("Time to first token"):
                p.add(f"<p class=\"muted\">{html.escape(cardmod.TTFT_GAP_EXPLAINED)}</p><ul>"
                      + "".join(f"<li>{html.escape(n)}</li>" for n in cardmod.hygiene_notes(c)) + "</ul>")
    series = queries.series(store, [sid], ["prefill", "ctx_prefill", "decode_at_depth", "ctx_decode", "ttft",
                                           "ctx_ttft", "conc_total", "conc_per_request"])
    for kind in ("prefill", "decode", "ttft"):
        if not charts.depth_points(series, kind).empty:
            p.chart(charts.depth_chart(series, kind))
    if series.metric.isin(["conc_total", "conc_per_request"]).any():
        p.chart(charts.conc_chart(series))
    p.add("<h2>Quality</h2>" + _table(cardmod.quality_table(c)))
    p.add("<h2>Memory test</h2>")
    if c.fit is not None:
        p.add(_table(cardmod.fit_table(c)))
        p.chart(charts.fit_chart(c.fit_steps))
    else:
        p.add('<p class="muted">No memory test.</p>')
    p.add("<h2>Server command</h2><pre>" + html.escape(flags.shell_join(s.server.argv, s.server.env)) + "</pre>")
    p.add(_table(cardmod.flags_table(c)))
    samp = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.sampling.model_dump().items() if v is not None)
    p.add(f"<h2>Sampling and thinking</h2><p>{html.escape(samp or 'not recorded')}; thinking "
          f"{ {True: 'on', False: 'off', None: 'not recorded'}[s.thinking] }</p>")
    if s.deviations or s.notes:
        p.add("<h2>Deviations and notes</h2><ul>" + "".join(
            f"<li><b>{html.escape(d.what)}</b> — {html.escape(d.why)}</li>" for d in s.deviations) + "</ul>"
            + (f"<p>{html.escape(s.notes)}</p>" if s.notes else ""))
    p.add("<h2>Runs</h2>" + _table(cardmod.runs_table(c)))
    if not c.warnings.empty:
        p.add("<h2>Warnings</h2><ul>" + "".join(f"<li>{html.escape(w.kind)}: {html.escape(w.message)}</li>"
                                                for w in c.warnings.itertuples()) + "</ul>")
    files = cardmod.files_table(c)
    if not files.empty:
        files["href"] = [raw_links.get(h, "") for h in files["SHA-256"]]
        p.add("<h2>Raw files</h2>" + _table(files, links={"File": "href"}))
    return p.render()


def export(db_path: Path, out: Path, with_raw: bool = True) -> list[Path]:
    """Write the static site for every setup of ``db_path`` into ``out``; returns the pages written.

    Side effects: replaces ``out`` (writes into a sibling folder first, then swaps it in).
    """
    import vl_convert as vlc

    store = queries.Store(db_path)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "assets").mkdir(parents=True)
    (tmp / "setups").mkdir()
    vl = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    (tmp / "assets" / "vega.js").write_text(vlc.javascript_bundle(vl_version=f"v{vl}"), encoding="utf-8")
    (tmp / "assets" / "style.css").write_text(CSS, encoding="utf-8")
    overview = queries.overview(store)
    raw_links: dict[str, str] = {}
    if with_raw:
        files = store.df("SELECT DISTINCT sha256, path FROM files")
        for sha, path in zip(files.sha256, files.path):
            if sha in raw_links:
                continue
            try:
                data = store.raw_file(sha)
            except queries.RawFileError:
                continue
            name = Path(path).name
            target = tmp / "raw" / sha / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            raw_links[sha] = f"../raw/{sha}/{name}"
    written = []
    for sid in overview.setup_id:
        page = tmp / "setups" / f"{sid}.html"
        page.write_text(_card_page(store, sid, raw_links), encoding="utf-8")
        written.append(page)
    idx = _Page("All setups", 0)
    idx.add("<h1>benchcards</h1><p class=\"muted\">Local LLM inference setups, measured the same way. "
            "Click a column to sort; type to filter.</p><input id=\"filter\" placeholder=\"Filter: GPU, model, quant…\">")
    view = views.overview_table(overview, lambda sid: f"setups/{sid}.html")
    view = view.drop(columns=["Warnings"]).rename(columns={"Card": "href"})
    idx.add(_table(view, sortable=True, links={"Setup": "href"}))
    (tmp / "index.html").write_text(idx.render(), encoding="utf-8")
    written.append(tmp / "index.html")
    q = queries.quality_table(store)
    qp = _Page("Quality", 0)
    qp.add("<h1>Quality with 95 % margins</h1><p class=\"muted\">Wilson score intervals; a cut-off answer "
           "counts as wrong.</p>")
    if not q.empty:
        qp.chart(charts.quality_chart(q))
        qv = views.quality_table(q)
        qv.insert(2, "href", ["setups/" + sid + ".html" for sid in q.setup_id])
        qp.add(_table(qv, sortable=True, links={"Setup": "href"}))
    (tmp / "quality.html").write_text(qp.render(), encoding="utf-8")
    written.append(tmp / "quality.html")
    if out.exists():
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out)
    return [out / p.relative_to(tmp) for p in written]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchcards.export",
                                     description="Write the static HTML results site from the database.",
                                     epilog="example:\n  python -m benchcards.export export --db data/benchcards.duckdb",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="folder to write (replaced as a whole)")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"database (default {DEFAULT_DB})")
    parser.add_argument("--no-raw", action="store_true", help="do not copy the raw files")
    args = parser.parse_args(argv)
    pages = export(args.db, args.out, with_raw=not args.no_raw)
    print(f"wrote {len(pages)} pages to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
