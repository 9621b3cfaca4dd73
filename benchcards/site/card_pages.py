"""The setup cards of the static site: the card's sections (``benchcards.views.cardview``) as HTML pages,
rendered a batch at a time (in a worker process or here)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import jinja2
import markupsafe
import pandas as pd

from benchcards.charts import charts, specs
from benchcards.compute import sweeps
from benchcards.domain import fmt
from benchcards.read import card_data, curves, db, reported
from benchcards.read.store import Store
from benchcards.site import urls as site
from benchcards.site import writer as sitewrite
from benchcards.site.html_table import command_html, escape, table, table_html
from benchcards.site.render import HOME, Charts, chart_html, environment, render, tier_of
from benchcards.views import cardview

__all__ = ["EMPTY_KNEES", "SERIES_METRICS", "CardJob", "Points", "card_page", "render_cards"]


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
    #: raw files not in the site, and why (their source is gone, or changed since it was ingested)
    gone: dict[str, str] = field(default_factory=dict)
    #: the first export into the folder (``sitewrite.Writer.new``)
    new: bool = False


class Points(NamedTuple):
    """One setup's points of a chart as the chart's data (``specs.records``, made for the whole batch at once);
    the chart's settings are computed from these rows too."""

    rows: list[dict]


def _split(df: pd.DataFrame, drop_id: bool = False) -> dict[str, Points]:
    """The rows of ``df`` per setup, in their order (records of one sort, made at once: a groupby cost ~4 ms a card,
    slices of the frame a tenth of a card's time)."""
    if df.empty:
        return {}
    rows = specs.records_by_setup(df.sort_values("setup_id", kind="stable"), drop_id)
    return {sid: Points(r) for sid, r in rows.items()}


#: the knee marks of a card without knees (the columns the charts' knee layers read)
EMPTY_KNEES = {"prefill": pd.DataFrame(columns=charts.KNEE_TEXT_COLUMNS),
               "decode": pd.DataFrame(columns=charts.KNEE_TEXT_COLUMNS),
               "conc": pd.DataFrame(columns=["setup", "at", "y", "at_text", "threshold_text", "text"])}

SERIES_METRICS = ["prefill", "ctx_prefill", "decode_at_depth", "ctx_decode", "ttft", "ctx_ttft", "conc_total",
                  "conc_per_request", "bench_prefill", "bench_decode"]


@functools.cache
def _environment() -> jinja2.Environment:
    """This process's environment: its templates are compiled once, not once a job."""
    return environment()


def render_cards(job: CardJob) -> tuple[dict[str, sitewrite.Entry], list[str]]:
    """Render and write the cards of ``job.ids``; returns the written files' entries and which were written.
    Side effects: writes ``setups/<id>.html`` files under ``job.out`` (unchanged ones are left alone)."""
    env = _environment()
    store = Store(job.db_path)
    writer = sitewrite.Writer(job.out, job.previous, new=job.new)
    cards = card_data.cards(store, job.ids)
    series = curves.series(store, job.ids, SERIES_METRICS)
    points = {kind: charts.depth_points(series, kind) for kind in ("prefill", "decode", "ttft")}
    depth = {kind: _split(df) for kind, df in points.items()}
    knee_points = {kind: _split(charts.depth_knee_points(points[kind], job.knees, kind, with_ids=True), drop_id=True)
                   for kind in ("prefill", "decode")}
    conc_all = charts.conc_points(series, "total")
    conc = _split(conc_all)
    knee_points["conc"] = _split(charts.conc_knee_points(conc_all, job.knees, with_ids=True), drop_id=True)
    snap = reported.Snapshot(store)
    records = sweeps.load_sweeps(store)
    prompt_tokens = card_data.decode_prompt_tokens_by_run(store, [r for c in cards if (r := _decode_run(c))])
    for c in cards:
        path = site.setup_path(c.setup_id)
        inputs = cardview.Inputs(prompt_tokens=prompt_tokens.get(_decode_run(c) or ""),
                                 timeline=job.timelines.get(c.setup_id),
                                 reported=reported.card_section(store, c.setup_id, c.setup.server.argv, snap),
                                 sweeps=sweeps.of_setup(records, c.setup_id))
        html = card_page(env, c, path, inputs, depth={k: v.get(c.setup_id) for k, v in depth.items()},
                         conc=conc.get(c.setup_id),
                         knee_points={k: v.get(c.setup_id, EMPTY_KNEES[k]) for k, v in knee_points.items()},
                         raw=job.raw, gone=job.gone)
        writer.write(path, html)
    if not KEEP_READER:
        db.forget(job.db_path)
    return writer.entries, writer.written


