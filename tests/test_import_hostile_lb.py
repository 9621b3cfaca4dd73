"""Hostile input to the llama-bench and llama-server-log importers: pathological lines finish, impossible figures
and control characters are refused by name, errors name the input file, and nothing is an internal error."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.__main__ import main
from ingest.errors import IngestError
from ingest.importers import ImportFailed, Options, Source, convert, detect
from ingest.importers.store import all_files, check
from ingest.limits import Limits
from tests.import_helpers import FIX, run

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parent.parent
LOG = (FIX / "server-chunked-2025.log").read_text()
ROWS = json.loads((FIX / "lb-real-t1.json").read_text())


def refused(name: str, data: bytes, opts: Options | None = None) -> list[str]:
    with pytest.raises(ImportFailed) as err:
        convert([Source(name, data)], opts or Options(gpu="none"))
    assert not any("internal error" in e for e in err.value.errors), err.value.errors
    return err.value.errors


def test_lines_that_make_backtracking_patterns_quadratic_finish(tmp_path):
    # each would take minutes with a pattern that backtracks over the line; the importer reads each line once
    n = 60_000  # under the longest line read, so every pattern sees it
    bad = [
        "print_info: file type = a" + " " * 200_000 + "b",  # longer than any line read: skipped
        "print_info: general.name = a" + " " * n + "b",
        "Device 0: " * (n // 10),
        "  - CPU : " + "x" * n + " (12 MiB, " + "(1 MiB, " * 100,
        "using device CUDA" + "0" * n,
        "K (f16): " * (n // 9) + " V (",
        "slot update_slots: id  0 | task 516 | " + "kv cache rm [p0, end) " * (n // 22),
        "id 1 | task " * (n // 12),
        "llama_model_loader: loaded meta data " + " from " * (n // 6),
        "build: " + "1 (" * (n // 3),
    ]
    text = LOG.replace("print_info: arch", "\n".join(bad) + "\nprint_info: arch")
    f = tmp_path / "hostile.log"
    f.write_text(text)
    md = tmp_path / "hostile.md"
    md.write_text((FIX / "lb-real-t1.md").read_text().replace(" pp32 |", " pp32" + " " * n + "|")
                  + "Device 0: " * (n // 10) + "\n" + "build: " + "0" * n + "\n")
    for path, expect in ((f, "3 request(s) from line 1"), (md, "llama-bench/md")):
        r = subprocess.run([sys.executable, "-m", "ingest", str(path), "--check", "--gpu", "none"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and expect in r.stdout, r.stderr[-2000:]
    (s,) = convert([Source("hostile.log", text.encode())], Options())[0].setups
    assert [r["cache_n"] for r in s.runs[0].contract["server_log"]] == [0, 1155, 2655]


def test_impossible_llama_bench_figures_are_refused():
    rows = [dict(r) for r in ROWS]
    rows[0]["samples_ns"] = [1, 1, 1]  # 3.2e10 tok/s
    errors = refused("fast.json", json.dumps(rows).encode())
    assert errors[0].startswith("fast.json: test 1: samples_ns[0]: repetition 1 of 1e-09 s: a measured time is "
                                "positive"), errors
    rows = [dict(r) for r in ROWS]
    rows[1]["avg_ts"] = 6.4e10
    rows[1].pop("samples_ns"), rows[1].pop("samples_ts")
    assert "is beyond any hardware" in refused("fast.json", json.dumps(rows).encode())[0]


def test_an_invalid_test_time_is_left_unknown_and_said():
    rows = [dict(r) for r in ROWS]
    for r in rows:
        r["test_time"] = "2026-13-45T99:99:99Z"
    res = convert([Source("t.json", json.dumps(rows).encode())])
    c = res[0].setups[0].runs[0].contract
    assert "finished_at" not in c and "started_at" not in c and all("test_time" not in b for b in c["bench"])
    assert any("2 test(s) with a test_time that is not a date and time" in n for n in res[0].notes)
    assert res[0].setups[0].setup["measured_at"] == []


def test_impossible_server_log_figures_are_refused():
    text = LOG.replace("eval time =   30000.00 ms /   256 tokens", "eval time =       0.00 ms /   256 tokens", 1)
    assert "a measured time is positive" in refused("x.log", text.encode())[0]
    text = LOG.replace("4100.00 ms /   900 tokens", "0.001 ms / 900000000 tokens", 1)
    assert refused("x.log", text.encode())[0].startswith("x.log: line ")


#: one request as current llama-server builds log it (written here, not copied from a real log)
ONE_REQUEST = """\
slot print_timing: id  0 | task 5 |
prompt eval time =      84.62 ms /     8 tokens (   10.58 ms per token,    94.54 tokens per second)
       eval time =     643.61 ms /    32 tokens (   20.11 ms per token,    49.72 tokens per second)
      total time =     728.23 ms /    40 tokens
