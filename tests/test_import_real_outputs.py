"""llama-bench and llama-server-log importers on what the tools really write, and on the features of files
real people published (appended runs, ik_llama.cpp, 2023 and 2024 formats, chunked prompts).

Fixtures ``lb-real-*`` and ``server-real-*`` were written by the real llama-bench / llama-server (CPU build of
llama.cpp 0c1e570, tiny random-weight models from live/tiny_gguf.py: ``tiny-a`` n_embd 64, ``tiny-b`` n_embd
128, ``tiny-c`` a copy of ``tiny-a``); the others are written by hand with the feature of a published file.
Each test asserts the figures per build or setup as a reader of the card sees them.
"""

import json

import pytest

from benchcards.compute import summarize
from ingest.__main__ import main
from ingest.importers import ImportFailed, Options, Source, convert, detect
from ingest.importers.store import check
from schemas.models import SpeedContract
from tests.import_helpers import FIX, run

pytestmark = pytest.mark.unit


def per_setup(results):
    """{setup title: {(metric, test, depth): value}} over every run (a title names one setup here)."""
    out: dict[str, dict] = {}
    for r in results:
        for s in r.setups:
            figs = out.setdefault(s.setup["title"], {})
            for run_ in s.runs:
                res = summarize.speed(SpeedContract.model_validate(run_.contract))
                assert not [w for w in res.warnings if "appears again" in w.message], res.warnings
                figs.update({(m.metric, m.prompt, m.level): round(m.value, 3) for m in res.metrics
                             if m.metric not in ("bench_cv", "log_decode_cv")})
    return out


def setups(results):
    return [s for r in results for s in r.setups]


# --------------------------------------------------------------------------- llama-bench, real outputs

REAL_FORMATS = {"lb-real-t1.json": "json", "lb-real-t1.jsonl": "jsonl", "lb-real-t1.csv": "csv",
                "lb-real-t1.sql": "sql", "lb-real-t1.md": "md", "lb-sql-table-test.sql": "sql"}


@pytest.mark.parametrize(("name", "variant"), sorted(REAL_FORMATS.items()))
def test_every_format_of_the_real_tool_is_detected_and_valid(name, variant):
    assert detect(Source("upload.bin", (FIX / name).read_bytes())) == ("llama-bench", variant)
    results = run(name)
    assert check(results) == 1
    s = setups(results)[0].setup
    assert s["engine"] == {"name": "llama.cpp", "commit": "0c1e570"} and s["hardware"]["gpus"] == []
    assert s["model"]["file_bytes"] == (387973 if variant == "md" else 385024)  # md prints 0.37 MiB


def test_real_json_figures_are_the_mean_of_the_repetitions():
    rows = json.loads((FIX / "lb-real-t1.json").read_text())
    figs = per_setup(run("lb-real-t1.json"))
    (only,) = figs.values()
    assert only[("bench_prefill", "pp32", 0)] == round(rows[0]["avg_ts"], 3) == 37447.945
    assert only[("bench_decode", "tg8", 0)] == round(rows[1]["avg_ts"], 3) == 21122.991


def test_sql_with_the_table_named_test_reads_like_llama_bench():
    # builds up to 2025 wrote CREATE TABLE IF NOT EXISTS test / INSERT INTO test
    assert per_setup(run("lb-sql-table-test.sql")) == per_setup(run("lb-real-t1.sql"))
    (only,) = per_setup(run("lb-sql-table-test.sql")).values()
    assert only == {("bench_prefill", "pp32", 0): 19504.498, ("bench_decode", "tg8", 0): 13298.493}


def test_from_llama_bench_on_a_sql_file_reads_the_sql(tmp_path, capsys):
    f = tmp_path / "results.txt"
    f.write_bytes((FIX / "lb-sql-table-test.sql").read_bytes())
    assert main([str(f), "--from", "llama-bench", "--check"]) == 0, capsys.readouterr().err
    assert "imported with llama-bench/sql: " in capsys.readouterr().out


