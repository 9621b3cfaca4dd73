"""The static site's analysis pages: the analysis index and one page per view and input, each the sections of
``benchcards.views.analysisview`` (the app's Analysis page walks the same lists) rendered as HTML.

The export's inputs are the view's documented defaults: a time-to-answer page per size of
``analysisview.ANSWER_SIZES``, a throughput and a knees page per hardware tier, a speed-vs-quality index per
test (against decode; at the address the whole view had as one page a test) linking a page per tier. A view's
long table is split into pages of ``site.PAGE_ROWS`` rows (its words on each, its charts on the first)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from benchcards.charts import charts
from benchcards.compute import analysis
from benchcards.domain import fmt
from benchcards.read import analysis_inputs
from benchcards.site import urls as site
from benchcards.site import writer as sitewrite
from benchcards.site.html_table import table
from benchcards.site.render import HOME, Charts, environment, render
from benchcards.views import analysisview as av
from benchcards.views.cardview import Section, Text

__all__ = ["AnalysisJob", "analysis_pages", "answer_links", "render_analysis", "speed_quality_stem"]


def _answer_stem(prompt: int, words: int) -> str:
    return f"analysis/time-to-answer-{fmt.depth(prompt).lower().replace(',', '')}-{words}-words"


def answer_links() -> list[dict]:
    """The home page's links to the time-to-answer pages."""
    return [{"href": f"{_answer_stem(p, w)}.html", "text": f"{fmt.depth(p)} prompt, {w:,} words"}
            for p, w in av.ANSWER_SIZES]


@dataclass
class _Site:
    """What every analysis page is written with."""

    env: jinja2.Environment
    write: Callable[[str, str], Any]
    crumbs: list[site.Crumb]


def _paged_rows(sections: list[Section]) -> int:
    """Rows of the view's table that the export splits into pages (0: none)."""
    return max([len(b.df) for s in sections for b in s.blocks if isinstance(b, av.Table) and b.paged], default=0)


def speed_quality_stem(test: str, tier: str | None = None) -> str:
    """Where the speed-vs-quality pages of ``test`` are (without .html): its index (``tier`` None, the address
    the whole view had when it was one page a test) or one tier's page."""
    stem = f"analysis/speed-quality-{site.quality_path(test)[len('quality/'):-5]}"
    return stem if tier is None else f"{stem}-{site.tier_slug(tier)}"


def _block(b: object, page: int, page_charts: Charts, up: str, tiers_at: str) -> dict | None:
    """One view block as the template reads it, on page ``page`` (None: not drawn there; ``tiers_at``: the stem
    the view's tier pages start with, ``TierLinks``' targets)."""
    if isinstance(b, Text):
        return {"kind": "text", "b": b}
    if isinstance(b, av.Plot):
        return {"kind": "chart", "b": b, "c": page_charts.add(charts.analysis_chart(b), caption=b.caption)} \
            if page == 1 else None
    if isinstance(b, av.TierLinks):
        return {"kind": "tiers", "b": b,
                "targets": [(t, f"{tiers_at}-{site.tier_slug(t)}.html", n) for t, n in b.items]}
    if isinstance(b, av.Table):
        rows = slice((page - 1) * site.PAGE_ROWS, page * site.PAGE_ROWS) if b.paged else slice(None)
        df = b.df.iloc[rows]
        if b.setups is not None:
            df = df.assign(href=[site.setup_path(sid) for sid in list(b.setups)[rows]])
        return {"kind": "paged" if b.paged else "table", "b": b,
                "t": table(df, links={"Setup": "href"} if b.setups is not None else None, up=up)}
    raise TypeError(f"no export drawing of {type(b).__name__}")


def write_view(s: _Site, stem: str, sections: list[Section], tiers_at: str = "") -> list[str]:
    """The pages of one view at ``stem``(-N).html (the view's title as the page's; ``tiers_at``: as ``_block``'s).
    Side effects: writes them."""
    title = next(sec.title for sec in sections if sec.level <= 2)
    crumbs = [*s.crumbs, site.Crumb(title)]
    n_rows = _paged_rows(sections)
    n = site.pages(n_rows)
    paths = []
    for page in range(1, n + 1):
        path = site.paged(stem, page)
        up = site.up(path)
        page_charts = Charts()
        shown = [{"s": sec, "id": site.tier_slug(sec.anchor),
                  "blocks": [x for x in (_block(b, page, page_charts, up, tiers_at) for b in sec.blocks)
                             if x is not None]}
                 for sec in sections]
        s.write(path, render(s.env, "analysis_view.html", path, title=title + (f" (page {page} of {n})" if n > 1 else ""),
                             crumbs=crumbs, charts=page_charts, heading=title, sections=shown,
                             paging=site.pager(stem, page, n_rows)))
        paths.append(path)
    return paths


