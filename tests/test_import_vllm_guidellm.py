"""vllm bench serve and GuideLLM importers: requests-at-once runs, raw records or stated figures."""

import json

import pytest

from ingest.importers import ImportFailed, Options, Source, convert, detect
from ingest.importers.store import check
from tests.import_helpers import FIX, check_golden, figures, run

pytestmark = pytest.mark.unit

GPU = Options(gpu="NVIDIA L40S")
CASES = ["vllm-conc4-detailed.json", "vllm-conc8-summary.json", "vllm-sweep-append.jsonl", "guidellm-report.json",
         "guidellm-v03-benchmarks.json"]


@pytest.mark.parametrize("name", CASES)
def test_golden(name):
    results = run(name, GPU)
    check_golden(name, results)
    assert check(results) == 1
    fmt = "guidellm" if name.startswith("guidellm") else "vllm"
    assert detect(Source("r.json", (FIX / name).read_bytes()))[0] == fmt


def test_vllm_detailed_result_becomes_request_records():
    res = run("vllm-conc4-detailed.json", GPU)[0]
    c = res.setups[0].runs[0].contract
    raw = json.loads((FIX / "vllm-conc4-detailed.json").read_text())
    assert c["summary_only"] is False and len(c["requests"]) == raw["completed"] == 8
    assert {r["concurrency"] for r in c["requests"]} == {4}
    figs, kinds = figures(c)
    # the stated median TTFT and the one computed from the records agree: no mismatch warning
    assert figs["conc_ttft||4"] == pytest.approx(raw["median_ttft_ms"] / 1000)
    assert "summary_mismatch" not in kinds
    total = sum(raw["output_lens"]) / (max(s + lat for s, lat in zip(raw["start_times"], raw["latencies"]))
                                       - min(raw["start_times"]))
    assert figs["conc_total||4"] == pytest.approx(total)
    assert figs["conc_total||4"] == pytest.approx(raw["output_throughput"], rel=0.02)
    fields = {u["field"] for u in c["imported"]["unmapped"]}
    assert {"p99_ttft_ms", "mean_tpot_ms", "request_throughput", "output_throughput"} <= fields


def test_vllm_summary_maps_what_vllm_calls_each_figure():
    c = run("vllm-conc8-summary.json", GPU)[0].setups[0].runs[0].contract
    raw = json.loads((FIX / "vllm-conc8-summary.json").read_text())
    assert c["summary_only"] is True and "requests" not in c
    point = c["summary"]["conc"][0]
    assert point == {"level": 8, "ttft_s": raw["median_ttft_ms"] / 1000, "total_tps": raw["output_throughput"],
                     "itl_s": raw["median_itl_ms"] / 1000}
    assert "output_throughput" in c["summary"]["method_note"] and "median_itl_ms" in c["summary"]["method_note"]


def test_vllm_appended_results_are_runs_and_a_rate_run_is_named_not_mapped():
    res = run("vllm-sweep-append.jsonl", GPU)[0]
    assert len(res.setups) == 1
    assert [r.contract["method"]["conc_levels"] for r in res.setups[0].runs] == [[1], [2], [4]]
    assert any("result 4: not mapped: request_rate 4.0 without max_concurrency" in n for n in res.notes)


def test_vllm_needs_the_gpu_and_names_the_engine_assumption():
    with pytest.raises(ImportFailed) as err:
        run("vllm-conc8-summary.json")
    assert err.value.errors[0].startswith("vllm-conc8-summary.json: hardware:") and "--gpu" in err.value.errors[0]
    c = run("vllm-conc8-summary.json", GPU)[0].setups[0].runs[0].contract
    assert any(a["field"] == "engine.name" and "openai-chat" in a["source"] for a in c["imported"]["assumed"])
    named = run("vllm-conc8-summary.json", Options(gpu="NVIDIA L40S", engine="SGLang", server_cmd=["sglang", "x"]))
    setup = named[0].setups[0].setup
    assert setup["engine"]["name"] == "SGLang" and setup["server"]["argv"] == ["sglang", "x"]


def test_vllm_bad_arrays_name_the_request_and_field():
    raw = json.loads((FIX / "vllm-conc4-detailed.json").read_text())
    raw["ttfts"][3] = -1
    with pytest.raises(ImportFailed) as err:
        convert([Source("r.json", json.dumps(raw).encode())], GPU)
    assert err.value.errors[0].startswith("r.json: result 1[request 3].ttfts")
    raw["ttfts"] = raw["ttfts"][:5]
    with pytest.raises(ImportFailed) as err:
        convert([Source("r.json", json.dumps(raw).encode())], GPU)
    assert err.value.errors[0] == "r.json: result 1.start_times: expected a list of 5 values (one per request)"


@pytest.mark.parametrize("name", ["guidellm-report.json", "guidellm-v03-benchmarks.json"])
def test_guidellm_fixed_concurrency_benchmarks_become_runs(name):
    res = run(name, GPU)[0]
    runs = res.setups[0].runs
    levels = [r.contract["method"]["conc_levels"][0] for r in runs]
    assert levels == ([1, 4] if name == "guidellm-report.json" else [1, 2])
    assert any("arrival rate, not a requests-at-once level" in n for n in res.notes)
    report = json.loads((FIX / name).read_text())
    for r, bench in zip(runs, report["benchmarks"]):
        c = r.contract
        assert not c["summary_only"] and len(c["requests"]) == len(bench["requests"]["successful"])
        figs, kinds = figures(c)
        level = c["method"]["conc_levels"][0]
        stated = bench["metrics"]["time_to_first_token_ms"]["successful"]["median"] / 1000
        assert figs[f"conc_ttft||{level}"] == pytest.approx(stated)
        assert figs[f"conc_itl||{level}"] == pytest.approx(
            bench["metrics"]["inter_token_latency_ms"]["successful"]["median"] / 1000)
        assert "summary_mismatch" not in kinds
    assert res.setups[0].setup["model"] == {"name": "Llama-3.1-8B-Instruct", "repo": "meta-llama/Llama-3.1-8B-Instruct"}


