"""The live memory test (live/fit.py, ``python -m live fit``) against the demo engine, which loads, holds memory,
refuses a context and dies like llama-server: results, stop paths by pid, and the contract through ingest ->
card -> export -> Chromium."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from live.fit import FitConfig, fit_setup, headline, prompt_target, run_fit, write_fit_folder
from live.measure import SetupInput
from tests.test_launcher import alive, wait_gone

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
DEMO = f"{sys.executable} -m live demo-server -c {{ctx}} --slots 1 --prefill-tps 20000 --decode-tps 400"


def demo_cmd(*extra: str) -> str:
    return " ".join([DEMO, *extra])


@pytest.fixture(scope="module")
def refused_run(tmp_path_factory):
    """4K, 8K answer; 16K is refused at load as llama.cpp refuses a KV cache that does not fit; 32K (with
    --keep-going) too."""
    cfg = FitConfig(server_cmd=demo_cmd("--refuse-above 8192 --load-s 0.5 --kv-mib-per-1k 4"),
                    sizes=(4096, 8192, 16384, 32768), keep_going=True, sample_interval_s=0.1)
    events = []
    run = run_fit(cfg, events.append)
    setup = fit_setup(run, SetupInput(gpu="cpu", title="Demo engine memory test"))
    out = tmp_path_factory.mktemp("fit-out")
    run_dir = write_fit_folder(out, setup, run)
    return run, events, run_dir


def test_sizes_that_fit_answer_and_a_refused_size_did_not_load_with_the_engines_line(refused_run):
    run, events, _ = refused_run
    steps = run.contract.steps
    assert [(s.ctx, s.result) for s in steps] == [(4096, "answered"), (8192, "answered"), (16384, "no_load"),
                                                  (32768, "no_load")]
    for s in steps[:2]:
        assert s.finish_reason == "length" and s.answer_tokens == 96
        assert s.prompt_tokens == prompt_target(s.ctx, s.ctx, 95, 96)  # the server's own count, template included
        assert s.filled_pct == pytest.approx(95, abs=0.05)
        assert s.served_ctx == s.ctx and s.slots == 1
        assert s.decode_tps and s.ttft_s and s.prefill_tps and s.server_start_s
        assert s.peak_source == "process-rss" and s.rss_peak_gib and s.peak_gib == s.rss_peak_gib
        assert [(b.device, b.kind) for b in s.engine_buffers] == [("CPU_Mapped", "model"), ("CPU", "KV"),
                                                                  ("CPU", "compute")]
        assert s.engine_buffers[1].mib == pytest.approx(s.ctx / 1024 * 4)
        assert s.memory_breakdown[0].device == "Host"
        assert s.argv[-4:-2] == ["--port", s.argv[-3]] or "--port" in s.argv
    # memory grows with the context: 4 MiB per 1K held by the engine
    assert steps[1].rss_peak_gib - steps[0].rss_peak_gib == pytest.approx(16 / 1024, abs=8 / 1024)
    assert steps[2].error.endswith("E llama_init_from_model: failed to initialize the context: failed to allocate "
                                   "buffer for kv cache")
    assert run.contract.restarted_per_size is True and run.contract.added_by_benchcards == ["--port", "{port}",
                                                                                           "--host", "{host}"]
    phases = [(e.ctx, e.phase) for e in events]
    assert phases[:4] == [(4096, "starting"), (4096, "loading"), (4096, "answering"), (4096, "stopped")]
    assert phases[-2:] == [(32768, "loading"), (32768, "stopped")]
    assert all(not alive(e.pid) for e in events if e.pid)  # every server it started is gone
    assert headline(run.contract).startswith("largest size that answered: 8,192 tokens, peak memory")


def test_the_run_folder_is_a_contract_like_an_uploaded_one(refused_run):
    _run, _, run_dir = refused_run
    names = sorted(p.name for p in run_dir.iterdir())
    assert names == ["client.log", "contract.json", *(f"memory-{c}.csv" for c in (16384, 32768, 4096, 8192)),
                     *(f"server-{c}.log" for c in (16384, 32768, 4096, 8192))]
    doc = json.loads((run_dir / "contract.json").read_text())
    assert {a["path"] for a in doc["attachments"]} == set(names) - {"contract.json"}
    assert "n_ctx_slot = 4096" in (run_dir / "server-4096.log").read_text()
    csv = (run_dir / "memory-8192.csv").read_text().splitlines()
    assert csv[0] == "t_s,phase,source,device,mib" and any(",answer,process-rss,tree," in x for x in csv)


def test_ingest_card_and_export_show_the_memory_table(refused_run, tmp_path):
    from benchcards.read import card_data
    from benchcards.read.store import Store
    from benchcards.site.exporter import export
    from benchcards.views import card_tables, method_text
    from ingest import ingest_paths

    _run, _, run_dir = refused_run
    db = tmp_path / "fit.duckdb"
    ingest_paths([run_dir.parent.parent.parent], db)
    setup_id = run_dir.parent.parent.name
    c = card_data.card(Store(db), setup_id)
    table = card_tables.fit_table(c)
    assert list(table["Context size"]) == ["4K (4,096 tokens)", "8K (8,192 tokens)", "16K (16,384 tokens)",
                                     "32K (32,768 tokens)"]
    assert table["Result"].iloc[0] == "answered (length)"
    assert table["Result"].iloc[2].startswith("did not load: ") and "failed to allocate buffer for kv cache" in \
        table["Result"].iloc[2]
    note = card_tables.fit_note(c)
    assert note.startswith("The server was restarted for each context size")
    assert "resident memory of the server's process tree" in note
    method = method_text.method_table(c)
    assert "Added to the command by benchcards" in set(method.Setting)
    site = tmp_path / "site"
    export(db, site)
    page = site / "setups" / f"{setup_id}.html"
    html = page.read_text()
    assert "The server was restarted for each context size" in html
    assert "failed to allocate buffer for kv cache" in html
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("no Chromium for the browser half")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        tab = browser.new_page(viewport={"width": 1300, "height": 2000})
        errors: list[str] = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(page.as_uri())
        memory = tab.locator("#memory ~ div table, #memory + div table, h2#memory ~ * table").first
        text = memory.inner_text()
        browser.close()
    for want in ("Context size", "8K (8,192 tokens)", "answered (length)", "did not load", "Peak"):
        assert want in text, want
    assert errors == []


def test_a_server_that_dies_mid_answer_did_not_answer(tmp_path):
    cfg = FitConfig(server_cmd=demo_cmd("--fault die"), sizes=(4096, 8192))
    run = run_fit(cfg)
    (step,) = run.contract.steps  # the first failure ends the test
    assert step.result == "no_answer"
    assert step.error.startswith("the server died mid-answer (exit status 3)")
    assert "8192" in (run.contract.notes or "")  # the size not tried is named


# --------------------------------------------------------------------------- the command line


def _cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "live", "fit", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, **kw)


def test_the_cli_refuses_a_command_without_ctx_and_a_port_in_use(tmp_path):
    out = subprocess.run([sys.executable, "-m", "live", "fit", "--server-cmd", "llama-server -m m.gguf -c 4096",
                          "--gpu", "cpu", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and "the command has no {ctx}" in out.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "live", "fit", "--server-cmd", demo_cmd(f"--port {port}"),
                              "--sizes", "4K", "--gpu", "cpu", "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"error: --server-cmd: port {port} on 127.0.0.1 is already in use" in out.stderr
    assert "starting the server" not in out.stderr and not any(tmp_path.iterdir())  # nothing started or written


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_cli_interrupted_mid_load_leaves_no_engine(tmp_path, sig):
    proc = _cli("--server-cmd", demo_cmd("--load-s 600"), "--sizes", "4K,8K", "--gpu", "cpu", "--out",
                str(tmp_path))
    assert proc.stderr is not None
    pid = None
    for line in proc.stderr:
        if "loading (server pid " in line:
            pid = int(line.rsplit("pid ", 1)[1].rstrip(")\n"))
            break
    assert pid is not None and alive(pid)
    time.sleep(0.5)  # well inside the 600 s load
    proc.send_signal(sig)
    rest = proc.communicate(timeout=120)
    assert proc.returncode == 130, rest
    assert wait_gone(pid, 1)
    assert "stopped before any size finished: nothing written" in rest[1]


@pytest.mark.unit
def test_the_docstring_examples_of_live_fit_run():
    import doctest

    import live.fit

    result = doctest.testmod(live.fit)
    assert result.attempted >= 4 and result.failed == 0
