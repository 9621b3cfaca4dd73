"""What a person sees, in headless Chromium against a real `streamlit run` on a free loopback port.

Every page at desktop (1440×900) and phone (390×844) sizes, light and dark: no exception, no
"None"/"nan"/"<NA>", no sideways scrolling of the page, chart titles and legends clear of the
plot, and a full-page screenshot in test-artifacts/. One server serves the whole module (a fresh
one for the deep-link test); each test opens its own browser context.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.helpers import demo_count
from tests.live_servers import free_port

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
from tests.helpers import CHROMIUM  # noqa: E402

SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
SEED0 = "qwen35-35b-a3b-udq4kxl-dgx-spark"
SYN1 = "synthetic-00001-qwen35-35b-a3b-q8_0"
SYN2 = "synthetic-00002-qwen35-35b-a3b-q4_k_m"
READY = "[data-testid=stApp][data-test-script-state=notRunning]"
BAD_TEXT = re.compile(r"\bNone\b|\bnan\b|<NA>|\bNaN\b|\bNaT\b")

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")]


def start_streamlit(db: Path, port: int, local: Path | None = None) -> subprocess.Popen:
    """`streamlit run app.py` with the repository's .streamlit/config.toml (the production settings)."""
    env = {**os.environ, "BENCHCARDS_DB": str(db)}
    if local is not None:
        env["BENCHCARDS_LOCAL"] = str(local)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("streamlit did not start: " + proc.stdout.read().decode(errors="replace")[-2000:])


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def server(demo_db):
    """One site for the whole module."""
    port = free_port()
    proc = start_streamlit(demo_db, port)
    yield f"http://127.0.0.1:{port}"
    stop(proc)


SIZES = {"desktop": (1440, 900), "phone": (390, 844)}


def open_page(browser, url: str, size: str = "desktop", theme: str = "light"):
    """A page in a fresh context, loaded and settled (charts painted)."""
    w, h = SIZES[size]
    ctx = browser.new_context(viewport={"width": w, "height": h}, color_scheme=theme)
    page = ctx.new_page()
    page.goto(url)
    page.wait_for_selector(READY, timeout=60_000)
    page.wait_for_timeout(400)
    page.wait_for_selector(READY, timeout=60_000)
    if page.locator(".vega-embed").count():
        page.wait_for_selector(".vega-embed svg", state="attached", timeout=30_000)
    page.wait_for_timeout(600)
    assert page.locator("[data-testid=stException]").count() == 0, page.locator(
        "[data-testid=stException]").first.inner_text()
    return page


def screenshot(page, name: str) -> None:
    """A full-page screenshot (Streamlit scrolls inside its own container, so grow the viewport to fit)."""
    ARTIFACTS.mkdir(exist_ok=True)
    size = page.viewport_size
    full = page.evaluate("() => Math.max(...Array.from(document.querySelectorAll("
                         "'[data-testid=stMain], [data-testid=stAppViewContainer]')).map(e => e.scrollHeight))")
    page.set_viewport_size({"width": size["width"], "height": min(max(full, size["height"]), 16000)})
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    page.set_viewport_size(size)


def visible_text(page) -> str:
    """The main area's visible text plus every chart's SVG text."""
    return page.locator("[data-testid=stMain]").inner_text() + "\n" + page.evaluate(
        "() => Array.from(document.querySelectorAll('.vega-embed svg text')).map(t => t.textContent).join('\\n')")


CHART_BOXES = """() => Array.from(document.querySelectorAll('.vega-embed svg')).map(svg => {
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect();
                     return {l: r.left, t: r.top, r: r.right, b: r.bottom, w: r.width, h: r.height}; };
  const root = svg.querySelector('g.mark-group.role-frame.root');
  const plot = root.querySelector(':scope > g > path.background');
  const axes = Array.from(root.querySelectorAll(':scope > g > g > g.role-axis')).map(box);
  return {svg: box(svg), plot: box(plot), title: box(root.querySelector('g.role-title')),
          legends: Array.from(root.querySelectorAll('g.role-legend')).map(box),
          axisBottom: Math.max(...axes.map(a => a.b)),
          legendFills: Array.from(root.querySelectorAll('g.role-legend path')).map(
            p => getComputedStyle(p).fill).filter(f => f && f !== 'none')};
})"""


