"""Live measurement against real HTTP servers on 127.0.0.1: the demo server (fast, every rule) and real
llama.cpp engines (llama-server built from source, llama-cpp-python) serving tiny random-weight models
with the real Llama 3 and Qwen vocabularies."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import httpx
import pytest

from benchcards.domain import names
from benchcards.read import card_data, overview_rows
from benchcards.read.store import Store
from benchcards.views import card_tables, method_text
from ingest import ingest_paths
from live.client import NotLoopback, parse_stream, stream_chat
from live.measure import MeasureConfig, SetupInput, build_setup, measure, parse_build, write_folder
from live.prompts import TASKS, PromptBuilder
from tests.live_servers import ROOT, VOCABS, demo_server, free_port, llama_cpp_python, llama_server, tiny_model

pytestmark = pytest.mark.integration

DECODE, PREFILL, OVERHEAD_MS = 400.0, 8000.0, 3.0


@pytest.fixture(scope="module")
def demo():
    s = demo_server(decode_tps=DECODE, prefill_tps=PREFILL, slots=2, ctx=65536, overhead_ms=OVERHEAD_MS)
    yield s
    s.stop()


def small(url: str, **kw) -> MeasureConfig:
    base = dict(base_url=url, parts=("decode",), prompt_ids=("code", "prose"), runs=2, warmups=1, max_tokens=300,
                min_decode_tokens=256, prefill_depths=(2048,), prefill_runs=2, conc_levels=(1, 2, 4), conc_rounds=1,
                conc_max_tokens=120, l1_max_tokens=200, ctx_depths=(4096,), ctx_runs=1, ctx_max_tokens=300,
                read_timeout=5.0)
    base.update(kw)
    return MeasureConfig(**base)


def step(contract, part):
    return next(p for p in contract.parts if p.part == part)


def ingest_run(tmp_path, contract, info, cfg, log, **setup):
    s = build_setup(SetupInput(**setup), info, cfg)
    run_dir = write_folder(tmp_path / "out", s, contract, log)
    db = tmp_path / "live.duckdb"
    ingest_paths([run_dir.parent.parent], db)
    return card_data.card(Store(db), s.setup_id), run_dir


# --------------------------------------------------------------------------- demo server


@pytest.mark.integration
def test_configured_rates_are_recovered(demo):
    """Each request's client decode rate matches what the server actually emitted (its own log of first
    and last write) within 5 %, and stays near the configured rate (never more than 5 % above it, at most half below it on a
    loaded machine); prefill from TTFT likewise, once the server's fixed 3 ms overhead is allowed for. The suite shares two cores
    with browsers and servers, so configured-rate tolerances are loose; bench/live_client.py measures the
    client's accuracy (within 1 %) on quiet, pinned cores."""
    demo.fault(None)
    contract, info, _ = measure(small(demo.url, parts=("decode", "prefill")))
    emitted = httpx.get(f"{demo.url}/_demo/emissions", timeout=5).json()
    assert info.kind == "llama-server" and info.slots == 2 and info.has_tokenize and info.demo
    assert step(contract, "decode").status == "ok" and step(contract, "prefill").status == "ok"
    streamed = [r for r in contract.requests if r.part in ("decode", "prefill")]
    server_side = emitted[-len(streamed):]
    for r, e in zip(streamed, server_side):
        assert r.output_tokens == e["tokens"]
        assert e["writes"] == e["events"]  # one SSE event per write, like llama-server
        if r.part != "decode":
            continue
        rate = (r.output_tokens - 1) / (r.t_last - r.t_first)
        assert rate == pytest.approx(e["rate"], rel=0.05)
        # the configured rate is only what the server aims at: on a loaded machine its sleeps overshoot
        configured = DECODE / (1 + r.prompt_tokens / 100_000)
        assert 0.5 * configured <= rate <= 1.05 * configured
        assert r.output_tokens == 300 and not r.tokens_estimated  # from usage, although events were merged
        assert r.timings.cache_n == 0  # cache_prompt: false was sent
    pre = [r for r in contract.requests if r.part == "prefill"]
    for r in pre:
        assert r.prompt_tokens == 2048  # exact length although the tokenizer splits numbers like a real BPE
        expected = 2048 / (2048 / PREFILL + OVERHEAD_MS / 1000)
        assert 0.5 * expected <= r.prompt_tokens / (r.t_first - r.t_send) <= 1.15 * expected
        assert r.timings.prompt_per_second == pytest.approx(PREFILL, rel=0.01)  # the server's own report


