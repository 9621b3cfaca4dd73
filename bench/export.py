"""Benchmark: the static export of N synthetic setups vs the ingest of the same setups, in one run.

Usage: python bench/export.py [--setups 1000] [--keep DIR] [--workers N]

Generates N synthetic setup folders, ingests them (the same-run baseline: the time to load the
very data the export reads), exports the site into a new folder, then:

- prints the export time and its ratio to the ingest time (target: <= 3x ingest): the two are timed in turn
  ``--rounds`` times (default 3; each into a new database and a new folder, after the disk has been synced) and
  the medians are compared, as one round on a shared machine moved the ratio by a fifth from run to run;
- prints the largest HTML pages (target: every page <= 300 KB) and the site's size, and the sizes of index.json,
  the search index and the Parquet tables (the search index: target < 1 MB at 10,000 setups);
- ingests one more setup and exports again into the same folder: prints what was rewritten
  (incremental export: the new card, the lists it appears on, the machine-readable files; every
  other card untouched) and the time;
- exports again with no change: nothing may be written (target: <= 1 s; the database's content
  fingerprint and the code are those in the manifest, so nothing is even rendered).

Exits 1 when a size or incremental check fails (the times are figures, not checks).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchcards.site import parquet
from benchcards.site.exporter import export
from devdata import synth
from ingest import ingest_paths

PAGE_LIMIT = 300 * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time the static export of synthetic setups against their ingest "
                                                 "in the same run; check page sizes and incremental re-export.")
    parser.add_argument("--setups", type=int, default=1000, help="number of synthetic setups (default 1000)")
    parser.add_argument("--keep", type=Path, help="keep the work folder (raw folders, database, site) here")
    parser.add_argument("--workers", type=int, help="processes rendering the cards (default: the export's own)")
    parser.add_argument("--rounds", type=int, default=3, help="times the ingest and the export are timed, in turn "
                                                             "(default 3)")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bc-bench-export-"))
    work.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    try:
        raw = work / "raw"
        if not (raw.exists() and len(list(raw.iterdir())) == args.setups):
            shutil.rmtree(raw, ignore_errors=True)
            synth.generate(raw, args.setups, seed=1)
        print(f"{args.setups} setups")
        times: list[tuple[float, float]] = []
        for n in range(max(1, args.rounds)):
            db_path = work / f"bench-{n}.duckdb"
            site = work / f"site-{n}"
            shutil.rmtree(site, ignore_errors=True)  # (a kept folder of an earlier run: synced below)
            db_path.unlink(missing_ok=True)
            os.sync()
            t0 = time.perf_counter()
            ingest_paths([raw], db_path)
            ingest_s = time.perf_counter() - t0
            os.sync()
            t0 = time.perf_counter()
            first = export(db_path, site, workers=args.workers)
            export_s = time.perf_counter() - t0
            times.append((ingest_s, export_s))
            print(f"round {n + 1}            : ingest {ingest_s:.2f} s, export {export_s:.2f} s: "
                  f"{export_s / ingest_s:.2f}x")
        ingest_s, export_s = (statistics.median(t[i] for t in times) for i in range(2))
        print(f"ingest (baseline)  : {ingest_s:8.2f} s  (medians of {len(times)} rounds)")
        print(f"export             : {export_s:8.2f} s  ({first.text()})")
        print(f"ratio              : {export_s / ingest_s:8.2f}x ingest  (target: <= 3x)")

        html = sorted(((p.stat().st_size, p.relative_to(site).as_posix()) for p in site.rglob("*.html")),
                      reverse=True)
        total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and "raw" not in p.parts)
        print(f"pages              : {len(html)} HTML, site {total / 2**20:.1f} MiB without raw files")
        print("largest pages      : " + ", ".join(f"{rel} {size / 1024:.0f} KB" for size, rel in html[:5]))
        big = [rel for size, rel in html if size > PAGE_LIMIT]
        if big:
            failures.append(f"{len(big)} pages over {PAGE_LIMIT // 1024} KB: {', '.join(big[:5])}")
        for rel in ("index.json", "assets/search.js", "assets/vega.js", *(t.path for t in parquet.TABLES)):
            print(f"{rel:<19}: {(site / rel).stat().st_size / 1024:8.0f} KB")
        parts = sorted((p.stat().st_size, p.relative_to(site).as_posix()) for p in (site / "index").rglob("*.json"))
        print(f"index parts        : {len(parts)} files, largest {parts[-1][1]} {parts[-1][0] / 1024:.0f} KB")

        # one new setup: only what shows it is rewritten
        extra = work / "extra"
        shutil.rmtree(extra, ignore_errors=True)
        new = synth.generate_setup(10_000_019, extra)
        ingest_paths([extra], db_path)
        t0 = time.perf_counter()
        second = export(db_path, site, workers=args.workers)
        again_s = time.perf_counter() - t0
        cards = [w for w in second.written if w.startswith("setups/")]
        print(f"one setup added    : {again_s:8.2f} s  ({second.text()}); cards rewritten: {', '.join(cards)}")
        if cards != [f"setups/{new.name}.html"]:
            failures.append(f"adding {new.name} rewrote the cards {cards}")
        t0 = time.perf_counter()
        third = export(db_path, site, workers=args.workers)
        print(f"no change          : {time.perf_counter() - t0:8.2f} s  ({third.text()}; target <= 1 s)")
        if third.written or not third.unchanged:
            failures.append(f"an export without changes wrote {third.written[:5]}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
