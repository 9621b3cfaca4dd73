"""Benchmark: importing a 10,000-row llama-bench JSONL vs DuckDB reading the same file.

Writes a synthetic ``llama-bench -o jsonl`` file (50 setups x 200 tests, 5 repetitions each, every
column of a current build), then times, in the same run:

* baseline: DuckDB's ``read_json`` loading the file into a table (parse + type inference);
* import: the llama-bench importer's conversion (parse, type, group into setups, build the contracts);
* import + validation: the same, then every produced setup.json and contract checked with the JSON
  Schemas and pydantic, as ingest does (in memory, no files written).

The three run in turn, several times; the best time of each is its figure (the shared machine is
busy at times) and the median is shown beside it. Target: import <= 3x DuckDB.

Usage: python bench/import_llama_bench.py [--rows N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from ingest.importers import Options, Source, convert  # noqa: E402
from ingest.validate import pydantic_errors, schema_errors  # noqa: E402

TARGET = 3.0


def write_jsonl(path: Path, rows: int, seed: int = 7) -> None:
    """``rows`` tests in llama-bench's jsonl layout: 200 distinct tests per setup."""
    rng = random.Random(seed)
    lines = []
    per_setup = 200
    for i in range(rows):
        s, t = divmod(i, per_setup)
        n_prompt, n_gen = (512 * (1 + t % 10), 0) if t % 2 == 0 else (0, 64 * (1 + t % 10))
        depth = 1024 * (t // 20)
        n = n_prompt + n_gen
        rate = (3000.0 if n_prompt else 150.0) * rng.uniform(0.9, 1.1)
        ns = [round(1e9 * n / (rate * rng.gauss(1, 0.01))) for _ in range(5)]
        ts = [1e9 * n / x for x in ns]
        row = {"build_commit": "0c1e570", "build_number": 6000 + s % 5, "cpu_info": "AMD Ryzen 9 7950X",
               "gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA",
               "model_filename": f"/models/Model-{s // 5}-Q4_K_M.gguf", "model_type": "llama 8B Q4_K - Medium",
               "model_size": 4920000000, "model_n_params": 8030000000, "n_batch": 2048, "n_ubatch": 512,
               "n_threads": 16, "cpu_mask": "0x0", "cpu_strict": False, "poll": 50, "type_k": "f16", "type_v": "f16",
               "n_gpu_layers": 99, "n_cpu_moe": 0, "split_mode": "layer", "main_gpu": 0, "no_kv_offload": False,
               "flash_attn": 1, "devices": "auto", "tensor_split": "0.00", "tensor_buft_overrides": "none",
               "load_mode": "mmap", "embeddings": False, "no_op_offload": 0, "no_host": False, "fit_target": 0,
               "fit_min_ctx": 0, "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": depth,
               "test_time": "2025-10-01T10:00:00Z", "avg_ns": sum(ns) // 5, "stddev_ns": 1000,
               "avg_ts": round(sum(ts) / 5, 6), "stddev_ts": round(statistics.stdev(ts), 6), "samples_ns": ns,
               "samples_ts": [float(f"{x:.6g}") for x in ts]}
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def duckdb_read(path: Path) -> int:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{path}', format='newline_delimited')")
    n = con.execute("SELECT count(*) FROM t").fetchone()
    con.close()
    return int(n[0]) if n else 0


def import_only(data: bytes) -> int:
    res = convert([Source("bench.jsonl", data)], Options())
    return sum(len(r.contract["bench"]) for x in res for s in x.setups for r in s.runs)


def import_and_validate(data: bytes) -> int:
    res = convert([Source("bench.jsonl", data)], Options())
    n = 0
    for x in res:
        for s in x.setups:
            assert not schema_errors("setup", s.setup) and not pydantic_errors("setup", s.setup)[1]
            for r in s.runs:
                assert not schema_errors("speed", r.contract)
                model, errs = pydantic_errors("speed", r.contract)
                assert not errs
                n += len(model.bench)
    return n


def interleaved(jobs: list[tuple], repeat: int) -> list[tuple[float, float, int]]:
    """Run the jobs in turn ``repeat`` times (so a busy moment of the shared machine hits all of them);
    (best, median, result) per job. The best time is the figure: it is the least disturbed run."""
    times: list[list[float]] = [[] for _ in jobs]
    out = [0] * len(jobs)
    for _ in range(repeat):
        for i, (fn, *args) in enumerate(jobs):
            t0 = time.perf_counter()
            out[i] = fn(*args)
            times[i].append(time.perf_counter() - t0)
    return [(min(t), statistics.median(t), o) for t, o in zip(times, out)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/import_llama_bench.py",
                                     description="Time the llama-bench importer on a large JSONL against DuckDB's "
                                                 "read_json of the same file (target: at most 3x).",
                                     epilog="example:\n  python bench/import_llama_bench.py --rows 10000",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000, help="tests in the file (default 10,000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, interleaved; the best is the figure (default 5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        write_jsonl(path, args.rows)
        data = path.read_bytes()
        (base, base_med, n_db), (imp, imp_med, n_imp), (full, full_med, n_full) = interleaved(
            [(duckdb_read, path), (import_only, data), (import_and_validate, data)], args.repeat)
    assert n_db == n_imp == n_full == args.rows, (n_db, n_imp, n_full)
    print(f"file: {args.rows:,} llama-bench tests, {len(data) / 2**20:.1f} MiB; best (median) of {args.repeat}")
    print(f"DuckDB read_json (baseline):   {base * 1000:8.1f} ms ({base_med * 1000:.1f})")
    print(f"import (convert):              {imp * 1000:8.1f} ms ({imp_med * 1000:.1f})   ratio {imp / base:.2f}x "
          f"(target <= {TARGET:g}x)")
    print(f"import + schema validation:    {full * 1000:8.1f} ms ({full_med * 1000:.1f})   ratio {full / base:.2f}x")
    return 0 if imp / base <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