@pytest.mark.integration
def test_the_demo_server_writes_one_event_per_token_and_the_client_reads_them_one_by_one():
    """At an everyday rate a client sees one read per token event, as from llama-server."""
    s = demo_server(decode_tps=200, merge_every=0)
    try:
        raw = stream_chat(f"{s.url}/v1/chat/completions", {
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 120, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}}, read_timeout=5)
        res = parse_stream(raw)
        emitted = httpx.get(f"{s.url}/_demo/emissions", timeout=5).json()[-1]
    finally:
        s.stop()
    assert res.error is None and res.output_tokens == 120
    assert emitted["writes"] == emitted["events"] == 120
    # about one read per token; on a loaded machine the client may wake late and find several waiting
    assert res.reads >= 60


@pytest.mark.integration
def test_requests_at_once_queue_beyond_the_slots(demo):
    demo.fault(None)
    contract, _, _ = measure(small(demo.url, parts=("conc",)))
    assert step(contract, "conc").status == "ok"
    conc4 = [r for r in contract.requests if r.part == "conc" and r.concurrency == 4]
    waits = sorted(r.t_first - r.t_send for r in conc4)
    assert waits[2] > waits[1] + 0.1  # two slots: the 3rd and 4th request waited for a slot
    assert contract.method.server_slots == 2


@pytest.mark.integration
def test_folder_is_accepted_by_ingest_unchanged_and_is_labelled_demo(demo, tmp_path):
    demo.fault(None)
    cfg = small(demo.url, parts=("decode", "prefill", "conc", "l1", "ctx"), ctx_depths=(4096, 65536))
    contract, info, log = measure(cfg)
    setup = build_setup(SetupInput(gpu="Demo GPU", vram_gib=24, quant="Q4_K_M", engine="llama.cpp",
                                   server_cmd="llama-server -m demo.gguf -c 65536 -np 2"), info, cfg)
    run_dir = write_folder(tmp_path / "out", setup, contract, log)
    db = tmp_path / "live.duckdb"
    report = ingest_paths([run_dir.parent.parent], db)
    assert report.new == [setup.setup_id] and report.requests == len(contract.requests)
    card = card_data.card(Store(db), setup.setup_id)
    assert card.value("decode") == pytest.approx(DECODE, rel=0.15)  # plumbing, not accuracy (see above)
    assert card.value("prefill", level=2048) is not None
    assert card.value("measured_depth", "prefill", 2048) == 2048
    assert card.value("server_decode", "code") == pytest.approx(card.value("decode", "code"), rel=0.15)
    # 64K does not fit a slot (65,536 over 2 slots): that step is recorded as skipped with the real arithmetic,
    # listed as skipped on the card and left out of the depths the card says were measured
    assert step(contract, "ctx").status == "ok"
    skipped = step(contract, "ctx/65536")
    assert skipped.status == "skipped" and skipped.reason == (
        "65,536 prompt tokens + 300 output tokens = 65,836 tokens, more than the server's context per slot of "
        "32,768 tokens (2 slots)")
    assert contract.method.ctx_depths == [4096] and contract.method.server_ctx_per_slot == 32768
    runs = card_tables.runs_table(card)
    assert "Long prompts, 64K: skipped — 65,536 prompt tokens + 300 output tokens" in runs.iloc[0][
        "Failed / repeated / skipped"]
    how = dict(zip(method_text.method_table(card).Setting, method_text.method_table(card).Value))
    assert how["Long-prompt depths"] == "4K" and how["Server context per slot"] == "32,768 tokens"
    assert "Server context" not in how  # the total is not known from the server, so it is not claimed
    # a run against the demo server is a demo, whatever the user typed: never verified raw llama.cpp
    assert card.row["slots"] == 2 and card.row["engine"] == "demo" and card.row["synthetic"]
    assert names.badges(card.row) == "synthetic" and "not a real measurement" in card.setup.provenance
    assert card.setup.engine.commit is None and card.setup.engine.version == "b9999-demo"


