"""llama-bench importer: every output format, golden files, identity of setups, figures."""

import json

import pytest

from benchcards.compute import summarize
from ingest.importers import ImportFailed, Options, Source, convert, detect
from ingest.importers import llama_bench as lb
from ingest.importers.store import check
from schemas.models import SpeedContract
from tests.import_helpers import FIX, check_golden, run, source

pytestmark = pytest.mark.unit

REAL = {  # written by the real llama-bench (CPU build of llama.cpp 0c1e5709) with a tiny random model
    "llama-bench-cpu.json": "json", "llama-bench-cpu.sql": "sql", "llama-bench-cpu-fa.md": "md",
    "llama-bench-cpu-ub.csv": "csv", "llama-bench-cpu-d128.jsonl": "jsonl",
}
HAND = {"llama-bench-cuda-2models.json": "json", "llama-bench-old-cuda.jsonl": "jsonl"}


@pytest.mark.parametrize("name", sorted({**REAL, **HAND}))
def test_golden(name):
    results = run(name)
    check_golden(name, results)
    assert check(results) == len(results[0].setups)  # valid like any raw folder


@pytest.mark.parametrize(("name", "variant"), sorted({**REAL, **HAND}.items()))
def test_format_is_detected_from_the_content(name, variant):
    renamed = Source("upload.bin", (FIX / name).read_bytes())
    assert detect(renamed) == ("llama-bench", variant)


def _figures(results):
    out = {}
    for r in results:
        for s in r.setups:
            for run_ in s.runs:
                res = summarize.speed(SpeedContract.model_validate(run_.contract))
                assert not [w for w in res.warnings if w.kind == "summary_mismatch"], res.warnings
                out.update({(s.setup_id, m.metric, m.prompt, m.level): m.value for m in res.metrics})
    return out


def test_one_run_written_as_json_and_sql_gives_identical_figures():
    # llama-bench -o json -oe sql: the same run in two formats (sql has no per-repetition samples)
    from_json, from_sql = _figures(run("llama-bench-cpu.json")), _figures(run("llama-bench-cpu.sql"))
    assert len(from_json) == 24 and from_json == from_sql
    j, s = run("llama-bench-cpu.json")[0], run("llama-bench-cpu.sql")[0]
    assert [x.setup_id for x in j.setups] == [x.setup_id for x in s.setups]
    assert not j.setups[0].runs[0].contract["summary_only"] and s.setups[0].runs[0].contract["summary_only"]


def test_one_setup_per_distinct_settings_and_per_model():
    two_threads = run("llama-bench-cpu.json")[0]
    assert len(two_threads.setups) == 2  # -t 1,2
    assert sorted(s.setup["title"].rsplit("n_threads ", 1)[1][0] for s in two_threads.setups) == ["1", "2"]
    cuda = run("llama-bench-cuda-2models.json")[0]
    titles = sorted(s.setup["title"] for s in cuda.setups)
    assert len(titles) == 4  # 2 models x flash attention on/off
    assert sum("Qwen3-30B-A3B Q4_K_M" in t for t in titles) == 2 and sum("flash_attn off" in t for t in titles) == 2
    for s in cuda.setups:
        c = s.runs[0].contract
        assert {(b["test"], b["n_depth"]) for b in c["bench"]} == {("pp", 0), ("tg", 0), ("pp", 4096), ("tg", 4096)}
        assert all(len(b["samples_ns"]) == 5 for b in c["bench"])
        assert s.setup["hardware"]["gpus"] == [{"name": "NVIDIA GeForce RTX 4090", "count": 1, "vram_gib": 24.0,
                                                "backend": "CUDA"}]
        assert s.setup["engine"] == {"name": "llama.cpp", "version": "b6123", "build_number": 6123,
                                     "commit": "2a5d3b8e"}


def test_depth_tests_map_to_prefill_and_decode_at_depth():
    figs = _figures(run("llama-bench-cuda-2models.json"))
    qwen_fa = [k for k in figs if k[0].startswith("qwen3-30b") and k[1] == "bench_decode"]
    assert sorted({(k[2], k[3]) for k in qwen_fa}) == [("tg128", 0), ("tg128", 4096)]
    assert any(k[1] == "bench_prefill" and k[2] == "pp512" and k[3] == 4096 for k in figs)
    assert all(v > 0 for k, v in figs.items() if k[1] == "bench_cv")


