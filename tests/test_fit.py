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

from benchcards.domain.fmt import header as fmt_header
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
    # the table's words, the engine's own line beside without its "0.03.513.260 E " prefix
    assert steps[2].error == ("the KV cache for this context did not fit (engine: llama_init_from_model: failed to "
                              "initialize the context: failed to allocate buffer for kv cache)")
    assert run.contract.restarted_per_size is True and run.contract.added_by_benchcards == ["--port", "{port}",
                                                                                           "--host", "{host}"]
    phases = [(e.ctx, e.phase) for e in events]
    assert phases[:4] == [(4096, "starting"), (4096, "loading"), (4096, "answering"), (4096, "stopped")]
    assert phases[-2:] == [(32768, "loading"), (32768, "stopped")]
    assert all(not alive(e.pid) for e in events if e.pid)  # every server it started is gone
    assert headline(run.contract).startswith("largest size that answered: 8,192 tokens, peak process memory (RSS) ")


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
    # the test started its servers itself, one address per size: the setup names none (it said ':1' for the demo)
    said = json.loads((run_dir.parent.parent / "setup.json").read_text())["provenance"]
    assert said.startswith("memory test measured live with benchcards against the benchcards demo server (it "
                           "started the server itself, once per context size): a simulated engine"), said
    assert "127.0.0.1" not in said


def test_ingest_card_and_export_show_the_memory_table(refused_run, tmp_path):
    from benchcards.read import card_data
    from benchcards.read.overview_rows import overview
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
    assert table["Result"].iloc[0] == "answered, to its token limit"  # the finish reason in words, never "length"
    # no GPU reading: the peak is the process tree's RSS, never labelled GPU memory
    assert "Peak process memory (RSS) (GiB)" in table.columns and not any("GPU" in c for c in table.columns)
    assert [t.label for t in card_tables.fit_tiles(c)][1] == "Peak process memory (RSS)"
    assert "Each request could use" not in table.columns  # --slots 1: every request could use the whole size
    from benchcards.charts import charts

    spec = json.dumps(charts.fit_spec(c.fit_steps))
    assert '"title": "Peak process memory (RSS) (GiB)"' in spec and "Peak GPU memory" not in spec
    declared = json.dumps(charts.fit_spec(c.fit_steps, vram_gib=24.0))  # a GPU declared, no GPU reading
    assert "GPU memory 24 GiB" not in declared and "GPU memory" not in declared  # no line RSS is not measured against
    from benchcards.views import compare

    side = compare.fit_side_by_side([c]).table.set_index("Figure")
    assert side.loc[fmt_header("fit_peak_gib")].iloc[0].endswith(", process memory (RSS)")
    row = overview(Store(db)).set_index("setup_id").loc[setup_id]
    assert row.need_gib == row.fit_peak_gib > 0  # CPU only: the process memory is what the setup needs
    assert table["Result"].iloc[2].startswith("did not load: ") and "failed to allocate buffer for kv cache" in \
        table["Result"].iloc[2]
    note = card_tables.fit_note(c)
    assert note.startswith("The server was restarted for each context size")
    assert "Answered, to its token limit: as expected here" in note and "answered, ended by the model: " in note
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
    for want in ("Context size", "8K (8,192 tokens)", "answered, to its token limit", "did not load", "Peak"):
        assert want in text, want
    assert errors == []


def test_a_server_that_dies_mid_answer_did_not_answer(tmp_path):
    cfg = FitConfig(server_cmd=demo_cmd("--fault die"), sizes=(4096, 8192))
    run = run_fit(cfg)
    step, left = run.contract.steps  # the first failure ends the test
    assert step.result == "no_answer"
    assert step.error.startswith("the server died mid-answer (exit status 3)")
    assert (left.ctx, left.result) == (8192, "not_tried")
    assert left.error == "stopped after the first size that did not answer (4,096); --keep-going runs them"
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


# --------------------------------------------------------------------------- what the user reads


