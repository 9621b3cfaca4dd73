"""llama-benchy files a hostile user could give: each is refused naming the file and the field, or read right."""

from __future__ import annotations

import json
import time

import pytest

from ingest.importers import ImportFailed, Options, Source, convert
from ingest.importers.llama_benchy import MAX_TESTS
from tests.import_helpers import FIX

pytestmark = pytest.mark.unit

REAL = FIX / "real-tools"
CPU = Options(gpu="none")
HEAD = ("model,test_name,t_s_mean,t_s_std,t_s_req_mean,t_s_req_std,peak_ts_mean,peak_ts_std,peak_ts_req_mean,"
        "peak_ts_req_std,ttfr_mean,ttfr_std,est_ppt_mean,est_ppt_std,e2e_ttft_mean,e2e_ttft_std")
MD_HEAD = ("| model | test | t/s | peak t/s | ttfr (ms) | est_ppt (ms) | e2e_ttft (ms) |\n"
           "|:--|--:|--:|--:|--:|--:|--:|\n")


def csv_file(rows: list[str]) -> bytes:
    return ("\n".join([HEAD, *rows]) + "\n").encode()


def pp_row(n: int, sd: str = "1", req_sd: str = "1") -> str:
    return f"tiny,pp{n},1000,{sd},1000,{req_sd},,,,,25,1,21,1,25,1"


def refused(name: str, data: bytes, opts: Options = CPU) -> str:
    with pytest.raises(ImportFailed) as exc:
        convert([Source(name, data)], opts)
    text = "\n".join(exc.value.errors)
    assert text.startswith(f"{name}: ") and "Traceback" not in text and "unexpected" not in text
    return text


def contract(name: str, data: bytes, opts: Options = CPU) -> dict:
    (res,) = convert([Source(name, data)], opts)
    (setup,) = res.setups
    (run,) = setup.runs
    return run.contract


def test_ten_thousand_tests_convert_in_linear_time():
    start = time.monotonic()
    c = contract("many.csv", csv_file([pp_row(n) for n in range(1, MAX_TESTS + 1)]))
    assert len(c["summary"]["tasks"]) == MAX_TESTS
    assert time.monotonic() - start < 10  # the duplicate check was quadratic: 237 s


@pytest.mark.parametrize("kind", ["csv", "md"])
def test_csv_and_markdown_over_the_limit_are_refused_never_cut_short(kind):
    n = MAX_TESTS + 1
    if kind == "csv":
        data = csv_file([pp_row(i) for i in range(1, n + 1)])
    else:
        data = (MD_HEAD + "".join(f"| tiny | pp{i} | 1000 ± 1 | | | | 25 ± 1 |\n" for i in range(1, n + 1))).encode()
    err = refused(f"many.{kind}", data)
    assert f"{n:,} tests, more than the {MAX_TESTS:,} an import takes" in err


def test_a_nan_standard_deviation_in_csv_reads_as_missing():
    c = contract("nansd.csv", csv_file([pp_row(32, sd="nan", req_sd="nan")]))
    (task,) = c["summary"]["tasks"]
    assert task["prefill_tps"] == 1000 and "prefill_tps_sd" not in task
    json.dumps(c, allow_nan=False)  # storable: no NaN reaches the contract


@pytest.mark.parametrize(("sd", "problem"), [
    ("abc", "line 2 (pp32): t_s_req_std: not a number: 'abc'"),
    ("-5", "line 2 (pp32): t_s_req_std: a standard deviation of -5: expected a finite number of at least 0"),
])
def test_a_bad_csv_standard_deviation_names_its_line_test_and_field(sd, problem):
    assert refused("bad.csv", csv_file([pp_row(32, req_sd=sd)])) == f"bad.csv: {problem}"


def test_a_csv_field_over_the_csv_limit_names_its_line():
    err = refused("big.csv", csv_file([pp_row(32), "tiny," + "m" * 200_000]))
    assert err.startswith("big.csv: line 3: not llama-benchy CSV (field larger than field limit")


def test_a_markdown_cell_that_is_no_number_names_its_line_and_column():
    data = (MD_HEAD + "| tiny | pp32 | 1.2.3 ± 1 | | | | 25 ± 1 |\n").encode()
    assert refused("dots.md", data) == ("dots.md: line 3: t/s: expected 'mean ± sd' (numbers, sd at least 0), "
                                        "got '1.2.3 ± 1'")


def test_a_negative_json_standard_deviation_names_the_run_and_field():
    report = json.loads((REAL / "llama-benchy-0.4.0-nocache.json").read_text())
    report["benchmarks"][0]["pp_req_throughput"]["std"] = -3
    err = refused("neg.json", json.dumps(report).encode())
    assert err == ("neg.json: $.benchmarks[0].pp_req_throughput.std: a standard deviation of -3: expected a number "
                   "of at least 0")


def test_a_json_mean_that_contradicts_its_values_is_computed_from_the_values_and_said():
    report = json.loads((REAL / "llama-benchy-0.4.0-nocache.json").read_text())
    report["benchmarks"][0]["pp_req_throughput"].update(mean=9000, std=0, values=[100, 100, 100])
    c = contract("mis.json", json.dumps(report).encode())
    task = next(t for t in c["summary"]["tasks"] if t["task"] == "pp64")
    assert (task["prefill_tps"], task["prefill_tps_sd"]) == (100, 0)
    (said,) = [u for u in c["imported"]["unmapped"] if "contradicts" in u["reason"]]
    assert said == {"field": "$.benchmarks[0].pp_req_throughput", "reason": "the file's mean 9000 ± 0 contradicts "
                    "its 3 values (100 ± 0): the values' figures are shown"}


def test_control_characters_in_the_version_are_refused_and_in_the_command_made_one_line():
    report = json.loads((REAL / "llama-benchy-0.4.0-nocache.json").read_text())
    report["version"] = "\x1b]0;PWN\x07 0.4"
    err = refused("esc.json", json.dumps(report).encode())
    assert err.startswith("esc.json: $.version: character 1 is U+001B; a name from the file must be one line")
    opts = Options(gpu="none", bench_cmd=["llama-benchy", "--no-cache", "--model", "\x1b]0;PWN\x07"])
    c = contract("ok.json", (REAL / "llama-benchy-0.4.0-nocache.json").read_bytes(), opts)
    assert "\x1b" not in c["source"] and "\x07" not in c["source"] and "--no-cache" in c["source"]


def test_an_impossible_timestamp_is_dropped_with_a_warning():
    report = json.loads((REAL / "llama-benchy-0.4.0-nocache.json").read_text())
    report["timestamp"] = "2026-13-45 99:99:99Z"
    c = contract("ts.json", json.dumps(report).encode())
    assert c.get("started_at") is None
    assert {"field": "$.timestamp", "reason": "'2026-13-45 99:99:99Z' is not a valid date and time: no start time "
            "stored"} in c["imported"]["unmapped"]
