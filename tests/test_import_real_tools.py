"""Golden tests on outputs made with the real tools against the real llama-server (llama.cpp 0c1e570, the tiny
real-vocabulary model; tests/fixtures/importers/real-tools/README.md says how): GuideLLM 0.8.1 and 0.3.1,
llama-benchy 0.4.0. Each asserts the figures per setup and level, and what detection makes of each file."""

import json
import shutil
import statistics

import pytest

from ingest.importers import ImportFailed, Options, Source, convert, detect, read_sources
from ingest.importers.store import check
from tests.import_helpers import FIX, figures

pytestmark = pytest.mark.unit

REAL = FIX / "real-tools"
CPU = Options(gpu="none")


def src(name: str) -> Source:
    return Source(name, (REAL / name).read_bytes())


def raw(name: str) -> dict:
    return json.loads((REAL / name).read_text())


def one_run(name: str, opts: Options = CPU) -> dict:
    (res,) = convert([src(name)], opts)
    (setup,) = res.setups
    (run,) = setup.runs
    return run.contract


@pytest.mark.parametrize(("name", "level", "n"), [("guidellm-0.8.1-sync.json", 1, 6),
                                                   ("guidellm-0.8.1-conc4.json", 4, 8)])
def test_guidellm_081_fixed_levels_become_request_records(name, level, n):
    c = one_run(name)
    bench = raw(name)["benchmarks"][0]
    assert c["method"]["conc_levels"] == [level] and len(c["requests"]) == n
    figs, kinds = figures(c)
    # benchcards' total (all output tokens / wall time) is what GuideLLM calls output tokens per second
    assert figs[f"conc_total||{level}"] == pytest.approx(
        bench["metrics"]["output_tokens_per_second"]["successful"]["mean"], rel=1e-3)
    # definitions, not errors: no stated-vs-computed warning for GuideLLM's nearest-rank median or pooled ITL
    assert "summary_mismatch" not in kinds
    reasons = {u["field"]: u["reason"] for u in c["imported"]["unmapped"]}
    assert "nearest-rank median" in reasons["$.benchmarks[0].metrics.time_to_first_token_ms"]
    assert "pooled" in reasons["$.benchmarks[0].metrics.inter_token_latency_ms"]
    assert check(convert([src(name)], CPU)) == 1


def test_guidellm_cached_tokens_fire_the_prompt_cache_warning():
    """GuideLLM repeats its synthetic prompts: 73 of 74 prompt tokens came from the server's cache."""
    c = one_run("guidellm-0.8.1-conc4.json")
    cached = [r["input_metrics"]["cached_tokens"] for r in raw("guidellm-0.8.1-conc4.json")["benchmarks"][0]
              ["requests"]["successful"]]
    assert [r.get("timings", {}).get("cache_n", 0) for r in c["requests"]] == cached
    _, kinds = figures(c)
    assert kinds.count("prompt_cache") == sum(1 for x in cached if x)


G031 = "guidellm-0.3.1-conc2.json"


def test_guidellm_031_concurrent_is_two_at_once_with_figures_from_its_requests():
    """0.3.1 writes the older shape: args.strategy, per-request start/first/last/end times and one
    inter-token latency per request (not pooled), no version and no cached_tokens."""
    c = one_run(G031)
    bench = raw(G031)["benchmarks"][0]
    reqs = bench["requests"]["successful"]
    assert bench["args"]["strategy"] == {"type_": "concurrent", "start_time": pytest.approx(1796126797.15),
                                         "streams": 2}
    assert c["method"]["conc_levels"] == [2] and len(c["requests"]) == 4 and c["tool"] == "guidellm"
    # by hand from the raw requests: 16 output tokens over 0.2627 s of wall time
    t0, t1 = min(r["start_time"] for r in reqs), max(r["end_time"] for r in reqs)
    assert sum(r["output_tokens"] for r in reqs) == 16 and t1 - t0 == pytest.approx(0.26272, abs=1e-5)
    figs, kinds = figures(c)
    assert figs == pytest.approx({
        "conc_total||2": 16 / (t1 - t0),  # 60.90; GuideLLM's own mean output_tokens_per_second is 57.09
        "conc_ttft||2": statistics.median(r["time_to_first_token_ms"] for r in reqs) / 1000,  # 33.73 ms
        "conc_itl||2": statistics.median(r["inter_token_latency_ms"] for r in reqs) / 1000,  # 7.35 ms
        "conc_per_request||2": statistics.median(r["output_tokens_per_second"] for r in reqs)}, rel=1e-6)
    assert figs["conc_total||2"] == pytest.approx(60.901, abs=1e-3)
    # GuideLLM's medians are nearest-rank (30.33 ms, 6.50 ms): checked like with like, so no mismatch warning
    assert kinds == ["imported", "imported"]
    reasons = {u["field"]: u["reason"] for u in c["imported"]["unmapped"]}
    assert reasons["$.benchmarks[0].metrics.time_to_first_token_ms"].startswith("median 30.3314 ms is the nearest")
    assert reasons["$.benchmarks[0].metrics.inter_token_latency_ms"].startswith(
        "median 6.49714 ms is the nearest-rank median of the requests' mean gaps")
    assert check(convert([src(G031)], CPU)) == 1


