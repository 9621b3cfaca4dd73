"""Views, once: the app and the static export show the same card, word for word and figure for figure.

Every demo setup (data/raw, built with the project's ingest) is rendered both ways: the Streamlit page in
AppTest and the exported HTML. Their visible text (headings, notes, boxes, tiles, every table cell, commands,
in page order; whitespace normalised, navigation and widgets left out) must be the same sequence of words, so
the two cannot drift apart again. The analysis views and the overview share their words the same way.
"""

from __future__ import annotations

import difflib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchcards.compute import analysis
from benchcards.read import card_data
from benchcards.read.store import Store
from benchcards.site.exporter import export
from benchcards.views import cardview
from tests.helpers import demo_count, md_plain

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SEED0 = "qwen35-35b-a3b-udq4kxl-dgx-spark"
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
#: what the app draws for people but is not the card's text: pickers, downloads, links to other pages
WIDGETS = {"selectbox", "download_button", "page_link", "vega_lite_chart", "popover", "button", "multiselect"}


class _Visible(HTMLParser):
    """The visible text of HTML: no scripts, no hidden hints, no navigation (class ``nav`` or ``crumbs``);
    ``only`` keeps the text inside elements of that class (the export's card sections)."""

    VOID = frozenset({"br", "img", "input", "meta", "link", "hr", "wbr"})
    #: elements inside a line of text: no space around them
    INLINE = frozenset({"a", "b", "strong", "em", "i", "span", "code", "small"})

    def __init__(self, only: str | None = None):
        super().__init__(convert_charrefs=True)
        self.only, self.parts, self._stack = only, [], []

    def handle_starttag(self, tag, attrs):
        if tag == "wbr":  # a place a line may break, not a space: the text copies without one
            return
        if tag in self.VOID:
            self.parts.append(" ")
            return
        space = "" if tag in self.INLINE else " "
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        hidden = tag in ("script", "style") or a.get("aria-hidden") == "true" or bool(classes & {"nav", "crumbs"})
        inside = (self.only in classes) if self.only else True
        self._stack.append((hidden, inside))
        self.parts.append(space)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self._stack:
            self._stack.pop()
        self.parts.append("" if tag in self.INLINE else " ")

    def handle_data(self, data):
        if any(h for h, _ in self._stack):
            return
        if self.only and not any(i for _, i in self._stack):
            return
        self.parts.append(data)


def visible(html: str, only: str | None = None) -> str:
    p = _Visible(only)
    p.feed(html)
    return " ".join("".join(p.parts).split())


def plain(markdown: str) -> str:
    """The text a reader sees of our Markdown: bold marks, badges, list dashes and escapes removed."""
    s = re.sub(r":[a-z]+-badge\[(.*?)\]", r"\1", markdown.replace("&nbsp;", " "))
    s = re.sub(r"(?m)^- ", "", s)
    s = re.sub(r"(?<!\\)\*\*", "", s)
    s = md_plain(s)
    return " ".join(s.split())


def app_text(node) -> list[str]:
    """The app's visible text in page order, one entry per element."""
    kind = getattr(node, "type", None)
    if kind in WIDGETS:
        return []
    if kind == "html":
        return [visible(node.proto.body)]
    if kind == "code":
        return [" ".join(node.value.split())]
    if kind == "expander":
        out = [plain(node.label)]
    elif kind in ("markdown", "caption", "title", "header", "subheader", "alert", "info", "warning", "error"):
        return [plain(str(node.value))]
    else:
        out = []
    children = getattr(node, "children", None) or {}
    for k in sorted(children):
        out += app_text(children[k])
    return out


