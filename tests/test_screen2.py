"""Issue 16, on screen (second part): llama-bench depth tests on the scaling curves, the export's tier search,
builds listed once, a first build without warnings, readable chart ticks and dark-mode chart texts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchcards.charts import charts
from benchcards.compute import builds
from benchcards.read import card_data, curves, overview_rows
from benchcards.read.store import Store
from benchcards.site import card_pages, exporter
from ingest.__main__ import main
from ingest.importers import Options, Source, convert
from ingest.importers.store import save
from tests.test_builds import bench_file

pytestmark = pytest.mark.integration

#: llama-bench -d 0,8192 as its markdown prints it (numbers of a 7B Q4_K_M on one GPU)
DEPTH_MD = """\
| model                          |       size |     params | backend    | ngl |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |
| llama 7B Q4_K - Medium         |   3.80 GiB |     6.74 B | CUDA       |  99 |           pp512 |      4210.55 ± 12.31 |
| llama 7B Q4_K - Medium         |   3.80 GiB |     6.74 B | CUDA       |  99 |           tg128 |        151.20 ± 0.41 |
| llama 7B Q4_K - Medium         |   3.80 GiB |     6.74 B | CUDA       |  99 |   pp512 @ d8192 |      2987.10 ± 20.02 |
| llama 7B Q4_K - Medium         |   3.80 GiB |     6.74 B | CUDA       |  99 |   tg128 @ d8192 |        118.64 ± 0.93 |

