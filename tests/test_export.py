"""The static export: every setup gets a page with the app's tables and themed charts, viewable offline."""

import hashlib
import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest

from benchcards.charts import charts
from benchcards.site.exporter import export
from tests.helpers import demo_count
from tests.test_app import SEED, SYN1

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(demo_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "site"
    export(demo_db, out)
    return out


def test_index_lists_and_links_every_setup(site):
    index = (site / "index.html").read_text()
    links = re.findall(r'href="setups/([^"]+)\.html"', index)
    assert len(set(links)) == demo_count() and SEED in links
    for sid in links:
        assert (site / "setups" / f"{sid}.html").exists()
    assert "988.4" in index and "131,072" in index and "57.3 % ± 4.8" in index  # the seed 002 row


def test_seed_card_has_the_published_figures(site):
    page = (site / "setups" / f"{SEED}.html").read_text()
    for text in ("63.4 tok/s", "988.4 tok/s", "57.3 % ± 4.8", "42.9 % ± 6.8", "131,072", "--n-cpu-moe 27",
                 "summary only", "795.7 tok/s"):
        assert text in page, text


def test_the_real_run_card_shows_ttft_vs_the_server_prompt_time(site):
    page = (site / "setups" / "real-llama-server-cpu-tiny-random-qwen-vocab.html").read_text()
    for text in ("Time to first token vs the server&#39;s prompt time", "Prompt time (server)", "32K (prefill)",
                 "--cache-ram is not set", "method test", "server.log"):
        assert text in page, text


def test_charts_carry_the_app_theme(site):
    page = (site / "setups" / f"{SYN1}.html").read_text()
    specs = [json.loads(m) for m in re.findall(r'<script type="application/json" data-chart="chart\d+">(.*?)</script>',
                                                page)]
    assert len(specs) >= 4
    cfg = charts.theme_config()
    for s in specs:
        assert s["config"]["range"]["category"] == cfg["range"]["category"]
        assert s["config"]["axis"]["labelColor"] == cfg["axis"]["labelColor"]


def test_raw_files_are_copied_and_linked_as_downloads(site):
    page = (site / "setups" / f"{SYN1}.html").read_text()
    links = re.findall(r'<a href="(\.\./raw/([0-9a-f]{64})\.bin)" download="([^"]+)"', page)
    assert any(name == "client.log" for _, _, name in links)
    for href, sha, _ in links:
        f = (site / "setups" / href).resolve()
        assert f.is_file() and hashlib.sha256(f.read_bytes()).hexdigest() == sha
    assert {p.suffix for p in (site / "raw").iterdir()} == {".bin"}  # nothing a browser would render


def test_export_refuses_a_folder_it_did_not_write(demo_db, tmp_path):
    from benchcards.site.writer import ExportFolderError

    out = tmp_path / "site"
    out.mkdir()
    (out / "notes.txt").write_text("someone's file")
    with pytest.raises(ExportFolderError, match=r"notes\.txt"):
        export(demo_db, out, with_raw=False)
    assert (out / "notes.txt").read_text() == "someone's file" and not (out / "index.html").exists()


def test_reexport_removes_what_the_site_no_longer_has_and_nothing_else(demo_db, tmp_path):
    """A setup gone from the database loses its card; files the export never wrote (a git checkout of
    the published site, a CNAME) stay."""
    from ingest import ingest_paths

    raw = tmp_path / "raw"
    shutil.copytree(ROOT / "data" / "raw", raw)
    gone = sorted(p.name for p in raw.iterdir() if p.name.startswith("timeline-demo-"))[0]
    out = tmp_path / "site"
    export(demo_db, out, with_raw=False)
    cards = {p.name for p in (out / "setups").iterdir()}
    for rel in (".git/HEAD", "CNAME", "setups/notes.txt"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("not the export's")
    shutil.rmtree(raw / gone)
    smaller = tmp_path / "smaller.duckdb"
    ingest_paths([raw], smaller)
    result = export(smaller, out, with_raw=False)
    lost = cards - {p.name for p in (out / "setups").iterdir()}
    assert len(lost) == 1 and next(iter(lost)) in {f"{r.split('/')[-1]}" for r in result.removed}
    assert all((out / rel).read_text() == "not the export's" for rel in (".git/HEAD", "CNAME", "setups/notes.txt"))


def _rows(html: str) -> list[list[str]]:
    """The body rows of the (last) table of a page as cell texts."""
    body = html.rsplit("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [[re.sub(r"<[^>]+>", "", c).replace("&#39;", "'").replace("&amp;", "&").strip()
             for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)] for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_tier_and_model_pages_list_every_setup_with_breadcrumbs(site):
    index = json.loads((site / "index.json").read_text())
    assert index["setups_count"] == demo_count() and index["units"]["decode"]["unit"] == "tok/s"
    by_tier: dict[str, set[str]] = {}
    by_model: dict[str, set[str]] = {}
    for s in index["setups"]:
        assert s["url"] == f"setups/{s['setup_id']}.html" and (site / s["url"]).is_file()  # the permalink
        by_tier.setdefault(s["tier_url"], set()).add(s["setup_id"])
        by_model.setdefault(s["model_url"], set()).add(s["setup_id"])
        assert {f["metric"] for f in s["figures"]} or s["data"] == "reported"  # reported: its own list
        assert all(f["unit"] for f in s["figures"] + s["reported"] if f["metric"] == "decode")
    assert "tiers/16-gb.html" in by_tier and "tiers/unified-memory.html" in by_tier
    for pages in (by_tier, by_model):
        for url, ids in pages.items():
            html = (site / url).read_text()
            assert set(re.findall(r'href="\.\./setups/([^"]+)\.html"', html)) == ids, url
            assert '<nav class="crumbs"' in html and 'href="../index.html">Home</a>' in html
    seed = json.loads((site / "index.json").read_text())["setups"]
    seed_row = next(s for s in seed if s["setup_id"] == SEED)
    decode = next(f for f in seed_row["figures"] if f["metric"] == "decode" and f["prompt"] is None
                  and f["level"] is None)
    assert round(decode["value"], 1) == 63.4 and decode["unit"] == "tok/s"
    r3090 = next(s for s in seed if s["setup_id"] == "reported-qwen35-35b-a3b-udq4kxl-rtx3090")
    assert r3090["figures"] == [] and r3090["reported"][0] | {"source": None} == {
        "metric": "decode", "value": 110, "low": None, "high": None, "approx": True, "as_written": "~110 t/s",
        "unit": "tok/s", "depth": None, "note": None, "source": None}
    assert r3090["reported"][0]["source"]["url"].startswith("https://medium.com/@agentnativedev/")
    card = (site / "setups" / f"{SEED}.html").read_text()
    assert 'href="../tiers/16-gb.html">16 GB tier</a>' in card and 'aria-current="page"' in card


def _headers(html: str) -> list[str]:
    head = html.rsplit("<thead>", 1)[1].split("</thead>", 1)[0]
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]


