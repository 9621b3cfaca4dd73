"""Benchmark: ingest N synthetic setup folders vs DuckDB's bare read_json of the same files.

Usage: python bench/ingest.py [--setups 1000] [--keep DIR]

Prints both times, wall and CPU (user + system, of this process and its worker processes), and the ratio
(target: ingest <= 1.5x the bare read). The two are timed in turn ``--rounds`` times (default 3, each after the
disk has been synced, so that neither pays for the other's writes) and the medians are compared: one round on a
shared machine moved the ratio by a fifth from run to run. The bare read is DuckDB parsing every JSON file of the folders into tables
with ``read_json`` (no validation, no figures, no hashing): the floor for any loader. Each side's modules are
imported before it is timed (DuckDB's and the write side's at the top of this file; what the write side imports on
first use is timed on a line of its own, ``start-up``), so the ratio compares the loads; a second ratio includes
the start-up.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb
import pyarrow as pa

from devdata import synth
from ingest import ingest_paths


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its ended children (the ingest's workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def start_up() -> tuple[float, float]:
    """(wall, CPU) seconds of what the write side imports on first use, once per process (pyarrow loads pandas
    on its first conversion of Python values); its own modules came with ``from ingest import ingest_paths``."""
    cpu, start = cpu_seconds(), time.perf_counter()
    pa.array([0])
    return time.perf_counter() - start, cpu_seconds() - cpu


def bare_read(root: Path) -> tuple[float, int]:
    """Seconds for DuckDB to read every JSON file under ``root`` into tables; row count."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    start = time.perf_counter()
    rows = 0
    for pattern in ("*/setup.json", "*/speed/*/contract.json", "*/quality/*/contract.json",
                    "*/fit/*/contract.json"):
        name = pattern.split("/")[1].replace(".json", "").replace("*", "x")
        con.execute(f"CREATE TABLE t_{name} AS SELECT * FROM read_json('{root}/{pattern}', "
                    "format='auto', maximum_object_size=4194304)")
        rows += con.execute(f"SELECT count(*) FROM t_{name}").fetchone()[0]
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time ingest of synthetic setups against DuckDB's bare read_json.")
    parser.add_argument("--setups", type=int, default=1000, help="number of synthetic setups (default 1000)")
    parser.add_argument("--keep", type=Path, help="write the folders here and keep them")
    parser.add_argument("--rounds", type=int, default=3, help="times each side is timed, in turn (default 3)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bc-bench-"))
    raw = args.keep or work / "raw"
    try:
        t0 = time.perf_counter()
        if not (raw.exists() and len(list(raw.iterdir())) == args.setups):
            synth.generate(raw, args.setups, seed=1)
        gen = time.perf_counter() - t0
        files = list(raw.rglob("*"))
        size = sum(p.stat().st_size for p in files if p.is_file())
        print(f"{args.setups} setup folders, {sum(p.is_file() for p in files)} files, "
              f"{size / 2**20:.0f} MiB (generated in {gen:.1f} s)")
        bare_read(raw)  # warm the page cache for both contenders
        up, up_cpu = start_up()
        db_path = work / "bench.duckdb"
        rounds: list[tuple[float, float, float, float]] = []
        for n in range(max(1, args.rounds)):
            os.sync()
            cpu = cpu_seconds()
            bare, rows = bare_read(raw)
            bare_cpu = cpu_seconds() - cpu
            db_path.unlink(missing_ok=True)
            os.sync()
            cpu, t0 = cpu_seconds(), time.perf_counter()
            report = ingest_paths([raw], db_path)
            ingest, ingest_cpu = time.perf_counter() - t0, cpu_seconds() - cpu
            rounds.append((bare, bare_cpu, ingest, ingest_cpu))
            print(f"round {n + 1}        : bare {bare:.2f} s, ingest {ingest:.2f} s: {ingest / bare:.2f}x")
        bare, bare_cpu, ingest, ingest_cpu = (statistics.median(r[i] for r in rounds) for i in range(4))
        print(f"bare read_json : {bare:8.2f} s  CPU {bare_cpu:6.2f} s  ({rows} top-level rows; medians of "
              f"{len(rounds)} rounds)")
        print(f"start-up       : {up:8.2f} s  CPU {up_cpu:6.2f} s  (imports on first use, once per process)")
        print(f"ingest         : {ingest:8.2f} s  CPU {ingest_cpu:6.2f} s  ({report.text()})")
        print(f"ratio          : {ingest / bare:8.2f}x  CPU {ingest_cpu / bare_cpu:5.2f}x  (target <= 1.5x)")
        print(f"with start-up  : {(up + ingest) / bare:8.2f}x  CPU {(up_cpu + ingest_cpu) / bare_cpu:5.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
