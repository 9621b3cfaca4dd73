"""On screen, issue 16: short setup names on the Analysis page that break only between their parts, and tables
without dark bands at their edges on Streamlit's dark theme (headless Chromium at 1440 and 390 px)."""

from __future__ import annotations

import io

import pytest

from benchcards.read import analysis_inputs
from benchcards.read.store import Store
from tests.test_browser import CHROMIUM, open_page, server  # noqa: F401  (server: a fixture; browser is conftest's)
from ui import html

SETUP_PARTS = """() => { const table = document.querySelector('table.bc-table[aria-label=time-to-answer]');
    const i = Array.from(table.querySelectorAll('th')).findIndex(th => th.textContent === 'Setup') + 1;
    return Array.from(table.querySelectorAll(`tbody tr td:nth-child(${i})`)).map(td => [td.textContent,
      Array.from(td.querySelectorAll('.bc-nw')).map(s => new Set(Array.from(s.getClientRects())
        .filter(b => b.width > 0).map(b => Math.round(b.top))).size)]); }"""


@pytest.mark.integration
def test_analysis_names_setups_short_with_their_gpu(demo_db):
    data = analysis_inputs.analysis_data(Store(demo_db))
    names = dict(zip(data.setups.setup_id, data.setups.title))
    assert names["synthetic-00001-qwen35-35b-a3b-q8_0"] == "Qwen3.5-35B-A3B · Q8_0 · llama.cpp b11860 · RTX 4090"
    assert names["qwen38-35b-a3b-distill-q4km-5060ti"].endswith(" · RTX 5060 Ti 16 GB")
    assert len(set(names.values())) == len(names)  # they tell the setups apart
    assert all("NVIDIA" not in n and "Synthetic:" not in n for n in names.values())
    full = dict(zip(data.setups.setup_id, data.setups.full_title))  # the full title is kept beside it
    assert full["synthetic-00001-qwen35-35b-a3b-q8_0"].startswith("Synthetic: Qwen3.5-35B-A3B Q8_0 on NVIDIA")


@pytest.mark.unit
def test_a_name_of_parts_breaks_only_between_its_short_parts():
    cell = html.cell_text("Qwen3.5-35B-A3B · Q8_0 · llama.cpp b11860 · RTX 5060 Ti 16 GB")
    assert cell == ('<span class="bc-nw">Qwen3.5-35B-A3B</span> · <span class="bc-nw">Q8_0</span> · '
                    '<span class="bc-nw">llama.cpp b11860</span> · <span class="bc-nw">RTX 5060 Ti 16 GB</span>')
    long = html.cell_text("RTX 4090 · needs system RAM: expert weights of 23 layers")
    assert long.startswith('<span class="bc-nw">RTX 4090</span> · needs system RAM')  # a long part wraps
    assert html.cell_text("<b> · x").startswith('<span class="bc-nw">&lt;b&gt;</span>')  # still escaped


@pytest.mark.browser
@pytest.mark.skipif(not __import__("pathlib").Path(CHROMIUM).exists(), reason="no Chromium")
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_analysis_setup_column_breaks_between_name_parts_only(server, browser, size):  # noqa: F811
    page = open_page(browser, f"{server}/Analysis", size, "light")
    try:
        cells = page.evaluate(SETUP_PARTS)
        assert cells and all(" · " in text for text, _ in cells)
        for text, parts in cells:
            assert parts and all(lines == 1 for lines in parts), (text, parts)  # no part split over lines
            assert len(text) < 90, text
        if size == "desktop":  # the whole table fits the page at 1440 px
            over = page.evaluate("""() => { const d = document.querySelector(
                'table.bc-table[aria-label=time-to-answer]').closest('.bc-scroll');
                return d.scrollWidth - d.clientWidth; }""")
            assert over <= 1, over
    finally:
        page.context.close()


def _strip_share(png: bytes, xs: range, ys: range, colour: tuple[int, int, int]) -> float:
    """Share of the pixels in the strip that are the page's own colour (within 3 per channel)."""
    from PIL import Image

    im = Image.open(io.BytesIO(png)).convert("RGB")
    hits = total = 0
    for x in xs:
        for y in ys:
            total += 1
            hits += all(abs(a - b) <= 3 for a, b in zip(im.getpixel((x, y)), colour))
    return hits / total


