"""Benchmark: the analysis views (time to answer, throughput, speed vs quality, knees) and the Analysis page
with 1,000 setups.

Usage: python bench/analysis.py [--setups 1000] [--raw DIR] [--repeat 5]

Prints the median time of each library view over the frames of ``analysis_inputs.analysis_data``, of the read
itself, of a full run of the Analysis page in Streamlit's AppTest, and, as the same-run baseline, bare
DuckDB fetching the same rows (the SQL traced from ``analysis_data``) with plain fetchall(); then each
figure's ratio to that baseline. Target: the page run <= 3 s at 1,000 setups.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

import benchcards.read.store  # noqa: E402
from benchcards.compute import analysis  # noqa: E402
from benchcards.read import analysis_inputs  # noqa: E402
from benchcards.read.store import Store  # noqa: E402
from devdata import synth  # noqa: E402
from ingest import ingest_paths  # noqa: E402


def median_ms(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time the analysis views and the Analysis page against bare "
                                                 "DuckDB reading the same rows.")
    parser.add_argument("--setups", type=int, default=1000, help="synthetic setups to generate (default 1000)")
    parser.add_argument("--raw", type=Path, help="reuse/keep the synthetic folders here")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure (median shown)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bc-analysis-"))
    raw = args.raw or work / "raw"
    if not (raw.exists() and len(list(raw.iterdir())) >= args.setups):
        synth.generate(raw, args.setups, seed=1)
    db = work / "analysis.duckdb"
    ingest_paths([raw], db)
    os.environ["BENCHCARDS_DB"] = str(db)
    store = Store(db)

    benchcards.read.store.TRACE = []
    data = analysis_inputs.analysis_data(store)
    sqls, benchcards.read.store.TRACE = benchcards.read.store.TRACE, None

    def bare() -> None:
        con = duckdb.connect(str(db), read_only=True)
        try:
            for sql, params in sqls:
                con.execute(sql, params).fetchall()
        finally:
            con.close()

    def page() -> None:
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(str(ROOT / "pages" / "7_Analysis.py"), default_timeout=300)
        at.run()
        assert not at.exception, [e.value for e in at.exception]

    test = analysis.quality_tests(data)[0][0]
    t_bare = median_ms(bare, args.repeat)
    rows = [
        ("read (analysis_data)", median_ms(lambda: analysis_inputs.analysis_data(store), args.repeat)),
        ("time to answer", median_ms(lambda: analysis.time_to_answer(data, 8192, 500), args.repeat)),
        ("throughput + frontier", median_ms(lambda: analysis.throughput(data), args.repeat)),
        ("speed vs quality", median_ms(lambda: analysis.speed_quality(data, test, "prefill at 8K"), args.repeat)),
        ("knees", median_ms(lambda: analysis.knees(data), args.repeat)),
        ("Analysis page run", median_ms(page, max(1, args.repeat // 2))),
    ]
    print(f"{len(data.setups)} setups, {len(data.metrics)} metric rows in {db}")
    print(f"{'figure':<24}{'median':>12}{'/ bare read':>14}")
    for name, ms in rows:
        print(f"{name:<24}{ms:>10.1f}ms{ms / t_bare:>13.1f}x")
    print(f"{'bare DuckDB (baseline)':<24}{t_bare:>10.1f}ms")
    page_ms = rows[-1][1]
    print(f"page target <= 3000 ms: {'ok' if page_ms <= 3000 else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