def test_lists_name_setups_like_the_app_with_their_notes(site):
    """Tier lists show the short name (model · quant · engine build), no tier column on a tier's own page, a
    setup measured only by llama-bench with its engine figures under its name (not in the ranked columns),
    and the system-RAM note of an --n-cpu-moe setup under its GPU."""
    html = (site / "tiers" / "24-gb.html").read_text()
    assert _headers(html)[:2] == ["Setup", "Decode (tok/s)"] and "VRAM tier" not in _headers(html)
    assert not {"offload", "Engine", "Quant"} & set(_headers(html)) and _headers(html)[-1] == "Data"
    rows = _rows(html)
    bench = [r for r in rows if "llama-bench only: tg128" in r[0]]
    assert len(bench) == 4 and all(r[1] == "—" for r in bench)  # decode over HTTP: not measured
    assert all(re.search(r"tg128 \d{3}\.\d tok/s, pp512 [\d,]+\.\d tok/s$", r[0]) for r in bench), bench
    assert any("⚠ needs system RAM: expert weights of 23 layers" in r[-2] for r in rows)  # the GPU column
    assert "1 setup," in (site / "tiers" / "48-gb.html").read_text()  # "1 setup", not "1 setups"
    model = _headers((site / "models" / next(p.name for p in (site / "models").iterdir()
                                               if p.name.startswith("qwen3-5-35b-a3b"))).read_text())
    assert model.count("VRAM tier") == 1