def check_charts(page, theme: str, fixed_height: int | None = None) -> int:
    """Titles above the plot, legends below its axes and inside the chart, the plot's own height (``fixed_height``
    when given: legends never take from it), legend symbols visible on a dark page."""
    charts = [c for c in page.evaluate(CHART_BOXES) if c["svg"]["w"] > 0]  # not those in a closed expander
    for c in charts:
        plot = c["plot"]
        assert plot["h"] >= 120 and plot["w"] >= 150, c  # a legend or long labels never squeeze the plot
        if fixed_height:
            assert abs(plot["h"] - fixed_height) <= 1, c
        if c["title"]:
            assert c["title"]["b"] <= plot["t"] + 1, c
        for lg in c["legends"]:
            assert lg["t"] >= c["axisBottom"] - 1, c  # below the x axis, not over the plot
            assert lg["r"] <= c["svg"]["r"] + 1, c  # not cut at the right
        for fill in c["legendFills"]:
            rgb = [int(x) for x in re.findall(r"\d+", fill)[:3]]
            if theme == "dark" and len(rgb) == 3:
                assert sum(rgb) > 150, fill  # no black symbol on a dark page
    return len(charts)


def check_no_sideways_scroll(page) -> None:
    width = page.viewport_size["width"]
    sideways = page.evaluate("""() => Array.from(document.querySelectorAll(
        '[data-testid=stMain], [data-testid=stAppViewContainer], html, body')).map(e => e.scrollWidth - e.clientWidth)""")
    assert max(sideways) <= 1, sideways
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1


PAGES = [
    ("", "overview", "benchcards"),
    (f"Setup_card?setup={SEED}", "setup-card", "Qwen3.8-35B-A3B-Distill Q4_K_M on one RTX 5060 Ti 16 GB"),
    (f"Setup_card?setup={SEED0}", "setup-card-tasks", "Qwen3.5-35B-A3B UD-Q4_K_XL on a DGX Spark"),
    ("Scaling_curves", "scaling-curves", "Scaling curves"),
    ("Quality_and_margins", "quality", "Quality & margins"),
    (f"Compare?setups={SEED}&setups={SYN1}&setups={SYN2}", "compare", "Compare setups"),
    ("Upload", "upload", "Upload raw results"),
    ("Run_live", "run-live", "Run live"),
    ("Analysis", "analysis", "Analysis"),
]


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
@pytest.mark.parametrize("path,shot,heading", PAGES, ids=[p[1] for p in PAGES])
def test_every_page_at_every_size_and_theme(server, browser, path, shot, heading, size, theme):
    page = open_page(browser, f"{server}/{path}", size, theme)
    try:
        assert page.get_by_role("heading", name=heading).first.is_visible()
        background = page.evaluate("() => getComputedStyle(document.querySelector('[data-testid=stApp]'))"
                                   ".backgroundColor")
        level = sum(int(x) for x in re.findall(r"\d+", background)[:3])
        assert (level < 200) == (theme == "dark"), background  # the theme really is the one asked for
        text = visible_text(page)
        assert not BAD_TEXT.search(text), BAD_TEXT.search(text)
        check_no_sideways_scroll(page)
        fixed = 260 if shot in ("scaling-curves", "setup-card") else None  # benchcards.charts.charts.HEIGHT
        n_charts = check_charts(page, theme, fixed)
        assert n_charts >= {"scaling-curves": 5, "quality": 1, "setup-card": 1}.get(shot, 0), n_charts
        assert page.locator("[data-testid=stAppDeployButton]").count() == 0  # production: no Deploy button
        screenshot(page, f"{shot}-{size}-{theme}")
    finally:
        page.context.close()


def test_overview_shows_the_headline_columns_without_scrolling_at_1440(server, browser):
    page = open_page(browser, f"{server}/")
    try:
        table = page.locator("table.bc-overview")
        table.wait_for(timeout=30_000)  # drawn after the script state turns idle on a loaded machine (CI, once)
        assert table.is_visible() and page.locator(".bc-ov-cards").is_hidden()
        fits = page.evaluate("""() => { const t = document.querySelector('table.bc-overview');
            return [t.scrollWidth, t.parentElement.clientWidth, t.getBoundingClientRect().right]; }""")
        assert fits[0] <= fits[1] + 1 and fits[2] <= 1440, fits
        for name in ("Setup", "Decode (tok/s)", "Prefill at 8K (tok/s)", "First token at 2K (s)",
                     "Largest context (tokens)", "MMLU-Pro", "GPQA Diamond", "IFEval", "LiveCodeBench",
                     "Other tests", "Hardware"):
            head = table.locator("th", has_text=name).first
            assert head.is_visible(), name
            assert head.bounding_box()["x"] + head.bounding_box()["width"] <= 1440, name
        row = table.locator("tr", has=page.locator(f"a[href='Setup_card?setup={SEED}']"))
        assert "57.3 % ± 4.8" in row.inner_text() and "63.4" in row.inner_text()
        link = row.locator("a").first
        assert link.get_attribute("title") == "Qwen3.8-35B-A3B-Distill Q4_K_M on one RTX 5060 Ti 16 GB, llama.cpp b12223"
        pages_before = len(page.context.pages)
        link.click()
        page.wait_for_url(f"**/Setup_card?setup={SEED}", timeout=30_000)
        assert len(page.context.pages) == pages_before  # the card opens in the same tab
        page.wait_for_selector(READY, timeout=60_000)
        page.get_by_text("63.4 tok/s").first.wait_for(timeout=30_000)
    finally:
        page.context.close()


