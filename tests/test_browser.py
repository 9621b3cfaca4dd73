"""End to end in headless Chromium against a real `streamlit run` on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.live_servers import free_port

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
READY = "[data-testid=stApp][data-test-script-state=notRunning]"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")


def start_streamlit(db: Path, port: int, local: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "BENCHCARDS_DB": str(db)}
    if local is not None:
        env["BENCHCARDS_LOCAL"] = str(local)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
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


@pytest.fixture()
def server(demo_db):
    """A freshly started server per test (so deep links hit a fresh server)."""
    port = free_port()
    proc = start_streamlit(demo_db, port)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                    "--disable-component-update", "--no-first-run", "--disable-sync"])
        yield b
        b.close()


def open_page(browser, url: str, shot: str):
    page = browser.new_page(viewport={"width": 1400, "height": 2600})
    page.goto(url)
    page.wait_for_selector(READY, timeout=60_000)
    page.wait_for_timeout(500)
    page.wait_for_selector(READY, timeout=60_000)
    page.wait_for_timeout(1500)  # let the data grids and charts paint before the screenshot
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{shot}.png"), full_page=True)
    assert page.locator("[data-testid=stException]").count() == 0, page.locator(
        "[data-testid=stException]").first.inner_text()
    return page


PAGES = [
    ("", "overview", "benchcards"),
    (f"Setup_card?setup={SEED}", "setup-card", "Qwen3.8-35B-A3B-Distill Q4_K_M"),
    (f"Scaling_curves?setups={SEED}&setups=synthetic-00001-qwen35-35b-a3b-q8_0", "scaling-curves",
     "Scaling curves"),
    ("Quality_and_margins?setups=synthetic-00001-qwen35-35b-a3b-q8_0&setups=synthetic-00002-qwen35-35b-a3b-q4_k_m",
     "quality", "Quality & margins"),
    (f"Compare?setups={SEED}&setups=synthetic-00001-qwen35-35b-a3b-q8_0", "compare", "Compare setups"),
    ("Upload", "upload", "Upload raw results"),
]


def test_every_page_loads_without_an_exception(server, browser):
    for path, shot, heading in PAGES:
        page = open_page(browser, f"{server}/{path}", shot)
        assert page.get_by_role("heading", name=heading).first.is_visible(), shot
        page.close()


def test_deep_link_to_a_card_on_a_fresh_server(server, browser):
    page = open_page(browser, f"{server}/Setup_card?setup={SEED}", "deep-link-card")
    assert page.get_by_text("63.4 tok/s").first.is_visible()
    assert page.get_by_text("988.4 tok/s").first.is_visible()
    assert "setup=" + SEED in page.url
    page.close()


def test_a_filter_change_updates_the_url(server, browser):
    page = open_page(browser, f"{server}/", "overview-before-filter")
    page.get_by_text("Sort by").wait_for()
    sidebar = page.locator("[data-testid=stSidebar]")
    sidebar.get_by_text("on", exact=True).click()  # thinking: on
    page.wait_for_function("() => window.location.search.includes('thinking')", timeout=20_000)
    page.wait_for_selector(READY, timeout=60_000)
    assert parse_qs(urlparse(page.url).query)["thinking"] == ["on"]
    page.screenshot(path=str(ARTIFACTS / "overview-after-filter.png"), full_page=True)
    assert page.get_by_text("No setup matches").first.is_visible()
    page.close()


def test_run_live_page_measures_the_demo_server(demo_db, browser, tmp_path):
    from tests.live_servers import demo_server

    db = tmp_path / "site.duckdb"
    db.write_bytes(demo_db.read_bytes())
    port = free_port()
    proc = start_streamlit(db, port, local=tmp_path / "local")
    demo = demo_server(decode_tps=1500, prefill_tps=100000, slots=2)
    try:
        page = open_page(browser, f"http://127.0.0.1:{port}/Run_live", "run-live-before")
        page.get_by_label("Server address").fill(demo.url)
        page.get_by_label("Requests at once").fill("1,2")
        page.get_by_label("GPU", exact=True).fill("Demo GPU")
        page.get_by_role("button", name="Start").click()
        page.get_by_text("Saved and added to the site").wait_for(timeout=90_000)
        page.wait_for_selector(READY, timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "run-live-after.png"), full_page=True)
        assert page.locator("[data-testid=stException]").count() == 0
        page.get_by_text("Open its card").click()
        page.wait_for_url("**/Setup_card?setup=*", timeout=30_000)
        page.wait_for_selector(READY, timeout=60_000)
        page.wait_for_timeout(500)
        page.wait_for_selector(READY, timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "run-live-card.png"), full_page=True)
        # a run against the demo server is labelled as a demo (synthetic), never as verified raw llama.cpp
        assert page.get_by_text("synthetic").first.is_visible()
        assert page.get_by_text("not a real measurement").first.is_visible()
        assert page.get_by_text("verified raw").count() == 0
    finally:
        demo.stop()
        proc.terminate()
        proc.wait(timeout=20)