build: 1a2b3c4 (6850)
"""


@pytest.fixture(scope="module")
def depth_db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lbdepth")
    f = root / "bench.md"
    f.write_text(DEPTH_MD)
    db = root / "x.duckdb"
    assert main([str(f), "--gpu", "NVIDIA GeForce RTX 4090", "--vram-gib", "24", "--db", str(db),
                 "--out", str(root / "l")]) == 0
    return db


def test_llama_bench_depth_tests_are_points_on_the_depth_curves(depth_db):
    store = Store(depth_db)
    (sid,) = [s for s, _ in card_data.setup_ids(store)]
    assert curves.curve_setups(store) == [sid]  # chosen by default on the Scaling curves page
    series = curves.series(store, [sid], card_pages.SERIES_METRICS)
    pre = charts.depth_points(series, "prefill")
    dec = charts.depth_points(series, "decode")
    # x: the context at the test's end (512 tokens after 8,192 untimed ones), one line per test
    assert [(r.tokens, round(r.value, 2)) for r in pre.itertuples()] == [(512, 4210.55), (8704, 2987.1)]
    assert [(r.tokens, round(r.value, 2)) for r in dec.itertuples()] == [(128, 151.2), (8320, 118.64)]
    assert set(pre.part) == {"llama-bench tests"} and pre.line.nunique() == 1
    assert "pp512 @ d8192" in pre.depth_text.iloc[1]
    # the chart draws the bench line apart (its own detail), with the test named in the tooltip
    spec = json.dumps(charts.depth_chart(series, "decode").to_dict())
    assert '"detail": {"field": "line"' in spec and "tg128 @ d8192" in spec


def test_the_exported_card_draws_the_llama_bench_depth_points(depth_db, tmp_path):
    out = tmp_path / "site"
    exporter.export(depth_db, out)
    (card,) = list((out / "setups").glob("*.html"))
    html = card.read_text()
    specs_json = [json.loads(m) for m in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', html,
                                                    re.S)]
    text = json.dumps(specs_json)
    assert "Prefill vs prompt depth" in text and "Decode vs prompt depth" in text
    assert "pp512 @ d8192" in text and "tg128 @ d8192" in text


@pytest.fixture(scope="module")
def demo_site(demo_db, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export2") / "site"
    exporter.export(demo_db, out)
    return out


@pytest.fixture(scope="module")
def b():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield browser
        browser.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no Chromium")
def test_the_export_search_for_a_size_lists_that_tier_only(demo_db, demo_site, b):
    ov = overview_rows.overview(Store(demo_db))
    tier_of = dict(zip(ov.setup_id, ov.tier))
    page = b.new_page()
    page.goto((demo_site / "index.html").as_uri())
    for query, tier in (("16 GB", "16 GB"), ("24gb", "24 GB"), ("qwen 16 GB", "16 GB")):
        page.fill("#search", "")
        page.fill("#search", query)
        page.wait_for_selector("#search-results li.count")
        hrefs = page.locator("#search-results li a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
        setups = [re.search(r"setups/([^/]+)\.html$", h).group(1) for h in hrefs if "setups/" in h]
        want = sorted(s for s, t in tier_of.items() if t == tier)
        assert setups and all(tier_of[s] == tier for s in setups), (query, [tier_of[s] for s in setups])
        if query == "16 GB":
            shown = page.locator("#search-results li a").all_inner_texts()
            assert "16 GB tier" in shown and len(setups) == min(len(want), 19)
    page.close()


def _bench(build: int, commit: str) -> Source:
    rows = json.loads(bench_file(build, {(0, 128, 0): [100.0, 90.0, 110.0]}).data)
    for r in rows:
        r["build_commit"] = commit
    return Source(f"b{build}-{commit}.json", json.dumps(rows).encode())


def test_the_builds_page_names_each_build_once(tmp_path):
    """Two setups of build b102 (two commits with one build number) beside b101: b102 is listed once."""
    db = tmp_path / "x.duckdb"
    save(convert([_bench(101, "c101"), _bench(102, "c102a"), _bench(102, "c102b")], Options()), db, tmp_path / "l")
    assert len(card_data.setup_ids(Store(db))) == 3
    exporter.export(db, tmp_path / "site", with_raw=False)
    page = (tmp_path / "site" / "builds.html").read_text()
    line = re.search(r"Builds: (.*?)</p>", page).group(1)
    assert re.sub(r"<[^>]+>", "", line) == "b101, b102 (2 setups)"
    # one build measured twice is no timeline
    db2 = tmp_path / "y.duckdb"
    save(convert([_bench(102, "c102a"), _bench(102, "c102b")], Options()), db2, tmp_path / "l2")
    assert builds.timelines(Store(db2)) == []


def test_a_first_build_of_the_shipped_demo_data_prints_no_warnings(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, BENCHCARDS_LOCAL=str(tmp_path / "local"))
    done = subprocess.run([sys.executable, "-m", "ingest.build", "--db", str(tmp_path / "x.duckdb")], env=env,
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "no warnings" in out and not [ln for ln in out.splitlines() if "warning:" in ln], out


def _wait_charts(page, path: Path) -> None:
    n = path.read_text().count('data-chart="')
    assert n, path
    page.wait_for_function(f"document.querySelectorAll('.chart svg').length >= {n}", timeout=30_000)


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no Chromium")
def test_chart_texts_are_readable_on_a_dark_phone(demo_site, b):
    ctx = b.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = ctx.new_page()
    # speed vs quality: tick labels are short numbers, never '111.722'
    sq = demo_site / "analysis" / "speed-quality-mmlu-pro-24-gb.html"
    page.goto(sq.as_uri())
    _wait_charts(page, sq)
    ticks = page.locator('g[aria-label^="X-axis"] .role-axis-label text').evaluate_all(
        "ts => ts.map(t => t.textContent)")
    assert ticks, "no x ticks"
    assert all(len(re.sub(r"\D", "", t).lstrip("0")) <= 3 for t in ticks), ticks
    # time to answer: the subtitle is drawn in the theme's grey (not black on the dark page), and the bars of
    # setups held beyond their measured depths keep a full-colour outline
    tta = demo_site / "analysis" / "time-to-answer-2k-500-words.html"
    page.goto(tta.as_uri())
    _wait_charts(page, tta)
    sub = page.locator(".role-title-subtitle text").first
    lines = sub.evaluate("t => Array.from(t.querySelectorAll('tspan')).map(s => s.textContent)")
    # the sizes, then what a pale bar means (this page has setups held beyond their measured depths)
    assert lines[0].endswith("word answer") and lines[1].startswith("pale: "), lines
    assert sub.evaluate("t => getComputedStyle(t).fill") not in ("rgb(0, 0, 0)", "#000", "black")
    bars = page.locator(".mark-rect path").evaluate_all(
        "ps => ps.map(p => [p.getAttribute('fill-opacity'), p.getAttribute('stroke')])")
    held = [s for o, s in bars if o == "0.3"]
    assert held and all(s and s != "none" for s in held), bars
    # a card's depth charts: axis titles lie inside the chart on a phone
    card = next(p for p in (demo_site / "setups").glob("*.html") if "Prefill vs prompt depth" in p.read_text())
    page.goto(card.as_uri())
    _wait_charts(page, card)
    cut = page.evaluate("""() => Array.from(document.querySelectorAll('.chart svg')).flatMap(svg => {
        const box = svg.getBoundingClientRect();
        return Array.from(svg.querySelectorAll('.role-axis-title text')).map(t => [t.textContent,
            t.getBoundingClientRect()]).filter(([_, r]) => r.left < box.left - 1 || r.right > box.right + 1
            || r.top < box.top - 1 || r.bottom > box.bottom + 1).map(([s]) => s); })""")
    assert cut == [], cut
    ctx.close()


def test_a_log_speed_axis_ticks_at_round_numbers():
    import pandas as pd

    rows = pd.DataFrame({"setup_id": ["a", "b", "c"], "title": ["A", "B", "C"], "tier": ["24 GB"] * 3,
                         "label": ["MMLU-Pro"] * 3, "speed_tps": [6.3, 35.0, 140.0], "pct": [50.0, 60.0, 70.0],
                         "margin_pp": [4.0, 4.0, 4.0], "lo_pct": [46.0, 56.0, 66.0], "hi_pct": [54.0, 64.0, 74.0],
                         "n": [400] * 3, "frontier": [True, False, True], "model": ["M"] * 3, "quant": ["Q"] * 3})
    spec = charts.speed_quality_chart(rows, "Decode (tok/s)").to_dict()
    axes = [lay["encoding"]["x"]["axis"] for lay in spec["layer"] if "x" in lay.get("encoding", {})]
    assert axes and all(a["values"] == [5.0, 10.0, 20.0, 50.0, 100.0, 200.0] for a in axes), axes


def test_the_scaling_curves_page_draws_a_llama_bench_setups_depth_tests(depth_db, monkeypatch):
    from tests.test_app import chart_data, run, specs, title_of

    monkeypatch.setenv("BENCHCARDS_DB", str(depth_db))
    at = run("pages/2_Scaling_curves.py")
    assert len(at.multiselect(key="setups").value) == 1  # chosen by default
    titles = [title_of(s) for s in specs(at)]
    assert titles[:2] == ["Prefill vs prompt depth", "Decode vs prompt depth"]
    pre, dec = chart_data(at, 0)[0], chart_data(at, 1)[0]
    assert sorted(zip(pre.tokens, pre.value_text)) == [(512, "4,210.6 tok/s"), (8704, "2,987.1 tok/s")]
    assert sorted(zip(dec.tokens, dec.value_text)) == [(128, "151.2 tok/s"), (8320, "118.6 tok/s")]