def test_overview_on_a_phone_is_cards(server, browser):
    page = open_page(browser, f"{server}/", "phone", "dark")
    try:
        assert page.locator("table.bc-overview").is_hidden()
        cards = page.locator(".bc-ov-cards .bc-card")
        assert cards.count() == demo_count()
        seed = page.locator(".bc-card", has=page.locator(f"a[href='Setup_card?setup={SEED}']"))
        text = seed.inner_text()
        for figure in ("63.4 tok/s", "988.4 tok/s", "2.1 s", "131,072 tokens", "57.3 % ± 4.8", "RTX 5060 Ti 16 GB"):
            assert figure in text, figure
        box = seed.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    finally:
        page.context.close()


def test_one_formatted_value_per_figure_in_table_tile_and_tooltip(server, browser):
    """229/400 reads 57.3 % ± 4.8 in the overview, the card, the quality table and the chart tooltip;
    the seed's prefill at 8K reads 988.4 tok/s in the tile, the speed table and the curve's tooltip."""
    page = open_page(browser, f"{server}/Quality_and_margins?setups={SEED}")
    try:
        assert page.locator("table.bc-table", has_text="57.3 % ± 4.8").count() >= 1
        assert "57.3 % ± 4.8" in hover_tooltip(page, "MMLU-Pro")
    finally:
        page.context.close()
    page = open_page(browser, f"{server}/Setup_card?setup={SEED}")
    try:
        tile = page.locator(".bc-tile", has_text="Prefill at 8K")
        assert tile.locator(".bc-tile-value").inner_text() == "988.4 tok/s"
        row = page.locator("table.bc-table tr", has_text="Prefill at 8K").first
        assert "988.4 tok/s" in row.inner_text()
        quality = page.locator("table.bc-table tr", has_text="MMLU-Pro").first
        assert "57.3 % ± 4.8" in quality.inner_text()
    finally:
        page.context.close()
    page = open_page(browser, f"{server}/Scaling_curves?setups={SEED}")
    try:
        assert "988.4 tok/s" in hover_tooltip(page, "8K (8,192 tokens)", chart=0)
    finally:
        page.context.close()


def hover_tooltip(page, wanted: str, chart: int = 0) -> str:
    """Hover the points of a chart until one's tooltip mentions ``wanted``; that tooltip's text ('' if none)."""
    points = page.locator(".vega-embed").nth(chart).locator("g.role-mark.mark-symbol path")
    for i in range(points.count()):
        points.nth(i).hover(force=True)
        page.wait_for_timeout(150)
        tip = page.locator("#vg-tooltip-element")
        if tip.count() and tip.is_visible():
            text = tip.inner_text()
            if wanted in text:
                return text
    return ""


def test_quality_has_one_row_per_test(server, browser):
    page = open_page(browser, f"{server}/Quality_and_margins")
    try:
        labels = page.evaluate("""() => Array.from(document.querySelectorAll('.vega-embed svg g.role-axis-label text'))
                                  .map(t => t.textContent)""")
        tests = [t for t in labels if not re.fullmatch(r"\d+", t)]
        assert len(tests) == len(set(tests)) and "Long text 8K (RULER)" in tests and "RULER 8K" not in tests
    finally:
        page.context.close()


def test_sidebar_names_the_overview_and_deep_links_work_on_a_fresh_server(demo_db, browser):
    port = free_port()
    proc = start_streamlit(demo_db, port)
    try:
        page = open_page(browser, f"http://127.0.0.1:{port}/Setup_card?setup={SEED}")
        assert page.get_by_text("63.4 tok/s").first.is_visible()
        assert "setup=" + SEED in page.url
        nav = page.locator("[data-testid=stSidebar] [data-testid=stPageLink-NavLink]")
        assert nav.first.inner_text().strip().endswith("Overview")
        assert page.locator("[data-testid=stSidebarNav]").count() == 0  # Streamlit's own list (naming "app") is off
        nav.first.click()
        page.wait_for_selector("table.bc-overview", timeout=30_000)
        page.context.close()
        page = open_page(browser, f"http://127.0.0.1:{port}/Setup_card?setup=not-a-setup")
        assert page.get_by_text("No setup with the id “not-a-setup”").first.is_visible()
        page.context.close()
    finally:
        stop(proc)


