"""Static HTML results site, generated from the same database, tables and charts as the app.

Usage: python -m benchcards.site.export OUT [--db FILE] [--no-raw] [--base-url URL] [--workers N]

The site (addresses in ``benchcards.site.urls``):

- ``index.html``: the hardware tiers with their fastest setups, the models, links to the rest;
- ``setups/<setup_id>.html``: one card per setup, a permalink that never changes, with the
  app's tables and charts (knees marked on the curves);
- ``tiers/<tier>.html`` and ``models/<model>.html``: every setup of one hardware tier, of one
  model across GPUs and quants (lists of more than ``site.PAGE_ROWS`` rows are split into pages);
- ``quality.html`` and ``quality/<test>.html``: quality results with their margins, one test a page;
- ``sweeps.html`` and ``sweeps/<sweep_id>.html``: server-flag sweeps, each figure's Δ % against the
  baseline with its 95 % interval (table and chart) and links to each variant's card, from the tables of
  the app's Sweeps page (``benchcards.compute.sweeps``);
- ``builds.html``: build timelines, the setups measured with several engine builds (``benchcards.compute.builds``);
- ``analysis.html`` and ``analysis/…``: time to answer at fixed sizes, throughput vs per-request
  speed per tier, speed vs quality per tier, knees: the library functions and display tables of
  the app's Analysis page (``benchcards.compute.analysis``);
- ``index.json`` (every setup and figure as plain numbers with units from the metric registry; the same split
  per tier and per model in ``index/tiers/…json`` and ``index/models/…json``, listed under its ``parts``),
  ``sitemap.xml`` (``--base-url`` makes its addresses absolute), ``assets/search.js`` (the index of
  the search box), the raw files under ``raw/<sha256>.bin`` and the bundled scripts in ``assets/``.

Speed: the cards are read with one query per table for many setups at once and rendered in
worker processes; chart specs are filled into one template spec per chart shape
(``benchcards.charts.specs``). Re-exporting rewrites only files whose content changed
(``benchcards.site.writer``), and does not even render a card whose data (``card_data.card_digests``),
knees, linked raw files and rendering code (``code_stamp``) are those of the last export. An export whose
database content (the fingerprint the writer records), code and options are those of the last one, into a
folder nobody touched, writes nothing at all (``export_key``).

Safety: the pages are rendered from Jinja2 templates (``benchcards/site/templates``: a base layout
and one template per page) with autoescaping on, so no text from the data is ever markup. Chart
specs travel in ``<script type="application/json">`` blocks, escaped for that context (``<``,
``>``, ``&``, U+2028, U+2029), and are read by the one bundled script (``assets/site.js``); the
search index is a data-only script file escaped the same way. A Content-Security-Policy allows
only the bundled scripts (no inline script, no eval, no network). Raw files are stored under
their hash with a neutral ``.bin`` extension and linked with ``download``, so an uploaded
``report.html`` or ``image.svg`` can never render on the site's origin.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import altair as alt
import jinja2
import markupsafe
import pandas as pd

from benchcards.charts import charts, specs
from benchcards.charts.specs import script_json
from benchcards.compute import analysis, builds, sweeps
from benchcards.domain import fmt, metrics, tiers
from benchcards.read import analysis_inputs, card_data, clauses, curves, db, overview_rows, quality, rawfiles, reported
from benchcards.read.paths import CACHE, DEFAULT_DB, shown
from benchcards.read.store import Store
from benchcards.site import urls as site
from benchcards.site import writer as sitewrite
from benchcards.views import analysisview, cardview, overview_filter
from benchcards.views import tables as views

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: only the bundled scripts run; styles from the bundled sheet (and the inline ones Vega sets on its SVG)
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self'; connect-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; "
       "form-action 'none'")

#: the fixed sizes of the exported time-to-answer views: (prompt tokens, answer words)
ANSWER_SIZES: tuple[tuple[int, int], ...] = ((2048, 500), (32768, 500))
#: setups of each tier in the home page's tables
HOME_ROWS = 10
#: setups on one speed-vs-quality or throughput chart (those on the frontier first)
CHART_SETUPS = 40
#: setups on the knee charts of a tier page of the analysis
KNEE_CHART_SETUPS = 5
#: the longest text of a column whose cells do not wrap
SHORT_CELL = 16
#: cards per task of a worker process
CHUNK = 50
#: below this many setups the cards are rendered in this process (starting workers costs more)
MIN_FOR_WORKERS = 150

__all__ = ["CSP", "ExportResult", "export", "main", "script_json"]


def environment() -> jinja2.Environment:
    """The Jinja2 environment of the export: templates from benchcards/site/templates, autoescape always on."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    # safe: script_json leaves no character that could end the <script> element or open markup
    env.filters["script_json"] = lambda v: markupsafe.Markup(script_json(v))  # noqa: S704
    env.filters["count"] = fmt.count
    # safe: every run of the text is escaped; only the span around a long word is markup
    env.filters["words"] = lambda v: markupsafe.Markup("".join(  # noqa: S704
        f'<span class="lw">{markupsafe.escape(p)}</span>' if long else str(markupsafe.escape(p))
        for p, long in fmt.long_tokens(str(v))))
    return env


# --------------------------------------------------------------------------- tables


class Cell(NamedTuple):
    """One table cell: text, and a link (``download`` names the file when the link is a download).
    A tuple: a card has hundreds of cells, and a tuple is made several times faster than a dataclass."""

    text: str
    href: str | None = None
    download: str | None = None
    #: a second line under the text (the note of one row, e.g. figures that are not the column's kind)
    note: str | None = None


@dataclass
class Table:
    """A table for the ``table`` macro: ``numeric`` marks the columns that sort as numbers."""

    columns: list[str]
    rows: list[list[Cell]]
    numeric: list[bool] = field(default_factory=list)
    #: columns of short texts (figures, "54.5 % ± 4.9") that never wrap inside a cell
    short: list[bool] = field(default_factory=list)
    #: the direction of a column's first sort ('desc' for figures where more is better)
    first: list[str] = field(default_factory=list)


