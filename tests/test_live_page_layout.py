"""The Run live page while a run measures (AppTest sessions of the real page against real servers on
127.0.0.1): the suggested demo server runs every default step, Start is disabled at once, the progress is
above the form with one count, and odd server info is shown as not given while the run is saved."""

from __future__ import annotations

import doctest
import re
import shlex
import sys
import time
from pathlib import Path

import pytest

import live.progress
from live.client import new_client
from live.job import LiveJob, running_jobs
from live.measure import MeasureConfig, probe
from live.progress import parse_tokens, plan
from tests.hostile_servers import HostileServer
from tests.live_servers import Server, demo_server, free_port
from tests.test_app import page_text, run, unescape
from tests.test_live_page import fill, run_decode, start_button

pytestmark = pytest.mark.integration


@pytest.fixture()
def site(demo_db, monkeypatch, tmp_path):
    """A copy of the demo database as the site's, and a local folder in tmp_path for the runs."""
    import benchcards.read.paths as paths

    copy = tmp_path / "site.duckdb"
    copy.write_bytes(Path(demo_db).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(copy))
    monkeypatch.setattr(paths, "LOCAL", tmp_path / "local")
    yield copy
    for job in running_jobs():
        job.stop()
        job.wait(60)


def in_order(node, out: list | None = None) -> list:
    """Every element of the page as drawn, top to bottom."""
    out = [] if out is None else out
    out.append(node)
    for child in getattr(node, "children", {}).values():
        in_order(child, out)
    return out


@pytest.mark.unit
def test_progress_docstring_examples():
    assert doctest.testmod(live.progress).failed == 0


def test_the_suggested_demo_server_runs_every_default_step(site):
    at = run("pages/6_Run_live.py")
    intro = next(m.value for m in at.markdown if "demo-server" in m.value)  # the code span as written
    argv = shlex.split(re.search(r"`(python -m live demo-server[^`]*)`", intro).group(1))
    port = free_port()
    argv = [sys.executable if a == "python" else a for a in argv]
    argv[argv.index("--port") + 1] = str(port)
    # the form's defaults, as a person leaves them
    depths = parse_tokens(at.text_input(key="live_depths").value, "depths")
    cfg = MeasureConfig(base_url=f"http://127.0.0.1:{port}", parts=tuple(at.multiselect(key="live_parts").value),
                        prefill_depths=depths, max_tokens=int(at.number_input(key="live_max_tokens").value))
    assert 32768 in depths
    server = Server(argv, port)
    try:
        with new_client() as client:
            info = probe(client, server.url)
    finally:
        server.stop()
    from live.measure import Runner

    runner = Runner(cfg)
    runner.info = info
    runner.client.close()
    skipped = [s.label for s in plan(cfg) if s.part == "prefill" and runner.too_long(s.prompt_tokens,
                                                                                    s.output_tokens)]
    assert info.n_ctx and not skipped, (info.n_ctx, skipped)
    assert all(s.prompt_tokens + s.output_tokens <= info.n_ctx for s in plan(cfg))


def test_start_is_disabled_at_once_and_the_progress_is_above_the_form_with_one_count(site):
    s = demo_server(decode_tps=40, prefill_tps=20000, slots=2)
    try:
        a = run("pages/6_Run_live.py")
        fill(a, s.url)
        start_button(a).click().run()
        assert not a.error, [e.value for e in a.error]
        job: LiveJob = a.session_state["live_job"]
        assert start_button(a).disabled  # in the very run that started it: Start does not look pressable
        order = in_order(a.main)
        status = next(i for i, n in enumerate(order) if type(n).__name__ == "Status")
        start = next(i for i, n in enumerate(order) if getattr(n, "label", None) == "Start")
        first_field = next(i for i, n in enumerate(order) if getattr(n, "label", None) == "Server address")
        assert status < first_field < start  # the progress is the first thing under the title
        deadline = time.time() + 60
        while not any(e.kind == "request" for e in job.events) and time.time() < deadline:
            time.sleep(0.05)
        a.run()
        label = a.status[0].label
        bars = [p.proto.text for p in a.get("progress")]
        assert label.startswith("Measuring… now: ") and "requests" not in label
        counts = re.findall(r"\d+ of \d+ requests", " ".join([label, *bars, page_text(a)]))
        assert len(counts) == 1, counts  # one count on screen, never two that disagree
        assert start_button(a).disabled
    finally:
        for j in running_jobs():
            j.stop()
            j.wait(60)
        s.stop()


def test_odd_server_info_is_shown_as_not_given_and_the_run_is_saved(site):
    props = {"total_slots": "4", "build_info": "b1\x1b]0;PWNED\x07", "default_generation_settings": {"n_ctx": 8192}}
    with HostileServer("honest", docs={"/props": props, "/v1/models": {"data": ["x"]}}) as srv:
        a = run("pages/6_Run_live.py")
        fill(a, srv.url)
        job = run_decode(a, live_max_tokens=40, live_min_tokens=16)
    warnings = [unescape(w.value) for w in a.warning]
    assert any("Server info not given: the server's /props total_slots = \"4\"" in w for w in warnings), warnings
    assert any("/props build_info" in w and "\\u001b]0;PWNED\\u0007" in w for w in warnings), warnings
    assert any("/v1/models" in w for w in warnings), warnings
    assert not any("\x1b" in w for w in warnings)
    assert job.run_dir is not None and a.success and "Saved and added to the site" in a.success[0].value
