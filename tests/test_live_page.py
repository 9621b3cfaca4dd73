"""The Run live page as people use it (AppTest sessions of the real page against the bundled demo server on
127.0.0.1): one run per server, shown in every session, no start on Enter, a status that says what is
going on, and a GPU that needs its memory."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from live.job import LiveJob, ServerBusy, running_jobs
from live.measure import MeasureConfig, SetupInput
from tests.live_servers import demo_server
from tests.test_app import page_text, run, table_with, unescape

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
    for job in running_jobs():  # never leave a run behind for the next test
        job.stop()
        job.wait(60)


def fill(at, url: str, gpu: str = "Demo GPU", vram: float | None = 24.0) -> None:
    at.text_input(key="live_base_url").set_value(url)
    at.multiselect(key="live_parts").set_value(["decode", "prefill", "conc"])
    at.text_input(key="live_depths").set_value("1K")
    at.text_input(key="live_levels").set_value("1, 2")
    at.number_input(key="live_runs").set_value(2)
    at.number_input(key="live_max_tokens").set_value(300)
    at.text_input(key="live_gpu").set_value(gpu)
    at.number_input(key="live_vram").set_value(vram)


def start_button(at):
    return next(b for b in at.button if b.label == "Start")


def run_decode(at, **numbers: int) -> LiveJob:
    """Measure decode only (``numbers``: number inputs by key), wait for the run and show its end."""
    at.multiselect(key="live_parts").set_value(["decode"])
    for key, value in numbers.items():
        at.number_input(key=key).set_value(value)
    start_button(at).click().run()
    assert not at.error, [e.value for e in at.error]
    job: LiveJob = at.session_state["live_job"]
    assert job.wait(120)
    at.run()
    return job


def form_protos(at) -> list:
    out = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and getattr(proto, "DESCRIPTOR", None) is not None \
                and proto.DESCRIPTOR.name == "Block" and proto.WhichOneof("type") == "form":
            out.append(proto.form)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out


def test_enter_does_not_start_and_a_gpu_needs_its_memory(site):
    at = run("pages/6_Run_live.py")
    forms = form_protos(at)
    assert forms and all(not f.enter_to_submit for f in forms)  # Enter in a field never starts a measurement
    assert at.number_input(key="live_vram").value is None  # no 0.00 GiB default that files a GPU as "CPU only"
    fill(at, "http://127.0.0.1:9", gpu="RTX 4060 Ti", vram=None)  # sold with 8 and 16 GB: not assumed
    start_button(at).click().run()
    text = unescape(at.error[0].value)
    assert "VRAM per GPU (GiB): give the memory of one RTX 4060 Ti in GiB" in text and "live_job" not in at.session_state
    assert "does not know this one" in text
    fill(at, "http://127.0.0.1:9", gpu="", vram=None)
    start_button(at).click().run()
    assert "GPU: name the GPU" in unescape(at.error[0].value) and "'cpu'" in unescape(at.error[0].value)
    assert "live_job" not in at.session_state


def test_one_run_per_server_shown_in_every_session_with_an_honest_status(site):
    s = demo_server(decode_tps=100, prefill_tps=20000, slots=2)
    try:
        b = run("pages/6_Run_live.py")  # another tab, open before the run starts
        a = run("pages/6_Run_live.py")
        fill(a, s.url)
        start_button(a).click().run()
        assert not a.error, [e.value for e in a.error]
        job: LiveJob = a.session_state["live_job"]
        assert not job.done
        # while it measures: Start is disabled, and the status is running (no ✓), in this session ...
        a.run()
        assert start_button(a).disabled
        assert a.status[0].state == "running" and not a.status[0].label.startswith(("Finished", "Stopped"))
        # ... and in the other tab: its Start (drawn before the run began) starts nothing, and the tab shows the
        # run, its server and when it started
        fill(b, s.url)
        start_button(b).click().run()
        assert "live_job" not in b.session_state and len(running_jobs()) == 1
        assert start_button(b).disabled
        assert f"A measurement of {s.url} is running (started " in unescape(page_text(b))
        assert b.status[0].state == "running" and s.url in b.status[0].label
        # a second start against the same server (written another way) is refused, naming the running job
        other = MeasureConfig(base_url=s.url.replace("127.0.0.1", "localhost"), parts=("decode",))
        with pytest.raises(ServerBusy, match=f"a measurement of {s.url} is already running \\(started "):
            LiveJob(other, SetupInput(gpu="cpu"), site.parent / "x", site).start()
        # once a step has finished, stop it from the other tab: the panel counts what really ran
        deadline = time.time() + 60
        while not any(e.kind == "step" for e in job.events) and time.time() < deadline:
            time.sleep(0.05)
        b.run()
        next(x for x in b.button if x.label == "Stop").click().run()
        assert job.wait(60)
        a.run()
        requests = sum(1 for e in job.events if e.kind == "request")
        ran = sum(1 for e in job.events if e.kind == "step" and "before it started" not in (e.reason or ""))
        assert a.status[0].state == "complete"
        assert a.status[0].label == f"Stopped: {ran} of 5 steps ran, {requests:,} requests"  # 5 planned
        assert requests < 2 * 3 + 3 + 2 * (1 + 2)  # fewer than planned: not the plan's count
        steps = table_with(a, "Step")
        assert "stopped" in set(steps.Status)
        assert not start_button(a).disabled  # free again
        # the tab that pressed Stop keeps the run in view once it is saved, with a link to its card
        b.run()
        assert job.setup_id and job.run_dir is not None
        assert b.status[0].label.startswith(f"Stopped of {s.url}: ")
        links = [(p.label, p.proto.page, p.proto.query_string) for p in b.get("page_link")]
        assert ("Open its card", "Setup_card", f"setup={job.setup_id}") in links, links
    finally:
        for j in running_jobs():
            j.stop()
            j.wait(60)
        s.stop()


def test_a_known_gpu_without_its_memory_runs_and_says_the_size_assumed(site):
    """An RTX 4090 with the memory field left empty: the run starts, its panel says 24 GiB was assumed (from the
    importers' known-GPU table), and the saved setup is in the 24 GB tier with the assumption on record."""
    from benchcards.read import overview_rows
    from benchcards.read.store import Store

    s = demo_server(decode_tps=2000, prefill_tps=200000, slots=2)
    try:
        at = run("pages/6_Run_live.py")
        fill(at, s.url, gpu="RTX 4090", vram=None)
        job = run_decode(at)
        notes = [unescape(i.value) for i in at.info]
        assert any("VRAM per GPU (GiB) not given: assumed 24 GiB per RTX 4090" in n for n in notes), notes
        ov = overview_rows.overview(Store(site)).set_index("setup_id")
        assert ov.tier[job.setup_id] == "24 GB" and ov.vram_gib[job.setup_id] == 24
        from benchcards.read import card_data

        card = card_data.card(Store(site), job.setup_id)
        assert "GPU memory 24 GiB per RTX 4090 assumed from benchcards' table" in card.setup.provenance
    finally:
        for j in running_jobs():
            j.stop()
            j.wait(60)
        s.stop()


def test_the_sampling_fields_are_sent_and_a_bad_one_is_named(site):
    """The speed form's sampling fields (live.settings.SamplingSettings): a value typed is what every request
    sends and the setup records; a value the model refuses is named by its field before anything is sent."""
    s = demo_server(decode_tps=2000, prefill_tps=200000, slots=2)
    try:
        at = run("pages/6_Run_live.py")
        fill(at, s.url)
        at.number_input(key="live_temperature").set_value(-1.0)
        start_button(at).click().run()
        assert "Temperature: -1.0 — input should be greater than or equal to 0" in unescape(at.error[0].value)
        assert "live_job" not in at.session_state
        at.multiselect(key="live_parts").set_value(["decode"])
        at.number_input(key="live_temperature").set_value(0.2)
        at.number_input(key="live_min_p").set_value(0.05)
        at.text_input(key="live_source").set_value("model card")
        start_button(at).click().run()
        assert not at.error, [e.value for e in at.error]
        job: LiveJob = at.session_state["live_job"]
        assert job.cfg.sampling == {"temperature": 0.2, "top_p": 0.95, "top_k": 20, "min_p": 0.05, "seed": 42}
        assert job.wait(120)
        from benchcards.read import card_data
        from benchcards.read.store import Store

        sampling = card_data.card(Store(site), job.setup_id).setup.sampling
        assert (sampling.temperature, sampling.min_p, sampling.source) == (0.2, 0.05, "model card")
    finally:
        for j in running_jobs():
            j.stop()
            j.wait(60)
        s.stop()