def test_markdown_with_two_models_keeps_both():
    # llama-bench -m tiny-a -m tiny-b -fa 0,1 -p 32 -n 8 -pg 64,16 -o md: 12 rows, 4 setups, none dropped
    results = run("lb-real-two-models.md")
    figs = per_setup(results)
    assert len(figs) == 4 and sum(len(f) for f in figs.values()) == 12  # four titles: each setup named apart
    got = {(s.setup["model"]["file_bytes"], s.setup["title"].rsplit(", ", 1)[1]): figs[s.setup["title"]]
           for s in setups(results)}
    assert "model size 1.36 MiB" in next(t for t in figs if "flash_attn on" in t and "1.36" in t)
    assert got[(387973, "flash_attn off)")] == {("bench_prefill", "pp32", 0): 16204.68,
                                                ("bench_decode", "tg8", 0): 6319.9,
                                                ("bench_pg", "pp64+tg16", 0): 13765.64}
    assert got[(1426063, "flash_attn on)")] == {("bench_prefill", "pp32", 0): 18637.42,
                                                ("bench_decode", "tg8", 0): 12959.06,
                                                ("bench_pg", "pp64+tg16", 0): 3635.88}


def test_markdown_with_two_models_it_can_not_tell_apart_is_refused_with_the_way_out():
    with pytest.raises(ImportFailed) as err:
        run("lb-real-two-same-models.md")
    (e,) = err.value.errors
    assert e.startswith("lb-real-two-same-models.md: line 5: test pp32 of the same model and settings appears "
                        "again in this table (first on line 3)") and "-o json" in e


# --------------------------------------------------------------------------- llama-bench, published features


def test_appended_runs_belong_to_the_build_line_that_follows_each():
    figs = per_setup(run("lb-appended-builds.md", Options(gpu="NVIDIA GeForce RTX 4090")))
    by_build = {t.split("ik_llama.cpp ")[1].split(" ")[0]: f for t, f in figs.items()}
    assert by_build == {
        "b3810": {("bench_prefill", "pp512", 0): 612.4, ("bench_decode", "tg128", 0): 41.25},
        "b3809": {("bench_prefill", "pp512", 0): 598.77, ("bench_decode", "tg128", 0): 40.9},
        "b3808": {("bench_prefill", "pp512", 0): 301.05, ("bench_decode", "tg128", 0): 22.61},
    }