#: keep this process's reader of the database between jobs (a worker of ``benchcards.site.pool``, which ends with
#: the export); otherwise each job closes it
KEEP_READER = False


def _decode_run(c: card_data.Card) -> str | None:
    """The run of the card's headline decode (its prompt length is read for all cards at once)."""
    return c.run_of("decode")


def _chart_data(points: Points, knees: Points | pd.DataFrame | None) -> dict[str, list[dict]]:
    """The datasets of a curve: its points, and its knee marks where it has some (``charts.with_knees``' rule)."""
    data = {"points": points.rows}
    if isinstance(knees, Points) and knees.rows:
        data["knees"] = knees.rows
    return data


def _card_charts(c: card_data.Card, page: Charts, depth: dict[str, Points | None], conc: Points | None,
                 knee_points: dict[str, Points | pd.DataFrame]) -> dict[str, dict]:
    """The card's charts by ``cardview.Chart`` id, in the setup's own colour (the one the app gives it too)."""
    colours = {"domain": [c.setup.title], "range": [charts.setup_colors([c.setup_id])[c.setup_id]]}
    out = {}
    for kind in ("prefill", "decode", "ttft"):
        pts = depth.get(kind)
        if pts is None or not pts.rows:
            continue
        settings = charts.depth_settings(pts.rows, kind)
        # the ticks differ from card to card: a hole, so that one template serves every card of a kind
        ticks = {"ticks": settings.pop("ticks")} if settings["ticks"] else {}
        out[f"depth-{kind}"] = page.add_json(specs.spec_json(charts.depth_builder,
                                                             _chart_data(pts, knee_points.get(kind)),
                                                             settings, {**colours, **ticks}))
    if conc is not None and conc.rows:
        out["conc-total"] = page.add_json(specs.spec_json(
            charts.conc_builder, _chart_data(conc, knee_points["conc"]), charts.conc_settings(conc.rows, "total"),
            colours))
    if c.fit is not None and not c.empty("fit_steps"):
        fit, settings, holes = charts.fit_rows(c.records("fit_steps"), vram_gib=c.vram_gib)
        out["fit"] = page.add_json(specs.spec_json(charts.fit_builder, {"points": fit}, settings, holes))
    return out


def _esc(value: object) -> str:
    """``value`` escaped as the templates' ``{{ value }}`` escapes it."""
    return escape(value)


def _lead(b: cardview.Text) -> str:
    """A text with its bold label ('label: text')."""
    return (f"<b>{_esc(b.label)}</b>{_esc(b.sep)}" if b.label else "") + _esc(b.text)


def _text_html(b: cardview.Text) -> str:
    if b.tone == "badge":
        return f'<p><span class="badge">{_esc(b.label)}</span> <span class="muted">{_esc(b.text)}</span></p>\n'
    if b.tone == "heading":
        return f"<h4>{_esc(b.text)}</h4>\n"
    if b.tone == "note":
        return f'<p class="muted">{_lead(b)}</p>\n'
    if b.tone in ("info", "warning"):
        return f'<p class="box {_esc(b.tone)}">{_lead(b)}</p>\n'
    return f'<p class="notes">{_lead(b)}</p>\n'


def _files_html(b: cardview.Files, raw: frozenset[str], up: str, gone: dict[str, str] | None) -> str:
    """The raw files: each linked to its copy in the site (a download under its own name), or why it is not."""
    cols = {str(c): b.df[c].tolist() for c in b.df.columns}
    shas = cols["SHA-256"]
    files = fmt.text_table({**cols, "href": [f"raw/{h}.bin" if h in raw else None for h in shas],
                            "name": [p.rsplit("/", 1)[-1] for p in cols["File"]],
                            "why": [f"Not in this site: it {gone[h]}." if gone and h in gone else None for h in shas]})
    t = table(files, links={"File": "href"}, downloads={"File": "name"}, up=up, notes={"File": "why"})
    return f'<p class="muted">{_esc(b.note)}</p>\n{table_html(t)}\n'