def test_a_filter_change_updates_the_url(server, browser):
    page = open_page(browser, f"{server}/")
    try:
        page.get_by_text("Sort by").wait_for()
        sidebar = page.locator("[data-testid=stSidebar]")
        sidebar.get_by_text("on", exact=True).click()  # thinking: on
        page.wait_for_function("() => window.location.search.includes('thinking')", timeout=20_000)
        page.wait_for_selector(READY, timeout=60_000)
        assert parse_qs(urlparse(page.url).query)["thinking"] == ["on"]
        screenshot(page, "overview-after-filter")
        assert page.get_by_text("No setup matches").first.is_visible()
    finally:
        page.context.close()


def test_run_live_page_measures_the_demo_server(demo_db, browser, tmp_path):
    from tests.live_servers import demo_server

    db = tmp_path / "site.duckdb"
    db.write_bytes(demo_db.read_bytes())
    port = free_port()
    proc = start_streamlit(db, port, local=tmp_path / "local")
    demo = demo_server(decode_tps=600, prefill_tps=100000, slots=2)
    try:
        page = open_page(browser, f"http://127.0.0.1:{port}/Run_live")
        page.get_by_label("Server address").fill(demo.url)
        page.get_by_role("textbox", name="Prefill depths").fill("1k, 2K")
        page.get_by_role("textbox", name="Requests at once").fill("1,2")
        page.get_by_label("GPU", exact=True).fill("Demo GPU")
        page.get_by_role("spinbutton", name="VRAM per GPU (GiB)").fill("24")
        page.get_by_role("button", name="Start").click()
        progress = page.get_by_text(re.compile(r"\d+ of 18 requests · (about .+ left|estimating)")).first
        progress.wait_for(timeout=60_000)  # progress per request, with the time left, while it runs
        screenshot(page, "run-live-running")
        page.get_by_text("Saved and added to the site").wait_for(timeout=90_000)
        page.wait_for_selector(READY, timeout=60_000)
        assert "Prefill at 1K" in page.locator("[data-testid=stMain]").inner_text()
        screenshot(page, "run-live-after")
        assert page.locator("[data-testid=stException]").count() == 0
        page.get_by_text("Open its card").click()
        page.wait_for_url("**/Setup_card?setup=*", timeout=30_000)
        page.wait_for_selector(READY, timeout=60_000)
        page.wait_for_timeout(500)
        page.wait_for_selector(READY, timeout=60_000)
        screenshot(page, "run-live-card")
        # a run against the demo server is labelled as a demo (synthetic), never as verified raw llama.cpp
        assert page.get_by_text("synthetic").first.is_visible()
        assert page.get_by_text("not a real measurement").first.is_visible()
        assert page.get_by_text("verified raw").count() == 0
        page.context.close()
    finally:
        demo.stop()
        stop(proc)


def test_uploading_an_existing_demo_id_is_refused_and_every_page_still_loads(demo_db, browser, tmp_path):
    import hashlib
    import io
    import zipfile

    db = tmp_path / "site.duckdb"
    db.write_bytes(demo_db.read_bytes())
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    sid = "synthetic-00001-qwen35-35b-a3b-q8_0"
    folder = ROOT / "data" / "raw" / sid
    archive = tmp_path / "demo-again.zip"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, f"{sid}/{p.relative_to(folder).as_posix()}")
    archive.write_bytes(buf.getvalue())
    port = free_port()
    proc = start_streamlit(db, port, local=tmp_path / "local")
    try:
        page = open_page(browser, f"http://127.0.0.1:{port}/Upload")
        page.locator("[data-testid=stFileUploaderDropzoneInput]").set_input_files(str(archive))
        page.get_by_text("demo-again.zip").wait_for(timeout=30_000)
        page.get_by_role("button", name="Validate and add").click()
        page.get_by_text("Rejected: 1 problem(s). Nothing was stored.").wait_for(timeout=60_000)
        page.wait_for_selector(READY, timeout=60_000)
        screenshot(page, "upload-demo-id-refused")
        body = page.inner_text("body")
        assert f"$.setup_id: '{sid}' already belongs to data/raw/{sid}" in body
        assert str(ROOT) not in body  # the host's directory layout is not shown to an uploader
        assert page.locator("[data-testid=stException]").count() == 0
        page.context.close()
        for path, _shot, heading in PAGES:
            page = open_page(browser, f"http://127.0.0.1:{port}/{path}")  # fails on any exception shown
            assert page.get_by_role("heading", name=heading).first.is_visible(), path
            assert "could not be built" not in page.inner_text("body")
            page.context.close()
    finally:
        stop(proc)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not (tmp_path / "local" / sid).exists()


