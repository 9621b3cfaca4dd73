"""Static HTML results site, generated from the same database, tables and charts as the app.

Usage: python -m benchcards.export OUT [--db FILE] [--no-raw]

Writes ``OUT/index.html`` (every setup), ``OUT/quality.html`` (quality across setups
with margins), ``OUT/builds.html`` (build timelines: setups measured with several engine
builds), one ``OUT/setups/<id>.html`` card per setup, the raw files under
``OUT/raw/<sha256>.bin`` and the Vega bundle (from vl-convert, so no network is
needed to view it) under ``OUT/assets/``. Charts are the very specs of
``benchcards.charts`` with its theme, so the export looks like the app.

Safety: the pages are rendered from Jinja2 templates (``benchcards/templates``:
a base layout and one template per page) with autoescaping on, so no text from
the data is ever markup. Chart specs travel in ``<script type="application/json">``
blocks, escaped for that context (``<``, ``>``, ``&``, U+2028, U+2029), and are read
by the one bundled script (``assets/site.js``). A Content-Security-Policy allows
only the bundled scripts (no inline script, no eval, no network). Raw files are
stored under their hash with a neutral ``.bin`` extension and linked with
``download``, so an uploaded ``report.html`` or ``image.svg`` can never render on
the site's origin.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import altair as alt
import jinja2
import markupsafe
import pandas as pd

from benchcards import builds, charts, flags, queries, views
from benchcards import card as cardmod
from benchcards.paths import DEFAULT_DB

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: only the bundled scripts run; styles from the bundled sheet (and the inline ones Vega sets on its SVG)
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self'; connect-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; "
       "form-action 'none'")

_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element: no '<', '>' or '&' (so no
    '</script>' or '<!--'), no line or paragraph separators."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in _SCRIPT_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def environment() -> jinja2.Environment:
    """The Jinja2 environment of the export: templates from benchcards/templates, autoescape always on."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    # safe: script_json leaves no character that could end the <script> element or open markup
    env.filters["script_json"] = lambda v: markupsafe.Markup(script_json(v))  # noqa: S704
    return env


@dataclass(frozen=True)
class Cell:
    """One table cell: text, and a link (``download`` names the file when the link is a download)."""

    text: str
    href: str | None = None
    download: str | None = None


@dataclass
class Table:
    """A table for the ``table`` macro."""

    columns: list[str]
    rows: list[list[Cell]]


def _text(v: Any) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)) or hasattr(v, "dtype"):
        try:
            f = float(v)
        except (TypeError, ValueError):
            return str(v)
        if pd.isna(f):
            return ""
        return f"{f:,.0f}" if f.is_integer() and abs(f) >= 1000 else f"{f:g}"
    return str(v)


def table(df: pd.DataFrame | None, links: dict[str, str] | None = None,
          downloads: dict[str, str] | None = None) -> Table:
    """A DataFrame as a Table. ``links`` maps a column to a column of URLs for it; ``downloads``
    maps a column to a column of file names (its links download under that name)."""
    if df is None or df.empty:
        return Table([], [])
    hidden = set((links or {}).values()) | set((downloads or {}).values())
    cols = [c for c in df.columns if c not in hidden]
    rows = []
    for _, r in df.iterrows():
        row = []
        for c in cols:
            href = str(r[links[c]]) if links and c in links and r[links[c]] else None
            dl = str(r[downloads[c]]) if downloads and c in downloads and href else None
            row.append(Cell(_text(r[c]), href, dl))
        rows.append(row)
    return Table([str(c) for c in cols], rows)


def _plain_separators(node: Any) -> Any:
    """The spec with U+2028/U+2029 in its strings turned into spaces: Vega-Lite copies some data values
    (custom sort orders) into expressions, which Vega's expression parser refuses with those characters."""
    if isinstance(node, str):
        return node.replace("\u2028", " ").replace("\u2029", " ")
    if isinstance(node, dict):
        return {_plain_separators(k): _plain_separators(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain_separators(v) for v in node]
    return node


@dataclass
class Page:
    """Charts of one page: each gets an id, a placeholder and a JSON block."""

    charts: list[dict] = field(default_factory=list)

    def chart(self, chart: alt.TopLevelMixin) -> dict:
        spec = _plain_separators(chart.to_dict())
        spec["width"] = "container"
        c = {"id": f"chart{len(self.charts)}", "spec": spec}
        self.charts.append(c)
        return c


def _card_page(env: jinja2.Environment, store: queries.Store, sid: str, raw_links: dict[str, str]) -> str:
    c = queries.card(store, sid)
    s = c.setup
    page = Page()
    gap_notes = (cardmod.TTFT_GAP_EXPLAINED, cardmod.hygiene_notes(c))
    speed_extra = [(title, table(df), notes) for title, df, notes in (
        ("Named tasks", cardmod.task_table(c), None), ("Client vs server", cardmod.client_vs_server(c), None),
        ("Time to first token vs the server's prompt time", cardmod.ttft_gap_table(c), gap_notes),
        ("Long prompts", cardmod.long_prompt_table(c), None), ("Requests at once", cardmod.conc_table(c), None),
        ("Engine benchmark (llama-bench)", cardmod.engine_table(c), None),
        ("From the server's log", cardmod.server_log_table(c), None))
        if not df.empty]
    timeline = builds.timeline_table(builds.timeline(store, sid))
    series = queries.series(store, [sid], ["prefill", "ctx_prefill", "decode_at_depth", "ctx_decode", "ttft",
                                           "ctx_ttft", "conc_total", "conc_per_request"])
    speed_charts = [page.chart(charts.depth_chart(series, kind)) for kind in ("prefill", "decode", "ttft")
                    if not charts.depth_points(series, kind).empty]
    if series.metric.isin(["conc_total", "conc_per_request"]).any():
        speed_charts.append(page.chart(charts.conc_chart(series)))
    fit_charts = [page.chart(charts.fit_chart(c.fit_steps))] if c.fit is not None else []
    files = cardmod.files_table(c)
    if not files.empty:
        files["href"] = [raw_links.get(h, "") for h in files["SHA-256"]]
        files["name"] = [p.rsplit("/", 1)[-1] for p in files["File"]]
    samp = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.sampling.model_dump().items() if v is not None)
    return env.get_template("card.html").render(
        title=s.title, up="../", csp=CSP, charts=page.charts, s=s, badge=queries.badges(c.row), gpu=str(c.row["gpu"]),
        tiles=cardmod.headline_tiles(c), speed=table(cardmod.speed_table(c)), speed_extra=speed_extra,
        speed_charts=speed_charts, timeline=table(timeline), builds_explained=builds.EXPLAINED,
        quality=table(cardmod.quality_table(c)),
        fit=table(cardmod.fit_table(c)) if c.fit is not None else None, fit_charts=fit_charts,
        command=flags.shell_join(s.server.argv, s.server.env), flags=table(cardmod.flags_table(c)),
        sampling=samp, thinking={True: "on", False: "off", None: "not recorded"}[s.thinking],
        runs=table(cardmod.runs_table(c)), warnings=list(c.warnings.itertuples()),
        files=table(files, links={"File": "href"}, downloads={"File": "name"}) if not files.empty else None,
    )


