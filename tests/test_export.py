"""The static export: every setup gets a page with the app's tables and themed charts, viewable offline."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from benchcards import charts
from benchcards.export import export
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
    assert len(set(links)) == 7 and SEED in links
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
                 "--cache-ram is not set", "verified raw", "server.log"):
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
    from benchcards.sitewrite import ExportFolderError

    out = tmp_path / "site"
    out.mkdir()
    (out / "notes.txt").write_text("someone's file")
    with pytest.raises(ExportFolderError, match=r"notes\.txt"):
        export(demo_db, out, with_raw=False)
    assert (out / "notes.txt").read_text() == "someone's file" and not (out / "index.html").exists()


def test_reexport_removes_what_the_site_no_longer_has(demo_db, tmp_path):
    out = tmp_path / "site"
    export(demo_db, out, with_raw=False)
    (out / "setups" / "gone.html").write_text("a setup deleted since")
    export(demo_db, out, with_raw=False)
    assert not (out / "setups" / "gone.html").exists() and (out / "index.html").exists()


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no Chromium")
def test_export_renders_offline_in_chromium(site):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
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
        b.close()
        assert errors == []