def cell_text(v: Any, decimals: int | None = None) -> str:
    """A cell of a display table as text: text as it is, numbers through ``fmt.number`` (``decimals`` as the
    display table rounded them; whole numbers without decimals), missing values '—'."""
    if fmt.missing(v):
        return fmt.DASH
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return fmt.yes_no(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if decimals is None:
        decimals = 0 if f.is_integer() else 1
    return fmt.number(f, decimals)


def _decimals(col: list, limit: int = 3) -> int:
    """The decimals a rounded float column shows: as many as its most precise value needs (at most ``limit``),
    so that 75.0 and 74.3 in one column read 75.0 and 74.3."""
    most = 0
    for v in col:
        if v is None or v != v or v in (float("inf"), float("-inf")):
            continue
        text = f"{round(float(v), limit):.{limit}f}".rstrip("0")
        most = max(most, len(text.split(".")[1]))
    return most


def table(df: pd.DataFrame | None, links: dict[str, str] | None = None,
          downloads: dict[str, str] | None = None, up: str = "", notes: dict[str, str] | None = None) -> Table:
    """A display table as a Table. ``links`` maps a column to a column of addresses for it (from the site
    root; ``up`` leads there from the page), ``downloads`` a column to a column of file names (its links
    download under that name), ``notes`` a column to a column of second lines for its cells (missing: none).
    Numbers are formatted with the decimals in ``df.attrs['decimals']``."""
    if df is None or df.empty:
        return Table([], [])
    hidden = set((links or {}).values()) | set((downloads or {}).values()) | set((notes or {}).values())
    values: dict[Any, list] = {}
    kinds = {}
    for c, col in df.items():
        values[c] = col.tolist()
        kinds[c] = col.dtype
    cols = [c for c in df.columns if c not in hidden]
    decimals: dict[str, int] = {**{c: _decimals(values[c]) for c in cols if pd.api.types.is_float_dtype(kinds[c])},
                                **df.attrs.get("decimals", {})}
    numeric = [pd.api.types.is_numeric_dtype(kinds[c]) and not pd.api.types.is_bool_dtype(kinds[c]) for c in cols]
    rows = []
    plain = not links and not downloads and not notes
    for i in range(len(df)):
        if plain:
            rows.append([Cell(cell_text(values[c][i], decimals.get(c))) for c in cols])
            continue
        row = []
        for c in cols:
            target = values[links[c]][i] if links and c in links else None
            href = f"{up}{target}" if target and not fmt.missing(target) else None
            dl = str(values[downloads[c]][i]) if downloads and c in downloads and href else None
            note = values[notes[c]][i] if notes and c in notes else None
            row.append(Cell(cell_text(values[c][i], decimals.get(c)), href, dl,
                            None if fmt.missing(note) else str(note)))
        rows.append(row)
    short = [bool(rows) and max(len(r[j].text) + len(r[j].note or "") for r in rows) <= SHORT_CELL
             for j in range(len(cols))]
    figures = [num or (bool(rows) and sum(r[j].text[:1].isdigit() for r in rows) * 2 > len(rows))
               for j, num in enumerate(numeric)]  # numbers, or text figures ('2,989.6', '57.3 % ± 4.8')
    first = [("asc" if first_ascending(str(c)) else "desc") if fig else "asc" for c, fig in zip(cols, figures)]
    return Table([str(c) for c in cols], rows, numeric, short, first)


#: whether less is better, by column header (the metric registry's headers, long and short)
_LOWER_IS_BETTER = {h: d.better == "lower" for d in metrics.REGISTRY.values() for h in (d.header(), d.header(True))}


def first_ascending(header: str) -> bool:
    """True when a first click on a numeric column should sort it smallest first: times and other figures
    where less is better (the metric registry says; a header in seconds or a rank otherwise); figures where
    more is better sort largest first."""
    if header in _LOWER_IS_BETTER:
        return _LOWER_IS_BETTER[header]
    h = header.lower()
    return h.endswith(("(s)", "(ms)")) or h.startswith(("rank", "first token", "time")) or "gib" in h


# --------------------------------------------------------------------------- pages


@dataclass
class Charts:
    """The charts of one page: each gets an id, a placeholder and a JSON block."""

    items: list[dict] = field(default_factory=list)

    def add_json(self, text: str, caption: str | None = None) -> dict:
        """Add a chart from script-safe JSON text (``specs.spec_json``)."""
        # safe: the text comes from specs.spec_json / script_json, which escape for the script context
        c = {"id": f"chart{len(self.items)}", "json": markupsafe.Markup(text), "caption": caption}  # noqa: S704
        self.items.append(c)
        return c

    def add(self, chart: alt.TopLevelMixin, caption: str | None = None) -> dict:
        """Add an Altair chart (built and validated here: for the few charts of a kind)."""
        spec = specs.plain_separators(chart.to_dict(validate=False))  # the app draws and validates the same charts
        spec["width"] = "container"
        return self.add_json(script_json(spec), caption)


def render(env: jinja2.Environment, template: str, path: str, *, title: str, crumbs: list[site.Crumb] | None = None,
           charts: Charts | None = None, **ctx: Any) -> str:
    """One page of the site at ``path`` (from the root)."""
    return env.get_template(template).render(title=title, up=site.up(path), csp=CSP, crumbs=crumbs or [],
                                             charts=(charts or Charts()).items, **ctx)


HOME = site.Crumb("Home", "index.html")


def tier_of(row: dict) -> str:
    """The hardware tier of a setups row."""
    v = row.get("vram_gib")
    return tiers.vram_tier(None if v is None or fmt.missing(v) else float(v), bool(row.get("unified_memory") or False))


# --------------------------------------------------------------------------- setup cards


@dataclass(frozen=True)
class CardJob:
    """What a worker needs to render a chunk of cards."""

    db_path: Path
    out: Path
    ids: list[str]
    previous: dict[str, sitewrite.Entry]
    raw: frozenset[str]
    knees: pd.DataFrame
    #: the build timeline a card shows (setups that are builds of one another share their group's)
    timelines: dict[str, pd.DataFrame] = field(default_factory=dict)


def _split(df: pd.DataFrame, drop_id: bool = False) -> dict[str, pd.DataFrame]:
    """The rows of ``df`` per setup, in their order (slices of one sort: a groupby cost ~4 ms a card)."""
    if df.empty:
        return {}
    # slices keep the frame's index: nothing downstream reads it
    return card_data.split_by_setup(df.sort_values("setup_id", kind="stable"), drop_id, reset=False)


#: the knee marks of a card without knees (the columns the charts' knee layers read)
EMPTY_KNEES = {"prefill": pd.DataFrame(columns=charts.KNEE_TEXT_COLUMNS),
               "decode": pd.DataFrame(columns=charts.KNEE_TEXT_COLUMNS),
               "conc": pd.DataFrame(columns=["setup", "at", "y", "at_text", "threshold_text", "text"])}

SERIES_METRICS = ["prefill", "ctx_prefill", "decode_at_depth", "ctx_decode", "ttft", "ctx_ttft", "conc_total",
                  "conc_per_request", "bench_prefill", "bench_decode"]


def render_cards(job: CardJob) -> tuple[dict[str, sitewrite.Entry], list[str]]:
    """Render and write the cards of ``job.ids``; returns the written files' entries and which were written.
    Side effects: writes ``setups/<id>.html`` files under ``job.out`` (unchanged ones are left alone)."""
    env = environment()
    store = Store(job.db_path)
    writer = sitewrite.Writer(job.out, job.previous)
    cards = card_data.cards(store, job.ids)
    series = curves.series(store, job.ids, SERIES_METRICS)
    points = {kind: charts.depth_points(series, kind) for kind in ("prefill", "decode", "ttft")}
    depth = {kind: _split(df) for kind, df in points.items()}
    knee_points = {kind: _split(charts.depth_knee_points(points[kind], job.knees, kind, with_ids=True), drop_id=True)
                   for kind in ("prefill", "decode")}
    conc_all = charts.conc_points(series, "total")
    conc = _split(conc_all)
    knee_points["conc"] = _split(charts.conc_knee_points(conc_all, job.knees, with_ids=True), drop_id=True)
    steps = [c.fit_steps for c in cards if c.fit is not None and not c.fit_steps.empty]
    fit = _split(charts.fit_points(pd.concat(steps, ignore_index=True))) if steps else {}
    snap = reported.Snapshot(store)
    prompt_tokens = card_data.decode_prompt_tokens_by_run(store, [r for c in cards if (r := _decode_run(c))])
    for c in cards:
        path = site.setup_path(c.setup_id)
        inputs = cardview.Inputs(prompt_tokens=prompt_tokens.get(_decode_run(c) or ""),
                                 timeline=job.timelines.get(c.setup_id),
                                 reported=reported.card_section(store, c.setup_id, c.setup.server.argv, snap))
        html = card_page(env, c, path, inputs, depth={k: v.get(c.setup_id) for k, v in depth.items()},
                         conc=conc.get(c.setup_id), fit=fit.get(c.setup_id),
                         knee_points={k: v.get(c.setup_id, EMPTY_KNEES[k]) for k, v in knee_points.items()},
                         raw=job.raw)
        writer.write(path, html)
    db.forget(job.db_path)
    return writer.entries, writer.written


def _decode_run(c: card_data.Card) -> str | None:
    """The run of the card's headline decode (its prompt length is read for all cards at once)."""
    return c.run_of("decode")


def _card_charts(c: card_data.Card, page: Charts, depth: dict[str, pd.DataFrame | None], conc: pd.DataFrame | None,
                 fit: pd.DataFrame | None, knee_points: dict[str, pd.DataFrame]) -> dict[str, dict]:
    """The card's charts by ``cardview.Chart`` id, in the setup's own colour (the one the app gives it too)."""
    colours = {"domain": [c.setup.title], "range": [charts.setup_colors([c.setup_id])[c.setup_id]]}
    out = {}
    for kind in ("prefill", "decode", "ttft"):
        pts = depth.get(kind)
        if pts is None or pts.empty:
            continue
        frames = {"points": pts}
        if kind != "ttft":
            frames["knees"] = knee_points[kind]
        out[f"depth-{kind}"] = page.add_json(specs.spec_json(charts.depth_builder, frames,
                                                             charts.depth_settings(pts, kind), colours))
    if conc is not None and not conc.empty:
        out["conc-total"] = page.add_json(specs.spec_json(
            charts.conc_builder, {"points": conc, "knees": knee_points["conc"]},
            charts.conc_settings(conc, "total"), colours))
    if c.fit is not None and fit is not None and not fit.empty:
        settings, holes = charts.fit_settings(fit)
        out["fit"] = page.add_json(specs.spec_json(charts.fit_builder, {"points": fit}, settings, holes))
    return out


def _block(b: object, drawn: dict[str, dict], raw: frozenset[str], up: str) -> dict | None:
    """One ``cardview`` block as the template's ``block`` macro reads it (None: nothing to draw here)."""
    if isinstance(b, cardview.Table):
        return {"kind": "table", "t": table(b.df), "empty": b.empty} if not (b.df.empty and b.empty is None) else None
    if isinstance(b, cardview.Files):
        files = b.df.copy()
        files["href"] = [f"raw/{h}.bin" if h in raw else None for h in files["SHA-256"]]
        files["name"] = [p.rsplit("/", 1)[-1] for p in files["File"]]
        return {"kind": "files", "note": b.note,
                "t": table(files, links={"File": "href"}, downloads={"File": "name"}, up=up)}
    if isinstance(b, cardview.Chart):
        return {"kind": "chart", "c": drawn[b.id]} if b.id in drawn else None
    if isinstance(b, cardview.Link):
        return {"kind": "link", "b": b} if b.site else None
    if isinstance(b, cardview.Details):
        inner = [x for x in (_block(i, drawn, raw, up) for i in b.blocks) if x is not None]
        return {"kind": "details", "summary": b.summary, "blocks": inner}
    return {"kind": type(b).__name__.lower(), "b": b}


def card_page(env: jinja2.Environment, c: card_data.Card, path: str, inputs: cardview.Inputs, *,
              depth: dict[str, pd.DataFrame | None], conc: pd.DataFrame | None, fit: pd.DataFrame | None,
              knee_points: dict[str, pd.DataFrame], raw: frozenset[str]) -> str:
    """The card of one setup: the sections of ``cardview.sections`` (the app's), in their order, with its charts
    (their points and knee marks computed for many setups at once) and links to its raw files."""
    s = c.setup
    page = Charts()
    up = site.up(path)
    drawn = _card_charts(c, page, depth, conc, fit, knee_points)
    inputs.charts = set(drawn)
    shown = [{"s": sec, "blocks": [x for x in (_block(b, drawn, raw, up) for b in sec.blocks) if x is not None]}
             for sec in cardview.sections(c, inputs)]
    tier = tier_of(c.row)
    model = site.model_key(c.row.get("model"))
    crumbs = [HOME, site.Crumb(f"{tier} tier", site.tier_path(tier)), site.Crumb(model, site.model_path(model)),
              site.Crumb(s.title)]
    return render(env, "card.html", path, title=s.title, crumbs=crumbs, charts=page, sections=shown,
                  tier=tier, tier_href=site.tier_path(tier), model=model, model_href=site.model_path(model))


# --------------------------------------------------------------------------- lists: home, tiers, models


def _overview_rows(ov: pd.DataFrame, tier: bool = True) -> pd.DataFrame:
    """The overview's display columns for list pages, with each setup's address in ``href``: the setup's short
    name (model · quant · engine build, as the app's overview), figures, quality, GPU, tier (unless ``tier`` is
    False: a tier's own page), the notes a row of the list has, and the kind of data."""
    shown = views.overview_display(ov)
    out = pd.DataFrame({"Setup": list(shown.Setup), "href": [site.setup_path(s) for s in ov.setup_id],
                        "setup_note": list(shown.engine_only)})
    for col in shown.columns[4:]:
        if col not in ("offload", "engine_only") and (col != "VRAM tier" or tier):
            out[col] = list(shown[col])
    out["gpu_note"] = [None if fmt.missing(o) else f"⚠ {o}" for o in shown.offload]
    out["Data"] = list(ov.badges)
    return out


#: how a list of ``_overview_rows`` links and annotates its cells (``table``'s links and notes)
LIST_LINKS = {"Setup": "href"}
LIST_NOTES = {"Setup": "setup_note", "GPU": "gpu_note"}


def _write_list(env: jinja2.Environment, write: Callable[[str, str], Any], stem: str, rows: pd.DataFrame,
                title: str, crumbs: list[site.Crumb], intro: Iterable[str] = (), links: dict[str, str] | None = None,
                before: Callable[[int, Charts], dict] | None = None, heading: str | None = None,
                notes: dict[str, str] | None = None) -> list[str]:
    """A sortable, filterable table split into pages of ``site.PAGE_ROWS`` rows at ``stem``(-N).html."""
    paths = []
    n = site.pages(len(rows))
    for page in range(1, n + 1):
        path = site.paged(stem, page)
        part = rows.iloc[(page - 1) * site.PAGE_ROWS: page * site.PAGE_ROWS]
        page_charts = Charts()
        extra = before(page, page_charts) if before else {}
        write(path, render(env, "list.html", path, title=title + (f" (page {page} of {n})" if n > 1 else ""),
                           crumbs=crumbs, charts=page_charts, heading=heading or title, intro=list(intro),
                           rows=table(part, links=links, up=site.up(path), notes=notes),
                           paging=site.pager(stem, page, len(rows)), **extra))
        paths.append(path)
    return paths


def _home(env: jinja2.Environment, ov: pd.DataFrame, models: pd.DataFrame, n_tests: int) -> str:
    ranked = overview_filter.sort_overview(ov, "decode")
    # the app's overview groups (views.overview_group): one per tier, the reported setups in one group at the end
    group = pd.Series([views.overview_group(b, t) for b, t in zip(ranked.badges, ranked.tier)], index=ranked.index)
    sections = []
    for label in [*sorted(set(ranked.tier[group != views.REPORTED_GROUP]), key=tiers.tier_rank), None]:
        rows = ranked[group == (views.REPORTED_GROUP if label is None else views.overview_group(None, label))]
        if rows.empty:
            continue
        sections.append({"label": views.REPORTED_GROUP if label is None else views.overview_group(None, label),
                         "href": None if label is None else site.tier_path(label), "count": len(rows),
                         "text": "" if label is None else site.TIER_TEXT.get(label, ""),
                         "table": table(_overview_rows(rows.head(HOME_ROWS), tier=False), links=LIST_LINKS,
                                       notes=LIST_NOTES)})
    return render(env, "index.html", "index.html", title="All setups", sections=sections,
                  models=table(models, links={"Model": "href"}), n_setups=len(ov), n_models=len(models),
                  n_gpus=ov.gpu.nunique(), n_tests=n_tests, answer_sizes=_answer_links(), lead=analysisview.LEAD,
                  legend=analysisview.LEGEND)


def _models_table(ov: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for name, g in ov.groupby(ov.model.map(site.model_key), sort=True):
        best = g.loc[g.decode_tps.astype(float).idxmax()] if g.decode_tps.notna().any() else None
        rows.append({"Model": name, "href": site.model_path(name), "Setups": len(g),
                     "GPUs": g.gpu.nunique(), "Quants": ", ".join(sorted({fmt.text(q) for q in g.quant})),
                     "Fastest decode (tok/s)": fmt.value("decode", None if best is None else best.decode_tps)})
    rows.sort(key=lambda r: (str(r["Model"]).casefold(), str(r["Model"])))  # 'gpt-oss' beside 'GLM', not after 'Z'
    return pd.DataFrame(rows, columns=["Model", "href", "Setups", "GPUs", "Quants", "Fastest decode (tok/s)"])


# --------------------------------------------------------------------------- quality


def _quality_pages(env: jinja2.Environment, write: Callable[[str, str], Any], q: pd.DataFrame) -> list[str]:
    paths = []
    tests = []
    frame = views.quality_frame(q) if not q.empty else q
    for test, g in (frame.groupby("test", sort=False) if not q.empty else []):
        label = str(g.test_label.iloc[0])
        stem = site.quality_path(str(test))[:-5]
        shown = views.quality_table(g.drop(columns="test_label"))
        shown.insert(2, "href", [site.setup_path(s) for s in g.setup_id])
        best = g.iloc[0]
        tests.append({"Test": label, "href": f"{stem}.html",
                      "What": fmt.text(metrics.TESTS[test].description if test in metrics.TESTS else None),
                      "Setups": len(g), "Best result": fmt.quality(best.pct, best.margin_pp),
                      "Best setup": str(best.title), "best_href": site.setup_path(str(best.setup_id))})
        top = g.drop(columns="test_label").head(20)

        def chart(page: int, page_charts: Charts, top: pd.DataFrame = top, n: int = len(g)) -> dict:
            if page == 1:
                page_charts.add(charts.quality_chart(top),
                                caption=None if n <= len(top) else f"The {len(top)} best of {fmt.count(n, 'setup')}.")
            return {}

        paths += _write_list(env, write, stem, shown, f"{label}: quality with 95 % margins",
                             [HOME, site.Crumb("Quality", "quality.html"), site.Crumb(label)],
                             intro=["Wilson score intervals at 95 %; a cut-off answer counts as wrong."],
                             links={"Setup": "href"}, before=chart)
    overview = pd.DataFrame(tests, columns=["Test", "href", "What", "Setups", "Best result", "Best setup",
                                            "best_href"])
    write("quality.html", render(env, "quality.html", "quality.html", title="Quality",
                                 crumbs=[HOME, site.Crumb("Quality")],
                                 tests=table(overview, links={"Test": "href", "Best setup": "best_href"})))
    return ["quality.html", *paths]


# --------------------------------------------------------------------------- analysis


def _answer_stem(prompt: int, words: int) -> str:
    return f"analysis/time-to-answer-{fmt.depth(prompt).lower().replace(',', '')}-{words}-words"


def _answer_links() -> list[dict]:
    return [{"href": f"{_answer_stem(p, w)}.html", "text": f"{fmt.depth(p)} prompt, {w:,} words"}
            for p, w in ANSWER_SIZES]


def _tier_rows(df: pd.DataFrame, ids: Iterable[str]) -> pd.DataFrame:
    keep = set(ids)
    return df[df.setup_id.isin(keep)]


def _chart_setups(df: pd.DataFrame, order_col: str, limit: int = CHART_SETUPS) -> list[str]:
    """Setups for a chart with many candidates: those with a point on the frontier first, then by
    ``order_col`` (largest first), at most ``limit``."""
    best = df.groupby("setup_id").agg(front=("frontier", "max"), top=(order_col, "max")).reset_index()
    best = best.sort_values(["front", "top"], ascending=[False, False], kind="stable")
    return best.setup_id.head(limit).tolist()


@dataclass
class _Analysis:
    """What every analysis page reads: the data (method tests left out, as in the app), knees, tiers, crumbs."""

    env: jinja2.Environment
    write: Callable[[str, str], Any]
    data: analysis_inputs.AnalysisData
    kn: pd.DataFrame
    tier_order: list[str]
    left_note: str
    by_tier: dict[str, list[str]]
    titles: dict[str, str]
    crumbs: list[site.Crumb]


def _analysis_pages(env: jinja2.Environment, write: Callable[[str, str], Any], data: analysis_inputs.AnalysisData,
                    kn: pd.DataFrame, tier_order: list[str]) -> list[str]:
    """The analysis index and every view's pages (their words: ``benchcards.views.analysisview``)."""
    # as in the app: method tests (tiny or random-weight models) show the method, not a speed to rank
    data, left_out = analysis.without_method_tests(data)
    setups = analysis.with_tiers(data.setups)
    a = _Analysis(env, write, data, kn[kn.setup_id.isin(set(data.setups.setup_id))], tier_order,
                  analysisview.left_out_note(left_out),
                  {t: setups[setups.tier == t].setup_id.tolist() for t in tier_order},
                  dict(zip(setups.setup_id, setups.title)), [HOME, site.Crumb("Analysis", "analysis.html")])
    paths: list[str] = []
    answers, more = _answer_pages(a)
    paths += more
    tp_links, more = _throughput_pages(a)
    paths += more
    sq_links, more = _speed_quality_pages(a)
    paths += more
    knee_links, more = _knee_pages(a)
    paths += more
    views_shown = [{"view": v, "links": links} for v, links in zip(
        analysisview.VIEWS, (answers, tp_links, sq_links, knee_links))]
    write("analysis.html", render(env, "analysis.html", "analysis.html", title="Analysis",
                                  crumbs=[HOME, site.Crumb("Analysis")], views=views_shown,
                                  intro=analysisview.INTRO, n_setups=len(setups), left_note=a.left_note))
    return ["analysis.html", *paths]


def _answer_pages(a: _Analysis) -> tuple[list[dict], list[str]]:
    """Time to answer at the fixed sizes: one ranked page each."""
    view = analysisview.TIME_TO_ANSWER
    links, paths = [], []
    for p, w in ANSWER_SIZES:
        res = analysis.time_to_answer(a.data, p, float(w))
        stem = _answer_stem(p, w)
        shown = analysis.answer_table(res)
        shown.insert(2, "href", [site.setup_path(s) for s in res.setup_id])
        links.append({"href": f"{stem}.html", "text": f"{fmt.depth(p)}-token prompt, {w:,}-word answer",
                      "count": int(res.total_s.notna().sum()), "unit": "ranked"})

        def chart(page: int, page_charts: Charts, res: pd.DataFrame = res) -> dict:
            if page == 1 and res.total_s.notna().any():
                page_charts.add(charts.answer_time_chart(res), caption=analysisview.CHART_FASTEST)
            return {}

        title = f"{view.title}: {fmt.depth(p)} prompt, {w:,} words"
        paths += _write_list(a.env, a.write, stem, shown, title, [*a.crumbs, site.Crumb(title)], intro=[
            f"Expected seconds from sending a {p:,}-token prompt to the end of a {w:,}-word answer.", view.rules,
            a.left_note], links={"Setup": "href"}, before=chart)
    return links, paths


def _throughput_pages(a: _Analysis) -> tuple[list[dict], list[str]]:
    """Throughput vs per-request speed, one page per tier."""
    view = analysisview.THROUGHPUT
    links, paths = [], []
    tp_all = analysis.throughput(a.data)
    for t in a.tier_order:
        if not (tp_all.tier == t).any():
            continue
        tp = analysis.throughput(a.data.only(a.by_tier[t]))
        stem = f"analysis/throughput-{site.tier_slug(t)}"
        shown = analysis.throughput_table(tp)
        shown.insert(1, "href", [site.setup_path(s) for s in tp.setup_id])
        links.append({"href": f"{stem}.html", "text": f"{t} tier", "count": tp.setup_id.nunique()})
        on_chart = _chart_setups(tp, "total_tps")

        def tp_chart(page: int, page_charts: Charts, tp: pd.DataFrame = tp, on_chart: list[str] = on_chart) -> dict:
            if page == 1:
                n = tp.setup_id.nunique()
                page_charts.add(charts.pareto_chart(tp[tp.setup_id.isin(on_chart)], charts.setup_colors(on_chart)),
                                caption=None if n <= len(on_chart) else
                                f"{len(on_chart)} of {fmt.count(n, 'setup')}: those on the frontier, then the highest totals.")
            return {}

        title = f"{view.title}: {t} tier"
        paths += _write_list(a.env, a.write, stem, shown, title, [*a.crumbs, site.Crumb(title)], intro=[
            view.intro, view.rules], links={"Setup": "href"}, before=tp_chart)
    return links, paths


def _speed_quality_pages(a: _Analysis) -> tuple[list[dict], list[str]]:
    """Speed vs quality per tier, one page per test."""
    view = analysisview.SPEED_QUALITY
    links, paths = [], []
    speed_label = analysis.SPEED_MEASURES["decode"][0]
    for test, label in analysis.quality_tests(a.data):
        sq = analysis.speed_quality(a.data, test, "decode")
        if sq.empty:
            continue
        stem = f"analysis/speed-quality-{site.quality_path(test)[len('quality/'):-5]}"
        sections = []
        page_charts = Charts()
        for t in [t for t in a.tier_order if (sq.tier == t).any()]:
            rows = sq[sq.tier == t]
            on_chart = _chart_setups(rows, "speed_tps")
            c = page_charts.add(charts.speed_quality_chart(rows[rows.setup_id.isin(on_chart)], speed_label, [t]))
            front = analysis.speed_quality_table(rows[rows.frontier], speed_label)
            front.insert(2, "href", [site.setup_path(s) for s in rows[rows.frontier].setup_id])
            sections.append({"tier": t, "chart": c, "count": len(rows), "shown": len(on_chart),
                             "anchor": site.tier_slug(t), "table": table(front, links={"Setup": "href"}, up="../")})
        title = f"{label} vs speed per hardware tier"
        path = f"{stem}.html"
        a.write(path, render(a.env, "speed_quality.html", path, title=title, crumbs=[*a.crumbs, site.Crumb(title)],
                             charts=page_charts, sections=sections, label=label, speed_label=speed_label,
                             rules=view.rules))
        paths.append(path)
        links.append({"href": path, "text": label, "count": len(sq)})
    return links, paths


def _knee_pages(a: _Analysis) -> tuple[list[dict], list[str]]:
    """Knees, one page per tier, with the tier's fastest setups on the charts."""
    view = analysisview.KNEES
    links, paths = [], []
    for t in a.tier_order:
        k = _tier_rows(a.kn, a.by_tier[t])
        if k.empty:
            continue
        stem = f"analysis/knees-{site.tier_slug(t)}"
        shown = analysis.knee_table(k)
        shown.insert(1, "href", [site.setup_path(s) for s in k.setup_id])
        links.append({"href": f"{stem}.html", "text": f"{t} tier", "count": k.setup_id.nunique()})
        pick = _knee_chart_setups(a.data, list(dict.fromkeys(k.setup_id)))  # setups with curves only
        title = f"{view.title}: {t} tier"
        paths += _write_list(a.env, a.write, stem, shown, title, [*a.crumbs, site.Crumb(title)],
                             intro=[view.rules], links={"Setup": "href"}, before=_KneeCharts(a, pick, k))
    return links, paths


@dataclass
class _KneeCharts:
    """The knee charts of a tier's first page (a ``_write_list`` ``before``): its fastest setups' curves with
    their knees marked."""

    a: _Analysis
    pick: list[str]
    k: pd.DataFrame

    def __call__(self, page: int, page_charts: Charts) -> dict:
        return _knee_charts(self.a, page, page_charts, self.pick, self.k)


def _knee_charts(a: _Analysis, page: int, page_charts: Charts, pick: list[str], k: pd.DataFrame) -> dict:
    """See ``_KneeCharts``."""
    if page > 1 or not pick:
        return {}
    sub = a.data.only(pick)
    k = k[k.setup_id.isin(set(pick))]  # the charts' setups only (the table lists them all)
    points = analysis.depth_curves(sub, tasks=False)
    points["title"] = points.setup_id.map(a.titles)
    colours = charts.setup_colors(pick)  # one colour per setup across the page's charts
    for kind in (analysis.PREFILL, analysis.DECODE):
        if (points.kind == kind).any():
            page_charts.add(charts.knee_depth_chart(points, k, kind, colours))
    tp = analysis.throughput(sub)
    if not tp.empty:
        page_charts.add(charts.knee_conc_chart(tp, k, colours))
    fastest = f"{len(pick)} fastest setups" if len(pick) > 1 else "fastest setup"
    return {"chart_note": f"The charts show the tier's {fastest} (decode); the table lists every setup's knees."}


def _knee_chart_setups(data: analysis_inputs.AnalysisData, ids: list[str]) -> list[str]:
    """The fastest few setups (headline decode) of ``ids``, for the knee charts."""
    m = data.metrics
    dec = m[(m.metric == "decode") & m.prompt.isna() & m.level.isna() & m.setup_id.isin(set(ids))]
    order = dec.sort_values("value", ascending=False).setup_id.tolist()
    rest = [s for s in ids if s not in set(order)]
    return (order + rest)[:KNEE_CHART_SETUPS]


# --------------------------------------------------------------------------- the whole site


@dataclass
class ExportResult:
    """What an export did: every page of the site, the files written (others were unchanged), the files
    removed, and the seconds it took."""

    pages: list[Path]
    written: list[str]
    kept: int
    removed: list[str]
    seconds: float
    raw_missing: list[str] = field(default_factory=list)
    #: the setups whose card was rendered (the others were unchanged since the last export)
    rendered: list[str] = field(default_factory=list)
    #: True when the database, the code and the options were those of the last export and every file was still
    #: as written: nothing was rendered or written (``export_key``)
    unchanged: bool = False

    def text(self) -> str:
        if self.unchanged:
            return (f"nothing changed since the last export (same database content, code and options): "
                    f"{len(self.pages)} pages, {self.kept} files kept, none written, in {self.seconds:.1f} s")
        return (f"{len(self.pages)} pages ({len(self.rendered)} cards rendered); {len(self.written)} files written, "
                f"{self.kept} unchanged, "
                f"{len(self.removed)} removed in {self.seconds:.1f} s"
                + (f"; {len(self.raw_missing)} raw files no longer readable (not linked)" if self.raw_missing else ""))


def _vega_bundle() -> tuple[str, str]:
    """(stamp, loader) of the Vega bundle: the stamp names the vl-convert and Vega-Lite versions."""
    import vl_convert as vlc

    vl = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return f"vl-convert {getattr(vlc, '__version__', '?')} vega-lite {vl}", f"v{vl}"


def _assets(writer: sitewrite.Writer, stamps: dict[str, str], previous_stamps: dict[str, str]) -> None:
    for asset in ("style.css", "site.js"):
        writer.write(f"assets/{asset}", (TEMPLATES / "assets" / asset).read_bytes())
    stamp, vl = _vega_bundle()
    rel = "assets/vega.js"
    old = writer.previous.get(rel)
    if old is not None and previous_stamps.get(rel) == stamp and writer.keep_if_present(rel, old.sha256):
        stamps[rel] = stamp
        return
    writer.write(rel, _vega_js(stamp, vl))
    stamps[rel] = stamp


def _vega_js(stamp: str, vl: str) -> str:
    """The Vega bundle of ``stamp``: made by vl-convert (about 3 s of CPU) once, then read from ``paths.CACHE``.
    Side effect: writes the cache file (atomically) the first time."""
    cached = CACHE / f"vega-{sitewrite.sha256(stamp.encode())[:16]}.js"
    try:
        return cached.read_text(encoding="utf-8")
    except OSError:
        pass
    import vl_convert as vlc

    bundle = str(vlc.javascript_bundle(None, vl_version=vl))  # type: ignore[arg-type]  # None: the default bundle
    try:
        sitewrite.atomic_write(cached, bundle.encode("utf-8"))
    except OSError:
        pass  # a read-only checkout: made again next time
    return bundle


def _raw_files(store: Store, writer: sitewrite.Writer) -> tuple[frozenset[str], list[str]]:
    """Copy every raw file into raw/<sha256>.bin (files already there as written are kept without reading
    their source). Returns the hashes present and those whose source is gone or changed."""
    present, missing = set(), []
    for sha, sources in rawfiles.raw_sources(store).items():
        rel = f"raw/{sha}.bin"
        if writer.keep_if_present(rel, sha):
            present.add(sha)
            continue
        data = rawfiles.read_raw(sha, sources)
        if data is None:
            missing.append(sha)
            continue
        # named by content hash with a neutral extension: never served as HTML/SVG/JS
        writer.write_hashed(rel, data, sha)
        present.add(sha)
    return frozenset(present), missing


def _workers(requested: int | None, n_setups: int) -> int:
    if requested is not None:
        return max(1, requested)
    if n_setups < MIN_FOR_WORKERS:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def _warm() -> int:
    """Nothing: a first task that makes a worker import the export's modules while the parent works."""
    return os.getpid()


def export(db_path: Path, out: Path, with_raw: bool = True, *, base_url: str | None = None,
           workers: int | None = None) -> ExportResult:
    """Write the static site for every setup of ``db_path`` into ``out``; see the module docstring.

    Side effects: writes into ``out`` only the files whose content changed since the last export into it,
    removes files the site no longer has, and records every file in ``out/.benchcards-export.json``. Refuses
    (ExportFolderError) a folder that is neither empty, new, nor an earlier export, and a folder another
    export is writing. ``workers`` processes render the cards (default: one per core for large sites).
    Raises ValueError for a base URL that is not an http(s) address.
    """
    start = time.perf_counter()
    base = site.check_base_url(base_url)
    sitewrite.check_path(out)
    db.check(db_path)
    with sitewrite.locked(out):  # first: a second export is told that this one is writing
        sitewrite.check_folder(out)
        manifest = sitewrite.load_manifest(out)
        previous, previous_stamps = manifest.files, manifest.stamps
        del manifest
        key = export_key(db_path, with_raw, base)
        if previous_stamps.get(EXPORT_KEY) == key and sitewrite.all_as_written(out, previous):
            db.forget(db_path)  # nothing changed: not a file is written, not even the manifest
            return ExportResult(pages=[out / p for p in sorted(previous) if p.endswith(".html")], written=[],
                                kept=len(previous), removed=[], seconds=time.perf_counter() - start, unchanged=True)
        writer = sitewrite.Writer(out, previous)
        stamps: dict[str, str] = {}
        store = Store(db_path)
        env = environment()
        ov = overview_rows.overview(store)
        ids = ov.setup_id.tolist()
        code = code_stamp()
        digests = card_data.card_digests(store)
        early = {s: f"{code}:{digests.get(s, '')}" for s in ids}
        # cards whose data or code changed (raw files and knees are checked once known)
        candidates = [s for s in ids if not previous_stamps.get(site.setup_path(s), "").startswith(early[s] + ":")]
        n_workers = _workers(workers, len(candidates)) if candidates else 1
        pool = ProcessPoolExecutor(n_workers, mp_context=_spawn()) if n_workers > 1 else None
        try:
            if pool is not None:
                for _ in range(n_workers):
                    pool.submit(_warm)
            raw, raw_missing = _raw_files(store, writer) if with_raw else (frozenset(), [])
            data = analysis_inputs.analysis_data(store)
            kn = analysis.knees(data)
            extras = _card_extras(store, kn, raw)
            # a card in a build group shows the group's timeline: it changes with any member's data
            build_groups = builds.timelines(store)
            timelines = _timeline_tables(build_groups)
            todo = _cards_to_render(ids, early, extras, build_groups, digests, writer, stamps, previous_stamps)
            jobs: list[Future] = []
            chunks = [todo[i:i + CHUNK] for i in range(0, len(todo), CHUNK)]
            for chunk in chunks:
                prev = {p: e for p in (site.setup_path(s) for s in chunk) if (e := previous.get(p)) is not None}
                job = CardJob(db_path, out, chunk, prev, raw, kn[kn.setup_id.isin(set(chunk))],
                              {s: timelines[s] for s in chunk if s in timelines})
                if pool is not None:
                    jobs.append(pool.submit(render_cards, job))
                else:
                    writer.merge(*render_cards(job))
            _assets(writer, stamps, previous_stamps)
            pages = _aggregate_pages(env, writer, store, ov, data, kn, base, build_groups)
            for fut in jobs:
                writer.merge(*fut.result())
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        pages += [site.setup_path(s) for s in ids]
        html = sorted(p for p in writer.entries if p.endswith(".html"))
        writer.write("sitemap.xml", site.sitemap(html, base))
        if not raw_missing:  # a raw file that could not be read may be readable next time: look again then
            stamps[EXPORT_KEY] = key
        removed = sitewrite.finish(out, writer.entries, stamps, previous)
    db.forget(db_path)
    return ExportResult(pages=[out / p for p in html], written=writer.written,
                        kept=len(writer.entries) - len(set(writer.written)), removed=removed,
                        seconds=time.perf_counter() - start, raw_missing=raw_missing, rendered=todo)


def _cards_to_render(ids: list[str], early: dict[str, str], extras: dict[str, str], build_groups: list[builds.Group],
                     digests: dict[str, str], writer: sitewrite.Writer, stamps: dict[str, str],
                     previous_stamps: dict[str, str]) -> list[str]:
    """The setups whose card must be rendered again: its stamp (code, data, raw files, knees and, for a card in
    a build group, every member's data: the group's timeline) differs from the last export's, or its page
    is gone or changed. Records every card's stamp in ``stamps``."""
    for g in (grp.ids for grp in build_groups):
        stamp_g = sitewrite.sha256(",".join(f"{m}={digests.get(m, '')}" for m in g).encode())[:16]
        for m in g:
            extras[m] = f"{extras.get(m, '')}+{stamp_g}"
    todo = []
    for sid in ids:
        rel = site.setup_path(sid)
        stamp = stamps[rel] = f"{early[sid]}:{extras.get(sid, '')}"
        old = writer.previous.get(rel)
        if old is None or previous_stamps.get(rel) != stamp or not writer.keep_if_present(rel, old.sha256):
            todo.append(sid)
    return todo


def _timeline_tables(groups: list[builds.Group]) -> dict[str, pd.DataFrame]:
    """The build timeline each card of a build group shows (one display table per group, shared)."""
    out: dict[str, pd.DataFrame] = {}
    for grp in groups:
        t = builds.timeline_table(grp.timeline)
        out.update({m: t for m in grp.ids})
    return out


#: the manifest stamp (a name no file of the site can have) of what made the whole site: ``export_key``
EXPORT_KEY = ".site"


def export_key(db_path: Path, with_raw: bool, base: str | None) -> str:
    """What the whole site is made of: the database's content fingerprint (``db.fingerprint``, recorded by
    the writer), the rendering code (``code_stamp``) and the options. An export whose key is the one in the
    manifest, into a folder whose files are all as written, has nothing to do."""
    return f"db {db.fingerprint(db_path)} code {code_stamp()} raw {with_raw} base {base or ''}"


def code_stamp() -> str:
    """A digest of the code and templates that render the site and of the libraries that shape it: a card
    is re-rendered when any of them changed, even if its data did not."""
    import importlib.metadata as md

    h = hashlib.sha256()
    here = Path(__file__).resolve().parent.parent  # benchcards/, every folder of it
    for f in sorted([*here.rglob("*.py"), *TEMPLATES.rglob("*"), here.parent / "schemas" / "models.py"]):
        if f.is_file():
            h.update(f.relative_to(here.parent).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    for dist in ("altair", "pandas", "jinja2", "vl-convert-python"):
        try:
            h.update(f"{dist}={md.version(dist)}".encode())
        except md.PackageNotFoundError:
            h.update(dist.encode())
    return h.hexdigest()[:16]


def _card_extras(store: Store, kn: pd.DataFrame, raw: frozenset[str]) -> dict[str, str]:
    """Per setup, a digest of what its card shows besides its own rows: its knees and which of its raw files
    the site has (a card links only those)."""
    files = store.df("SELECT DISTINCT setup_id, sha256 FROM files ORDER BY setup_id, sha256")
    linked: dict[str, list[str]] = {}
    for sid, sha in zip(files.setup_id.tolist(), files.sha256.tolist()):
        if sha in raw:
            linked.setdefault(str(sid), []).append(str(sha))
    knees: dict[str, list[str]] = {}
    cols = [kn[c].tolist() for c in kn.columns]
    for row in zip(*cols):
        knees.setdefault(str(row[list(kn.columns).index("setup_id")]), []).append(repr(row))
    ids = store.df("SELECT setup_id FROM setups ORDER BY setup_id").setup_id.tolist()
    rep = reported.digests(store)  # reported lines come from other setups' rows
    return {str(s): sitewrite.sha256(("\n".join(knees.get(str(s), [])) + "\0" + ",".join(linked.get(str(s), []))
                                      + ("\0" + rep[str(s)] if str(s) in rep else "")).encode())[:16] for s in ids}


def _builds_page(env: jinja2.Environment, build_groups: list[builds.Group]) -> str:
    """Every build timeline: one table per hardware, model and settings measured with several builds."""
    timelines = []
    for grp in build_groups:
        if grp.timeline.empty:
            continue
        links = [Cell(text, site.setup_path(sid)) for text, sid in builds.build_links(grp.sib)]
        timelines.append({"title": str(grp.sib.title.iloc[-1]), "builds": links,
                          "table": table(builds.timeline_table(grp.timeline))})
    return render(env, "builds.html", "builds.html", title="Builds over time",
                  crumbs=[HOME, site.Crumb("Builds over time")], explained=builds.EXPLAINED, timelines=timelines)


def _sweep_pages(env: jinja2.Environment, write: Callable[[str, str], Any], store: Store,
                 carded: set[str]) -> list[str]:
    """``sweeps.html`` (every sweep) and one page per sweep: the app's Sweeps page, from the same tables
    (``benchcards.compute.sweeps``); a variant links to its card where the site has one (``carded``)."""
    paths, listed = [], []
    for rec in sweeps.load_sweeps(store):
        path = site.sweep_path(rec.sweep_id)
        up = site.up(path)
        diffs = sweeps.sweep_table(store, rec)
        page = Charts()
        chart = page.add(charts.sweep_chart(diffs)) if not diffs.empty else None
        if not diffs.empty:
            diffs = sweeps.shown_table(diffs).assign(
                _href=[site.setup_path(str(s)) if s in carded else None for s in diffs["_setup"]])
        variants = sweeps.variants_table(rec)
        variants["_setup"] = [site.setup_path(str(s)) if s in carded else None for s in variants["_setup"]]
        write(path, render(env, "sweep.html", path, title=f"Sweep {rec.sweep_id}", charts=page,
                           crumbs=[HOME, site.Crumb("Sweeps", "sweeps.html"), site.Crumb(rec.sweep_id)],
                           rec=rec, explained=sweeps.EXPLAINED, empty=sweeps.EMPTY, summary=sweeps.summary(rec),
                           chart=chart,
                           diffs=table(diffs, links={"Variant": "_href"}, up=up) if not diffs.empty else None,
                           variants=table(variants, links={"Variant": "_setup"}, up=up),
                           boots=table(sweeps.boots_table(rec))))
        paths.append(path)
        verdicts = diffs["Verdict"].value_counts() if not diffs.empty else pd.Series(dtype=int)
        listed.append({"Sweep": sweeps.label(rec), "href": path, "Started": fmt.text(rec.started_at),
                       "Baseline": rec.baseline, "Variants": str(len(rec.variants)),
                       "Verdicts": "; ".join(f"{v}: {n}" for v, n in verdicts.items()) or fmt.DASH})
    overview = pd.DataFrame(listed, columns=["Sweep", "href", "Started", "Baseline", "Variants", "Verdicts"])
    write("sweeps.html", render(env, "sweeps.html", "sweeps.html", title="Sweeps", crumbs=[HOME, site.Crumb("Sweeps")],
                                explained=sweeps.EXPLAINED, sweeps=table(overview, links={"Sweep": "href"})))
    return ["sweeps.html", *paths]


def _spawn() -> Any:
    import multiprocessing

    return multiprocessing.get_context("spawn")


def _aggregate_pages(env: jinja2.Environment, writer: sitewrite.Writer, store: Store, ov: pd.DataFrame,
                     data: analysis_inputs.AnalysisData, kn: pd.DataFrame, base: str | None,
                     build_groups: list[builds.Group]) -> list[str]:
    """Every page but the cards, and the machine-readable files."""
    write = writer.write
    ranked = overview_filter.sort_overview(ov, "decode")
    tier_order = sorted(set(ov.tier), key=tiers.tier_rank)
    models = _models_table(ov)
    q = quality.quality_table(store)
    pages = ["index.html"]
    write("index.html", _home(env, ov, models, q.test.nunique() if not q.empty else 0))
    for label in tier_order:
        rows = ranked[ranked.tier == label]
        stem = site.tier_path(label)[:-5]
        crumbs = [HOME, site.Crumb(f"{label} tier")]
        pages += _write_list(env, write, stem, _overview_rows(rows, tier=False), f"{label} tier", crumbs,
                             intro=[site.TIER_TEXT.get(label, ""), f"{fmt.count(len(rows), 'setup')}, fastest decode first."],
                             links=LIST_LINKS, notes=LIST_NOTES)
    write("models/index.html", render(env, "models.html", "models/index.html", title="Models",
                                      crumbs=[HOME, site.Crumb("Models")],
                                      models=table(models, links={"Model": "href"}, up="../")))
    pages.append("models/index.html")
    for name, rows in ranked.groupby(ranked.model.map(site.model_key), sort=True):
        stem = site.model_path(name)[:-5]
        shown = _overview_rows(rows)
        gpus = rows.gpu.nunique()
        quants = rows.quant.map(fmt.text).nunique()
        pages += _write_list(env, write, stem, shown, str(name),
                             [HOME, site.Crumb("Models", "models/index.html"), site.Crumb(str(name))],
                             intro=[f"Every setup of {name}: {len(rows):,} on {fmt.count(gpus, 'GPU model')} in "
                                    f"{fmt.count(quants, 'quantisation')}, by hardware tier, fastest decode first."],
                             links=LIST_LINKS, notes=LIST_NOTES)
    pages += _quality_pages(env, write, q)
    write("builds.html", _builds_page(env, build_groups))
    pages.append("builds.html")
    pages += _sweep_pages(env, write, store, set(ov.setup_id))
    pages += _analysis_pages(env, write, data, kn, tier_order)
    write("assets/search.js", site.search_script(site.search_index(ov)))
    figures = store.df(f"SELECT setup_id, metric, prompt, level, value, n, provenance FROM ({clauses.LATEST_METRICS}) "
                       "ORDER BY setup_id, metric, prompt NULLS FIRST, level NULLS FIRST")
    _index_files(write, site.index_setups(ov, figures, q, base, reported.figures(store)), base)
    return pages


def _index_files(write: Callable[[str, str], Any], setups: list[dict], base: str | None) -> None:
    """``index.json`` (every setup, and the catalogue of its parts) and its parts: one file per hardware tier
    and one per model (``site.index_parts``), so a reader of a large site fetches only what it needs."""
    def dumps(doc: dict) -> str:
        return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))

    parts, catalogue = site.index_parts(setups, base)
    write("index.json", dumps(site.index_document(setups, parts=catalogue)))
    for path, rows in parts.items():
        write(path, dumps(site.index_document(rows)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchcards.site.export",
        description="Write the static HTML results site from the database. Exporting again into the same "
                    "folder rewrites only the files whose content changed.",
        epilog="example:\n  python -m benchcards.site.export export --db data/benchcards.duckdb "
               "--base-url https://example.org/bench/",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="folder to write: new, empty, or an earlier export")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"database (default {shown(DEFAULT_DB)})")
    parser.add_argument("--no-raw", action="store_true", help="do not copy the raw files")
    parser.add_argument("--base-url", help="address the site is published at (absolute addresses in "
                                           "sitemap.xml and index.json); default: relative addresses")
    parser.add_argument("--workers", type=int, help="processes rendering the setup cards (default: one per "
                                                    "core for sites of 150 setups or more)")
    args = parser.parse_args(argv)
    try:
        result = export(args.db, args.out, with_raw=not args.no_raw, base_url=args.base_url, workers=args.workers)
    except (db.DatabaseError, sitewrite.ExportFolderError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.filename or args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: {result.text()}")
    if not args.base_url:
        print("note: sitemap.xml lists relative addresses; search engines want absolute ones: export with "
              "--base-url https://… (the address the site is published at)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