def test_guidellm_031_stated_gap_that_disagrees_is_kept_and_warned():
    report = raw(G031)
    report["benchmarks"][0]["metrics"]["inter_token_latency_ms"]["successful"]["median"] = 9.5
    (res,) = convert([Source("x.json", json.dumps(report).encode())], CPU)
    c = res.setups[0].runs[0].contract
    assert c["summary"]["conc"] == [{"level": 2, "itl_s": pytest.approx(0.0095)}]
    assert "summary_mismatch" in figures(c)[1]


SWEEP = "guidellm-0.8.1-sweep.json"


def _in_flight_on_average(bench: dict) -> float:
    """Time-weighted requests in flight over the benchmark, from the raw request timings."""
    ts = [r["info"]["timings"] for r in bench["requests"]["successful"]]
    span = max(t["request_end"] for t in ts) - min(t["request_start"] for t in ts)
    return sum(t["request_end"] - t["request_start"] for t in ts) / span


def test_guidellm_sweep_throughput_is_not_512_at_once():
    """A real sweep (sweep_size=3, 4 requests each, 2-slot server): synchronous, throughput@512, constant@5.60."""
    (res,) = convert([src(SWEEP)], CPU)
    sync, thr, const = raw(SWEEP)["benchmarks"]
    assert [b["config"]["strategy"]["type_"] for b in (sync, thr, const)] == ["synchronous", "throughput", "constant"]
    assert thr["config"]["strategy"]["max_concurrency"] == 512
    (setup,) = res.setups
    (run,) = setup.runs  # only the synchronous benchmark is a requests-at-once level
    c = run.contract
    assert c["method"]["conc_levels"] == [1] and len(c["requests"]) == 4 and c["tool"] == "guidellm 0.8.1"
    figs, kinds = figures(c)
    ts = [r["info"]["timings"] for r in sync["requests"]["successful"]]
    wall = max(t["request_end"] for t in ts) - min(t["request_start"] for t in ts)
    assert figs == pytest.approx({
        "conc_total||1": 16 / wall,  # 11.01, what GuideLLM calls output tokens per second
        "conc_ttft||1": statistics.median(t["first_token_iteration"] - t["request_start"] for t in ts),  # 128.8 ms
        "conc_itl||1": statistics.median((t["last_token_iteration"] - t["first_token_iteration"]) / 3 for t in ts),
        "conc_per_request||1": statistics.median(4 / (t["request_end"] - t["request_start"]) for t in ts)}, rel=1e-6)
    assert figs["conc_total||1"] == pytest.approx(sync["metrics"]["output_tokens_per_second"]["successful"]["mean"])
    # 7 of 26 prompt tokens came from the cache in 3 of the 4 requests
    assert [r["input_metrics"]["cached_tokens"] for r in sync["requests"]["successful"]] == [0, 7, 7, 7]
    assert kinds.count("prompt_cache") == 3 and "summary_mismatch" not in kinds
    # throughput@512: the 4 requests were really 1.72 in flight on average, so no "512 at once" level
    assert _in_flight_on_average(thr) == pytest.approx(thr["metrics"]["request_concurrency"]["successful"]["mean"])
    assert res.notes[1] == (f"{SWEEP}: $.benchmarks[1]: strategy throughput sends every request at once up to a cap "
                            "of 512; GuideLLM measured 1.72 requests in flight on average, so it is no "
                            "requests-at-once level; not mapped")
    assert res.notes[2].startswith(f"{SWEEP}: $.benchmarks[2]: strategy constant@5.60")
    assert res.notes[2].endswith("is an arrival rate, not a requests-at-once level; not mapped")
    assert check(convert([src(SWEEP)], CPU)) == 1