@pytest.mark.unit
def test_build_info_parses_only_real_llama_cpp_builds():
    assert parse_build("b12223-0c6dca2fa") == (12223, "0c6dca2fa")
    assert parse_build("b9999-demo") == (None, None)  # not commit "de"
    assert parse_build("b0-0c1e570") == (None, "0c1e570")  # a source build without history: number unknown
    assert parse_build("b7000") == (7000, None) and parse_build(None) == (None, None)


@pytest.mark.integration
def test_ignore_eos_forces_the_token_limit_and_cache_prompt_is_off(tmp_path):
    s = demo_server(decode_tps=3000, answer_tokens=40)
    try:
        forced, _, _ = measure(small(s.url, runs=1, warmups=0))
        natural, _, _ = measure(small(s.url, runs=1, warmups=0, ignore_eos=False))
    finally:
        s.stop()
    assert step(forced, "decode").status == "ok"
    assert all(r.output_tokens == 300 and r.finish_reason == "length" for r in forced.requests)
    dec = step(natural, "decode")
    assert dec.status == "failed" and "ended after 40 tokens (finish reason stop)" in dec.reason
    assert all(r.timings.cache_n == 0 for r in forced.requests + natural.requests)


@pytest.mark.integration
def test_a_prompt_of_the_wrong_depth_fails_its_step_and_is_left_out_at_ingest(tmp_path):
    """The server counts 5 % more prompt tokens than its tokenizer endpoint says: the depth is checked
    against the server's own count, the step fails with the reason, and ingest leaves it out."""
    s = demo_server(decode_tps=2000, prefill_tps=1e6, fault="miscount")
    try:
        cfg = small(s.url, parts=("decode", "prefill"), runs=1, warmups=0, prefill_depths=(2048,))
        contract, info, log = measure(cfg)
    finally:
        s.stop()
    pre = step(contract, "prefill")
    assert pre.status == "failed" and "requested depth of 2,048 (+4.8 %, more than ±2 %)" in pre.reason
    card, _ = ingest_run(tmp_path, contract, info, cfg, log, gpu="Demo GPU", vram_gib=24)
    assert card.value("prefill", level=2048) is None and card.value("ttft", level=2048) is None
    computed = card.parts[card.parts.origin == "computed"]
    assert computed.part.tolist() == ["prefill/2048"] and "this step measured another depth" in computed.reason.iloc[0]
    assert "depth_mismatch" in set(card.warnings.kind)
    assert card.value("decode") is not None  # the other steps stay


