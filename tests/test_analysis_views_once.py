"""Views, once, for the analysis: the app's Analysis page and the exported analysis pages show the same views.

Each view of ``benchcards.views.analysisview`` is rendered for the demo data both ways with the same inputs: the
tab of pages/7_Analysis.py in AppTest (the page's inputs set to the export's: the two published answer sizes,
one tier, one test) and the exported page. Their visible text (headings, intro and rule sentences, notes, boxes,
chart captions, every cell of every table in order; whitespace normalised, widgets and navigation left out) must be
the same sequence of words, so that neither can drop or add a column, a row or a sentence.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchcards.compute import analysis
from benchcards.read import analysis_inputs
from benchcards.read.store import Store
from benchcards.site import urls
from benchcards.site.exporter import export
from benchcards.views import analysisview as av
from tests.test_views_once import _same, app_text, visible

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
TABS = {view.key: i for i, view in enumerate(av.VIEWS)}


@pytest.fixture(scope="module")
def site(demo_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis-views") / "site"
    export(demo_db, out)
    return out


def app_view(demo_db, monkeypatch, key: str, **params: str) -> str:
    """The visible text of the Analysis page's tab of view ``key`` with ``params`` in its URL."""
    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    at = AppTest.from_file(str(ROOT / "pages" / "7_Analysis.py"), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    tab = at.tabs[TABS[key]]
    # Markdown the page writes around the view's words: heading marks and in-page links
    texts = [re.sub(r"\[(.*?)\]\(#[a-z0-9-]+\)", r"\1", re.sub(r"^#+ ", "", t)) for t in app_text(tab)]
    return " ".join(t for t in texts if t)


def exported(site: Path, rel: str) -> str:
    """The visible text of an exported analysis page's view (its navigation, search and footer left out)."""
    return visible((site / rel).read_text(encoding="utf-8"), only="analysis-view")


def same_but_notes(app: str, page: str, what: str) -> None:
    """``_same`` for a table whose notes the app draws under each row ('Notes: …', none for a row without) and the
    export in a column of its own ('—' for a row without): the same words, the notes' placement apart."""
    def unplaced(text: str) -> str:
        return " ".join(w for w in text.split() if w not in ("Notes", "Notes:", "—"))

    _same(unplaced(app), unplaced(page), what)


def _data(demo_db):
    data, _ = analysis.without_method_tests(analysis_inputs.analysis_data(Store(demo_db)))
    return data


def test_time_to_answer_reads_the_same_in_the_app_and_the_export(demo_db, site, monkeypatch):
    for prompt, words in av.ANSWER_SIZES:
        rel = f"analysis/time-to-answer-{prompt // 1024}k-{words}-words.html"
        app = app_view(demo_db, monkeypatch, "time-to-answer", prompt=str(prompt), words=str(words))
        page = exported(site, rel)
        assert " ".join(av.TIME_TO_ANSWER.rules.split()) in page, rel
        assert "Time (s)" in page and "Left out as a method test" in page
        same_but_notes(app, page, rel)


def test_throughput_and_knees_of_every_tier_read_the_same(demo_db, site, monkeypatch):
    data = _data(demo_db)
    tiers = analysis.tiers_present(data)
    tp = analysis.throughput(data)
    kn = analysis.knees(data)
    compared = 0
    for tier in tiers:
        slug = urls.tier_slug(tier)
        wanted = {"throughput": (tp.tier == tier).any(), "knees": (kn.tier == tier).any()}
        assert (site / f"analysis/throughput-{slug}.html").exists() == wanted["throughput"], tier
        assert (site / f"analysis/knees-{slug}.html").exists() == wanted["knees"], tier
        for key in (k for k, there in wanted.items() if there):
            rel = f"analysis/{key}-{slug}.html"
            app = app_view(demo_db, monkeypatch, key, tier=tier)
            page = exported(site, rel)
            view = av.THROUGHPUT if key == "throughput" else av.KNEES
            assert " ".join(view.rules.split()) in page and f"{tier} tier" in page, rel
            _same(app, page, rel)
            compared += 1
    assert compared >= 4


def _links(site: Path, rel: str) -> list[str]:
    """The analysis pages (from the site root) that the links inside the view of the exported page ``rel`` lead
    to, in order; each must exist."""
    html = (site / rel).read_text(encoding="utf-8")
    view = html[html.index('<div class="analysis-view">'):]
    out = [(site / rel).parent.joinpath(h).resolve().relative_to(site.resolve()).as_posix()
           for h in re.findall(r'<a href="([^"#]+)"', view[:view.index("<footer")])]
    assert all((site / r).is_file() for r in out), (rel, out)
    return [r for r in out if r.startswith("analysis/")]


def _sq_pages(data, test: str) -> tuple[str, list[tuple[str, int]], str]:
    """Where the speed-vs-quality pages of ``test`` are, and the tiers (with their setups) it has pages for."""
    stem = f"analysis/speed-quality-{urls.quality_path(test)[len('quality/'):-5]}"
    return stem, av.speed_quality_tiers(analysis.speed_quality(data, test)), \
        f"{stem}.html"


def test_speed_vs_quality_of_every_test_and_tier_reads_the_same(demo_db, site, monkeypatch):
    """A page per test and tier, each the app's tab with that test and tier picked (its tier picker and the
    page's tier links are navigation, left out of the comparison)."""
    data = _data(demo_db)
    compared = 0
    for test, label in analysis.quality_tests(data):
        stem, tiers, index = _sq_pages(data, test)
        if not tiers:
            assert not (site / index).exists(), index
            continue
        for tier, _ in tiers:
            rel = f"{stem}-{urls.tier_slug(tier)}.html"
            app = app_view(demo_db, monkeypatch, "speed-quality", test=label, quality_tier=tier)
            page = exported(site, rel)
            assert f"{label} vs speed: {tier} tier" in page and "Best trade-offs" in page, rel
            _same(app, page, rel)
            compared += 1
    assert compared >= 10


def test_every_speed_vs_quality_tier_is_reached_from_the_old_address(demo_db, site):
    """analysis/speed-quality-<test>.html, the whole view when it was one page a test, is now the test's index: a
    small page without charts that links each tier's page (with its setups), and every tier page links the
    others and leads back to it."""
    data = _data(demo_db)
    home = (site / "analysis.html").read_text(encoding="utf-8")
    checked = 0
    for test, label in analysis.quality_tests(data):
        stem, tiers, index = _sq_pages(data, test)
        if not tiers:
            continue
        pages = [f"{stem}-{urls.tier_slug(t)}.html" for t, _ in tiers]
        html = (site / index).read_text(encoding="utf-8")
        assert 'data-chart="' not in html and len(html.encode()) < 20_000, index
        assert f'href="{index}"' in home, index
        assert _links(site, index) == pages, index
        text = exported(site, index)
        assert f"{label} vs speed per hardware tier" in text, index
        for tier, n in tiers:
            assert f"{tier} tier ({n:,} setup{'s' if n > 1 else ''})" in text, (index, tier)
        for page in pages:
            there = (site / page).read_text(encoding="utf-8")
            assert f'href="../{index}"' in there, page  # the breadcrumb back to the index
            assert 'data-chart="' in there, page
            assert _links(site, page) == [p for p in pages if p != page], page
        checked += 1
    assert checked >= 5


def test_the_comparison_sees_a_dropped_column_row_or_sentence(demo_db, site, monkeypatch):
    """The word comparison is not vacuous: the app's text with one column header, one row's figure or one
    sentence taken out no longer matches the export's."""
    app = app_view(demo_db, monkeypatch, "throughput", tier="24 GB")
    page = exported(site, "analysis/throughput-24-gb.html")
    _same(app, page, "24 GB throughput")
    for dropped in ("Per request (tok/s)", " ".join(av.THROUGHPUT.rules.split()), "RTX 4090"):
        assert dropped in app
        with pytest.raises(pytest.fail.Exception):
            _same(app.replace(dropped, "", 1), page, "tampered")