def test_guidellm_yaml_and_csv_beside_the_json_are_skipped_with_the_reason(tmp_path):
    folder = tmp_path / "guidellm-run"
    folder.mkdir()
    for ext in ("json", "yaml", "csv"):
        shutil.copy(REAL / f"guidellm-0.8.1-sync.{ext}", folder / f"benchmarks.{ext}")
    (folder / "rates.json").write_text(json.dumps(
        {**raw("guidellm-0.8.1-sync.json"), "benchmarks": [
            {**raw("guidellm-0.8.1-sync.json")["benchmarks"][0],
             "config": {"strategy": {"type_": "constant", "rate": 2.0}}}]}))
    sources, _ = read_sources([folder])
    (res,) = convert(sources, CPU)
    assert len(res.setups) == 1 and len(res.setups[0].runs) == 1
    notes = "\n".join(res.notes)
    assert "benchmarks.yaml: skipped, a GuideLLM report in YAML; import its JSON (guidellm export FILE.yaml " \
           "--output kind=json,path=x.json)" in notes
    assert "benchmarks.csv: skipped, a GuideLLM CSV report" in notes
    assert "rates.json: skipped, nothing to import: $.benchmarks[0]: strategy constant@2.0 is an arrival rate" in notes


def test_guidellm_yaml_alone_is_refused_with_the_08_export_command():
    with pytest.raises(ImportFailed) as err:
        convert([src("guidellm-0.8.1-sync.yaml")], CPU)
    assert "guidellm export FILE.yaml --output kind=json,path=x.json" in err.value.errors[0]
    assert "--output-path" not in err.value.errors[0]


def test_from_a_format_the_content_is_not_says_what_the_content_is():
    with pytest.raises(ImportFailed) as err:
        convert([src("guidellm-0.8.1-sync.csv")], CPU, force="llama-bench")
    assert err.value.errors == ["guidellm-0.8.1-sync.csv: format: --from llama-bench: the content is a GuideLLM CSV "
                                "report (figures only, no requests); import the JSON report of the same run "
                                "(--output-path x.json, or guidellm export FILE.yaml --output kind=json,path=x.json)"]
    with pytest.raises(ImportFailed) as err:
        convert([src("guidellm-0.8.1-sync.json")], CPU, force="vllm")
    assert "--from vllm: the content is guidellm (json), not vllm" in err.value.errors[0]


def test_a_file_no_importer_takes_says_what_it_looks_like_not_to_force_one():
    with pytest.raises(ImportFailed) as err:
        convert([Source("notes.csv", b"when,what,who,where\n1,2,3,4\n")], CPU)
    e = err.value.errors[0]
    assert "--from" not in e and "looks like CSV with the header 'when,what,who,where'" in e


BENCHY = "llama-benchy-0.4.0-nocache.json"
NO_CACHE = Options(gpu="none", bench_cmd=["llama-benchy", "--base-url", "http://127.0.0.1:8080/v1", "--no-cache"])


def test_detection_tells_llama_bench_md_from_llama_benchy_md_and_guidellm_csv():
    assert detect(Source("a.md", (FIX / "llama-bench-cpu-fa.md").read_bytes()))[0] == "llama-bench"
    assert detect(src("llama-benchy-0.4.0-c1.md")) == ("llama-benchy", "md")
    assert detect(src(BENCHY)) == ("llama-benchy", "json")
    with pytest.raises(ImportFailed) as err:
        detect(src("guidellm-0.8.1-sync.csv"))
    assert "a GuideLLM CSV report" in err.value.errors[0]
    # forcing llama-bench on llama-benchy's table says what it is instead of storing engine figures
    with pytest.raises(ImportFailed) as err:
        convert([src("llama-benchy-0.4.0-c1.md")], CPU, force="llama-bench")
    assert "--from llama-bench: the content is llama-benchy (md), not llama-bench" in err.value.errors[0]


def test_llama_benchy_json_tests_are_client_side_tasks_with_each_runs_values():
    c = one_run(BENCHY, NO_CACHE)
    report = raw(BENCHY)
    tasks = {t["task"]: t for t in c["summary"]["tasks"]}
    want = []
    for b in report["benchmarks"]:
        d, cc = b["context_size"], b["concurrency"]
        suffix = (f" @ d{d}" if d else "") + (f" (c{cc})" if cc > 1 else "")
        pp, tg = tasks[f"pp{b['prompt_size']}{suffix}"], tasks[f"tg{b['response_size']}{suffix}"]
        assert (pp["concurrency"], pp["depth"], pp["prompt_tokens"]) == (cc, d, b["prompt_size"] + d)
        assert pp["prefill_tps"] == b["pp_req_throughput"]["mean"]
        assert pp["prefill_tps_runs"] == b["pp_req_throughput"]["values"] and len(pp["prefill_tps_runs"]) == 2 * cc
        assert pp["ttft_s"] == pytest.approx(b["e2e_ttft"]["mean"] / 1000)
        assert tg["decode_tps"] == b["tg_req_throughput"]["mean"] and tg["output_tokens"] == b["response_size"]
        assert tg["decode_tps_runs"] == b["tg_req_throughput"]["values"]
        want += [pp["task"], tg["task"]]
    assert sorted(want) == sorted(tasks) and len(tasks) == 8
    figs, _ = figures(c)
    assert figs["task_prefill|pp64|64"] == report["benchmarks"][0]["pp_req_throughput"]["mean"]
    assert not any(k.startswith("bench_") for k in figs)  # never engine (llama-bench) figures
    note = c["summary"]["method_note"]
    assert "measured by the client over HTTP" in note and "not the engine's own" in note and "--no-cache on" in note
    # totals over two requests at once are llama-benchy's own, listed as not mapped
    assert any("(c2)" in u["field"] and u["reason"].startswith("t/s (total)") for u in c["imported"]["unmapped"])
    (res,) = convert([src(BENCHY)], NO_CACHE)
    assert "(llama-benchy)" in res.setups[0].setup["title"] and "HTTP" in res.setups[0].setup["notes"]
    assert check([res]) == 1


