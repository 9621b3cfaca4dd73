"""Golden tests on llama-benchy 0.4.0's own CSV, markdown and JSON (with --enable-prefix-caching and the
throughput time series), made against the real llama-server with the tiny real-vocabulary model
(tests/fixtures/importers/real-tools/README.md says how). Each figure is checked against the raw file."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.importers import Options, Source, convert, detect
from ingest.importers.store import check
from tests.import_helpers import FIX, figures

pytestmark = pytest.mark.unit

REAL = FIX / "real-tools"
CPU = Options(gpu="none")
ROOT = Path(__file__).resolve().parent.parent
NEW = ["llama-benchy-0.4.0-nocache.csv", "llama-benchy-0.4.0-prefix.json", "llama-benchy-0.4.0-prefix-nocache.json",
       "llama-benchy-0.4.0-prefix-c2.csv",
       "llama-benchy-0.4.0-prefix.md", "llama-benchy-0.4.0-timeseries.json", "llama-benchy-0.4.0-c2.md"]


def contract(name: str, opts: Options = CPU) -> dict:
    (res,) = convert([Source(name, (REAL / name).read_bytes())], opts)
    (setup,) = res.setups
    (run,) = setup.runs
    assert check([res]) == 1
    return run.contract


def tasks(c: dict) -> dict[str, dict]:
    return {t["task"]: t for t in c["summary"]["tasks"]}


def task_name(test: str) -> str:
    """The task a llama-benchy test row becomes: '(c1)' is dropped, a cached context is said."""
    return test.replace(" (c1)", "")


def csv_rows(name: str) -> list[dict]:
    return list(csv.DictReader((REAL / name).read_text().splitlines()))


def md_rows(name: str) -> list[dict]:
    lines = [ln for ln in (REAL / name).read_text().splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, [c.strip() for c in ln.strip("|").split("|")], strict=True)) for ln in lines[2:]]


def mean_sd(cell: str) -> tuple[float, float]:
    m, s = cell.split("±")
    return float(m), float(s)


@pytest.mark.parametrize("name", NEW)
def test_each_real_output_is_detected_as_llama_benchy(name):
    assert detect(Source(name, (REAL / name).read_bytes())) == ("llama-benchy", name.rsplit(".", 1)[1])


def test_csv_every_row_becomes_its_task_with_the_per_request_figures():
    name = "llama-benchy-0.4.0-nocache.csv"
    c = contract(name)
    got = tasks(c)
    rows = csv_rows(name)
    assert len(rows) == len(got) == 8
    for r in rows:
        t = got[task_name(r["test_name"])]
        conc = int(r["test_name"].rsplit("(c", 1)[1].rstrip(")"))
        depth = 64 if "@ d64" in r["test_name"] else 0
        assert (t["concurrency"], t["depth"]) == (conc, depth)
        if r["test_name"].startswith("pp"):
            assert t["prompt_tokens"] == 32 + depth
            assert (t["prefill_tps"], t["prefill_tps_sd"]) == (float(r["t_s_req_mean"]), float(r["t_s_req_std"]))
            assert t["ttft_s"] == pytest.approx(float(r["e2e_ttft_mean"]) / 1000)
            assert t["ttft_s_sd"] == pytest.approx(float(r["e2e_ttft_std"]) / 1000)
        else:
            assert t["output_tokens"] == 8
            assert (t["decode_tps"], t["decode_tps_sd"]) == (float(r["t_s_req_mean"]), float(r["t_s_req_std"]))
        assert "cached_tokens" not in t
    # at two requests at once the per-request rate is shown, never llama-benchy's batch total
    pp2 = next(r for r in rows if r["test_name"] == "pp32 (c2)")
    assert got["pp32 (c2)"]["prefill_tps"] != float(pp2["t_s_mean"])
    fields = [u["field"] for u in c["imported"]["unmapped"]]
    assert "line 4: pp32 (c2): t/s (total)" in fields and len(fields) == len(set(fields))
    figs, kinds = figures(c)
    assert figs["task_prefill|pp32 @ d64|96"] == float(rows[4]["t_s_req_mean"])
    assert "prompt_cache" not in kinds and not any(k.startswith("bench_") for k in figs)


def test_markdown_at_two_requests_at_once_reads_the_per_request_column():
    name = "llama-benchy-0.4.0-c2.md"
    got = tasks(contract(name))
    for r in md_rows(name):
        t = got[task_name(r["test"])]
        col = "t/s (req)"
        if r["test"].startswith("pp"):
            assert (t["prefill_tps"], t["prefill_tps_sd"]) == mean_sd(r[col])
            assert t["ttft_s"] == pytest.approx(mean_sd(r["e2e_ttft (ms)"])[0] / 1000)
        else:
            assert (t["decode_tps"], t["decode_tps_sd"]) == mean_sd(r[col])
    assert got["pp32 (c2)"]["prefill_tps"] == 853.13 and got["tg8 @ d64 (c2)"]["decode_tps"] == 218.87


def test_prefix_caching_json_the_cached_prompt_is_no_prefill_and_the_cache_warning_fires():
    name = "llama-benchy-0.4.0-prefix.json"
    report = json.loads((REAL / name).read_text())
    assert report["prefix_caching_enabled"] is True
    load, cached = report["benchmarks"]
    c = contract(name)
    got = tasks(c)
    assert set(got) == {"ctx_pp @ d64", "ctx_tg @ d64", "pp32 @ d64 on a cached context",
                        "tg8 @ d64 on a cached context"}
    ctx = got["ctx_pp @ d64"]  # the context load is a cold prefill of the context
    assert (ctx["prompt_tokens"], ctx["prefill_tps"]) == (64, load["pp_req_throughput"]["mean"])
    assert ctx["prefill_tps_runs"] == load["pp_req_throughput"]["values"] and "cached_tokens" not in ctx
    pp = got["pp32 @ d64 on a cached context"]
    assert "prefill_tps" not in pp and "prefill_tps_runs" not in pp
    assert (pp["prompt_tokens"], pp["cached_tokens"]) == (32, 64)
    assert pp["ttft_s"] == pytest.approx(cached["e2e_ttft"]["mean"] / 1000)
    assert got["tg8 @ d64 on a cached context"]["decode_tps"] == cached["tg_req_throughput"]["mean"]
    figs, kinds = figures(c)
    assert not any(k.startswith("task_prefill|pp32") for k in figs)  # 3509 tok/s is a cache hit
    assert figs["task_prefill|ctx_pp @ d64|64"] == load["pp_req_throughput"]["mean"]
    assert kinds.count("prompt_cache") == 1
    reasons = {u["field"]: u["reason"] for u in c["imported"]["unmapped"]}
    assert reasons["$.benchmarks[1]: pp32 @ d64 on a cached context: prompt rate"].startswith(
        f"prompt rate {cached['pp_req_throughput']['mean']:.2f} tok/s not shown as prefill")
    assert {"peak t/s", "ttfr (ms)", "est_ppt (ms)"} <= set(reasons)
    assert "Prefix caching on" in c["summary"]["method_note"]


@pytest.mark.parametrize(("name", "cached_rows"), [("llama-benchy-0.4.0-prefix-c2.csv", 2),
                                                   ("llama-benchy-0.4.0-prefix.md", 1)])
def test_prefix_caching_csv_and_md_are_read_alike(name, cached_rows):
    c = contract(name)
    got = tasks(c)
    rows = csv_rows(name) if name.endswith(".csv") else md_rows(name)
    key = "test_name" if name.endswith(".csv") else "test"
    for r in rows:
        test = r[key]
        on_cache = not test.startswith("ctx_")
        t = got[task_name(test) + (" on a cached context" if on_cache else "")]
        rate = float(r["t_s_req_mean"]) if key == "test_name" else mean_sd(r["t/s"])[0]
        if test.startswith(("pp", "ctx_pp")):
            assert ("prefill_tps" in t) is not on_cache
            if on_cache:
                assert t["cached_tokens"] == 64 and t["prompt_tokens"] == 32
            else:
                assert t["prefill_tps"] == rate and t["prompt_tokens"] == 64
        else:
            assert t["decode_tps"] == rate
    _, kinds = figures(c)
    assert kinds.count("prompt_cache") == cached_rows


def test_throughput_time_series_are_read_and_listed_as_not_mapped():
    name = "llama-benchy-0.4.0-timeseries.json"
    report = json.loads((REAL / name).read_text())
    assert all(b["throughput_over_time"] and b["requests_throughput_over_time"] for b in report["benchmarks"])
    c = contract(name)
    got = tasks(c)
    for b in report["benchmarks"]:
        sfx = " (c2)" if b["concurrency"] == 2 else ""
        assert got[f"pp32{sfx}"]["prefill_tps_runs"] == b["pp_req_throughput"]["values"]
        assert got[f"tg8{sfx}"]["decode_tps"] == b["tg_req_throughput"]["mean"]
    fields = {u["field"] for u in c["imported"]["unmapped"]}
    assert {"$.benchmarks[].throughput_over_time", "$.benchmarks[].requests_throughput_over_time"} <= fields


def test_a_new_user_imports_the_prefix_cached_csv_and_is_told_of_the_cache(tmp_path):
    f = REAL / "llama-benchy-0.4.0-prefix-c2.csv"
    args = [sys.executable, "-m", "ingest", str(f), "--gpu", "none", "--db", str(tmp_path / "x.duckdb"),
            "--out", str(tmp_path / "local")]
    r = subprocess.run([*args, "--check"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("imported with llama-benchy/csv: ")
    assert ("pp32 @ d64 (c2) on a cached context: 64 prompt tokens of each request came from the server's cache; "
            "its prompt rate is no prefill and is not shown") in r.stdout
    again = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "is already stored exactly like this; nothing was stored" in again.stdout, again.stdout


def test_prefix_caching_with_no_cache_named_in_the_command_claims_no_cache_hit():
    """--no-cache sends cache_prompt false: the prompt after its context load processed the context again
    (the real server logged 97 prompt tokens for it), so nothing is called cached, and still no prefill is
    shown (llama-benchy's rate counts only the 32 prompt tokens)."""
    name = "llama-benchy-0.4.0-prefix-nocache.json"
    cmd = ["llama-benchy", "--depth", "64", "--enable-prefix-caching", "--no-cache"]
    c = contract(name, Options(gpu="none", bench_cmd=cmd))
    got = tasks(c)
    pp = got["pp32 @ d64 after its context load"]
    assert pp["prompt_tokens"] == 96 and "cached_tokens" not in pp and "prefill_tps" not in pp
    assert "tg8 @ d64 after its context load" in got and not any("cached" in t for t in got)
    _, kinds = figures(c)
    assert "prompt_cache" not in kinds
    (u,) = [u for u in c["imported"]["unmapped"] if u["field"].endswith("prompt rate")]
    assert "with --no-cache the server processed the 64-token context again" in u["reason"]
    assert "the server cached nothing" in c["summary"]["method_note"]
    # without the command the file cannot tell: the default (prompt cache on) is assumed, and said so
    c = contract(name)
    assert tasks(c)["pp32 @ d64 on a cached context"]["cached_tokens"] == 64
    assert any(a["field"] == "llama-benchy --no-cache" and a["value"] == "unknown" for a in c["imported"]["assumed"])


def test_runs_per_test_come_from_json_values_or_the_command():
    """The card's 'Runs (n)' of each mean ± SD: JSON keeps runs x requests-at-once values per test."""
    assert contract("llama-benchy-0.4.0-prefix.json")["method"]["runs"] == 2
    assert contract("llama-benchy-0.4.0-timeseries.json")["method"]["runs"] == 2  # c1 and c2 tests alike
    assert "runs" not in contract("llama-benchy-0.4.0-nocache.csv")["method"]  # CSV and md do not say
    cmd = ["llama-benchy", "--pp", "32", "--tg", "8", "--runs", "2", "--no-cache"]
    assert contract("llama-benchy-0.4.0-c2.md", Options(gpu="none", bench_cmd=cmd))["method"]["runs"] == 2
    # a request that gave no rate leaves a test with fewer values: the runs are not guessed
    assert "runs" not in contract("llama-benchy-0.4.0-prefix-nocache.json")["method"]