def test_a_test_has_one_name_on_every_page(site, demo_db):
    """ruler_8k is labelled 'RULER 8K' by one contract and 'Long text 8K (RULER)' by another: every page uses
    the one display name (the quality index's)."""
    from benchcards.domain import metrics

    name = metrics.quality_label("ruler_8k", "RULER 8K")
    pages = [(site / rel).read_text() for rel in ("quality.html", "analysis.html")]
    assert all(name in p for p in pages) and not any(">RULER 8K<" in p for p in pages)


def test_sitemap_lists_every_page_and_nothing_else(site):
    locs = re.findall(r"<loc>([^<]+)</loc>", (site / "sitemap.xml").read_text())
    html = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert sorted(locs) == html and len(html) > 30


def test_time_to_answer_page_matches_the_library(site, demo_db):
    from benchcards.compute import analysis
    from benchcards.read import analysis_inputs
    from benchcards.read.store import Store
    from benchcards.views import analysis_tables

    data, left_out = analysis.without_method_tests(analysis_inputs.analysis_data(Store(demo_db)))
    # the tiny real-engine run and the demo sweep's two variants: method tests, not ranked (as in the app)
    assert len(left_out) == 3
    lib = analysis_tables.answer_table(analysis.time_to_answer(data, 2048, 500.0))
    assert f"Left out as a method test (its card has its figures): {'; '.join(left_out)}" in unescape((site / "analysis" / "time-to-answer-2k-500-words.html").read_text())
    rows = _rows((site / "analysis" / "time-to-answer-2k-500-words.html").read_text())
    assert len(rows) == len(lib) > 0
    for row, (_, want) in zip(rows, lib.iterrows()):
        r = want["Rank"]
        assert row[0] == (r if isinstance(r, str) else "—" if r != r else str(int(r)))
        assert row[1] == want["Setup"] and row[2] == want["Tier"]
        t = want["Time (s)"]
        shown = t if isinstance(t, str) else ("—" if t != t else f"{t:,.1f}")  # the library's text, or its number
        assert row[3] == shown, (row, want.to_dict())
        assert row[-2] == want["Within measured range"]


def test_every_page_is_small_and_charts_load_the_bundle_only_where_drawn(site):
    for p in site.rglob("*.html"):
        html = p.read_text()
        assert len(html.encode()) <= 300 * 1024, p
        assert ("assets/vega.js" in html) == ('data-chart="' in html), p


def test_reexport_after_one_new_setup_rewrites_only_what_shows_it(demo_db, tmp_path, monkeypatch):
    from benchcards.site import writer as sitewrite
    from devdata import synth
    from ingest import ingest_paths

    in_place: list[str] = []  # files written without a temporary file: only by the first export, into a new folder
    write_new = sitewrite._write_new
    monkeypatch.setattr(sitewrite, "_write_new", lambda path, *a: in_place.append(path.name) or write_new(path, *a))
    db = tmp_path / "copy.duckdb"
    db.write_bytes(demo_db.read_bytes())
    out = tmp_path / "site"
    first = export(db, out, with_raw=False)
    assert len(first.rendered) == demo_count()
    assert sorted(in_place) == sorted(Path(w).name for w in first.written) and len(in_place) > demo_count()
    in_place.clear()
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.html")}
    new = synth.generate_setup(4242, tmp_path / "raw")
    ingest_paths([new.parent], db)
    second = export(db, out, with_raw=False)
    assert second.rendered == [new.name]  # no other card is even rendered
    assert [w for w in second.written if w.startswith("setups/")] == [f"setups/{new.name}.html"]
    assert "index.json" in second.written and "sitemap.xml" in second.written
    for p, mtime in before.items():  # files not rewritten keep their bytes and time
        rel = p.relative_to(out).as_posix()
        if rel not in second.written:
            assert p.stat().st_mtime_ns == mtime, rel
    third = export(db, out, with_raw=False)
    assert third.written == [] and third.rendered == []
    assert in_place == []  # a site someone may be reading is only ever changed one whole file at a time


