"""The static site's pages other than the cards: home, tier and model lists, quality, analysis, builds,
sweeps, and the machine-readable index files (the analysis pages: ``benchcards.site.analysis_pages``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import jinja2
import pandas as pd

from benchcards.charts import charts
from benchcards.compute import builds, sweeps
from benchcards.domain import fmt, metrics, tiers
from benchcards.read import clauses, quality, reported
from benchcards.read.store import Store
from benchcards.site import analysis_pages, downloads
from benchcards.site import urls as site
from benchcards.site import writer as sitewrite
from benchcards.site.html_table import Cell, table
from benchcards.site.render import HOME, Charts, render
from benchcards.views import analysisview, overview_filter
from benchcards.views import tables as views

__all__ = ["HOME_ROWS", "LIST_LINKS", "LIST_NOTES", "aggregate_pages", "tier_order"]


#: setups of each tier in the home page's tables
HOME_ROWS = 10


# --------------------------------------------------------------------------- lists: home, tiers, models


def _overview_rows(ov: pd.DataFrame, tier: bool = True) -> pd.DataFrame:
    """The overview's display columns for list pages, with each setup's address in ``href``: the setup's short
    name (model · quant · engine build, as the app's overview), figures, quality, GPU, tier (unless ``tier`` is
    False: a tier's own page), the notes a row of the list has, and the kind of data."""
    shown = views.overview_display(ov)
    out = pd.DataFrame({"Setup": list(shown.Setup), "href": [site.setup_path(s) for s in ov.setup_id],
                        "setup_note": list(shown.engine_only)})
    for col in shown.columns[4:]:
        if col not in views.OVERVIEW_HIDDEN and (col != "VRAM tier" or tier):
            out[col] = list(shown[col])
    if views.OTHER_TESTS in out.columns:  # a result never breaks inside ('%' alone on a line), only between words
        out[views.OTHER_TESTS] = ["; ".join(f"{n} {r.replace(' ', chr(0xA0))}".strip() for n, r in parts) or fmt.DASH
                                  for parts in shown.other_parts]
    out["gpu_note"] = [None if fmt.missing(o) else f"⚠ {o}" for o in shown.offload]
    out["Data"] = list(ov.badges)
    return out


class _ListRows:
    """``_overview_rows`` of every setup in ranking order, made once: each list page (home, tier, model) takes the
    rows of its setups (a row's cells depend on that row alone)."""

    def __init__(self, ranked: pd.DataFrame) -> None:
        self.rows = _overview_rows(ranked)
        self.at = {label: n for n, label in enumerate(ranked.index)}

    def of(self, part: pd.DataFrame, tier: bool = True) -> pd.DataFrame:
        """The rows of the setups of ``part`` (rows of the ranked overview), as ``_overview_rows(part, tier)``."""
        out = self.rows.iloc[[self.at[label] for label in part.index]].reset_index(drop=True)
        return out if tier or "VRAM tier" not in out.columns else out.drop(columns="VRAM tier")


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


def _home(env: jinja2.Environment, ov: pd.DataFrame, ranked: pd.DataFrame, lists: _ListRows, models: pd.DataFrame,
          n_tests: int) -> str:
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
                         "table": table(lists.of(rows.head(HOME_ROWS), tier=False), links=LIST_LINKS,
                                       notes=LIST_NOTES)})
    return render(env, "index.html", "index.html", title="All setups", sections=sections,
                  models=table(models, links={"Model": "href"}), n_setups=len(ov), n_models=len(models),
                  n_gpus=ov.gpu.nunique(), n_tests=n_tests, answer_sizes=analysis_pages.answer_links(), lead=analysisview.LEAD,
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
                      "Setups": len(g), "Best result": fmt.quality(best.pct, best.margin_pp, best.right, best.n),
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
        path = sweeps.sweep_path(rec.sweep_id)
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


def tier_order(ov: pd.DataFrame) -> list[str]:
    """The site's hardware tiers, smallest first."""
    return sorted(set(ov.tier), key=tiers.tier_rank)


def aggregate_pages(env: jinja2.Environment, writer: sitewrite.Writer, store: Store, ov: pd.DataFrame,
                    base: str | None, build_groups: list[builds.Group]) -> list[str]:
    """Every page but the cards and the analysis pages (``analysis_pages.render_analysis``), and the
    machine-readable files."""
    write = writer.write
    ranked = overview_filter.sort_overview(ov, "decode")
    models = _models_table(ov)
    q = quality.quality_table(store)
    pages = ["index.html"]
    lists = _ListRows(ranked)
    write("index.html", _home(env, ov, ranked, lists, models, q.test.nunique() if not q.empty else 0))
    for label in tier_order(ov):
        rows = ranked[ranked.tier == label]
        stem = site.tier_path(label)[:-5]
        crumbs = [HOME, site.Crumb(f"{label} tier")]
        pages += _write_list(env, write, stem, lists.of(rows, tier=False), f"{label} tier", crumbs,
                             intro=[site.TIER_TEXT.get(label, ""), f"{fmt.count(len(rows), 'setup')}, fastest decode first."],
                             links=LIST_LINKS, notes=LIST_NOTES)
    write("models/index.html", render(env, "models.html", "models/index.html", title="Models",
                                      crumbs=[HOME, site.Crumb("Models")],
                                      models=table(models, links={"Model": "href"}, up="../")))
    pages.append("models/index.html")
    for name, rows in ranked.groupby(ranked.model.map(site.model_key), sort=True):
        stem = site.model_path(name)[:-5]
        shown = lists.of(rows)
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
    write("assets/search.js", site.search_script(site.search_index(ov)))
    figures = store.df(f"SELECT setup_id, metric, prompt, level, value, n, provenance FROM ({clauses.LATEST_METRICS}) "
                       "ORDER BY setup_id, metric, prompt NULLS FIRST, level NULLS FIRST")
    pages += downloads.write_downloads(env, write, site.index_setups(ov, figures, q, base, reported.figures(store)),
                                       ov, base)
    return pages
