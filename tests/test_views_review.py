"""A newcomer's review of the read-side views, as a user sees them in the app and in the export: the memory chart
names what it measured, the card's Reproduce section repeats the memory test and says how the quality runs were
made, a sweep variant's card says which boot its figures come from and links its sweep, the Sweeps intro says
what Δ % is, and the Analysis page opens on a size the export publishes."""

from __future__ import annotations

import copy
import json
import re
import shlex
from html import unescape
from pathlib import Path

import pytest

from benchcards.compute import sweeps
from benchcards.read.store import Store
from benchcards.site.exporter import export
from benchcards.views import analysisview as av
from ingest import ingest_paths
from tests.helpers import SETUP, fit_contract, make_setup
from tests.test_app import page_text, run, specs
from tests.test_views_once import plain, visible

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
SWEPT = "real-sweep-cpu-tiny-random-ubatch-micro-batch-64"


@pytest.fixture(autouse=True)
def site_db(demo_db, monkeypatch):
    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    return demo_db


@pytest.fixture(scope="module")
def site(demo_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("review") / "site"
    export(demo_db, out, with_raw=False)
    return out


def _card_html(site: Path, sid: str) -> str:
    return (site / "setups" / f"{sid}.html").read_text(encoding="utf-8")


def _chart_titles(html: str) -> list[str]:
    """The y-axis titles of the charts of an exported page."""
    found = re.findall(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', html, re.S)
    return re.findall(r'"title": ?"(Peak [^"]*\(GiB\))"', " ".join(found))


# --------------------------------------------------------------------------- 1. the memory chart's axis


def _fit_db(tmp_path: Path) -> Path:
    """Three memory tests: one read with NVML, one with no source recorded, one of the process tree's RSS."""
    root = tmp_path / "raw"
    for name, source in (("fit-nvml", "nvml"), ("fit-unknown", None), ("fit-rss", "process-rss")):
        setup = copy.deepcopy(SETUP) | {"setup_id": name, "title": f"Memory read by {source}"}
        fit = fit_contract(run_id=f"{name}-run", setup_id=name)
        for step in fit["steps"]:
            if source:
                step["peak_source"] = source
        make_setup(root, setup=setup, speed={}, quality={}, fit=fit, name=name)
    db = tmp_path / "fit.duckdb"
    ingest_paths([root], db)
    return db


def test_the_memory_chart_says_what_memory_was_read_in_the_app_and_the_export(tmp_path, monkeypatch):
    db = _fit_db(tmp_path)
    export(db, tmp_path / "site", with_raw=False)
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    want = {"fit-nvml": "Peak GPU memory (GiB)", "fit-unknown": "Peak memory (source not recorded) (GiB)",
            "fit-rss": "Peak process memory (RSS) (GiB)"}
    for sid, title in want.items():
        (app,) = specs(run("pages/1_Setup_card.py", setup=sid))
        assert set(re.findall(r'"title": "(Peak [^"]*\(GiB\))"', json.dumps(app))) == {title}, sid
        assert set(_chart_titles(_card_html(tmp_path / "site", sid))) == {title}, sid
    unknown = json.dumps(specs(run("pages/1_Setup_card.py", setup="fit-unknown"))[0])
    assert "GPU memory (GiB)" not in unknown and "GPU memory 24 GiB" in unknown  # the GPU's own size still drawn


def test_a_demo_memory_test_without_a_source_is_not_called_gpu_memory(site):
    assert set(_chart_titles(_card_html(site, SEED))) == {"Peak memory (source not recorded) (GiB)"}