@pytest.fixture(scope="module")
def site(demo_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("views") / "site"
    export(demo_db, out)
    return out


def app_card(demo_db, monkeypatch, sid: str) -> AppTest:
    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    at = AppTest.from_file(str(ROOT / "pages" / "1_Setup_card.py"), default_timeout=120)
    at.query_params["setup"] = sid
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def words(text: str) -> list[str]:
    """The words of a text, a colon that ends a label dropped (the app writes 'GPUs: …', the export's
    definition list sets the label apart)."""
    return [w[:-1] if w.endswith(":") and len(w) > 1 else w for w in text.split() if w != ":"]


def _same(app: str, exported: str, what: str) -> None:
    if words(app) != words(exported):
        a, e = re.sub(r"(?<=[.:]) ", "\n", app).splitlines(), re.sub(r"(?<=[.:]) ", "\n", exported).splitlines()
        diff = "\n".join(difflib.unified_diff(a, e, "app", "export", lineterm="", n=1))
        pytest.fail(f"{what}: the app and the export show different text\n{diff[:6000]}")


def _ids(demo_db) -> list[str]:
    return [s for s, _ in card_data.setup_ids(Store(demo_db))]


def test_every_demo_card_reads_the_same_in_the_app_and_the_export(demo_db, site, monkeypatch):
    ids = _ids(demo_db)
    assert len(ids) == demo_count()
    for sid in ids:
        at = app_card(demo_db, monkeypatch, sid)
        app = " ".join(t for t in app_text(at.main) if t)
        exported = visible((site / "setups" / f"{sid}.html").read_text(encoding="utf-8"), only="card-section")
        assert app and exported, sid
        _same(app, exported, sid)


def test_every_section_of_the_view_is_on_both(demo_db, site, monkeypatch):
    """Each section's heading and its first words stand on both pages (the comparison above is not vacuous)."""
    store = Store(demo_db)
    for sid in (SEED0, SEED):
        c = card_data.card(store, sid)
        at = app_card(demo_db, monkeypatch, sid)
        app = " ".join(app_text(at.main))
        page = (site / "setups" / f"{sid}.html").read_text(encoding="utf-8")
        exported = visible(page, only="card-section")
        for sec in cardview.sections(c):
            if sec.title:
                assert sec.title in app and sec.title in exported, (sid, sec.title)
                assert sec.level == 1 or f'id="{sec.anchor}"' in page, (sid, sec.anchor)


def test_the_exported_card_has_what_the_app_shows(site):
    """Issue 18: the method, the exact commands, labelled warnings, one sampling text and seed 000's Overall."""
    spark = visible((site / "setups" / f"{SEED0}.html").read_text(encoding="utf-8"), only="card-section")
    for text in ("How it was measured", "Reproduce", "Overall", "Mean generation speed over the tasks 51.0 tok/s",
                 "Slowest task's generation 47.8 tok/s", "Fastest task's generation 55.2 tok/s",
                 "Mean prefill speed over the tasks 438.0 tok/s", "Peak prefill (300-token prompt) 1,221.4 tok/s",
                 "Range of the first-token times 85–246 ms", "python -m live measure", "Sampling:"):
        assert text in spark, text
    seed = visible((site / "setups" / f"{SEED}.html").read_text(encoding="utf-8"), only="card-section")
    for text in ("Output tokens per decode run 512 tokens", "Decode runs per prompt 2",
                 "Warm-up requests per prompt (not counted) 1", "llama-server", "--n-cpu-moe 27"):
        assert text in seed, text


def test_warnings_are_labelled_in_words_on_both(demo_db):
    """A warning reads 'Stated figure differs from the raw records (run): …' on both, never its raw kind."""
    import pandas as pd

    from benchcards.site import card_pages, render
    from benchcards.views import card_tables

    c = card_data.card(Store(demo_db), SEED)
    c.warnings = pd.DataFrame({"kind": ["summary_mismatch", "high_cv"], "run_id": [None, "r1"],
                               "message": ["stated 63.4, computed 61.0", "CV 12 %"]})
    page = card_pages.card_page(render.environment(), c, f"setups/{SEED}.html", cardview.Inputs(), depth={}, conc=None,
                        knee_points=card_pages.EMPTY_KNEES, raw=frozenset())
    text = visible(page, only="card-section")
    for kind, run, message in (("summary_mismatch", "the setup", "stated 63.4, computed 61.0"),
                               ("high_cv", "r1", "CV 12 %")):
        assert f"{card_tables.WARNING_KINDS[kind]} ({run}): {message}" in text
        assert kind not in text
    (warnings,) = [s for s in cardview.sections(c) if s.anchor == "warnings"]
    assert [(b.label, b.text, b.tone) for b in warnings.blocks] == [
        ("Stated figure differs from the raw records (the setup)", "stated 63.4, computed 61.0", "warning"),
        ("Decode runs spread widely (r1)", "CV 12 %", "warning")]


def test_peak_memory_says_what_is_known_and_an_unknown_id_is_said_once(demo_db, site, monkeypatch):
    """Issue 16: no 'measured with: not recorded' above peak figures that exist; one message for an unknown id."""
    seed = visible((site / "setups" / f"{SEED}.html").read_text(encoding="utf-8"), only="card-section")
    assert "Peak memory" in seed and "11.34 GiB" in seed
    assert "not recorded." not in seed.split("Memory test", 1)[1].split("How it was measured", 1)[0]
    assert "Peak memory measured with not recorded" not in seed
    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    at = AppTest.from_file(str(ROOT / "pages" / "1_Setup_card.py"), default_timeout=120)
    at.query_params["setup"] = "no-such-setup"
    at.run()
    said = [e.value for e in [*at.warning, *at.info]]
    assert len(said) == 1 and "no-such-setup" in plain(said[0]), said


def test_analysis_and_overview_words_are_written_once(demo_db, site, monkeypatch):
    """The analysis views' and the overview's explanations are the same sentences in the app and the export."""
    from benchcards.views import analysisview

    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    at = AppTest.from_file(str(ROOT / "pages" / "7_Analysis.py"), default_timeout=120)
    at.run()
    assert not at.exception
    app = " ".join(app_text(at.main))
    pages = {p.name: visible(p.read_text(encoding="utf-8")) for p in (site / "analysis").glob("*.html")}
    pages["analysis.html"] = visible((site / "analysis.html").read_text(encoding="utf-8"))
    for view in analysisview.VIEWS:
        assert " ".join(view.intro.split()) in app, view.key
        assert any(" ".join(view.intro.split()) in text for text in pages.values()), view.key
        assert " ".join(view.rules.split()) in app, view.key
        assert any(" ".join(view.rules.split()) in text for text in pages.values()), view.key
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    home = visible((site / "index.html").read_text(encoding="utf-8"))
    app = " ".join(app_text(at.main))
    from benchcards.views import analysisview as overviewview

    assert " ".join(overviewview.LEAD.split()) in app and " ".join(overviewview.LEAD.split()) in home
    assert analysis  # the module the views explain


def test_every_memory_test_chart_is_drawn_the_same_in_the_app_and_the_export(demo_db, site):
    """The text comparison cannot see a chart: the exported card's memory-test chart must be the app's spec,
    data and marks (its GPU-memory line included), not one made its own way."""
    import json

    from benchcards.charts import charts, specs

    store = Store(demo_db)
    checked = lined = 0
    for sid in _ids(demo_db):
        c = card_data.card(store, sid)
        if c.fit is None or c.fit_steps.empty:
            continue
        app = specs.inline(charts.fit_spec(c.fit_steps, vram_gib=c.vram_gib))
        page = (site / "setups" / f"{sid}.html").read_text(encoding="utf-8")
        exported = [specs.inline(json.loads(m)) for m in
                    re.findall(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', page, re.S)]
        assert app in exported, f"{sid}: the exported memory-test chart is not the app's"
        checked += 1
        lined += "GPU memory" in json.dumps(app)
    assert checked >= 3 and lined >= 1, (checked, lined)
