"""Uploads and imports run in a worker process, never on the thread that serves pages (issue 16, hostile 2):
another page renders while one runs, a worker over its time limit is stopped and said so, and the outcome
names the input file as the same call in the page's process would."""

from __future__ import annotations

import hashlib
import multiprocessing
import sys
import threading
import types
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import benchcards.read.paths as paths
from benchcards.read.locks import file_lock
from benchcards.site.pool import CardPool
from ingest import worker
from ingest.importers import Options, Source
from tests.helpers import make_setup
from tests.test_app import _folder_entries, _zip

ROOT = Path(__file__).resolve().parent.parent


def _page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    if page != "app.py":
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture()
def site(demo_db, tmp_path, monkeypatch):
    """A copy of the demo database and an empty local folder, used by the page (and so by its worker)."""
    db = tmp_path / "site.duckdb"
    db.write_bytes(demo_db.read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    local = tmp_path / "local"
    monkeypatch.setattr(paths, "LOCAL", local)
    archive = _zip(_folder_entries(make_setup(tmp_path / "src"), "hand-3090"))
    return db, local, archive


def _start_upload(archive: bytes) -> tuple[AppTest, threading.Thread]:
    """The Upload page with a zip picked and "Validate and add" clicked, running in a thread of its own."""
    at = _page("pages/5_Upload.py")
    at.file_uploader(key="zip").set_value(("mine.zip", archive, "application/zip"))
    at.run()
    thread = threading.Thread(target=lambda: at.button[0].click().run(), daemon=True)
    thread.start()
    return at, thread


def _wait_for_worker() -> None:
    """Until the page's worker process is running."""
    import time

    while not [p for p in multiprocessing.active_children() if p.name == "benchcards-zip"]:
        time.sleep(0.05)


@pytest.mark.integration
def test_another_page_renders_while_an_upload_runs(site):
    _, local, archive = site
    staging = paths.staging_for(local)
    staging.mkdir(parents=True)
    # the sources lock held here keeps the upload's worker waiting, however fast the machine is
    with file_lock(staging / "lock"):
        up, thread = _start_upload(archive)
        _wait_for_worker()
        overview = _page("app.py")  # another visitor, meanwhile
        assert overview.title[0].value == "benchcards"
        assert thread.is_alive() and not (local / "hand-3090").exists()  # the upload is still waiting
    thread.join(600)
    assert not thread.is_alive()
    assert not up.exception, [e.value for e in up.exception]
    assert up.success[0].value.startswith("Added: 1 new, 0 replaced, 0 unchanged setup")
    assert (local / "hand-3090" / "setup.json").is_file()
    assert not multiprocessing.active_children()  # the worker is gone


@pytest.mark.integration
def test_an_upload_over_its_time_limit_is_stopped_and_nothing_is_stored(site, monkeypatch):
    db, local, archive = site
    monkeypatch.setattr(worker, "SECONDS", 2.0)
    staging = paths.staging_for(local)
    staging.mkdir(parents=True)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with file_lock(staging / "lock"):  # the worker can never finish
        up, thread = _start_upload(archive)
        thread.join(600)
    assert not thread.is_alive() and not up.exception
    assert up.error[0].value.startswith("Not stored: stopped after 2 s: checking these files took longer than "
                                        "an upload may; nothing was stored")
    assert not multiprocessing.active_children()  # killed, and reaped
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before and not (local / "hand-3090").exists()
    left = [p.name for p in staging.iterdir() if p.name != "lock"]  # killed before or after it unpacked
    assert len(left) <= 1
    # what the killed worker left in staging goes with the next upload (ingest.upload.recover)
    monkeypatch.setattr(worker, "SECONDS", 300.0)
    again = _page("pages/5_Upload.py")
    again.file_uploader(key="zip").set_value(("mine.zip", archive, "application/zip"))
    again.run()
    again.button[0].click().run()
    assert again.success[0].value.startswith("Added: 1 new")
    if left:
        assert (f"(before this upload) removed the staging folder of an interrupted upload ({left[0]}; nothing of "
                "it had been stored)") in "\n".join(c.value for c in again.code)
    assert [p.name for p in staging.iterdir()] == ["lock"]


@pytest.mark.integration
def test_an_import_in_the_worker_names_the_input_file(tmp_path):
    bad = Source("bench.json", b'[{"build_commit": "abc", "n_prompt": 512, "n_gen": 0, "avg_ts": "fast"}]')
    out = worker.run("import", {"sources": [bad], "options": Options(gpu="NVIDIA GeForce RTX 4090"),
                                "force": None, "db": tmp_path / "x.duckdb", "local": tmp_path / "local"})
    assert out.status == "not imported" and out.count >= 1
    assert all(e.startswith("bench.json") for e in out.errors), out.errors
    assert not (tmp_path / "x.duckdb").exists() and not (tmp_path / "local").exists()


def _page_as_main(tmp_path: Path, monkeypatch) -> tuple[types.ModuleType, Path]:
    """``__main__`` as Streamlit leaves it after running a page: a module whose ``__file__`` is the page's script
    (this one leaves a mark and fails when run)."""
    marker = tmp_path / "the page ran"
    script = tmp_path / "page.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit('the page ran in a worker')\n")
    fake = types.ModuleType("__main__")
    fake.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", fake)
    return fake, marker


@pytest.mark.integration
def test_the_upload_worker_never_runs_the_page_that_started_it(tmp_path, monkeypatch):
    # CI's run of the test above failed 'stopped': an earlier AppTest in the same process had left app.py as
    # __main__, and the forkserver's child ran app.py, without a database, before its own work
    fake, marker = _page_as_main(tmp_path, monkeypatch)
    bad = Source("bench.json", b'[{"build_commit": "abc", "n_prompt": 512, "n_gen": 0, "avg_ts": "fast"}]')
    out = worker.run("import", {"sources": [bad], "options": Options(gpu="NVIDIA GeForce RTX 4090"),
                                "force": None, "db": tmp_path / "x.duckdb", "local": tmp_path / "local"})
    assert out.status == "not imported", out.errors
    assert not marker.exists()
    assert sys.modules["__main__"] is fake  # the page's own module is put back


@pytest.mark.integration
def test_the_export_s_card_workers_never_run_the_caller_s_script(tmp_path, monkeypatch):
    fake, marker = _page_as_main(tmp_path, monkeypatch)
    pool = CardPool(2)
    try:
        pool.warm(2)
    finally:
        pool.close()  # waits for both workers' first task
    assert not marker.exists()
    assert sys.modules["__main__"] is fake