@pytest.fixture(scope="module")
def sliced_cli(tmp_path_factory):
    """The CLI with sizes typed out of order against a demo engine with 4 slots (no -kvu: -c is split) that
    refuses above 8K: 4K and 8K answer with a quarter of their size per request, 16K does not load, 32K is
    never tried."""
    out = tmp_path_factory.mktemp("fit-sliced")
    cmd = (f"{sys.executable} -m live demo-server -c {{ctx}} --slots 4 --prefill-tps 20000 --decode-tps 400 "
           "--refuse-above 8192")
    done = subprocess.run([sys.executable, "-m", "live", "fit", "--server-cmd", cmd, "--sizes", "32K,4K,16K,8K",
                           "--gpu", "RTX 4090", "--vram-gib", "24", "--title", "Sliced demo", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = out.glob("*/fit/*")
    return done, run_dir


def test_the_cli_runs_sizes_smallest_first_and_names_the_sizes_not_tried(sliced_cli):
    done, _ = sliced_cli
    results = [line for line in done.stderr.splitlines() if line.startswith("[") and ": starting" not in line
               and ": loading" not in line and ": answering" not in line]
    assert [r.split(":")[0] for r in results] == ["[1/4] 4,096", "[2/4] 8,192", "[3/4] 16,384", "[4/4] 32,768"]
    assert results[2].startswith("[3/4] 16,384: did not load") and results[2].endswith(
        "— the KV cache for this context did not fit (engine: llama_init_from_model: failed to initialize the "
        "context: failed to allocate buffer for kv cache)")
    assert results[3] == ("[4/4] 32,768: not tried — stopped after the first size that did not load (16,384); "
                          "--keep-going runs them")


def test_the_cli_says_what_each_request_could_use_and_that_the_peak_is_process_memory(sliced_cli):
    done, _ = sliced_cli
    line = next(x for x in done.stderr.splitlines() if x.startswith("[2/4] 8,192: answered"))
    assert "peak process memory (RSS) " in line and "GPU" not in line
    assert "each request could use 2,048 of 8,192 tokens (4 slots without -kvu)" in line
    head = done.stdout.splitlines()[-1]
    assert head.startswith("largest size that answered: 8,192 tokens, peak process memory (RSS) ")
    assert ("— but each request could use 2,048 of 8,192 tokens (4 slots without -kvu): start the server with "
            "-np 1 or -kvu to test the whole window") in head


def test_the_card_warns_that_a_request_used_a_slot_and_lists_the_size_not_tried(sliced_cli, tmp_path):
    from benchcards.read import card_data
    from benchcards.read.overview_rows import overview
    from benchcards.read.store import Store
    from benchcards.views import card_tables, cardview
    from ingest import ingest_paths

    _, run_dir = sliced_cli
    db = tmp_path / "sliced.duckdb"
    ingest_paths([run_dir.parent.parent.parent], db)
    store = Store(db)
    c = card_data.card(store, run_dir.parent.parent.name)
    table = card_tables.fit_table(c)
    assert list(table["Each request could use"]) == [
        "each request could use 1,024 of 4,096 tokens (4 slots without -kvu)",
        "each request could use 2,048 of 8,192 tokens (4 slots without -kvu)", "—", "—"]
    filled = next(c for c in table.columns if c.startswith("Filled"))
    assert all(20 < float(x) < 25 for x in table[filled][:2])  # filled % is of the size: a quarter of it, at most
    assert table["Result"].iloc[3] == ("not tried: stopped after the first size that did not load (16,384); "
                                       "--keep-going runs them")
    warned = {what: message for what, _run, message in card_tables.warnings_list(c)}
    assert warned["A request could use less context than the size"].startswith(
        "each request could use 2,048 of 8,192 tokens (4 slots without -kvu)")
    memory = next(s for s in cardview.sections(c) if s.anchor == "memory")
    texts = [b.text for b in memory.blocks if isinstance(b, cardview.Text)]
    assert any(t.startswith("The size is what the server was started with (-c, what memory was allocated for), "
                            "but each request could use 2,048 of 8,192 tokens") for t in texts)
    assert c.fit["first_failed_ctx"] == 16384  # a size not tried is no failure
    # memory-test-only: no sampling settings that no run of the setup used
    sampling = next(s for s in cardview.sections(c) if s.anchor == "sampling")
    shown = " ".join(b.text for b in sampling.blocks)
    assert "temperature" not in shown and shown.startswith("None used: this setup has only a memory test")
    # the overview's "fits in my GPU memory" does not take an RSS peak for the GPU memory of a GPU setup
    row = overview(store).set_index("setup_id").loc[c.setup_id]
    assert row.fit_peak_gib < 1 and row.need_gib == 24.0


def test_a_missing_engine_program_is_a_usage_error_and_starts_nothing(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "live", "fit", "--server-cmd", "llama-server -m m.gguf -c {ctx}",
                           "--sizes", "4K", "--gpu", "cpu", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PATH": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert "--server-cmd: the program 'llama-server' was not found on PATH" in done.stderr
    assert "starting the server" not in done.stderr and not out.exists()
    script = tmp_path / "llama-server"
    script.write_text("#!/bin/sh\nexit 1\n")
    for program, why in ((str(tmp_path / "nope" / "llama-server"), "does not exist"),
                         (str(script), "is not an executable file"),
                         (f"prlimit --as=100000000 {tmp_path / 'nope' / 'llama-server'}", "does not exist"),
                         (f"env A=b {tmp_path / 'nope' / 'my-engine'}", "does not exist")):
        cfg = FitConfig(server_cmd=f"{program} -c {{ctx}}", sizes=(4096,))
        assert any(p.startswith("--server-cmd: the program ") and p.endswith(why) for p in cfg.problems()), program
    script.chmod(0o755)  # found and runnable, but it exits before it serves: a size that did not load
    run = run_fit(FitConfig(server_cmd=f"{script} -c {{ctx}}", sizes=(4096,)))
    assert [s.result for s in run.contract.steps] == ["no_load"]
