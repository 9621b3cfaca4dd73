"""The exported demo site as a person sees it in Chromium: the downloads page on a phone, the charts without
Vega's warnings, sweep labels whole, knee axes in '2K', every series in the one palette."""

import json
import re
from pathlib import Path

import pytest

from benchcards.charts import charts
from benchcards.site.exporter import export
from tests.helpers import CHROMIUM

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")]

#: the tallest a row of the downloads page may be at 390 px (its longest description is five lines; the squeezed
#: table made the index.json row 265 px tall)
ROW_MAX_PX = 200


@pytest.fixture(scope="module")
def site(demo_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("export-readable") / "site"
    export(demo_db, out)
    return out


ROWS_JS = "() => [...document.querySelectorAll('tbody tr')].map(r => [Math.round(r.getBoundingClientRect().height), " \
          "getComputedStyle(r).display, r.querySelector('td').innerText])"


def test_downloads_page_on_a_phone_is_blocks_and_at_1440_a_table(site, browser):
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto((site / "downloads.html").as_uri())
    rows = page.evaluate(ROWS_JS)
    assert len(rows) > 30  # the files and every Parquet column
    tall = [(h, name) for h, _d, name in rows if h > ROW_MAX_PX]
    assert tall == []
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    index = page.locator("tbody tr").first
    assert index.locator("td").first.inner_text() == "index.json"
    # each value is named (the column headers are not shown on a phone)
    assert index.evaluate("r => [...r.cells].slice(1).map(c => getComputedStyle(c, '::before').content)") == \
        ['"Format "', '"Rows "', '"Size "', '"What "']
    page.close()
    wide = browser.new_page(viewport={"width": 1440, "height": 900})
    wide.goto((site / "downloads.html").as_uri())
    rows = wide.evaluate(ROWS_JS)
    assert {d for _h, d, _n in rows} == {"table-row"}
    assert wide.locator("thead").first.is_visible()
    assert max(h for h, _d, _n in rows) <= 60  # the index.json description in two lines at most
    wide.close()


def chart_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if 'data-chart="' in p.read_text())


def drawn(page, path: Path) -> None:
    page.goto(path.as_uri())
    n = path.read_text().count('data-chart="')
    page.wait_for_function(f"document.querySelectorAll('.chart svg').length >= {n}", timeout=30_000)


def test_no_exported_chart_warns_of_an_infinite_extent(site, browser):
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    said: list[tuple[str, str]] = []
    page.on("console", lambda m: said.append((page.url, m.text)))
    pages = chart_pages(site)
    assert len(pages) >= 20 and any("knees" in p.name for p in pages)  # cards, analyses, sweeps
    for path in pages:
        drawn(page, path)
    assert [(url.rsplit("/", 1)[-1], text) for url, text in said if "Infinite extent" in text] == []
    page.close()


def svg_texts(page, chart: int = 0) -> list[str]:
    return page.evaluate(f"() => [...document.querySelectorAll('.chart svg')[{chart}].querySelectorAll('text')]"
                         ".map(t => [...t.querySelectorAll('tspan')].map(s => s.textContent).join(' ') || t.textContent)")


@pytest.mark.parametrize("width", [390, 1440])
def test_sweep_chart_names_each_figure_whole(site, browser, width):
    path = next((site / "sweeps").glob("*.html"))
    page = browser.new_page(viewport={"width": width, "height": 900})
    drawn(page, path)
    texts = svg_texts(page)
    figures = page.evaluate("""() => { for (const t of document.querySelectorAll('table')) {
        const i = [...t.tHead.rows[0].cells].findIndex(c => c.innerText.trim() === 'Figure');
        if (i >= 0) return [...t.tBodies[0].rows].map(r => r.cells[i].innerText.trim()); } return []; }""")
    assert figures and "Time to first token at 1K" in figures
    assert [f for f in dict.fromkeys(figures) if f not in texts] == []  # every figure's whole name, once a row
    assert [t for t in texts if "…" in t] == []  # nothing cut
    page.close()


def test_knee_chart_axis_writes_token_counts_as_the_others_do(site, browser):
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    path = next(p for p in chart_pages(site) if p.name.startswith("knees-"))
    drawn(page, path)
    texts = svg_texts(page)
    assert "Prompt depth (tokens)" in texts and "2K" in texts
    assert [t for t in texts if re.fullmatch(r"\d{1,3}(,\d{3})+", t) and int(t.replace(",", "")) in (2048, 4096, 8192)] \
        == []
    page.close()


def test_every_exported_series_colour_is_the_palette_s(site):
    """Each chart's colour scales (the spec's own hex colours) use the one palette, or grey for no series."""
    allowed = {c.lower() for c in charts.PALETTE} | {charts.GREY.lower(), charts.FRONTIER_COLOR.lower()}
    found: set[str] = set()
    for path in chart_pages(site):
        for block in re.findall(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', path.read_text(),
                                re.S):
            spec = json.loads(block)
            spec.pop("datasets", None)
            assert spec["config"]["range"]["category"] == charts.PALETTE
            spec.pop("config")
            found |= {c.lower() for c in re.findall(r'"(#[0-9a-fA-F]{6})"', json.dumps(spec))}
    assert found and found - allowed == set()
    assert "#f0e442" not in found


#: each line of an element's text as drawn (characters grouped by the top of their box)
LINES_JS = """(el) => { const lines = []; let top = null;
  const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    for (let i = 0; i < n.length; i++) {
      const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
      const box = r.getClientRects()[0]; if (!box) continue;
      if (top === null || Math.abs(box.top - top) > 2) { lines.push(''); top = box.top; }
      lines[lines.length - 1] += n.data[i];
    } }
  return lines.map(s => s.trim()); }"""


@pytest.mark.parametrize("width", [1440, 390])
def test_downloads_table_breaks_a_file_path_only_after_a_slash(site, browser, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto((site / "downloads.html").as_uri())
    cells = page.locator("table").first.locator("tbody tr td:first-child")
    shown = {c.inner_text(): c.evaluate(LINES_JS) for c in cells.all()}
    assert "parquet/reported.parquet" in shown
    for name, lines in shown.items():
        assert "".join(lines) == name, (name, lines)
        assert all(line.endswith("/") for line in lines[:-1]), (name, lines)  # never inside a word
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.close()


def test_a_command_on_a_card_wraps_at_spaces_on_a_phone_never_inside_a_flag(site, browser):
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto((site / "setups" / "qwen38-35b-a3b-distill-q4km-5060ti.html").as_uri())
    box = page.locator("pre", has_text="hf download").first
    lines = box.evaluate(LINES_JS)
    assert len(lines) > 2  # it wraps (it scrolled sideways inside its box before)
    words = " ".join(lines).split()
    assert "--local-dir" in words and "--revision" in words, lines
    assert box.inner_text().startswith("hf download empero-ai/Qwen3.8-35B-A3B-Distill-GGUF ")  # copies as written
    assert box.evaluate("b => b.scrollWidth <= b.clientWidth + 1")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    page.close()