@pytest.mark.integration
def test_ttft_gap_from_a_host_ram_prompt_cache_is_shown_and_explained(tmp_path):
    """The demo server imitates llama-server's host-RAM prompt cache: saving the previous request costs
    time that is in the client's TTFT but not in the server's prompt time. The card shows the gap per
    depth, the hygiene notes say prefill from TTFT is dominated by it, and name --cache-ram."""
    s = demo_server(decode_tps=3000, prefill_tps=20000, cache_save_ms_per_1k=60, overhead_ms=0)
    try:
        cfg = small(s.url, parts=("prefill",), prefill_depths=(1024, 8192), prefill_runs=2)
        contract, info, log = measure(cfg)
    finally:
        s.stop()
    card, _ = ingest_run(tmp_path, contract, info, cfg, log, gpu="Demo GPU", vram_gib=24,
                         server_cmd="llama-server -m m.gguf -c 65536")
    rows = {r["level"]: r for r in card_tables.ttft_gap_rows(card)}
    assert set(rows) == {1024, 8192}
    assert rows[8192]["server"] == pytest.approx(8192 / 20000, rel=0.02)
    # each request first saves the previous one before its prompt: after the 1K step about 0.06 s, after
    # an 8K request about 0.49 s; the median of the two 8K requests sits between
    assert rows[8192]["gap"] > 0.2 and rows[8192]["share"] > 20 and rows[8192]["dominated"]
    assert not rows[1024]["dominated"]  # below 8K the rule does not apply
    table = card_tables.ttft_gap_table(card)
    assert list(table.columns)[:4] == ["Prompt", "Time to first token (client)", "Prompt time (server)", "Gap"]
    notes = " ".join(card_tables.hygiene_notes(card))
    assert "--cache-ram is not set" in notes and "prefill from TTFT is dominated" in notes
    assert "measure again with --cache-ram 0" in notes
    assert "ttft_gap" in set(card.warnings.kind)


@pytest.mark.integration
@pytest.mark.parametrize("fault,expect", [
    ("http500", "HTTP 500"),
    ("http429", "HTTP 429"),
    ("cut", "stream cut"),
    ("stall", "stalled: no data for 2 s"),
    ("malformed", "malformed event"),
    ("no_done", "without data: [DONE]"),
    ("short", "ended after 23 tokens"),
])
def test_a_fault_fails_its_step_with_the_reason_and_keeps_the_others(demo, fault, expect):
    # fault on the 2nd decode prompt's measured run: warm-up + 2 runs of "code", then the warm-up of "prose"
    demo.fault(fault, after=4, count=1)
    cfg = small(demo.url, parts=("decode", "prefill"), read_timeout=2.0)
    contract, _, _ = measure(cfg)
    demo.fault(None)
    dec = step(contract, "decode")
    assert dec.status == "failed" and expect in dec.reason, dec.reason
    assert "decode prose" in dec.reason and "decode code" not in dec.reason
    assert step(contract, "prefill").status == "ok"  # the other steps are kept
    assert any(r.part == "prefill" and r.error is None for r in contract.requests)


@pytest.mark.integration
def test_a_step_with_an_http_500_gives_no_figure_and_the_card_lists_it(demo, tmp_path):
    """One of the two measured runs of "prose" answers HTTP 500: like a refused request, it fails its step, and
    no figure rests on the run that is left (a 'decode prose' and a decode headline beside a failed step)."""
    demo.fault("http500", after=4, count=1)  # warm-up + 2 runs of "code", the warm-up of "prose", then run 1
    cfg = small(demo.url, parts=("decode",))
    contract, info, log = measure(cfg)
    demo.fault(None)
    assert [r.error is not None for r in contract.requests if r.prompt_id == "prose"] == [False, True, False]
    card, _ = ingest_run(tmp_path, contract, info, cfg, log, gpu="Demo GPU", vram_gib=24,
                         server_cmd="llama-server -m m.gguf -c 65536")
    decode = card.metrics[card.metrics.metric == "decode"]
    assert decode.prompt.dropna().tolist() == ["code"]  # no prose figure and no headline over both prompts
    assert decode.prompt.isna().sum() == 0 and len(decode) == 1
    runs = card_tables.runs_table(card)["Failed / repeated / skipped"].iloc[0]
    assert ('Decode, prose prompt: failed — decode/prose round 0: HTTP 500: {"error": {"code": 500, "message": '
            '"demo: internal error"}}; the step gives no figure') in runs, runs