def _builds_page(env: jinja2.Environment, store: queries.Store) -> str:
    """Every build timeline: one table per hardware, model and settings measured with several builds."""
    titles = dict(queries.setup_ids(store))
    timelines = []
    for ids in builds.groups(store):
        tl = builds.timeline(store, ids[-1])
        if tl.empty:
            continue
        sib = builds.siblings(store, ids[-1])
        links = [Cell(b, f"setups/{sid}.html") for sid, b in zip(sib.setup_id, sib.build)]
        timelines.append({"title": titles.get(ids[-1], ids[-1]), "builds": links,
                          "table": table(builds.timeline_table(tl))})
    return env.get_template("builds.html").render(title="Builds over time", up="", csp=CSP, charts=[],
                                                  explained=builds.EXPLAINED, timelines=timelines)


def export(db_path: Path, out: Path, with_raw: bool = True) -> list[Path]:
    """Write the static site for every setup of ``db_path`` into ``out``; returns the pages written.

    Side effects: replaces ``out`` (writes into a sibling folder first, then swaps it in).
    """
    import vl_convert as vlc

    env = environment()
    store = queries.Store(db_path)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "assets").mkdir(parents=True)
    (tmp / "setups").mkdir()
    vl = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    bundle = vlc.javascript_bundle(None, vl_version=f"v{vl}")  # type: ignore[arg-type]  # None: the default bundle
    (tmp / "assets" / "vega.js").write_text(bundle, encoding="utf-8")
    for asset in ("style.css", "site.js"):
        shutil.copyfile(TEMPLATES / "assets" / asset, tmp / "assets" / asset)
    overview = queries.overview(store)
    raw_links: dict[str, str] = {}
    if with_raw:
        files = store.df("SELECT DISTINCT sha256 FROM files")
        (tmp / "raw").mkdir()
        for sha in files.sha256:
            try:
                data = store.raw_file(sha)
            except queries.RawFileError:
                continue
            # named by content hash with a neutral extension: never served as HTML/SVG/JS
            (tmp / "raw" / f"{sha}.bin").write_bytes(data)
            raw_links[sha] = f"../raw/{sha}.bin"
    written = []
    for sid in overview.setup_id:
        page = tmp / "setups" / f"{sid}.html"
        page.write_text(_card_page(env, store, sid, raw_links), encoding="utf-8")
        written.append(page)
    view = views.overview_table(overview, lambda sid: f"setups/{sid}.html")
    view = view.drop(columns=["Warnings"]).rename(columns={"Card": "href"})
    index = env.get_template("index.html").render(title="All setups", up="", csp=CSP, charts=[],
                                                  overview=table(view, links={"Setup": "href"}))
    (tmp / "index.html").write_text(index, encoding="utf-8")
    written.append(tmp / "index.html")
    q = queries.quality_table(store)
    qpage = Page()
    quality = None
    if not q.empty:
        qpage.chart(charts.quality_chart(q))
        qv = views.quality_table(q)
        qv.insert(2, "href", ["setups/" + sid + ".html" for sid in q.setup_id])
        quality = table(qv, links={"Setup": "href"})
    html = env.get_template("quality.html").render(title="Quality", up="", csp=CSP, charts=qpage.charts,
                                                   quality=quality)
    (tmp / "quality.html").write_text(html, encoding="utf-8")
    written.append(tmp / "quality.html")
    (tmp / "builds.html").write_text(_builds_page(env, store), encoding="utf-8")
    written.append(tmp / "builds.html")
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
    try:
        pages = export(args.db, args.out, with_raw=not args.no_raw)
    except queries.db.DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.filename or args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {len(pages)} pages to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
