"""Command line: python -m ingest PATH... [--db FILE] [--check] [--rebuild]

Exit status: 0 loaded (or valid, with --check), 1 the input was rejected or the
database could not be written, 2 the command line itself was wrong. Every problem
is a line naming the file and the JSON path; names from the input are printed with
control characters escaped, and no traceback ever reaches the terminal.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchcards.db import DatabaseError
from benchcards.paths import DEFAULT_DB
from ingest.errors import IngestError, safe
from ingest.load import ingest_paths, validate_paths

EPILOG = """\
Each PATH is a setup folder (with setup.json) or a folder of setup folders.
Every file is checked first; if any is invalid, the errors are listed (file, JSON
path, what was expected; at most 20 per file, with a count of the rest), nothing
is written and the exit status is 1. Links, pipes and devices are refused, never
followed; hidden files are skipped and listed. The folders given are recorded in
the database, so `python -m ingest.build` reads them again.

examples:
  python -m ingest data/raw --db data/benchcards.duckdb
  python -m ingest ~/results/my-setup --check
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (other commands extend it with their own options)."""
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
    return parser


def run(args: argparse.Namespace) -> int:
    """Carry out parsed arguments; returns the exit status."""
    start = time.perf_counter()
    if args.check:
        valid = validate_paths(args.paths)
        for s in valid.skipped:
            print(f"  skipped: {safe(s)}")
        print(f"ok: {len(valid.setups)} setup folder(s) valid")
        return 0
    report = ingest_paths(args.paths, args.db, rebuild=args.rebuild)
    print(f"{report.text()} -> {safe(args.db)} ({time.perf_counter() - start:.2f} s)")
    for s in report.skipped:
        print(f"  skipped: {safe(s)}")
    for line in report.warning_lines():
        print(f"  {safe(line)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # exits 2 on bad usage, with the usage line
    try:
        return run(args)
    except IngestError as exc:
        print(f"rejected: {exc.count} error(s); the database was not changed", file=sys.stderr)
        for e in exc.errors:
            print(f"  {e}", file=sys.stderr)
        for n in exc.notes:
            print(f"  note: {n}", file=sys.stderr)
        return 1
    except DatabaseError as exc:
        print(f"error: {safe(exc)}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {safe(exc.filename or '')}: {safe(exc.strerror or exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; the database was not changed", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still one line, never a traceback on a user's terminal
        print(f"error: unexpected {exc.__class__.__name__}: {safe(exc)} (nothing was changed; please report this)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
