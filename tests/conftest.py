from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# The tests never touch this checkout's data/local: uploads and builds in tests (and in the servers and
# processes they start, which inherit the environment) use an empty folder of their own.
os.environ["BENCHCARDS_LOCAL"] = os.path.join(tempfile.mkdtemp(prefix="bc-local-"), "local")

from devdata import synth  # noqa: E402
from ingest import ingest_paths  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module, with the flags this machine needs (no sandbox, no GPU, no
    background network, no first-run or update work)."""
    from playwright.sync_api import sync_playwright

    from tests.helpers import CHROMIUM

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                    "--disable-component-update", "--no-first-run", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory) -> Path:
    """Three synthetic setups (deterministic), shared read-only by tests."""
    out = tmp_path_factory.mktemp("synth")
    synth.generate(out, 3, seed=101)
    return out


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """A database built from the shipped demo data (data/raw)."""
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    ingest_paths([ROOT / "data" / "raw"], db)
    return db


KINDS = ("unit", "integration", "browser", "engine")


@pytest.fixture()
def _unmarked():
    pytest.fail("this test has no unit/integration/browser/engine marker (see pyproject.toml)")


def pytest_collection_modifyitems(config, items):
    """Every test says what it needs: one of the markers of pyproject.toml (a test's own marker, e.g.
    browser or engine, adds to its module's). A test without one fails, naming itself."""
    for item in items:
        if not any(m.name in KINDS for m in item.iter_markers()):
            item.fixturenames.insert(0, "_unmarked")