def test_terminal_capture_of_two_engines_gives_one_setup_per_section_and_setting():
    results = run("lb-terminal-two-engines.txt", Options(vram_gib=16))
    assert check(results) == 6
    got = {}
    for s in setups(results):
        st = s.setup
        argv = st["server"]["argv"]
        key = (st["engine"]["name"], st["engine"]["version"], argv[argv.index("-fa") + 1], argv[argv.index("-ot") + 1])
        got[key] = per_setup([type(results[0])(results[0].format, results[0].sources, [s])])[st["title"]]
        assert st["hardware"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 4060 Ti"  # from the capture's device line
        assert st["model"]["name"] == "Qwen3-30B-A3B"  # from the -m of the command typed
    pp, tg = ("bench_prefill", "pp512", 0), ("bench_decode", "tg128", 0)
    assert {k: (f[pp], f[tg]) for k, f in got.items()} == {
        ("ik_llama.cpp", "b3701", "off", "exps=CPU"): (101.2, 18.4),
        ("ik_llama.cpp", "b3701", "on", "exps=CPU"): (110.75, 18.95),
        ("ik_llama.cpp", "b3701", "off", "ffn=CPU"): (88.1, 15.02),
        ("ik_llama.cpp", "b3701", "on", "ffn=CPU"): (93.3, 15.44),
        ("llama.cpp", "b6020", "off", "exps=CPU"): (95.42, 17.11),
        ("llama.cpp", "b6020", "on", "exps=CPU"): (97.8, 17.36),
    }


def test_ik_llama_json_test_column_is_the_tests_name_not_a_setting():
    results = run("lb-ik-test-column.json")
    (s,) = setups(results)  # prefill and decode on one card
    assert s.setup["engine"] == {"name": "ik_llama.cpp", "version": "b3599", "build_number": 3599,
                                 "commit": "ab12cd34"}
    assert "test" not in s.runs[0].contract["method"]["bench_settings"]
    assert per_setup(results)[s.setup["title"]] == {("bench_prefill", "pp32", 0): 37447.945,
                                                    ("bench_decode", "tg8", 0): 21122.991}
    argv = s.setup["server"]["argv"]
    assert argv[argv.index("-mla") + 1] == "2" and argv[argv.index("-amb") + 1] == "512"


def test_ik_test_name_that_contradicts_the_counts_is_refused():
    rows = json.loads((FIX / "lb-ik-test-column.json").read_text())
    rows[0]["test"] = "tg128"
    with pytest.raises(ImportFailed) as err:
        convert([Source("ik.json", json.dumps(rows).encode())])
    assert err.value.errors[0].startswith("ik.json: test 1: test: the test is called 'tg128' but n_prompt is 32")


def test_2023_markdown_with_spaces_in_test_names():
    figs = per_setup(run("lb-ppspace-2023.md"))
    assert {t.rsplit("n_threads ", 1)[1][:-1]: f for t, f in figs.items()} == {
        "4": {("bench_prefill", "pp128", 0): 14.62, ("bench_decode", "tg32", 0): 3.33},
        "8": {("bench_prefill", "pp128", 0): 26.08, ("bench_decode", "tg32", 0): 5.71},
    }
    s = setups(run("lb-ppspace-2023.md"))[0].setup
    assert s["model"]["quant"] == "Q5_K_M" and s["model"]["name"] == "llama 13B"  # "mostly Q5_K - Medium"


# --------------------------------------------------------------------------- llama-server logs


def test_real_log_with_chunked_prompts_takes_the_first_cache_line_of_each_prompt():
    # -lv 4 logs 'cached n_tokens = N, memory_seq_rm [N, end)' once per chunk of 64 tokens (-b 64); the server's
    # own timings.cache_n of the three requests were 0, 721 and 1261
    (s,) = setups(run("server-real-chunked-lv4.log"))
    recs = s.runs[0].contract["server_log"]
    assert [(r["cache_n"], r["prompt_n"], r["predicted_n"]) for r in recs] == [(0, 722, 20), (721, 541, 20),
                                                                              (1261, 451, 20)]
    assert s.setup["server"]["argv"][1:] == ["-m", "/tmp/gen/tiny-a-F16.gguf", "-c", "2048", "-np", "1", "-b", "64",
                                             "-ub", "64", "-t", "1", "--port", "43193", "--host", "127.0.0.1",
                                             "-lv", "4"]  # the command typed, not one rebuilt from defaults


def test_real_default_log_has_the_figures_and_no_cache_lines():
    (s,) = setups(run("server-real-chunked.log", Options(gpu="none")))
    figs = per_setup(run("server-real-chunked.log", Options(gpu="none")))[s.setup["title"]]
    assert figs[("log_requests", None, None)] == 3 and figs[("log_prefill", None, 722)] == 5577.874
    assert [r.get("cache_n") for r in s.runs[0].contract["server_log"]] == [None, None, None]


def test_mid_2025_log_chunked_prompt_cache_and_cpu_only_and_model_name():
    (s,) = setups(run("server-chunked-2025.log"))
    recs = s.runs[0].contract["server_log"]
    assert [r["cache_n"] for r in recs] == [0, 1155, 2655]  # not the second chunk's 2179 and 3679
    st = s.setup
    assert st["hardware"]["gpus"] == [] and "0 of 37 layers" in st["hardware"]["notes"]  # offloaded 0/37: CPU
    assert st["model"]["name"] == "Qwen3 4B Instruct"  # general.name: the file is called model.gguf
    assert st["server"]["argv"] == ["./bin/llama-server", "-m", "/srv/models/model.gguf", "-c", "8192", "-b", "1024",
                                    "-ub", "1024", "--port", "8080"]
    assert st["engine"]["version"] == "b5600"


def test_2024_text_log_keeps_its_build_and_does_not_claim_it_has_none():
    (s,) = setups(run("server-2024-info-format.log"))
    assert s.setup["engine"] == {"name": "ik_llama.cpp", "version": "b3650", "build_number": 3650,
                                 "commit": "1f2e3d4c"}  # the shell's folder names ik_llama.cpp
    assert not any(u["field"] == "build" for u in s.runs[0].contract["imported"].get("unmapped", []))
    recs = s.runs[0].contract["server_log"]
    assert [(r["task"], r["prompt_n"], r["predicted_n"], r["cache_n"]) for r in recs] == [(0, 480, 300, 0),
                                                                                          (302, 58, 300, 470)]
    figs = per_setup(run("server-2024-info-format.log"))[s.setup["title"]]
    assert figs[("log_decode", None, None)] == pytest.approx((37.59 + 37.26) / 2, abs=1e-3)


def test_reimporting_an_identical_log_is_unchanged(tmp_path, capsys):
    args = [str(FIX / "server-real-chunked.log"), "--gpu", "none", "--db", str(tmp_path / "x.duckdb"),
            "--out", str(tmp_path / "local")]
    assert main(args) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert ": unchanged" in out and "replaced" not in out
    (setup_json,) = (tmp_path / "local").glob("*/setup.json")
    assert "measured_at" not in json.loads(setup_json.read_text())