LINES_PER_CELL = """(col) => { const table = Array.from(document.querySelectorAll('table.bc-table'))
      .find(t => Array.from(t.querySelectorAll('th')).some(th => th.textContent === col));
    const i = Array.from(table.querySelectorAll('th')).findIndex(th => th.textContent === col) + 1;
    return Array.from(table.querySelectorAll(`tbody tr td:nth-child(${i})`)).map(td => {
      const r = document.createRange(); r.selectNodeContents(td);
      const tops = new Set(Array.from(r.getClientRects()).filter(b => b.width > 0).map(b => Math.round(b.top)));
      return [td.textContent, tops.size]; }); }"""


def test_quality_figures_never_wrap_inside_at_1440(server, browser):
    """'52.4 – 62.0 %' and '229 / 400' stay on one line: a lone '%' or '/ 400' reads as another value."""
    page = open_page(browser, f"{server}/Quality_and_margins")
    try:
        for col in ("Interval", "Right / n", "Result (95 % margin)", "Token limit"):
            cells = page.evaluate(LINES_PER_CELL, col)
            assert cells, col
            if col == "Right / n":
                assert "229 / 400" in [t for t, _ in cells]
            # a result may wrap between its value and its margin ('± 4.8') or interval ('(73.9–94.5)'), never inside
            broken = [t for t, lines in cells if lines != 1 and not (col.startswith("Result") and
                                                                    (" ± " in t or " (" in t) and lines == 2)]
            assert not broken, (col, broken)
    finally:
        page.context.close()


def test_card_tables_on_a_phone_say_they_scroll_sideways(server, browser):
    page = open_page(browser, f"{server}/Setup_card?setup={SEED}", "phone", "light")
    try:
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('.bc-scroll')).filter(d => d.offsetParent)
            .map(d => ({over: d.scrollWidth > d.clientWidth + 1,
                        hint: !!(d.previousElementSibling && d.previousElementSibling.classList.contains('bc-scroll-hint')
                                 && d.previousElementSibling.offsetParent),
                        fade: getComputedStyle(d).maskImage || getComputedStyle(d).webkitMaskImage,
                        cover: getComputedStyle(d).backgroundImage}))""")
        cut = [w for w in wide if w["over"]]
        assert cut, "expected at least one card table wider than a phone"
        for w in cut:
            assert w["hint"], w  # 'Swipe sideways for more columns →' above it
            assert "linear-gradient" in w["fade"], w  # and the table fades out on the edge that hides columns
            assert w["cover"] == "none", w  # with no painted cover (its colour showed as bands on the dark theme)
        assert page.get_by_text("Swipe sideways for more columns →").first.is_visible()
        check_no_sideways_scroll(page)  # the page itself never scrolls sideways: only the table does
    finally:
        page.context.close()
    page = open_page(browser, f"{server}/Setup_card?setup={SEED}", "desktop", "light")
    try:
        assert not page.get_by_text("Swipe sideways for more columns →").first.is_visible()
    finally:
        page.context.close()


def test_the_time_to_answer_chart_names_every_setup_whole_and_its_bar_parts_at_1440(server, browser):
    """The Analysis page's time-to-answer chart at 1,440 px: every setup's name drawn whole (two lines where it is
    long, never cut with '…'), a legend for the two parts of each bar, x labels apart, and the method tests it
    leaves out named once."""
    page = open_page(browser, f"{server}/Analysis")
    try:
        svg = page.locator(".vega-embed svg").first
        svg.wait_for(timeout=30_000)
        legend = svg.locator(".role-legend-label text").all_text_contents()
        assert legend == ["first token", "answer"], legend
        labels = svg.locator(".role-axis-label text").all_text_contents()
        names = [t for t in labels if "·" in t]
        assert len(names) >= 5 and not any("…" in t for t in names), names
        boxes = page.evaluate("""() => Array.from(document.querySelector('.vega-embed svg')
            .querySelectorAll('.role-axis-label text')).filter(t => !t.textContent.includes('·'))
            .map(t => { const r = t.getBoundingClientRect(); return [r.left, r.right]; })""")
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(boxes)), boxes  # no two x labels touch
        assert page.get_by_text("Left out", exact=False).count() == 1
    finally:
        page.context.close()