def test_guidellm_with_sampled_requests_is_summary_only():
    report = json.loads((FIX / "guidellm-report.json").read_text())
    bench = report["benchmarks"][1]
    bench["requests"]["successful"] = bench["requests"]["successful"][:3]  # --sample-size 3
    res = convert([Source("g.json", json.dumps(report).encode())], GPU)
    c = res[0].setups[0].runs[1].contract
    assert c["summary_only"] is True
    tps = bench["metrics"]["output_tokens_per_second"]["successful"]["mean"]
    assert c["summary"]["conc"][0]["total_tps"] == tps


def test_guidellm_only_rate_benchmarks_is_an_error():
    report = json.loads((FIX / "guidellm-report.json").read_text())
    report["benchmarks"] = report["benchmarks"][2:]
    with pytest.raises(ImportFailed) as err:
        convert([Source("rates.json", json.dumps(report).encode())], GPU)
    assert err.value.errors[0].startswith("rates.json: $.benchmarks: nothing to import")


def test_vllm_results_whose_deployment_differs_are_different_setups():
    """Appended results of three deployments (metadata keys vLLM's --metadata writes): one setup each, never
    one merged setup that shows only one deployment's figure (issue 16, wrong figures 4)."""
    res = run("vllm-deployments-nofailed.jsonl", GPU)[0]
    by_title = {s.setup["title"]: s for s in res.setups}
    assert len(res.setups) == 3
    totals = {}
    for title, conv in by_title.items():
        assert "deployment" in title and "(vllm bench serve)" in title
        for r in conv.runs:
            figs, _ = figures(r.contract)
            level = r.contract["method"]["conc_levels"][0]
            totals[(conv.setup["notes"].split("with ")[-1].rstrip("."), level)] = figs[f"conc_total||{level}"]
    assert totals == {("deployment plain", 400): 3605.6, ("deployment prefix-cache", 400): 4302.5,
                      ("deployment disagg", 500): 2814.7}
    assert len({s.setup_id for s in res.setups}) == 3
    # the 20 rps result is still listed as an arrival rate, not mapped
    assert any("result 1: not mapped: request_rate 20.0" in n for n in res.notes)


def test_vllm_result_without_failed_key_reports_num_prompts_minus_completed():
    res = run("vllm-deployments-nofailed.jsonl", GPU)[0]
    disagg = next(s for s in res.setups if "disagg" in s.setup["title"])
    c = disagg.runs[0].contract
    assert c["parts"] == [{"part": "conc", "status": "ok", "reason": "69 of 500 requests failed (the result has no "
                                                                       "'failed' key: num_prompts - completed)"}]
    assert any(a["field"] == "failed" and a["value"] == "69 of 500 requests" for a in c["imported"]["assumed"])
    _, kinds = figures(c)
    assert "imported" in kinds
    plain = next(s for s in res.setups if "plain" in s.setup["title"])
    assert "reason" not in plain.runs[0].contract["parts"][0]


def test_vllm_placeholder_command_is_not_warned_about(tmp_path):
    from ingest.importers import store

    results = run("vllm-conc8-summary.json", GPU)
    out = store.save(results, tmp_path / "db.duckdb", tmp_path / "local")
    assert not [w for w in out.report.warning_list if "server command" in w]


def _detailed(**change):
    raw = json.loads((FIX / "vllm-conc4-detailed.json").read_text())
    raw.update(change)
    return raw


@pytest.mark.parametrize("case", ["million_tokens", "half_million_gaps"])
def test_vllm_impossible_requests_are_left_out_with_the_reason(case):
    """Hostile 3: output_lens 1e6 with 127 gaps (1.6M tok/s) and 500,000 gaps for 128 tokens (0.1 tok/s)."""
    raw = _detailed()
    if case == "million_tokens":
        raw["output_lens"][2] = 10**6
        want = "a decode rate of"
    else:
        raw["itls"][2] = [1e-6] * 500_000
        want = "500,000 inter-token latencies for"
    res = convert([Source("r.json", json.dumps(raw).encode())], GPU)
    c = res[0].setups[0].runs[0].contract
    bad = c["requests"][2]
    assert bad["error"].startswith("left out at import: ") and want in bad["error"]
    assert "output_tokens" not in bad and "t_first" not in bad
    figs, kinds = figures(c)
    assert "failed_request" in kinds
    good = [r for r in c["requests"] if "error" not in r]
    assert len(good) == 7 and figs["conc_total||4"] < 10_000


def test_vllm_summary_with_an_impossible_throughput_is_refused():
    raw = json.loads((FIX / "vllm-conc8-summary.json").read_text())
    raw["output_throughput"] = 1e12
    with pytest.raises(ImportFailed) as err:
        convert([Source("s.json", json.dumps(raw).encode())], GPU)
    assert err.value.errors[0].startswith("s.json: result 1.output_throughput: a throughput rate of 1e+12 tok/s")