def test_markdown_keeps_mean_and_spread_and_the_build_line():
    res = run("llama-bench-cpu-fa.md")[0]
    assert len(res.setups) == 2  # fa 1 and fa 0
    c = res.setups[0].runs[0].contract
    assert c["summary_only"] is True and all("samples_ns" not in b for b in c["bench"])
    first = c["bench"][0]
    assert (first["test"], first["n_prompt"], first["avg_ts"], first["stddev_ts"]) == ("pp", 64, 139819.08, 7827.88)
    assert {b["test"] for b in c["bench"]} == {"pp", "tg", "pg"}
    assert res.setups[0].setup["engine"]["commit"] == "0c1e570"
    assert res.setups[0].setup["hardware"]["gpus"] == []  # backend CPU: a CPU-only setup


def test_older_builds_columns_are_named_when_not_mapped():
    c = run("llama-bench-old-cuda.jsonl")[0].setups[0]
    fields = {u["field"] for u in c.runs[0].contract["imported"]["unmapped"]}
    assert {"cuda", "vulkan", "metal"} <= fields and "model_size" not in fields  # model_size: model.file_bytes
    assert c.setup["model"]["file_bytes"] > 0
    assert c.setup["hardware"]["gpus"][0]["backend"] == "CUDA"  # from the per-backend flags
    argv = c.setup["server"]["argv"]
    assert argv[argv.index("-fa") + 1] == "off"  # boolean flash_attn of older builds


def test_gpu_with_several_sizes_asks_for_vram_and_takes_the_option():
    data = (FIX / "llama-bench-cuda-2models.json").read_text().replace("RTX 4090", "RTX 4060 Ti")
    src = Source("bench.json", data.encode())
    with pytest.raises(ImportFailed) as err:
        convert([src])
    assert "bench.json: hardware.gpus[0].vram_gib" in err.value.errors[0] and "--vram-gib" in err.value.errors[0]
    res = convert([src], Options(vram_gib=16))
    setup = res[0].setups[0]
    assert setup.setup["hardware"]["gpus"][0]["vram_gib"] == 16.0
    assumed = setup.runs[0].contract["imported"]["assumed"]
    assert {"field": "hardware.gpus[0].vram_gib", "value": "16", "source": "--vram-gib"} in assumed