@pytest.mark.integration
def test_server_dying_mid_step_keeps_finished_steps(tmp_path):
    s = demo_server(decode_tps=2000, prefill_tps=50000, fault="die", fault_after=5)
    try:
        contract, _, _ = measure(small(s.url, parts=("decode", "prefill"), max_tokens=300, read_timeout=3.0))
    finally:
        s.stop()
    dec = step(contract, "decode")
    assert dec.status == "failed" and "decode prose" in dec.reason
    pre = step(contract, "prefill")
    assert pre.status == "failed" and "connection refused" in pre.reason
    ok = [r for r in contract.requests if r.part == "decode" and r.prompt_id == "code" and r.error is None]
    assert len(ok) == 3  # warm-up and both runs of the first prompt were kept


@pytest.mark.integration
def test_refused_connection_fails_fast():
    port = free_port()  # nothing listens there
    contract, info, _ = measure(small(f"http://127.0.0.1:{port}", parts=("decode", "prefill")))
    assert not info.reachable
    assert [p.status for p in contract.parts] == ["failed", "failed"]


@pytest.mark.unit
def test_targets_are_loopback_only():
    with pytest.raises(NotLoopback):
        measure(small("http://10.11.12.13:8080"))
    with pytest.raises(NotLoopback):
        measure(small("http://192.168.1.5:8080"))


