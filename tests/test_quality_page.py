"""The Run live page's quality mode (AppTest session of the real page against the demo server on 127.0.0.1):
settings refused with their field named, a run with progress per item and time left, saved to the site
and shown on its card; an uploaded item file goes through the same checks as the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.limits import LIMITS
from tests.live_servers import demo_server
from tests.test_app import page_text, run, unescape
from ui.live_quality import read_settings

pytestmark = pytest.mark.integration


@pytest.fixture()
def site(demo_db, monkeypatch, tmp_path):
    import benchcards.read.paths as paths

    copy = tmp_path / "site.duckdb"
    copy.write_bytes(Path(demo_db).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(copy))
    monkeypatch.setattr(paths, "LOCAL", tmp_path / "local")
    monkeypatch.setattr("ui.live_quality.LOCAL", tmp_path / "local")
    yield copy


def quality_page():
    at = run("pages/6_Run_live.py")
    at.radio(key="live_mode").set_value("Quality").run()
    return at


def test_bad_settings_name_their_field(site):
    at = quality_page()
    at.text_input(key="lq_base_url").set_value("http://127.0.0.1:9")
    at.text_input(key="lq_tests").set_value("needle:lots")
    at.text_input(key="lq_gpu").set_value("RTX 4060 Ti")  # sold with two sizes: its memory is asked for
    next(b for b in at.button if b.label == "Start").click().run()
    text = unescape(at.error[0].value)
    assert "Generated tests: 'needle:lots'" in text and "VRAM per GPU (GiB): give the memory" in text
    assert "live_quality_job" not in at.session_state


def test_a_quality_run_shows_progress_and_lands_on_the_card(site):
    demo = demo_server(decode_tps=2000, prefill_tps=200000, slots=4, quality_right=0.7, quality_cutoff=0.1)
    try:
        at = quality_page()
        at.text_input(key="lq_base_url").set_value(demo.url)
        at.text_input(key="lq_tests").set_value("needle:2K:2,arith:12")
        at.text_input(key="lq_max_tokens").set_value("64")
        at.text_input(key="lq_gpu").set_value("cpu")
        next(b for b in at.button if b.label == "Start").click().run()
        job = at.session_state["live_quality_job"]
        assert job.wait(120) and job.error is None, job.error
        at.run()
        text = page_text(at)
    finally:
        demo.stop()
    assert [s.label for s in at.status] == ["Finished: 14 items answered"]
    assert "Arithmetic (generated): " in text and "right" in text and "cut off" in text
    assert job.events[-1].left_s == 0 and job.events[-1].total == 14
    assert at.success and "Saved and added to the site" in unescape(at.success[0].value)
    card = run("pages/1_Setup_card.py", setup=job.setup_id)
    shown = page_text(card)
    assert "Arithmetic (generated)" in shown and "Needle retrieval 2K (generated)" in shown


class Uploaded:
    """What Streamlit's uploader hands the page: a name and the bytes."""

    def __init__(self, name: str, data: bytes):
        self.name, self._data = name, data

    def getvalue(self) -> bytes:
        return self._data


def settings(**v):
    base = {"base_url": "http://127.0.0.1:9", "model": "", "tests": "", "file": None, "max_tokens": "256",
            "thinking": "off", "in_flight": 2, "sampling": {"seed": 0}, "title": "", "gpu": "cpu", "vram": None,
            "quant": "",
            "server_cmd": "", "allow_remote": False}
    return read_settings({**base, **v})


def test_an_uploaded_item_file_is_checked_like_the_command_lines():
    good = Uploaded("mine.jsonl", b'{"id": "q1", "prompt": "p", "scorer": "exact", "answer": "x"}\n')
    cfg, problems = settings(file=good, max_tokens="512, items-mine=64")
    assert not problems and cfg.item_files[0].test == "items-mine-74addd9e"  # the readable id names it on the page too
    assert cfg.limit_for("items-mine-74addd9e", "items") == 64 and cfg.limit_for("arith", "arith") == 512
    bad = Uploaded("bad.jsonl", b'{"id": "q1", "prompt": "p", "scorer": "exact"}\n')
    cfg, problems = settings(file=bad)
    assert cfg is None and problems == ["bad.jsonl line 1, field 'answer': missing"]
    big = Uploaded("big.jsonl", b" " * (LIMITS.items_file_bytes + 1))
    assert settings(file=big)[1] == [f"big.jsonl: larger than {LIMITS.items_file_bytes // 2**20} MiB"]
    assert settings()[1] == ["Settings: --tests or --items: nothing to ask"]


def test_the_page_refuses_answer_limits_as_the_command_line_does():
    assert settings(tests="arith:3", max_tokens="0")[1] == ["Answer limit: '0': a limit from 1 to 1,048,576 tokens"]
    cfg, problems = settings(tests="arith:3", max_tokens="64, nosuch=5")
    assert cfg is None and problems == ["Settings: --max-tokens nosuch=5: no such test in this run (its tests: arith)"]


def test_an_uploaded_regex_that_would_take_all_memory_is_refused_by_the_page():
    evil = Uploaded("evil.jsonl", b'{"id":"s","prompt":"p","scorer":"regex","answer":"a{1000000000}"}\n')
    cfg, problems = settings(file=evil)
    assert cfg is None and problems == ["evil.jsonl line 1, field 'answer': repeat count 1,000,000,000 is over the "
                                        "limit of 1,000"]


def test_the_saved_line_lists_its_warnings_and_another_command_is_its_own_setup(site):
    """The report's "1 warning(s), listed below" is followed by the warning; a second run with another server
    command is stored as a separate setup (live.setups, the rule of every live kind), and the page says so."""
    demo = demo_server(decode_tps=2000, prefill_tps=200000, slots=4)

    def start(cmd: str):
        at = quality_page()
        at.text_input(key="lq_base_url").set_value(demo.url)
        at.text_input(key="lq_tests").set_value("arith:2")
        at.text_input(key="lq_max_tokens").set_value("32")
        at.text_input(key="lq_gpu").set_value("cpu")
        at.text_input(key="lq_title").set_value("Page setup")
        at.text_input(key="lq_server_cmd").set_value(cmd)
        next(b for b in at.button if b.label == "Start").click().run()
        job = at.session_state["live_quality_job"]
        assert job.wait(120) and job.error is None, job.error
        at.run()
        return at, job

    try:
        at, first = start("llama-server -m /m/q.gguf stray")
        said = unescape(at.success[0].value)
        assert "1 warning(s), listed below" in said
        assert any("stray belongs to no flag" in unescape(w.value) for w in at.warning), [w.value for w in at.warning]
        at, second = start("llama-server -m /m/q.gguf -ctk q8_0")
    finally:
        demo.stop()
    assert second.setup_id == f"{first.setup_id}-2"
    assert any("Saved as a separate setup" in unescape(i.value) and "server.argv" in unescape(i.value)
               for i in at.info), [i.value for i in at.info]