def _list_html(b: object) -> str | None:
    """Tiles, bullets, sources, a command and facts: the blocks that are lists of plain texts."""
    if isinstance(b, cardview.Tiles):
        return '<div class="tiles">\n' + "".join(
            f'<div class="tile" title="{_esc(t.help)}">{_esc(t.label)} <b>{_esc(t.value)}</b></div>'
            for t in b.tiles) + "</div>\n"
    if isinstance(b, cardview.Bullets):
        return "<ul>" + "".join("<li>" + (_esc(i) if isinstance(i, str) else f"<b>{_esc(i[0])}</b> — {_esc(i[1])}")
                                + "</li>" for i in b.items) + "</ul>\n"
    if isinstance(b, cardview.Sources):
        return '<ul class="sources">' + "".join(
            f"<li>Source: {_esc(said)}" + (f' — <a href="{_esc(url)}" rel="nofollow noopener noreferrer">{_esc(url)}</a>'
                                           if url else "") + "</li>" for said, url in b.items) + "</ul>\n"
    if isinstance(b, cardview.Code):
        caption = f'<p class="muted">{_esc(b.caption)}</p>' if b.caption else ""
        return f'{caption}<pre class="cmd">{command_html(b.text)}</pre>\n'
    if isinstance(b, cardview.Facts):
        return '<dl class="facts">\n' + "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in b.rows) + "</dl>\n"
    return None


def _block(b: object, drawn: dict[str, dict], raw: frozenset[str], up: str,
           gone: dict[str, str] | None = None) -> str | None:
    """One ``cardview`` block as HTML, every text escaped (None: nothing to draw here). Written in Python, not a
    template macro: a card has about sixty blocks, and the macro calls were a tenth of a card's time."""
    if isinstance(b, cardview.Text):
        return _text_html(b)
    if isinstance(b, cardview.Table):
        if b.df.empty and b.empty is None:
            return None
        t = table(b.df)
        return str(table_html(t)) if t.rows or not b.empty else f'<p class="muted">{_esc(b.empty)}</p>'
    if isinstance(b, cardview.Files):
        return _files_html(b, raw, up, gone)
    if isinstance(b, cardview.Chart):
        return f"{chart_html(drawn[b.id])}\n" if b.id in drawn else None
    if isinstance(b, cardview.Link):
        return f'<p class="nav"><a href="{_esc(up)}{_esc(b.site)}">{_esc(b.text)}</a></p>\n' if b.site else None
    if isinstance(b, cardview.Details):
        inner = "".join(x for x in (_block(i, drawn, raw, up, gone) for i in b.blocks) if x is not None)
        return f"<details><summary>{_esc(b.summary)}</summary>\n{inner}</details>\n"
    drawn_list = _list_html(b)
    if drawn_list is None:
        raise TypeError(f"no export drawing of {type(b).__name__}")
    return drawn_list


def card_page(env: jinja2.Environment, c: card_data.Card, path: str, inputs: cardview.Inputs, *,
              depth: dict[str, Points | None], conc: Points | None,
              knee_points: dict[str, Points | pd.DataFrame], raw: frozenset[str], gone: dict[str, str] | None = None) -> str:
    """The card of one setup: the sections of ``cardview.sections`` (the app's), in their order, with its charts
    (their points and knee marks computed for many setups at once) and links to its raw files (``gone``: those
    not in the site, and why, said under their names)."""
    s = c.setup
    page = Charts()
    up = site.up(path)
    drawn = _card_charts(c, page, depth, conc, knee_points)
    inputs.charts = set(drawn)
    # safe: _block escapes every text it draws
    shown = [{"s": sec, "html": markupsafe.Markup("".join(  # noqa: S704
        x for x in (_block(b, drawn, raw, up, gone) for b in sec.blocks) if x is not None))}
        for sec in cardview.sections(c, inputs)]
    tier = tier_of(c.row)
    model = site.model_key(c.row.get("model"))
    crumbs = [HOME, site.Crumb(f"{tier} tier", site.tier_path(tier)), site.Crumb(model, site.model_path(model)),
              site.Crumb(s.title)]
    return render(env, "card.html", path, title=s.title, crumbs=crumbs, charts=page, sections=shown,
                  tier=tier, tier_href=site.tier_path(tier), model=model, model_href=site.model_path(model))
