"""The Upload page imports other tools' result files: detection shown, missing fields asked, cards linked.

Headless Chromium against a real `streamlit run` on a free loopback port.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from benchcards.read.store import Store
from tests.import_helpers import FIX
from tests.live_servers import free_port
from tests.test_browser import READY, start_streamlit

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
pytestmark = [pytest.mark.browser, pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")]


@pytest.fixture()
def site(demo_db, tmp_path):
    db = tmp_path / "site.duckdb"
    db.write_bytes(demo_db.read_bytes())
    port = free_port()
    proc = start_streamlit(db, port, local=tmp_path / "local")
    yield f"http://127.0.0.1:{port}", db, tmp_path / "local"
    proc.terminate()
    proc.wait(timeout=20)


def test_upload_page_imports_result_files(site):
    from playwright.sync_api import sync_playwright

    url, db, local = site
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = b.new_page(viewport={"width": 1280, "height": 1600})
        page.goto(f"{url}/Upload")
        page.wait_for_selector(READY, timeout=60_000)
        page.get_by_text("results of another tool", exact=True).click()
        # the rerun has drawn the import section (READY alone can match before the rerun starts)
        page.get_by_text("A whole folder of result files", exact=False).wait_for(timeout=60_000)
        page.wait_for_selector(READY, timeout=60_000)
        page.locator(".st-key-imp-files input[type=file]").set_input_files(str(FIX / "vllm-conc8-summary.json"))
        page.get_by_text("vllm (json)").first.wait_for(timeout=90_000)  # detected from the content
        page.wait_for_selector(READY, timeout=60_000)
        page.get_by_role("button", name="Import and add").click()
        page.get_by_text("Not imported").first.wait_for(timeout=60_000)
        page.wait_for_selector(READY, timeout=60_000)
        assert "fill in “GPU name” (and “VRAM per GPU”)" in page.locator("[data-testid=stCode]", has_text="GPU name").first.inner_text()
        page.get_by_label("GPU name").fill("NVIDIA L40S")
        page.get_by_role("button", name="Import and add").click()
        page.get_by_text(re.compile(r"^Imported:")).first.wait_for(timeout=120_000)  # not "Not imported:"
        page.wait_for_selector(READY, timeout=60_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "upload-import.png"), full_page=True)
        link = page.get_by_text("Open the card of", exact=False).first
        assert "l40s" in link.inner_text()
        b.close()
    store = Store(db)
    setups = store.df("SELECT setup_id, gpu FROM setups WHERE setup_id LIKE '%vllm-bench%'")
    assert list(setups.gpu) == ["NVIDIA L40S"]
    assert (local / setups.setup_id[0] / "setup.json").is_file()
