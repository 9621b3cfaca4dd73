"""The Run live page's sweep mode (AppTest of the real page; the demo engine started by the page's job): variants
as table rows, per-boot progress in interleaved order, the sweep saved to the site, Stop stops the server."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from benchcards.compute import sweeps
from benchcards.read.store import Store
from live.sweep_job import current_job, variants_from_rows
from tests.test_app import page_text, run, table_with, tables
from tests.test_launcher import alive, wait_gone
from ui.sweep_mode import START_ROWS

DEMO = f"{sys.executable} -m live demo-server --ctx {{ctx}} --slots 1 --decode-tps 400 --prefill-tps 4000"


@pytest.fixture()
def site(demo_db, monkeypatch, tmp_path):
    import benchcards.read.paths as paths

    copy = tmp_path / "site.duckdb"
    copy.write_bytes(Path(demo_db).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(copy))
    monkeypatch.setattr(paths, "LOCAL", tmp_path / "local")
    yield copy
    job = current_job()
    if job is not None and not job.done:
        job.stop()
        job.wait(60)


def sweep_mode(cmd: str, rows: list[dict], repeats: int = 2):
    at = run("pages/6_Run_live.py")
    at.session_state["sweep_start_rows"] = rows
    at.radio(key="live_mode").set_value("Sweep").run()
    at.text_input(key="sweep_cmd").set_value(cmd)
    at.number_input(key="sweep_repeats").set_value(repeats)
    at.text_input(key="sweep_gpu").set_value("cpu")
    return at


def start(at):
    next(b for b in at.button if b.label == "Start the sweep").click().run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.unit
def test_variant_rows_are_read_with_their_problems_named():
    vs, problems = variants_from_rows([{"Name": "a", "Arguments": ""}, {"Name": "b", "Arguments": "-t 2"},
                                       {"Name": None, "Arguments": None}])
    assert [(v.name, v.args) for v in vs] == [("a", ()), ("b", ("-t", "2"))] and not problems
    _, problems = variants_from_rows([{"Name": "a", "Arguments": ""}, {"Name": "", "Arguments": "-t 2"}])
    assert problems and problems[0].startswith("Variants, row 2")
    _, problems = variants_from_rows([{"Name": "only", "Arguments": ""}])
    assert problems == ["Variants: give at least two rows (the first is the baseline)"]


@pytest.mark.integration
def test_a_sweep_from_the_page_shows_each_boot_and_lands_on_the_sweeps_page(site):
    at = sweep_mode(DEMO, [{"Name": "fast", "Arguments": ""}, {"Name": "slow", "Arguments": "--decode-tps 200"}])
    at.number_input(key="sweep_runs").set_value(1)
    start(at)
    job = current_job()
    assert job is not None, [e.value for e in at.error]
    assert job.wait(300)
    deadline = time.time() + 30
    while time.time() < deadline and not at.success:
        at.run()
    assert job.error is None, job.error
    assert at.success and "Saved and added to the site" in at.success[0].value
    boots = table_with(at, "Server pid")
    assert list(boots.Variant) == ["fast", "slow", "fast", "slow"] and set(boots.State) == {"measured"}
    assert all(wait_gone(int(p), 1) for p in boots["Server pid"])  # every boot's server is stopped
    # the demo data ships a sweep of its own; the page's run is one more
    (rec,) = [r for r in sweeps.load_sweeps(Store(site)) if r.sweep_id == job.sweep_id]
    assert rec.baseline == "fast"
    assert set(sweeps.sweep_table(Store(site), rec).Variant) == {"slow"}


@pytest.mark.integration
def test_stop_stops_the_sweep_server_while_it_loads(site):
    at = sweep_mode(DEMO + " --load-s 600", [{"Name": "a", "Arguments": ""}, {"Name": "b", "Arguments": "-t 2"}])
    start(at)
    job = current_job()
    assert job is not None, [e.value for e in at.error]
    deadline = time.time() + 60
    while time.time() < deadline and not any(e.pid for e in job.events):
        time.sleep(0.1)
    pid = next(e.pid for e in job.events if e.pid)
    assert alive(pid)
    next(b for b in at.button if b.label.startswith("Stop")).click().run()
    assert job.wait(60) and wait_gone(pid, 1)
    at.run()
    assert list(table_with(at, "Server pid").State) == ["stopped", "not run", "not run", "not run"]
    assert "stopped by the user" in page_text(at)
    assert job.error == "stopped before any boot measured: nothing to save"


@pytest.mark.integration
def test_a_bad_variant_row_is_named_before_anything_starts(site):
    at = sweep_mode(DEMO, [{"Name": "a", "Arguments": ""}, {"Name": "b", "Arguments": "--x 'open"}])
    start(at)
    assert current_job() is None or current_job().done
    assert "Variants, row 2" in page_text(at)


@pytest.mark.integration
def test_a_missing_engine_program_is_named_and_nothing_starts(site, tmp_path):
    """The memory test's check (launcher.program_problems), also behind a wrapper: the page shows the problem
    and starts no sweep; before, the sweep started and every boot 'did not load'."""
    missing = str(tmp_path / "no-such-dir" / "llama-server")
    at = sweep_mode(f"prlimit --as=8000000000 {missing} -m m.gguf -c {{ctx}}",
                    [{"Name": "a", "Arguments": ""}, {"Name": "b", "Arguments": "-t 2"}])
    before = current_job()
    start(at)
    assert current_job() is before  # no sweep was started
    text = page_text(at)
    assert "Check the settings" in text and f"--server-cmd: the program '{missing}' does not exist" in text
    assert not (tmp_path / "local").exists()


@pytest.mark.integration
def test_another_sessions_sweep_shows_only_while_it_runs(site):
    """Two AppTest instances are two browser sessions. Another session's sweep is shown while it runs (it is why
    Start is disabled); once it has ended a fresh session sees its own form and one line, not the other
    visitor's boots and result as if they were its own. The session that started it keeps its panel."""
    mine = sweep_mode(DEMO + " --load-s 600", [{"Name": "a", "Arguments": ""}, {"Name": "b", "Arguments": "-t 2"}])
    start(mine)
    job = current_job()
    assert job is not None, [e.value for e in mine.error]
    deadline = time.time() + 60
    while time.time() < deadline and not any(e.pid for e in job.events):
        time.sleep(0.1)
    other = sweep_mode("", START_ROWS)
    other.run()
    assert [s.label for s in other.status] == ["Sweep: 0 of 4 boots"]  # the running sweep, shown
    assert table_with(other, "Server pid").State.iloc[0] in ("starting the server…", "loading…")
    assert next(b for b in other.button if b.label == "Start the sweep").disabled
    job.stop()
    assert job.wait(60)

    fresh = sweep_mode("", START_ROWS)
    fresh.run()
    assert not any("Server pid" in t.columns for t in tables(fresh)) and not fresh.status
    assert page_text(fresh).count("The last sweep on this site was started in another browser session") == 1
    assert not next(b for b in fresh.button if b.label == "Start the sweep").disabled

    mine.run()  # the session that started it still sees its own boots and how it ended
    assert table_with(mine, "Server pid").State.iloc[0] == "stopped"
    assert [s.label for s in mine.status] == ["Sweep ended: stopped before any boot measured: nothing to save"]
    assert "started in another browser session" not in page_text(mine)
