"""The Run live page's memory-test mode (AppTest of the real page; the demo engine started by the page's job):
the exact argv before the start, per-size progress, Stop stops the server, the result saved to the site."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from live.fit_job import current_job
from tests.test_app import page_text, run, table_with, tables
from tests.test_launcher import alive, wait_gone

pytestmark = pytest.mark.integration

DEMO = f"{sys.executable} -m live demo-server -c {{ctx}} --slots 1 --prefill-tps 20000 --decode-tps 400"


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


def memory_mode(cmd: str, sizes: str):
    at = run("pages/6_Run_live.py")
    at.radio(key="live_mode").set_value("Memory test").run()
    at.text_input(key="fit_cmd").set_value(cmd)
    at.text_input(key="fit_sizes").set_value(sizes)
    at.text_input(key="fit_gpu").set_value("cpu")
    return at


def start(at):
    at.text_input(key="fit_gpu").set_value("cpu")  # form fields are sent with the submit
    next(b for b in at.button if b.label == "Start the memory test").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_the_memory_test_shows_its_argv_runs_each_size_and_lands_on_the_site(site, tmp_path):
    at = memory_mode(DEMO + " --refuse-above 4096", "4K, 8K")
    at.run()
    argv = table_with(at, "argv item")
    assert list(argv["argv item"])[:6] == [sys.executable, "-m", "live", "demo-server", "-c", "4096"]
    assert list(argv["argv item"])[-4:] == ["--port", "(a free port)", "--host", "127.0.0.1"]
    assert list(argv["from"])[-1] == "added by benchcards"
    start(at)
    job = current_job()
    assert job is not None, [e.value for e in at.error]
    assert job.wait(120)
    deadline = time.time() + 30
    while time.time() < deadline and not at.success:
        at.run()
    assert job.error is None, job.error
    assert at.success and "Saved and added to the site" in at.success[0].value
    steps = table_with(at, "Context size")
    assert list(steps.State) == ["answered", "did not load"]
    assert "failed to allocate buffer for kv cache" in steps.Reason.iloc[1]
    assert (tmp_path / "local" / job.setup_id / "setup.json").exists()
    from benchcards.read import card_data
    from benchcards.read.store import Store

    c = card_data.card(Store(site), job.setup_id)
    assert c.fit is not None and c.fit["largest_ctx"] == 4096
    # its card's memory table says how the answer ended in words, not the server's "length" / "stop"
    card = table_with(run("pages/1_Setup_card.py", setup=job.setup_id), "Context size")
    assert card.Result.iloc[0] == "answered, to its token limit", list(card.Result)
    assert not any(r.endswith(("(length)", "(stop)")) for r in card.Result)


def test_stop_stops_the_server_while_it_loads(site):
    at = memory_mode(DEMO + " --load-s 600", "4K")
    start(at)
    job = current_job()
    assert job is not None
    deadline = time.time() + 60
    while time.time() < deadline and not any(e.pid for e in job.events):
        time.sleep(0.1)
    pid = next(e.pid for e in job.events if e.pid)
    assert alive(pid)
    at.run()
    assert "loading…" in set(table_with(at, "Context size").State)
    next(b for b in at.button if b.label.startswith("Stop")).click().run()
    assert job.wait(60) and wait_gone(pid, 1)
    at.run()
    assert "stopped before any size finished" in page_text(at) or "nothing to save" in (job.error or "")


def test_a_command_without_ctx_is_explained_before_anything_starts(site):
    at = memory_mode("llama-server -m m.gguf -c 8192", "4K")
    at.run()
    assert "the command has no {ctx}" in page_text(at)
    start(at)
    assert current_job() is None or current_job().cfg.server_cmd != "llama-server -m m.gguf -c 8192"


def test_a_missing_engine_program_is_explained_before_anything_starts(site, tmp_path):
    missing = str(tmp_path / "no-such-dir" / "llama-server")
    at = memory_mode(f"{missing} -m m.gguf -c {{ctx}}", "4K")
    at.run()
    assert f"--server-cmd: the program '{missing}' does not exist" in page_text(at)  # shown as it is typed
    start(at)
    assert current_job() is None or current_job().cfg.server_cmd != f"{missing} -m m.gguf -c {{ctx}}"
    assert "Check the settings" in page_text(at) and not (tmp_path / "local").exists()


def test_sizes_run_smallest_first_and_the_rest_are_not_tried_in_plain_words(site):
    at = memory_mode(DEMO + " --refuse-above 4096", "16K, 4K, 8K")
    at.run()
    assert list(table_with(at, "argv item")["argv item"])[5] == "4096"  # the first size to run: the smallest
    start(at)
    job = current_job()
    assert job is not None and job.wait(120)
    deadline = time.time() + 30
    while time.time() < deadline and not at.success:
        at.run()
    steps = table_with(at, "Context size")
    assert list(steps["Context size"]) == ["4K (4,096 tokens)", "8K (8,192 tokens)", "16K (16,384 tokens)"]
    assert list(steps.State) == ["answered", "did not load", "not tried"]
    assert steps.Reason.iloc[1] == ("the KV cache for this context did not fit (engine: llama_init_from_model: "
                                    "failed to initialize the context: failed to allocate buffer for kv cache)")
    assert steps.Reason.iloc[2] == "stopped after the first size that did not load (8,192); --keep-going runs them"
    assert steps["Peak memory"].iloc[0].endswith(", process memory (RSS)")


def test_a_fresh_session_sees_the_form_not_the_last_visitors_memory_test(site):
    """Two AppTest instances are two browser sessions. Before, the site's newest memory test (running or ended)
    was drawn for every session as if it were its own: a newcomer saw another visitor's sizes, peaks and
    "Saved" line instead of an empty form."""
    mine = memory_mode(DEMO + " --refuse-above 4096", "4K")
    start(mine)
    job = current_job()
    assert job is not None and job.wait(120) and job.error is None, job and job.error
    deadline = time.time() + 30
    while time.time() < deadline and not mine.success:
        mine.run()
    assert mine.success and "Saved and added to the site" in mine.success[0].value

    fresh = memory_mode("", "4K")
    fresh.run()
    text = page_text(fresh)
    assert not any("Context size" in t.columns for t in tables(fresh))  # no results table of another run
    assert not fresh.success and not fresh.status  # no panel of another visitor's run
    assert text.count("The last memory test on this site was started in another browser session") == 1
    assert f"Setup_card?setup={job.setup_id}" in " ".join(c.value for c in fresh.caption)
    start_button = next(b for b in fresh.button if b.label == "Start the memory test")
    assert not start_button.disabled  # the form is this visitor's to use

    mine.run()  # the session that started it keeps its results across reruns
    assert mine.success and "Saved and added to the site" in mine.success[0].value
    assert list(table_with(mine, "Context size").State) == ["answered"]
    assert "started in another browser session" not in page_text(mine)
