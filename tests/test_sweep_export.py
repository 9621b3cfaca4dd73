"""The sweep view of the static export: the same rows and verdicts as the app's Sweeps page, a Δ % chart, links
that resolve to the variants' cards, the site's navigation, and variant names that stay text."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from benchcards.compute import sweeps
from benchcards.domain import fmt
from benchcards.read.store import Store
from benchcards.site.exporter import export
from ingest import ingest_paths
from live.measure import SetupInput
from live.sweep import Variant, run_sweep, write_sweep
from tests.live_servers import ROOT
from tests.test_sweep import demo_cfg

BASE = '<b>base</b> "q" & co'
SLOW = "<script>alert(1)</script> slow"
BROKEN = "<img src=x onerror=alert(2)> broken"


def tables(html: str) -> list[list[list[str]]]:
    """Every table of a page: its body rows as cell texts (markup removed, entities read)."""
    out = []
    for t in re.findall(r"<table[^>]*>(.*?)</table>", html, re.S):
        body = t.split("<tbody>", 1)[1] if "<tbody>" in t else t
        out.append([[unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
                    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S) if "<td" in tr])
    return out


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A demo-server sweep with hostile variant names (one does not load), ingested and exported: (db, site)."""
    tmp = tmp_path_factory.mktemp("sweepx")
    cfg = demo_cfg([Variant(BASE), Variant(SLOW, ("--decode-tps", "200")), Variant(BROKEN, ("--no-such-flag",))])
    result = run_sweep(cfg, tmp / "logs")
    write_sweep(tmp / "out", result, SetupInput(gpu="cpu", title="hostile sweep"), cfg.measure)
    db = tmp / "s.duckdb"
    ingest_paths([tmp / "out"], db)
    export(db, tmp / "site", with_raw=False)
    return db, tmp / "site"


@pytest.mark.integration
def test_sweep_page_of_the_export_has_the_library_rows_chart_and_card_links(swept):
    db, out = swept
    store = Store(db)
    (rec,) = sweeps.load_sweeps(store)
    page = out / "sweeps" / f"{rec.sweep_id}.html"
    html = page.read_text()
    diffs, variants, boots = tables(html)
    expected = sweeps.shown_table(sweeps.sweep_table(store, rec))
    assert diffs == [[str(v) for v in row] for row in expected.itertuples(index=False)]
    assert {r[0] for r in diffs} == {SLOW} and "Decode, code prompt" in {r[1] for r in diffs}
    assert [r[0] for r in variants] == [f"{BASE} (baseline)", SLOW, BROKEN]
    assert [r[3] for r in boots] == ["ok", "ok", "no load", "ok", "ok", "no load"]
    assert any("unrecognized arguments: --no-such-flag" in r[4] for r in boots)
    # the Δ % chart with its intervals: one point per row of the table
    (spec,) = [json.loads(s) for s in re.findall(r'<script type="application/json" data-chart="chart0">(.*?)</script>',
                                                  html, re.S)]
    data = [v for d in spec["datasets"].values() for v in d if "pct" in v]
    assert len(data) == len(diffs)
    for v, row in zip(data, diffs):  # an interval drawn exactly where the table gives one
        assert (v["lo"] is None) == (row[5] == fmt.DASH), row
        assert v["lo"] is None or v["lo"] <= v["pct"] <= v["hi"]
    assert any(v["lo"] is not None for v in data)
    # every variant that measured links to its card (the broken one has none), and every link of the page
    # resolves to a file of the site
    hrefs = re.findall(r'href="([^"]+)"', html)
    cards = {h for h in hrefs if "setups/" in h}
    assert len(cards) == 2 and {f"../setups/{v.setup_id}.html" for v in rec.variants[:2]} == cards
    for h in hrefs:
        assert (page.parent / h).resolve().is_file(), h
    # linked from the navigation of every page, and the list links the sweep
    assert 'href="sweeps.html">Sweeps</a>' in (out / "index.html").read_text()
    assert 'href="../sweeps.html">Sweeps</a>' in (out / "setups" / f"{rec.variants[0].setup_id}.html").read_text()
    assert f'href="sweeps/{rec.sweep_id}.html"' in (out / "sweeps.html").read_text()
    assert f"sweeps/{rec.sweep_id}.html" in (out / "sitemap.xml").read_text()


@pytest.mark.integration
def test_sweep_variant_names_are_text_on_the_export_and_the_app_shows_the_same_verdicts(swept, monkeypatch):
    db, out = swept
    for rel in ("sweeps.html", *(str(p.relative_to(out)) for p in (out / "sweeps").iterdir())):
        html = (out / rel).read_text()
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>base" not in html, rel
        shown = html.replace("<wbr>", "")  # a long word may break after its '/' (fmt.word_runs): the same text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown or "\\u003cscript" in html, rel
        # only the bundled scripts and JSON data blocks
        assert all(s in ('<script src="../assets/vega.js" defer>', '<script src="../assets/site.js" defer>',
                         '<script src="assets/site.js" defer>') or s.startswith('<script type="application/json"')
                   for s in re.findall(r"<script[^>]*>", html)), rel
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/8_Sweeps.py")
    at.run()
    assert not at.exception
    app_html = " ".join(h.proto.body for h in at.get("html"))
    assert "<script>alert" not in app_html and "&lt;script&gt;" in app_html
    (rec,) = sweeps.load_sweeps(Store(db))
    exported = tables((out / "sweeps" / f"{rec.sweep_id}.html").read_text())
    shown = tables(app_html)
    assert shown[0] == exported[0]  # the differences: same rows, same verdicts
    assert [r[0] for r in shown[1]] == [r[0] for r in exported[1]]  # the variants