"""


@pytest.mark.parametrize("old,new,line,problem", [
    ("643.61 ms /    32", "  0.00 ms /    32", 3, "eval time of 0 ms: a measured time is positive"),
    ("84.62 ms /     8", " 0.00 ms /     8", 2, "prompt eval time of 0 ms: a measured time is positive"),
])
def test_an_impossible_timing_is_refused_naming_its_own_line(tmp_path, capsys, old, new, line, problem):
    """The tester's 'eval time = 0.00 ms' was reported at the prompt-eval line before it."""
    log = tmp_path / "server.log"
    log.write_text(ONE_REQUEST.replace(old, new, 1))
    assert main([str(log), "--gpu", "none", "--check"]) == 1
    err = capsys.readouterr().err
    assert f"{log}: line {line}: {problem}; the log is not imported" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("field", ["cpu_info", "gpu_info", "model_type", "model_filename", "build_commit"])
def test_control_characters_in_names_are_refused_by_name(field):
    rows = [dict(r) for r in ROWS]
    for r in rows:
        r[field] = "A\u0000B\u001b]0;PWNED\u0007\u202eF" + ("-Q4_0.gguf" if field == "model_filename" else "")
    if field == "build_commit":
        rows[0]["build_commit"] = rows[1]["build_commit"] = "abc\u202edef"
    errors = refused("cc.json", json.dumps(rows).encode(), Options(gpu="none", vram_gib=8))
    assert all(e.startswith("cc.json: ") and ("U+0000" in e or "U+202E" in e) for e in errors), errors


def test_control_characters_in_a_log_name_are_refused():
    text = LOG.replace("Qwen3 4B Instruct", "Qwen\u202e3")
    errors = refused("cc.log", text.encode())
    assert errors == ["cc.log: model name (model.name): character 5 is U+202E; a name from the file must be one line "
                      "of text (no control characters or line separators)"]


def test_huge_numbers_give_clear_errors_not_internal_ones():
    md = (FIX / "lb-real-t1.md").read_text()
    assert "expected pp<N>" in refused("d.md", md.replace("pp32", "pp" + "9" * 5000, 1).encode())[0]
    assert "expected 'mean ± sd'" in refused("d.md", md.replace("17532.25", "9" * 400, 1).encode())[0]
    csv = (FIX / "lb-real-t1.csv").read_text().splitlines()
    csv[1] = csv[1].replace('"32"', '"' + "9" * 400 + '"', 1)
    assert "out of range" in refused("d.csv", ("\n".join(csv) + "\n").encode())[0]
    text = LOG.replace("4100.00 ms", "9" * 400 + " ms", 1)
    assert "expected '<ms> ms / <n> tokens'" in refused("x.log", text.encode())[0]
    text = LOG.replace("900 tokens (", "9" * 5000 + " tokens (", 1)
    assert refused("x.log", text.encode())[0].startswith("x.log: line ")


@pytest.mark.parametrize("variant", ["json", "jsonl"])
def test_a_long_value_before_the_keys_does_not_hide_the_format(variant):
    rows = [{"cpu_info": "x" * 20_000, **{k: v for k, v in r.items() if k != "cpu_info"}} for r in ROWS]
    data = json.dumps(rows) if variant == "json" else "\n".join(json.dumps(r) for r in rows) + "\n"
    assert detect(Source("x", data.encode())) == ("llama-bench", variant)


def test_a_setting_too_long_for_a_command_is_refused_naming_the_input():
    rows = [dict(r) for r in ROWS]
    for r in rows:
        r["tensor_buft_overrides"] = "x" * 70_000
    errors = refused("ot.json", json.dumps(rows).encode())
    assert errors == ["ot.json: test 1: tensor_buft_overrides: 70,000 characters, more than the 4,096 a setting "
                      "may have"]


def test_validation_errors_of_a_converted_folder_name_the_input_file():
    results = run("lb-real-t1.json")
    results[0].setups[0].setup["hardware"]["ram_gib"] = -1.0  # as if an importer had written it
    with pytest.raises(IngestError) as err:
        check(results)
    sid = results[0].setups[0].setup_id
    assert any(e.startswith(f"lb-real-t1.json (converted into import/{sid}/setup.json): ") for e in err.value.errors)


def test_one_file_that_converts_into_too_much_is_refused_naming_it():
    rows = [dict(ROWS[0], n_threads=i) for i in range(1, 2500)]  # 2,499 setups from one file
    assert "the file holds more than 2,000 runs" in refused("many.json", json.dumps(rows).encode())[0]
    results = run("lb-real-t1.json")
    with pytest.raises(ImportFailed) as err:
        all_files(results, limits=Limits(zip_entries=2))
    assert err.value.errors[0].startswith("lb-real-t1.json: converted into 1 setup folder(s) with 1 run(s): 3 files")


@pytest.mark.parametrize("rate", ["0.0", "1e-400", "0.00"])
def test_a_markdown_decode_rate_of_zero_is_refused(rate):
    md = (FIX / "lb-real-t1.md").read_text().replace("14944.48 ± 12399.04", f"{rate} ± 0.98")
    errors = refused("zero.md", md.encode())
    assert any(e.startswith("zero.md: ") and "avg_ts: a decode rate of" in e and "tok/s for 8 timed tokens is not "
               "a measurement (a rate of tokens that took time is positive); the test is not imported" in e
               for e in errors), errors
