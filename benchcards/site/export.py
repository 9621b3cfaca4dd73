"""The export command: ``python -m benchcards.site.export OUT [--db FILE] [--no-raw] [--base-url URL] [--workers N]``
(also ``benchcards export``) writes the static site with ``benchcards.site.exporter.export`` and prints what it
wrote, or the error.
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during the imports below: 'interrupted', status 130, no traceback
    from benchcards.domain.errors import interrupts_end_quietly

    interrupts_end_quietly()

import argparse
import sys
from pathlib import Path

from benchcards.read import db
from benchcards.read.paths import DEFAULT_DB, shown
from benchcards.site import pool
from benchcards.site import writer as sitewrite
from benchcards.site.exporter import export

__all__ = ["main"]


def main(argv: list[str] | None = None, prog: str = "python -m benchcards.site.export") -> int:
    """Run ``python -m benchcards.site.export ARGS`` (named ``prog`` in usage lines and errors); the exit status."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write the static HTML results site from the database. Exporting again into the same "
                    "folder rewrites only the files whose content changed.",
        epilog=f"example (into the folder site/):\n  {prog} site --db data/benchcards.duckdb "
               "--base-url https://example.org/bench/",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="folder to write: new, empty, or an earlier export")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"database (default {shown(DEFAULT_DB)})")
    parser.add_argument("--no-raw", action="store_true", help="do not copy the raw files")
    parser.add_argument("--base-url", help="address the site is published at (absolute addresses in "
                                           "sitemap.xml and index.json); default: relative addresses")
    parser.add_argument("--workers", type=int, help="processes rendering the setup cards, 1 to "
                                                    f"{pool.MAX_WORKERS} (default: one per core, at most 8, for "
                                                    "sites of 150 setups or more)")
    args = parser.parse_args(argv)
    if args.workers is not None and not 1 <= args.workers <= pool.MAX_WORKERS:
        parser.error(f"--workers must be 1 to {pool.MAX_WORKERS}, not {args.workers}")
    try:
        result = export(args.db, args.out, with_raw=not args.no_raw, base_url=args.base_url, workers=args.workers)
    except (db.DatabaseError, sitewrite.ExportFolderError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.filename or args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: {result.text()}")
    if not args.base_url:
        print("note: sitemap.xml lists relative addresses; search engines want absolute ones: export with "
              "--base-url https://… (the address the site is published at)")
    return 0


if __name__ == "__main__":
    from benchcards.domain.errors import run_as_command

    run_as_command(main)  # SIGTERM and SIGHUP too: the workers are stopped
