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


def _descendants(pid: int) -> set[int]:
    """The processes under ``pid`` now (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "Ctrl-C twice"])
def test_sigterm_stops_an_export_and_its_workers(tmp_path, sig):
    """SIGTERM and SIGHUP stop an export as Ctrl-C does; Ctrl-C pressed twice (to the whole process group: the fork
    server and the workers too) as well: it hung, the second breaking off the workers' shutdown."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys

    from devdata import synth
    from ingest import ingest_paths

    synth.generate(tmp_path / "raw", 200, seed=3)
    db_path = tmp_path / "s.duckdb"
    ingest_paths([tmp_path / "raw"], db_path)
    proc = subprocess.Popen([sys.executable, "-m", "benchcards_cli", "export", str(tmp_path / "site"), "--db",
                             str(db_path), "--workers", "2", "--no-raw"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent,
                            start_new_session=True)
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    cards = tmp_path / "site" / "setups"
    while time.monotonic() < deadline and not (cards.is_dir() and any(cards.glob("*.html"))):  # workers at work
        workers |= _descendants(proc.pid)
        time.sleep(0.05)
    workers |= _descendants(proc.pid)
    assert len(workers) >= 3, workers  # the fork server and its two workers
    if sig == "Ctrl-C twice":
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(getattr(signal, sig))
    _out, err = proc.communicate(timeout=60)
    # (a second Ctrl-C that comes while Python ends may end it by SIGINT: a shell says 130 for both)
    assert proc.returncode in (130, -signal.SIGINT) and "interrupted" in err and "Traceback" not in err, \
        (proc.returncode, err)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.1)
    assert not [p for p in workers if _alive(p)], "worker processes left running"
    assert not list((tmp_path / "site").rglob(".tmp-*"))
    again = export(db_path, tmp_path / "site", with_raw=False)  # the folder is an export the next one finishes
    assert len(again.rendered) == 200


def test_a_fifo_in_place_of_a_page_is_replaced_never_opened(demo_db, tmp_path):
    import os

    export(demo_db, tmp_path / "site", with_raw=False)
    page = tmp_path / "site" / "index.html"
    page.unlink()
    os.mkfifo(page)
    result = export(demo_db, tmp_path / "site", with_raw=False)  # would block for ever opening the FIFO
    assert page.is_file() and "index.html" in result.written


def test_an_ingest_during_an_export_fails_it(demo_db, tmp_path, monkeypatch):
    import shutil

    from benchcards.read.db import DatabaseError
    from benchcards.site import exporter
    from ingest import ingest_paths

    db_path = tmp_path / "d.duckdb"
    shutil.copy(demo_db, db_path)
    real = exporter.aggregate_pages

    def swapped_meanwhile(*args, **kwargs):
        ingest_paths([Path(__file__).resolve().parent.parent / "data" / "raw"], db_path, rebuild=True)
        return real(*args, **kwargs)

    monkeypatch.setattr(exporter, "aggregate_pages", swapped_meanwhile)
    with pytest.raises(DatabaseError, match="changed while it was exported"):
        export(db_path, tmp_path / "site", with_raw=False)


def test_workers_out_of_range_are_a_usage_error(demo_db, tmp_path):
    from benchcards.site.export import main

    for n in ("0", "-3", "33"):
        with pytest.raises(SystemExit) as exit_:
            main([str(tmp_path / "site"), "--db", str(demo_db), "--workers", n])
        assert exit_.value.code == 2


def test_a_folder_made_a_link_after_a_write_is_refused_on_the_next(tmp_path):
    """Each write looks at the folders on its way again (a writer does not trust a folder it wrote into before)."""
    import shutil

    out, outside = tmp_path / "site", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    w = sitewrite.Writer(out, {})
    w.write("setups/a.html", "a")
    shutil.rmtree(out / "setups")
    (out / "setups").symlink_to(outside)
    with pytest.raises(sitewrite.ExportFolderError, match="symbolic link"):
        w.write("setups/b.html", "b")
    assert list(outside.iterdir()) == []


def test_a_folder_removed_during_an_export_is_made_again(tmp_path):
    """A folder the writer made and something else removed meanwhile is made again, as on the first write."""
    import shutil

    out = tmp_path / "site"
    out.mkdir()
    w = sitewrite.Writer(out, {})
    w.write("setups/a.html", "a")
    shutil.rmtree(out / "setups")
    w.write("setups/b.html", "b")
    assert (out / "setups" / "b.html").read_text() == "b"
    assert w.entries["setups/b.html"].size == 1


@pytest.mark.parametrize("changed", [False, True])
def test_a_site_folder_made_a_link_is_refused_even_when_nothing_in_it_is_written(demo_db, tmp_path, changed):
    """An earlier export whose setups/ became a link out of the site: the next export refuses it (whether the
    data changed or not), and nothing outside changes. Kept files were looked at through the link before."""
    import shutil

    site, outside = tmp_path / "site", tmp_path / "outside"
    export(demo_db, site, with_raw=False)
    outside.mkdir()
    shutil.move(site / "setups", outside / "setups")
    (site / "setups").symlink_to(outside / "setups", target_is_directory=True)
    before = {p.name: p.stat().st_mtime_ns for p in (outside / "setups").iterdir()}
    with pytest.raises(sitewrite.ExportFolderError, match="symbolic link"):
        export(demo_db, site, with_raw=changed)  # with raw files: another key, so not 'nothing changed'
    assert {p.name: p.stat().st_mtime_ns for p in (outside / "setups").iterdir()} == before


def test_an_interrupt_a_library_turned_into_its_own_error_is_an_interrupt_and_other_errors_stay_themselves():
    """DuckDB stops a query when a signal's handler raises, and raises RuntimeError('Query interrupted') instead
    of the KeyboardInterrupt: a command stopped by SIGTERM then said 'unexpected RuntimeError' with status 1
    (seen in CI). Here the library's part is played in Python, so that the signal lands where it is wanted."""
    import os
    import signal

    from benchcards.domain.errors import terminate_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), terminate_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)  # the handler raises here
        except KeyboardInterrupt:
            raise RuntimeError("Query interrupted") from None  # what DuckDB makes of it
    assert signal.getsignal(signal.SIGTERM) is before  # the handler before is back
    with pytest.raises(RuntimeError, match="not an interrupt"), terminate_as_interrupt():
        raise RuntimeError("not an interrupt")
