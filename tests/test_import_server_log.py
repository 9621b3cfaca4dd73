"""llama-server log importer: real logs of the CPU engine build and an older log layout."""

import pytest

from ingest.importers import ImportFailed, Options, Source, convert, detect
from ingest.importers.store import check
from tests.import_helpers import FIX, check_golden, figures, run

pytestmark = pytest.mark.unit

CASES = {  # fixture -> options the file cannot tell
    "llama-server-cpu.log": Options(gpu="none"),  # default verbosity: no device lines
    "llama-server-cpu-verbose.log": Options(),  # -lv 4: build, devices, KV types
    "llama-server-gb10-old-layout.log": Options(),  # older layout, figures after seed 000 (DGX Spark)
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    results = run(name, CASES[name])
    check_golden(name, results)
    assert check(results) == 1
    assert detect(Source("x.txt", (FIX / name).read_bytes())) == ("llama-server-log", "log")


def test_real_log_gives_one_record_per_request_with_the_server_rates():
    res = run("llama-server-cpu.log", Options(gpu="none"))[0]
    c = res.setups[0].runs[0].contract
    recs = c["server_log"]
    assert [r["task"] for r in recs] == [0, 41, 82, 123]
    assert recs[0] == {"prompt_ms": 260.37, "prompt_n": 61, "source_line": 11, "prompt_per_second": 234.28,
                       "slot": 1, "task": 0, "predicted_ms": 8.46, "predicted_n": 40,
                       "predicted_per_second": 4608.29}
    assert recs[3]["prompt_n"] == 1  # the fourth request reused 60 cached prompt tokens
    assert c["method"] == {"parts": ["server_log"], "server_slots": 2, "server_ctx": 2048, "server_ctx_per_slot": 1024}
    argv = res.setups[0].setup["server"]["argv"]
    assert argv[:3] == ["llama-server", "-m", "/tmp/i9/models/tiny-llama-F32.gguf"]
    assert argv[argv.index("-np") + 1] == "2"


def test_verbose_log_names_the_build_devices_and_cached_tokens():
    res = run("llama-server-cpu-verbose.log")[0]
    s = res.setups[0]
    assert s.setup["hardware"] == {"gpus": [], "cpu": "Intel(R) Xeon(R) Processor", "ram_gib": 23.6}
    assert s.setup["engine"] == {"name": "llama.cpp", "commit": "0c1e570"}  # build 0: a source-archive build
    recs = s.runs[0].contract["server_log"]
    assert [r.get("cache_n") for r in recs] == [0, 0, 0, 21]
    figs, kinds = figures(s.runs[0].contract)
    assert "prompt_cache" in kinds
    assert figs["log_requests||"] == 4
    assert figs["log_prefill||61"] == pytest.approx(61 / 0.00138)  # median of 1.38, 1.40, 1.27 ms


def test_older_layout_with_the_seed_000_figures():
    res = run("llama-server-gb10-old-layout.log")[0]
    s = res.setups[0]
    gpu = s.setup["hardware"]["gpus"][0]
    assert (gpu["name"], gpu["vram_gib"], gpu["unified_memory"], gpu["backend"]) == ("NVIDIA GB10", 128.0, True,
                                                                                      "CUDA")
    assert s.setup["model"]["quant"] == "UD-Q4_K_XL" and s.setup["engine"]["version"] == "b6310"
    argv = s.setup["server"]["argv"]
    for flag, value in (("-c", "131072"), ("-np", "1"), ("-ub", "2048"), ("-fa", "on"), ("-ctk", "q8_0")):
        assert argv[argv.index(flag) + 1] == value
    figs, _ = figures(s.runs[0].contract)
    assert figs["log_requests||"] == 14
    assert 47 < figs["log_decode||"] < 56  # the seed's tasks ran at 48-55 tok/s
    assert figs["log_prefill||300"] == pytest.approx(1221.4, rel=0.15)


def test_two_server_starts_become_two_runs():
    text = (FIX / "llama-server-cpu-verbose.log").read_text()
    res = convert([Source("two.log", (text + text).encode())])
    s = res[0].setups
    assert len(s) == 1 and len(s[0].runs) == 2
    assert {r.contract["source"].split(", ")[-1].split(" (")[0] for r in s[0].runs} == {"server start 1 of 2",
                                                                                        "server start 2 of 2"}


def test_a_log_without_timing_lines_is_refused():
    with pytest.raises(ImportFailed) as err:
        convert([Source("boot.log", b"slot load_model: id 0 | task -1 | new slot\nmain: model loaded\n")],
                force="llama-server-log")
    assert err.value.errors[0].startswith("boot.log: requests: no per-request timing lines")


def test_a_cut_log_skips_the_unfinished_request_and_says_so():
    text = (FIX / "llama-server-cpu.log").read_text()
    cut = text[: text.rindex("eval time =")]  # the last request's eval line is missing
    res = convert([Source("cut.log", cut.encode())], Options(gpu="none"))
    assert len(res[0].setups[0].runs[0].contract["server_log"]) == 3
    assert any("ends after a prompt-eval line" in n for n in res[0].notes)


def test_json_lines_of_2024_builds():
    # mid-2024 llama-server wrote JSON log lines; the timing messages and slot ids are inside them
    lines = [
        '{"tid":"1","timestamp":1718000000,"level":"INFO","function":"main","line":2800,"msg":"build info",'
        '"build":3150,"commit":"b3f2a1c0"}',
        "llama_model_loader: loaded meta data with 26 key-value pairs and 291 tensors from "
        "/m/Meta-Llama-3-8B-Instruct-Q8_0.gguf (version GGUF V3 (latest))",
        "ggml_cuda_init: found 1 CUDA devices:",
        "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes",
    ]
    for task, (pn, pms, gn, gms) in enumerate(((13, 52.32, 64, 900.12), (20, 61.0, 256, 3400.5))):
        for msg, extra in ((f"prompt eval time     = {pms:10.2f} ms / {pn:5d} tokens (    4.02 ms per token,   "
                            f"{pn / pms * 1000:.2f} tokens per second)", ""),
                           (f"generation eval time = {gms:10.2f} ms / {gn:5d} runs   (   14.06 ms per token,    "
                            f"{gn / gms * 1000:.2f} tokens per second)", ""),
                           (f"          total time = {pms + gms:10.2f} ms", "")):
            lines.append(f'{{"tid":"1","timestamp":1718000001,"level":"INFO","function":"print_timings","line":269,'
                         f'"msg":"{msg}","id_slot":0,"id_task":{task}{extra}}}')
    res = convert([Source("old.log", ("\n".join(lines) + "\n").encode())])
    s = res[0].setups[0]
    recs = s.runs[0].contract["server_log"]
    assert [(r["task"], r["prompt_n"], r["predicted_n"]) for r in recs] == [(0, 13, 64), (1, 20, 256)]
    assert s.setup["engine"]["version"] == "b3150" and s.setup["hardware"]["gpus"][0]["name"] == (
        "NVIDIA GeForce RTX 3090")
    assert s.setup["model"]["quant"] == "Q8_0"