@pytest.mark.browser
@pytest.mark.skipif(not __import__("pathlib").Path(CHROMIUM).exists(), reason="no Chromium")
@pytest.mark.parametrize(("size", "theme"), [("phone", "dark"), ("phone", "light"), ("desktop", "dark")])
def test_wide_tables_have_no_bands_at_their_edges(server, browser, size, theme):  # noqa: F811
    """The edges of a table box are the page's colour: the dark theme showed a band of another dark at both
    edges (a painted cover of the wrong colour); where columns are hidden the table itself fades out."""
    page = open_page(browser, f"{server}/Analysis", size, theme)
    try:
        box = page.evaluate("""() => { const d = document.querySelector(
            'table.bc-table[aria-label=time-to-answer]').closest('.bc-scroll'); d.scrollIntoView();
            const r = d.getBoundingClientRect(), t = d.querySelector('tbody').getBoundingClientRect();
            return {left: r.left, right: r.right, top: t.top, bottom: Math.min(t.bottom, innerHeight - 2),
                    over: d.scrollWidth > d.clientWidth + 1}; }""")
        page.wait_for_timeout(300)
        png = page.screenshot()
        from PIL import Image

        im = Image.open(io.BytesIO(png)).convert("RGB")
        ys = range(int(box["top"]) + 2, int(box["bottom"]) - 2)
        bg = im.getpixel((max(1, int(box["left"]) - 3), ys.start))  # the page just beside the box
        left = _strip_share(png, range(int(box["left"]) + 1, int(box["left"]) + 4), ys, bg)
        right = _strip_share(png, range(int(box["right"]) - 3, int(box["right"]) - 1), ys, bg)
        assert left >= 0.9 and right >= 0.9, (bg, left, right)
        if size == "phone":
            assert box["over"]  # the phone table scrolls, and its hidden side fades into the page
    finally:
        page.context.close()


@pytest.mark.integration
def test_run_live_intro_follows_the_chosen_mode(demo_db, monkeypatch):
    from tests.test_app import run

    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    at = run("pages/6_Run_live.py")
    intro = {}
    for mode in ("Speed", "Quality", "Memory test", "Sweep"):
        at.radio(key="live_mode").set_value(mode).run()
        assert not at.exception, [e.value for e in at.exception]
        intro[mode] = at.markdown[0].value
    assert intro["Speed"].startswith("Measure a server running on this machine")
    assert "demo-server --port 8089 --slots 4 --ctx 262144" in intro["Speed"]
    assert intro["Quality"].startswith("Score a server") and "http://127.0.0.1:8089" in intro["Quality"]
    memory, sweep = intro["Memory test"], intro["Sweep"]
    assert memory.startswith("How much context fits") and "decode, prefill at depth" not in memory
    assert "-m live demo-server -c {ctx} --slots 1 --load-s 1" in memory and "--refuse-above 65536" in memory
    assert "measure `http://127.0.0.1:8089`" not in memory  # this mode starts the server itself
    assert sweep.startswith("Which server setting is faster") and "-m live demo-server -c {ctx}" in sweep
    assert len(set(intro.values())) == 4


@pytest.mark.integration
def test_the_suggested_memory_test_demo_command_answers_and_refuses_like_llama_cpp(tmp_path, capsys):
    """The command the memory-test intro suggests really runs: the small size answers, the one above the demo's
    limit does not load, with llama.cpp's own line as the reason."""
    import sys

    from live.__main__ import main
    from live.progress import demo_fit_command

    cmd = " ".join(demo_fit_command(sys.executable))
    assert main(["fit", "--server-cmd", cmd, "--sizes", "4K,128K", "--gpu", "cpu", "--keep-going",
                 "--out", str(tmp_path)]) in (0, 1)
    said = capsys.readouterr()
    out = said.out + said.err
    assert "4,096: answered" in out
    assert "131,072: did not load" in out and "failed to allocate buffer for kv cache" in out
    assert "largest size that answered: 4,096 tokens" in out