def _speed_quality_pages(s: _Site, data: analysis_inputs.AnalysisData) -> tuple[list[str], list[dict]]:
    """Per test with results and speeds: its index page (its tiers, each linked) and a page per tier, the index
    in the tier pages' breadcrumbs. Returns the paths and the analysis index's links. Side effects: writes them."""
    paths: list[str] = []
    links: list[dict] = []
    for test, label in analysis.quality_tests(data):
        rows = analysis.speed_quality(data, test)
        index = av.speed_quality_sections(data, test, label, rows=rows)
        tiers = next((b for b in index[0].blocks if isinstance(b, av.TierLinks)), None)
        if tiers is None:
            continue  # no setup has both the test and the speed
        stem = speed_quality_stem(test)
        paths += write_view(s, stem, index, tiers_at=stem)
        in_test = replace(s, crumbs=[*s.crumbs, site.Crumb(index[0].title, f"{stem}.html")])
        for t, _ in tiers.items:
            paths += write_view(in_test, speed_quality_stem(test, t),
                                av.speed_quality_sections(data, test, label, tier=t, rows=rows), tiers_at=stem)
        links.append({"href": f"{stem}.html", "text": label, "count": sum(n for _, n in tiers.items)})
    return paths, links


def analysis_pages(env: jinja2.Environment, write: Callable[[str, str], Any], data: analysis_inputs.AnalysisData,
                   kn: pd.DataFrame, tier_order: list[str]) -> list[str]:
    """The analysis index and every view's pages (``kn``: ``analysis.knees`` of every setup, ``tier_order``: the
    site's tiers, smallest first). Side effects: writes ``analysis.html`` and ``analysis/…`` pages."""
    # as in the app: method tests (tiny or random-weight models) show the method, not a speed to rank
    data, left_out = analysis.without_method_tests(data)
    setups = analysis.with_tiers(data.setups)
    by_tier = {t: setups[setups.tier == t].setup_id.tolist() for t in tier_order}
    s = _Site(env, write, [HOME, site.Crumb("Analysis", "analysis.html")])
    kn = kn[kn.setup_id.isin(set(data.setups.setup_id))]
    paths: list[str] = []
    links: list[list[dict]] = [[], [], [], []]
    for p, w in av.ANSWER_SIZES:
        sections = av.time_to_answer_sections(data, p, float(w), left_out=left_out)
        ranked = sum(1 for sec in sections for b in sec.blocks if isinstance(b, av.Table)
                     for r in b.df["Rank"] if r != fmt.DASH)
        paths += write_view(s, _answer_stem(p, w), sections)
        links[0].append({"href": f"{_answer_stem(p, w)}.html", "text": f"{fmt.depth(p)}-token prompt, {w:,}-word answer",
                         "count": ranked, "unit": "ranked"})
    tp_all = analysis.throughput(data)
    for t in tier_order:
        if (tp_all.tier == t).any():
            stem = f"analysis/throughput-{site.tier_slug(t)}"
            paths += write_view(s, stem, av.throughput_sections(data.only(by_tier[t]), f"{t} tier"))
            links[1].append({"href": f"{stem}.html", "text": f"{t} tier",
                             "count": tp_all[tp_all.tier == t].setup_id.nunique()})
    sq_paths, links[2] = _speed_quality_pages(s, data)
    paths += sq_paths
    for t in tier_order:
        k = kn[kn.setup_id.isin(set(by_tier[t]))]
        if not k.empty:
            stem = f"analysis/knees-{site.tier_slug(t)}"
            paths += write_view(s, stem, av.knee_sections(data.only(by_tier[t]), k, f"{t} tier"))
            links[3].append({"href": f"{stem}.html", "text": f"{t} tier", "count": k.setup_id.nunique()})
    write("analysis.html", render(env, "analysis.html", "analysis.html", title="Analysis",
                                  crumbs=[HOME, site.Crumb("Analysis")],
                                  views=[{"view": v, "links": lk} for v, lk in zip(av.VIEWS, links)],
                                  intro=av.INTRO, n_setups=len(setups), left_note=av.left_out_note(left_out)))
    return ["analysis.html", *paths]


@dataclass(frozen=True)
class AnalysisJob:
    """What a worker needs to write the analysis pages (the export gives them to a worker before the cards:
    they are the largest share of the pages that are not cards)."""

    out: Path
    previous: dict[str, sitewrite.Entry]
    data: analysis_inputs.AnalysisData
    knees: pd.DataFrame
    tier_order: list[str]
    #: the first export into the folder (``sitewrite.Writer.new``)
    new: bool = False


def render_analysis(job: AnalysisJob) -> tuple[dict[str, sitewrite.Entry], list[str], list[str]]:
    """``analysis_pages`` into ``job.out``: the files' entries, those written, and the pages. Side effects: writes
    ``analysis.html`` and ``analysis/…`` (unchanged files are left alone)."""
    writer = sitewrite.Writer(job.out, job.previous, new=job.new)
    pages = analysis_pages(environment(), writer.write, job.data, job.knees, job.tier_order)
    return writer.entries, writer.written, pages