def test_markdown_of_a_gpu_backend_needs_the_gpu_name():
    md = (FIX / "llama-bench-cpu-fa.md").read_text().replace("| CPU        |", "| CUDA       |")
    with pytest.raises(ImportFailed) as err:
        convert([Source("table.md", md.encode())])
    assert err.value.errors[0].startswith("table.md: hardware:") and "--gpu" in err.value.errors[0]
    res = convert([Source("table.md", md.encode())], Options(gpu="NVIDIA GeForce RTX 3090"))
    assert res[0].setups[0].setup["hardware"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 3090"


def test_what_the_file_says_wins_over_the_gpu_option():
    res = run("llama-bench-cpu.json", Options(gpu="NVIDIA GeForce RTX 4090"))[0]
    s = res.setups[0]
    assert s.setup["hardware"]["gpus"] == []
    assert any("--gpu NVIDIA GeForce RTX 4090 not used" in a["source"]
               for a in s.runs[0].contract["imported"]["assumed"])


def test_stated_mean_that_disagrees_with_the_samples_is_a_warning():
    rows = json.loads((FIX / "llama-bench-cpu.json").read_text())
    rows[0]["avg_ts"] = rows[0]["avg_ts"] * 1.5
    res = convert([Source("edited.json", json.dumps(rows).encode())])
    warns = []
    for s in res[0].setups:
        warns += summarize.speed(SpeedContract.model_validate(s.runs[0].contract)).warnings
    assert any(w.kind == "summary_mismatch" and "computed from the 3 samples" in w.message for w in warns)


@pytest.mark.parametrize(("text", "where"), [
    ('[{"n_prompt": 512, "n_gen": 0, "avg_ts": "fast"}]', "test 1: avg_ts"),
    ('[{"n_prompt": -5, "n_gen": 0, "avg_ts": 1.0}]', "test 1: n_prompt"),
    ('[{"n_prompt": 0, "n_gen": 0, "avg_ts": 1.0, "backends": "CPU", "gpu_info": ""}]', "test 1: n_prompt"),
    ('[{"n_gen": 128, "avg_ts": 1.0}]', "test 1: n_prompt"),
    ('[{"n_prompt": 1, "n_gen": 0, "samples_ns": [1, "x"], "avg_ts": 1}]', "test 1: samples_ns"),
    ('[{"n_prompt": 512, "n_gen": 0, "avg_ts": 1.0, "backends": "CPU", "gpu_info": "", "samples_ns": [5],'
     ' "samples_ts": [1, 2]}]', "test 1: samples_ts"),
])
def test_bad_values_name_the_file_and_field(text, where):
    with pytest.raises(ImportFailed) as err:
        lb.convert([Source("b.json", text.encode())], Options(gpu="none"), "json")
    assert err.value.errors[0].startswith(f"b.json: {where}"), err.value.errors


def test_sql_values_with_quotes_and_cut_lines():
    sql = (FIX / "llama-bench-cpu.sql").read_text().replace("Intel(R) Xeon(R) Processor", "Xeon ''Gold''")
    res = convert([Source("q.sql", sql.encode())])
    assert res[0].setups[0].setup["hardware"]["cpu"] == "Xeon 'Gold'"
    cut = sql.rsplit("\n", 2)[0][:-40] + "\n"
    with pytest.raises(ImportFailed) as err:
        convert([Source("q.sql", cut.encode())])
    assert err.value.errors[0].startswith("q.sql: line ")


def test_the_original_file_is_kept_with_its_hash():
    res = run("llama-bench-cpu-ub.csv")[0]
    run_ = res.setups[0].runs[0]
    att = run_.contract["attachments"][0]
    data = (FIX / "llama-bench-cpu-ub.csv").read_bytes()
    assert run_.attachments[att["path"]] == data
    import hashlib

    assert att["sha256"] == hashlib.sha256(data).hexdigest() == run_.contract["imported"]["sha256"]


def test_json_with_log_lines_around_is_rejected_and_jsonl_skips_them():
    text = "llama_model_load: loading\n" + (FIX / "llama-bench-cpu-d128.jsonl").read_text() + "main: done\n"
    res = convert([Source("mixed.jsonl", text.encode())], force="llama-bench")
    assert any("2 line(s) that are not JSON objects were skipped" in n for n in res[0].notes)
    assert len(source("llama-bench-cpu-d128.jsonl").data) < len(text)


@pytest.mark.parametrize(("backend", "gpu", "vram", "unified"), [
    ("Vulkan", "AMD Radeon RX 7900 XTX (RADV NAVI31)", 24.0, None),
    ("Metal,BLAS", "Apple M3 Max", None, True),
    ("CUDA", "NVIDIA GeForce RTX 3090, NVIDIA GeForce RTX 3090", 24.0, None),
])
def test_backends_and_gpus(backend, gpu, vram, unified):
    rows = json.loads((FIX / "llama-bench-cpu.json").read_text())[:2]
    for r in rows:
        r.update(backends=backend, gpu_info=gpu, n_threads=1)
    src = Source("gpu.json", json.dumps(rows).encode())
    if vram is None:
        with pytest.raises(ImportFailed) as err:
            convert([src])
        assert "gpu.json: hardware.gpus[0].vram_gib" in err.value.errors[0]
        res = convert([src], Options(vram_gib=36))
    else:
        res = convert([src])
    g = res[0].setups[0].setup["hardware"]["gpus"]
    assert len(g) == 1 and g[0]["backend"] == backend and g[0]["vram_gib"] == (vram or 36.0)
    assert g[0]["count"] == len(gpu.split(", ")) and g[0].get("unified_memory") == unified