@pytest.mark.integration
def test_cli_measure_writes_a_folder_with_the_server_log_that_ingests(demo, tmp_path):
    demo.fault(None)
    db = tmp_path / "cli.duckdb"
    server_log = tmp_path / "server.log"
    server_log.write_text("srv  load_model: loaded\n")
    r = subprocess.run([sys.executable, "-m", "live", "measure", "--base-url", demo.url, "--parts", "decode",
                        "--runs", "1", "--warmups", "0", "--max-tokens", "260", "--out", str(tmp_path / "out"),
                        "--gpu", "Demo GPU", "--vram-gib", "24", "--server-log", str(server_log), "--ingest", "--db", str(db)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "1/2 decode code: ok" in r.stderr and "ingested into" in r.stdout
    ov = overview_rows.overview(Store(db))
    assert len(ov) == 1
    files = card_data.card(Store(db), ov.setup_id.iloc[0]).files
    assert {"client.log", "server.log"} <= {p.rsplit("/", 1)[-1] for p in files.path}


@pytest.mark.integration
def test_live_job_saves_what_finished_when_stopped(demo, tmp_path):
    from live.job import LiveJob

    demo.fault(None)
    cfg = small(demo.url, parts=("decode", "prefill", "conc"), runs=1)
    job = LiveJob(cfg, SetupInput(gpu="Demo GPU", vram_gib=24), tmp_path / "local", tmp_path / "job.duckdb").start()
    deadline = time.time() + 60
    while not job.done and time.time() < deadline:
        if any(e.kind == "step" for e in job.events):
            job.stop()
        time.sleep(0.02)
    assert job.done and job.error is None, job.error
    card = card_data.card(Store(tmp_path / "job.duckdb"), job.setup_id)
    statuses = dict(zip(card.parts.part, card.parts.status))
    reasons = dict(zip(card.parts.part, card.parts.reason))
    # the prose prompt never finished: the decode part is recorded as stopped, and the card has the code
    # prompt's figure but no headline (it needs every prompt)
    assert statuses["decode"] == "stopped" and "1 of 2 steps finished; not finished: decode prose" in reasons["decode"]
    assert statuses["prefill"] == statuses["conc"] == "skipped"
    assert card.value("decode", "code") is not None and card.value("decode") is None
    assert "Decode: stopped — stopped by the user" in card_tables.runs_table(card).iloc[0]["Failed / repeated / skipped"]
    # what the progress counts is what ran
    from live.progress import estimate, plan

    now = estimate(plan(cfg), job.events)
    assert now.done == now.total == sum(1 for e in job.events if e.kind == "request") <= 4


# --------------------------------------------------------------------------- real llama.cpp engines

engine = pytest.mark.engine
one_worker = pytest.mark.xdist_group("engine")  # engines share two cores: run them one after another


@pytest.fixture(scope="module", params=VOCABS)
def llama(request):
    """llama-server (built from source) serving a tiny model with a real vocabulary; 40K context."""
    s = llama_server(tiny_model(request.param), "--metrics", ctx=40960)
    yield request.param, s
    s.stop()


def server_count(url: str, content: str) -> int:
    """The server's own prompt count without running the prompt: its chat template, then its tokenizer
    with the special tokens, as the server does before prompt processing."""
    with httpx.Client(timeout=120) as c:
        prompt = c.post(f"{url}/apply-template", json={"messages": [{"role": "user", "content": content}]}).json()
        return len(c.post(f"{url}/tokenize", json={"content": prompt["prompt"], "add_special": True,
                                                   "parse_special": True}).json()["tokens"])


@engine
@one_worker
def test_real_llama_server_prompts_have_the_exact_depth(llama):
    """512 to 16K tokens measured by the runner: the server's own prompt_n is the requested depth (no
    cached tokens). 32K to 128K by the same builder, checked with the server's template and tokenizer,
    a count shown here to equal prompt_n."""
    vocab, s = llama
    cfg = small(s.url, parts=("prefill",), prefill_depths=(512, 4096, 16384), prefill_runs=1, prefill_max_tokens=4,
                read_timeout=120.0)
    contract, info, _ = measure(cfg)
    assert step(contract, "prefill").status == "ok", step(contract, "prefill").reason
    assert info.kind == "llama-server" and info.tokenize_path == "/tokenize" and not info.demo
    pre = [r for r in contract.requests if r.part == "prefill"]
    assert [r.depth for r in pre] == [512, 4096, 16384]
    for r in pre:
        assert abs(r.prompt_tokens - r.depth) <= 2, (vocab, r.depth, r.prompt_tokens)
        assert r.timings.prompt_n == r.prompt_tokens and r.timings.cache_n == 0
    builder = PromptBuilder(lambda t: len(httpx.post(f"{s.url}/tokenize", json={"content": t}, timeout=120)
                                           .json()["tokens"]),
                            lambda t: server_count(s.url, t))
    assert server_count(s.url, builder.build(TASKS["prose"], 16384).text) == 16384
    for depth in (32768, 65536, 131072):
        assert abs(server_count(s.url, builder.build(TASKS["code"], depth).text) - depth) <= 2, (vocab, depth)


@engine
@one_worker
def test_real_llama_server_decode_agrees_with_its_timings_and_ingests(llama, tmp_path):
    """Client decode (n - 1) / (t_last - t_first) vs the server's predicted_per_second, per request; the
    same definition on both sides (first token free). bench/agreement.py measures the exact figure on a
    quiet machine; here the median must agree within 1 % on a shared one."""
    vocab, s = llama
    cfg = small(s.url, parts=("decode", "prefill", "conc"), runs=2, max_tokens=300, min_decode_tokens=256,
                prefill_depths=(2048,), prefill_runs=1, conc_levels=(1,), conc_max_tokens=32, read_timeout=60.0)
    contract, info, log = measure(cfg)
    assert all(p.status == "ok" for p in contract.parts), [p.model_dump() for p in contract.parts]
    dec = [r for r in contract.requests if r.part == "decode" and not r.warmup]
    diffs = []
    for r in dec:
        assert r.finish_reason == "length" and r.output_tokens == 300 and not r.tokens_estimated
        assert r.timings.predicted_n == 300 and r.timings.cache_n == 0
        diffs.append(abs((r.output_tokens - 1) / (r.t_last - r.t_first) / r.timings.predicted_per_second - 1))
    assert statistics.median(diffs) < 0.01, diffs
    card, run_dir = ingest_run(tmp_path, contract, info, cfg, log, gpu="CPU only", model_name=f"tiny {vocab}",
                               server_cmd=" ".join(s.argv))
    assert card.row["engine"] == "llama.cpp" and names.badges(card.row) == "verified raw"
    assert card.setup.engine.commit == "0c1e570"
    assert card.value("prefill", level=2048) is not None and card.value("measured_depth", "prefill", 2048) == 2048
    assert json.loads((run_dir / "contract.json").read_text())["requests"]


@pytest.fixture(scope="module")
def eager_eos_server():
    s = llama_server(tiny_model("qwen35", eager_eos=True), ctx=4096)
    yield s
    s.stop()


@engine
@one_worker
def test_real_llama_server_ignore_eos_and_cache_prompt(eager_eos_server):
    """A model that ends every answer at once: ignore_eos makes it run to max_tokens. A repeated prompt
    is served from the cache unless cache_prompt is false (what the runner sends)."""
    url = f"{eager_eos_server.url}/v1/chat/completions"
    content = "[cache check] " + TASKS["prose"] * 4

    def ask(**extra):
        res = parse_stream(stream_chat(url, {"messages": [{"role": "user", "content": content}], "max_tokens": 64,
                                             "stream": True, "stream_options": {"include_usage": True}, **extra}))
        assert res.error is None, res.error
        return res

    natural = ask(cache_prompt=False)
    assert natural.finish_reason == "stop" and natural.output_tokens <= 2
    forced = ask(cache_prompt=False, ignore_eos=True)
    assert forced.finish_reason == "length" and forced.output_tokens == 64
    ask(cache_prompt=True)
    cached = ask(cache_prompt=True)
    assert cached.timings["cache_n"] > 0 and cached.timings["prompt_n"] < cached.prompt_tokens
    fresh = ask(cache_prompt=False)
    assert fresh.timings["cache_n"] == 0 and fresh.timings["prompt_n"] == fresh.prompt_tokens
    contract, _, _ = measure(small(eager_eos_server.url, runs=1, warmups=0, max_tokens=64, min_decode_tokens=32))
    assert step(contract, "decode").status == "ok"  # the runner sends ignore_eos and cache_prompt: false
    assert all(r.output_tokens == 64 and r.timings.cache_n == 0 for r in contract.requests)


@engine
@one_worker
def test_real_llama_server_ttft_gap_is_shown_with_the_cache_ram_setting(tmp_path):
    """TTFT vs the server's own prompt time on the real engine, with the host-RAM cache off: the gap is
    what the client saw beyond prompt processing, never negative, and the notes name --cache-ram 0."""
    log = tmp_path / "server.log"
    s = llama_server(tiny_model("llama-bpe"), "--cache-ram", "0", ctx=16384, log=log)
    try:
        cfg = small(s.url, parts=("prefill",), prefill_depths=(8192,), prefill_runs=2, read_timeout=120.0)
        contract, info, runlog = measure(cfg)
    finally:
        s.stop()
    card, _ = ingest_run(tmp_path, contract, info, cfg, runlog, gpu="CPU only", server_cmd=" ".join(s.argv))
    (row,) = card_tables.ttft_gap_rows(card)
    recs = [r for r in contract.requests if r.part == "prefill"]
    assert row["server"] == pytest.approx(statistics.median(r.timings.prompt_ms / 1000 for r in recs), rel=1e-9)
    assert row["ttft"] > row["server"] > 0 and row["gap"] == pytest.approx(row["ttft"] - row["server"])
    notes = card_tables.hygiene_notes(card)
    assert notes[0] == "--cache-ram 0: the host-RAM prompt cache is off."
    assert "prompt eval time" in log.read_text()  # the server's own per-request timing lines


@pytest.fixture(scope="module")
def llama_py():
    s = llama_cpp_python(tiny_model("llama-bpe"), ctx=8192)
    yield s
    s.stop()


@engine
@one_worker
def test_llama_cpp_python_depths_are_exact_and_counts_marked_estimated(llama_py, tmp_path):
    """llama-cpp-python has no timings, no usage chunk and tokenizes at /extras/tokenize: depths are still
    exact (the recorded count is the server's own, from a one-token request), decode counts are estimates."""
    cfg = small(llama_py.url, parts=("decode", "prefill"), runs=1, max_tokens=48, min_decode_tokens=8,
                prefill_depths=(512, 2048, 4096), prefill_runs=1, read_timeout=120.0)
    contract, info, log = measure(cfg)
    assert all(p.status == "ok" for p in contract.parts), [p.model_dump() for p in contract.parts]
    assert info.tokenize_path == "/extras/tokenize" and info.engine == "llama-cpp-python"
    pre = [r for r in contract.requests if r.part == "prefill"]
    assert [abs(r.prompt_tokens - r.depth) <= 2 for r in pre] == [True] * 3, [(r.depth, r.prompt_tokens) for r in pre]
    dec = [r for r in contract.requests if r.part == "decode" and not r.warmup]
    # no usage chunk: counted from content events and marked so; it may send a few extra empty events
    assert all(r.tokens_estimated and r.finish_reason == "length" and 48 <= r.output_tokens <= 56 for r in dec)
    card, _ = ingest_run(tmp_path, contract, info, cfg, log, gpu="CPU only", model_name="tiny llama-bpe")
    assert card.row["engine"] == "llama-cpp-python" and card.value("measured_depth", "prefill", 4096) == 4096


@pytest.mark.integration
def test_a_buffered_stream_fails_its_prefill_step_and_gives_no_headline(tmp_path):
    """A stream held back and sent at once (a buffering proxy, a busy client): the TTFT includes the time the
    server spent generating, so prefill from it is no prompt timing. Every request of the step is refused
    with a reason that names the buffering (not a decode rate: a prefill step has no decode figure), the
    step fails, and the card, its tiles and the overview give no prefill figure for it."""
    s = demo_server(decode_tps=80, prefill_tps=20000, fault="buffer")
    try:
        cfg = small(s.url, parts=("prefill",), prefill_depths=(2048, 8192), prefill_runs=3)
        contract, info, log = measure(cfg)
    finally:
        s.stop()
    pre = step(contract, "prefill")
    assert pre.status == "failed" and "the stream was buffered" in pre.reason, pre.reason
    assert "decode rate" not in pre.reason and "before the end of the response" in pre.reason
    card, _ = ingest_run(tmp_path, contract, info, cfg, log, gpu="Demo GPU", vram_gib=24)
    db = tmp_path / "live.duckdb"
    assert all(card.value(m, level=d) is None for m in ("prefill", "ttft") for d in (2048, 8192))
    computed = card.parts[card.parts.origin == "computed"]
    assert set(computed.part) == {"prefill/prose/2048", "prefill/prose/8192"} and len(computed) == 6
    # 15 tokens after the first at the demo's 80 tok/s (a little less at depth) hide in each TTFT
    hidden = {"prefill/prose/2048": "about 0.19 s of generation", "prefill/prose/8192": "about 0.20 s of generation"}
    assert all(hidden[p] in r for p, r in zip(computed.part, computed.reason)), computed.reason.tolist()
    tiles = {t.label: t.value for t in card_tables.headline_tiles(card)}
    assert tiles["First token at 2K"] == tiles["Prefill at 8K"] == "—"
    row = overview_rows.overview(Store(db)).iloc[0]
    assert row["prefill_8k_tps"] is None or row["prefill_8k_tps"] != row["prefill_8k_tps"]  # missing, not ranked
    runs = card_tables.runs_table(card)
    assert "the stream was buffered" in runs["Failed / repeated / skipped"].iloc[0]