def test_llama_benchy_without_its_command_says_the_cache_is_unknown():
    c = one_run(BENCHY)
    (a,) = [a for a in c["imported"]["assumed"] if a["field"] == "llama-benchy --no-cache"]
    assert a["value"] == "unknown" and "prompt cache may have served" in a["source"]
    assert "--no-cache not recorded" in c["summary"]["method_note"]


def test_llama_benchy_md_gives_the_same_tasks_as_json_would():
    c = one_run("llama-benchy-0.4.0-c1.md", NO_CACHE)
    tasks = {t["task"]: t for t in c["summary"]["tasks"]}
    assert set(tasks) == {"pp64", "tg16"}
    assert (tasks["pp64"]["prefill_tps"], tasks["pp64"]["prefill_tps_sd"]) == (98.68, 67.96)
    assert tasks["pp64"]["ttft_s"] == pytest.approx(1.24212)
    assert (tasks["tg16"]["decode_tps"], tasks["tg16"]["decode_tps_sd"]) == (0.98, 0.03)


def test_llama_benchy_prefix_cached_prompt_is_not_prefill():
    report = raw(BENCHY)
    b = next(x for x in report["benchmarks"] if x["context_size"] > 0 and x["concurrency"] == 1)
    report["prefix_caching_enabled"] = True
    report["benchmarks"] = [{**b, "is_context_prefill_phase": True}, b]
    (res,) = convert([Source("p.json", json.dumps(report).encode())], CPU)  # with --no-cache nothing is cached
    tasks = {t["task"]: t for t in res.setups[0].runs[0].contract["summary"]["tasks"]}
    d = b["context_size"]
    assert tasks[f"ctx_pp @ d{d}"]["prefill_tps"] == b["pp_req_throughput"]["mean"]
    cached = tasks[f"pp{b['prompt_size']} @ d{d} on a cached context"]
    assert "prefill_tps" not in cached and cached["prompt_tokens"] == b["prompt_size"]
    unmapped = res.setups[0].runs[0].contract["imported"]["unmapped"]
    assert any("not shown as prefill" in u["reason"] for u in unmapped)


def test_llama_benchy_impossible_rate_is_refused():
    report = raw(BENCHY)
    fig = report["benchmarks"][0]["tg_req_throughput"]
    fig.update(mean=1e9, values=[1e9] * len(fig["values"]))  # the figures are computed from the values
    with pytest.raises(ImportFailed) as err:
        convert([Source("x.json", json.dumps(report).encode())], NO_CACHE)
    assert err.value.errors[0].startswith("x.json: $.benchmarks[0]: t_s_req: a decode rate of 1e+09 tok/s")


@pytest.mark.parametrize(("cap", "mapped"), [(512, False), (4, True)])
def test_guidellm_throughput_is_a_level_only_when_its_cap_was_in_flight(cap, mapped):
    """The real concurrent report re-labelled as a throughput benchmark (GuideLLM measured 3.97 in flight)."""
    report = raw("guidellm-0.8.1-conc4.json")
    report["benchmarks"][0]["config"]["strategy"] = {"type_": "throughput", "max_concurrency": cap}
    s = Source("t.json", json.dumps(report).encode())
    if mapped:
        (res,) = convert([s], CPU)
        assert res.setups[0].runs[0].contract["method"]["conc_levels"] == [4]
        return
    with pytest.raises(ImportFailed) as err:
        convert([s], CPU)
    assert ("strategy throughput sends every request at once up to a cap of 512; GuideLLM measured 3.97 requests "
            "in flight on average, so it is no requests-at-once level; not mapped") in err.value.errors[0]