@pytest.fixture(scope="module")
def b():
    """One headless Chromium for the browser tests of this module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield browser
        browser.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no Chromium")
def test_export_renders_offline_in_chromium(site, b):
    errors = []
    page = b.new_page(viewport={"width": 1300, "height": 2400})
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    for name, path in (("export-index", site / "index.html"), ("export-card", site / "setups" / f"{SYN1}.html")):
        page.goto(path.as_uri())
        if name == "export-card":
            page.wait_for_selector(".chart svg", timeout=30_000)
            assert page.locator(".chart svg").count() >= 4
        (ROOT / "test-artifacts").mkdir(exist_ok=True)
        page.screenshot(path=str(ROOT / "test-artifacts" / f"{name}.png"), full_page=True)
    page.goto((site / "index.html").as_uri())
    page.fill("#filter", "5060")
    visible = page.locator("table.sortable tbody tr:visible").count()
    assert visible == 1
    tables = page.locator("table.sortable").count()
    assert tables >= 4 and page.locator("p.no-match:visible").count() == tables - 1  # the other tiers say so
    page.fill("#filter", "")
    assert page.locator("p.no-match:visible").count() == 0 and page.locator("table.sortable:visible").count() == \
        tables
    assert errors == []


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no Chromium")
def test_site_search_sort_and_pages_on_a_phone_in_light_and_dark(site, b):
    for scheme in ("light", "dark"):
        ctx = b.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme)
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.on("request", lambda r, errors=errors: None if r.url.startswith(("file://", "data:", "blob:"))
                else errors.append(f"network: {r.url}"))
        for rel in ("index.html", f"setups/{SEED}.html", "tiers/16-gb.html", "models/index.html",
                    "quality/mmlu-pro.html", "analysis.html", "analysis/time-to-answer-2k-500-words.html",
                    "analysis/throughput-16-gb.html", "analysis/speed-quality-mmlu-pro.html",
                    "analysis/speed-quality-mmlu-pro-24-gb.html",
                    "analysis/knees-16-gb.html"):
            page.goto((site / rel).as_uri())
            if 'data-chart="' in (site / rel).read_text():
                page.wait_for_selector(".chart svg", timeout=30_000)
                n = (site / rel).read_text().count('data-chart="')
                page.wait_for_function(f"document.querySelectorAll('.chart svg').length >= {n}", timeout=30_000)
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 391, (rel, scheme, width)  # no sideways scroll at 390 px
            if rel.startswith("tiers/"):  # a list is a stack of cards, each figure named
                first = page.locator("table.sortable tbody tr").first
                assert first.evaluate("r => getComputedStyle(r).display") == "grid"
                labels = first.locator("td").evaluate_all("tds => tds.map(t => t.dataset.label)")
                assert labels == page.locator("table.sortable th").all_inner_texts()
                box = page.locator("table.sortable").evaluate("t => t.parentElement.scrollWidth <= "
                                                              "t.parentElement.clientWidth")
                assert box  # nothing to swipe inside the table either
            bg = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
            assert (sum(int(x) for x in re.findall(r"\d+", bg)[:3]) < 200) == (scheme == "dark"), bg
            (ROOT / "test-artifacts").mkdir(exist_ok=True)
            page.screenshot(path=str(ROOT / "test-artifacts" / f"export-{rel.replace('/', '-')[:-5]}-{scheme}.png"),
                            full_page=True)
        # search: several words, all must match; Enter opens the first result
        page.goto((site / "index.html").as_uri())
        page.fill("#search", "qwen3.5 q8_0")
        page.wait_for_selector("#search-results li a")
        found = page.locator("#search-results li a").all_inner_texts()
        assert found and all("Qwen3.5" in t and "Q8_0" in t for t in found), found
        page.fill("#search", "5060 distill")
        page.wait_for_selector("#search-results li a")
        assert page.locator("#search-results li a").all_inner_texts() == [
            "Qwen3.8-35B-A3B-Distill Q4_K_M on one RTX 5060 Ti 16 GB, llama.cpp b12223"]
        page.press("#search", "Enter")
        page.wait_for_url(f"**/setups/{SEED}.html")
        page.fill("#search", "no such words anywhere")
        page.wait_for_selector("#search-results li.count")
        assert page.inner_text("#search-results") == "No match"
        # sort: a click on a numeric column orders the rows by it, a second click reverses
        page.goto((site / "analysis" / "time-to-answer-2k-500-words.html").as_uri())
        header = page.locator("table.sortable th", has_text="Time (s)")
        col = page.locator("table.sortable th").all_inner_texts().index("Time (s)")

        def times() -> list[float]:
            cells = page.locator(f"table.sortable tbody tr td:nth-child({col + 1})").all_inner_texts()
            return [float(c.replace(",", "")) for c in cells if c.strip() not in ("—", "")]

        header.click()
        up = times()
        assert len(up) >= 3 and up == sorted(up)
        header.click()
        assert times() == sorted(up, reverse=True)
        cells = page.locator(f"table.sortable tbody tr td:nth-child({col + 1})").all_inner_texts()
        dashes = [c.strip() in ("—", "") for c in cells]
        assert dashes == sorted(dashes)  # not measured: last, whichever way it sorts
        assert errors == [], errors
        ctx.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no Chromium")
def test_a_long_name_without_spaces_breaks_instead_of_pushing_the_figures_off_screen(demo_db, tmp_path, b):
    from benchcards.read import overview_rows
    from benchcards.read.store import Store
    from benchcards.site import urls as site
    from devdata import synth
    from ingest import ingest_paths

    db = tmp_path / "long.duckdb"
    db.write_bytes(demo_db.read_bytes())
    folder = synth.generate_setup(77, tmp_path / "raw")
    setup = json.loads((folder / "setup.json").read_text())
    setup["model"]["name"] = "M" * 190  # the schema allows 200 characters, spaces or not
    setup["title"] = "T" * 200
    (folder / "setup.json").write_text(json.dumps(setup))
    ingest_paths([folder], db)
    out = tmp_path / "site"
    export(db, out, with_raw=False)
    tier = overview_rows.overview(Store(db)).set_index("setup_id").tier[folder.name]
    page_path = out / site.tier_path(tier)
    page = b.new_page(viewport={"width": 1440, "height": 900})
    for rel in (page_path, out / "index.html"):
        page.goto(rel.as_uri())
        over = page.evaluate("""() => [...document.querySelectorAll('table.sortable')].map(
            t => t.parentElement.scrollWidth - t.parentElement.clientWidth).filter(d => d > 1)""")
        assert over == [], rel  # every column in view: the name wraps inside its cell


def test_a_card_rendered_alone_has_the_bytes_of_one_rendered_in_a_batch(demo_db, tmp_path):
    """Chart numbers do not depend on which other cards shared the batch (a column of whole numbers is int in
    one batch and float in another): a re-rendered card is byte-identical, so a published site does not churn."""
    out = tmp_path / "site"
    export(demo_db, out, with_raw=False)
    cards = sorted((out / "setups").iterdir())
    before = {p.name: p.read_bytes() for p in cards}
    alone = [p for p in cards if p.name.startswith("synthetic-00003")]  # runs known for every point
    alone[0].unlink()
    again = export(demo_db, out, with_raw=False)
    assert again.rendered == [alone[0].name[:-5]]
    assert {p.name: p.read_bytes() for p in sorted((out / "setups").iterdir())} == before


def test_the_index_groups_setups_as_the_app_overview_does(site):
    """One group per tier headed '<tier> tier' (the app's headings), the reported setups in their own group at
    the end, not counted into each tier."""
    from benchcards.views.tables import REPORTED_GROUP

    index = (site / "index.html").read_text()
    heads = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h2>(.*?)</h2>", index)]
    groups = [h for h in heads if " tier " in h or h.startswith("Reported elsewhere")]
    assert groups[-1] == f"{REPORTED_GROUP} 10 setups", heads
    assert groups[0].startswith("16 GB tier ") and all(re.fullmatch(r".+ tier \d+ setups?", g) for g in groups[:-1])
    assert "16 GB tier 1 setup" in groups, groups  # the one measured 16 GB setup; its 3 reported ones come last
    last = index.index(REPORTED_GROUP)
    for sid in re.findall(r'href="setups/(reported-[^"]+)\.html"', index):
        assert index.index(f"setups/{sid}.html") > last, sid
