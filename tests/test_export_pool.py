"""The export's worker processes: a site rendered by workers (forked from a server that imported the renderer,
the analysis pages in a worker of their own, card jobs not started taken back by the parent) is the site
rendered in one process, byte for byte."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from benchcards.read import overview_rows
from benchcards.read.store import Store
from benchcards.site import pool
from benchcards.site import writer as sitewrite
from benchcards.site.card_pages import CardJob
from benchcards.site.exporter import export

pytestmark = pytest.mark.integration


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".benchcards-export.json"}


def test_a_site_rendered_by_worker_processes_is_the_site_rendered_in_one(demo_db, tmp_path):
    alone = export(demo_db, tmp_path / "one", workers=1)
    shared = export(demo_db, tmp_path / "two", workers=2)
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    assert sorted(alone.rendered) == sorted(shared.rendered) and len(shared.rendered) > 10
    assert [p.relative_to(tmp_path / "one") for p in alone.pages] == [p.relative_to(tmp_path / "two")
                                                                     for p in shared.pages]
    assert any(p.as_posix().endswith("analysis.html") for p in shared.pages)


def test_card_jobs_no_worker_has_started_are_rendered_by_the_parent(demo_db, tmp_path):
    ids = overview_rows.overview(Store(demo_db)).setup_id.tolist()
    jobs = [CardJob(demo_db, tmp_path / "site", ids[i::6], {}, frozenset(), _no_knees(), {}, {}) for i in range(6)]
    renderer = pool.CardPool(2)
    writer = sitewrite.Writer(tmp_path / "site", {})
    try:
        renderer.warm(2)
        busy = [renderer.run(time.sleep, 3.0) for _ in range(2)]  # both workers busy: the card jobs wait
        for job in jobs:
            renderer.render(job, writer)
        taken = renderer.collect(writer)
        for wait in busy:
            wait()
    finally:
        renderer.close()
    assert taken >= 3  # at most one job waits in the workers' queue; the others came back
    assert sorted(writer.entries) == sorted(f"setups/{s}.html" for s in ids)
    assert all((tmp_path / "site" / rel).stat().st_size == e.size for rel, e in writer.entries.items())


def _no_knees():
    import pandas as pd

    return pd.DataFrame(columns=["setup_id", "title", "tier", "kind", "status", "at", "reference", "threshold",
                                 "last_good", "first_bad", "slots", "rule", "first", "last"])
