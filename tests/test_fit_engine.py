"""The memory test against the real llama-server (scripts/build_llama_cpp.sh) serving a tiny model with a real
vocabulary: sizes that answer, a size made to fail for real by capping the address space in the command
template, and a server killed mid-answer."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from live.fit import FitConfig, run_fit
from tests.live_servers import llama_bin, need_engine, tiny_model
from tests.test_launcher import alive

pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine")]


@pytest.fixture(scope="module")
def engine():
    binary = llama_bin()
    if binary is None or not binary.exists():
        need_engine("llama-server")
    return str(binary), str(tiny_model("llama-bpe"))


def test_sizes_2k_to_32k_answer_on_the_real_engine(engine):
    binary, model = engine
    events = []
    cfg = FitConfig(server_cmd=f"{binary} -m {model} -c {{ctx}} -np 1 -t 1", sizes=(2048, 4096, 8192, 16384, 32768))
    run = run_fit(cfg, events.append)
    steps = run.contract.steps
    assert [(s.ctx, s.result) for s in steps] == [(c, "answered") for c in cfg.sizes], [s.error for s in steps]
    assert run.contract.added_by_benchcards == ["--port", "{port}", "--host", "{host}", "-lv", "4"]
    assert run.contract.engine_version == "b0-0c1e570"
    for s in steps:
        assert s.served_ctx == s.ctx and s.slots == 1  # read from /props
        assert s.prompt_tokens is not None and abs(s.prompt_tokens - int(s.ctx * 0.95)) <= 0.02 * s.ctx * 0.95
        assert s.answer_tokens == 96 and s.finish_reason == "length"
        kv = {b.device: b.mib for b in s.engine_buffers if b.kind == "KV"}
        assert kv == {"CPU": pytest.approx(s.ctx * 1 * 2 * 32 * 2 / 2**20)}  # 1 layer, K and V, 32 wide, f16
        assert any(r.device == "Host" for r in s.memory_breakdown)
        assert s.peak_source == "process-rss" and s.rss_peak_gib and s.rss_hwm_gib
        # the sampled peak never exceeds the kernel's own high-water mark of the same processes
        assert s.rss_peak_gib <= s.rss_hwm_gib + 1e-3
    assert all(not alive(e.pid) for e in events if e.pid)


def test_a_size_made_to_fail_by_prlimit_did_not_load_with_the_engines_line(engine):
    binary, model = engine
    cfg = FitConfig(server_cmd=f"prlimit --as=1200000000 {binary} -m {model} -c {{ctx}} -np 1 -t 1",
                    sizes=(4096, 4194304, 8192), keep_going=True)
    run = run_fit(cfg)
    steps = run.contract.steps
    # typed out of order, run smallest first
    assert [(s.ctx, s.result) for s in steps] == [(4096, "answered"), (8192, "answered"), (4194304, "no_load")]
    # the table's words, the real engine's line beside without its time-and-level prefix
    assert steps[2].error == ("the KV cache for this context did not fit (engine: llama_init_from_model: failed to "
                              "initialize the context: failed to allocate buffer for kv cache)")
    assert steps[2].argv[:2] == ["prlimit", "--as=1200000000"] and "-lv" in steps[2].argv


def test_four_slots_without_kvu_serve_a_quarter_of_the_size_and_say_so(engine):
    from live.fit import headline

    binary, model = engine
    cfg = FitConfig(server_cmd=f"{binary} -m {model} -c {{ctx}} -np 4 -t 1", sizes=(8192, 4096))
    run = run_fit(cfg)
    steps = run.contract.steps
    assert [(s.ctx, s.served_ctx, s.slots) for s in steps] == [(4096, 1024, 4), (8192, 2048, 4)]
    assert all(s.result == "answered" and s.prompt_tokens and s.prompt_tokens < s.served_ctx for s in steps)
    assert "but each request could use 2,048 of 8,192 tokens (4 slots without -kvu)" in headline(run.contract)


def test_a_missing_real_engine_program_is_refused_before_it_runs(engine, tmp_path):
    _binary, model = engine
    cfg = FitConfig(server_cmd=f"llama-server -m {model} -c {{ctx}}", sizes=(4096,), env={"PATH": str(tmp_path)})
    assert "--server-cmd: the program 'llama-server' was not found on PATH" in " ".join(cfg.problems())


def test_a_real_server_killed_mid_answer_did_not_answer(engine):
    binary, model = engine

    def kill_when_answering(e):
        if e.phase == "answering" and e.pid:
            threading.Timer(0.3, lambda: os.kill(e.pid, signal.SIGKILL)).start()

    cfg = FitConfig(server_cmd=f"{binary} -m {model} -c {{ctx}} -np 1 -t 1", sizes=(32768,), max_tokens=20000)
    run = run_fit(cfg, kill_when_answering)
    (step,) = run.contract.steps
    assert step.result == "no_answer"
    assert step.error.startswith("the server died mid-answer (exit status -9)")


def test_a_memory_test_where_no_size_loads_still_names_the_engine_build(engine):
    """No size answers, so there is no /props to ask: the version comes from the server log's build line (on the
    H200 run, the contract of a size that could not fit said none, though its log named build 0 (0c1e570))."""
    binary, model = engine
    cfg = FitConfig(server_cmd=f"prlimit --as=1200000000 {binary} -m {model} -c {{ctx}} -np 1 -t 1",
                    sizes=(4194304,))
    run = run_fit(cfg)
    assert [s.result for s in run.contract.steps] == ["no_load"]
    assert run.contract.engine_version == "b0-0c1e570"
