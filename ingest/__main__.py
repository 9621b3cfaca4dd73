"""Command line: python -m ingest PATH... [--db FILE] [--check]"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchcards.db import DatabaseError
from benchcards.paths import DEFAULT_DB
from ingest.load import ingest_paths, validate_paths
from ingest.validate import IngestError

EPILOG = """\
Each PATH is a setup folder (with setup.json) or a folder of setup folders.
Every file is checked first; if any is invalid, all errors are listed (file, JSON
path, what was expected), nothing is written and the exit status is 1.

example:
  python -m ingest data/raw --db data/benchcards.duckdb
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ingest",
        description="Validate raw benchcards setup folders and load them into a DuckDB file.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="setup folder(s) to load")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    parser.add_argument("--check", action="store_true", help="validate only; write nothing")
    parser.add_argument("--rebuild", action="store_true",
                        help="start from an empty database: it will hold only PATH... (still swapped in atomically)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        if args.check:
            folders = validate_paths(args.paths)
            print(f"ok: {len(folders)} setup folder(s) valid")
            return 0
        report = ingest_paths(args.paths, args.db, rebuild=args.rebuild)
    except IngestError as exc:
        print(f"rejected: {len(exc.errors)} error(s); the database was not changed", file=sys.stderr)
        for e in exc.errors:
            print(f"  {e}", file=sys.stderr)
        return 1
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{report.text()} -> {args.db} ({time.perf_counter() - start:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
