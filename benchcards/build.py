"""Build the site's database from the raw folders on this machine.

Sources: ``data/raw`` (demo data shipped in git) and ``data/local`` (uploads and
live runs made on this machine). The database is rebuilt whenever it is missing
or older than any source file.
"""

from __future__ import annotations

from pathlib import Path

from benchcards.paths import DEFAULT_DB, SOURCES


def newest_mtime(folders: tuple[Path, ...] | list[Path]) -> float:
    """Newest modification time of any file or folder under ``folders`` (0 when empty)."""
    newest = 0.0
    for folder in folders:
        if folder.exists():
            newest = max([newest, folder.stat().st_mtime, *(p.stat().st_mtime for p in folder.rglob("*"))])
    return newest


def needs_build(db_path: Path = DEFAULT_DB, sources: tuple[Path, ...] = SOURCES) -> bool:
    """True when the database is missing or older than the raw data."""
    return not db_path.exists() or db_path.stat().st_mtime < newest_mtime(sources)


def ensure_db(db_path: Path = DEFAULT_DB, sources: tuple[Path, ...] = SOURCES) -> bool:
    """Rebuild ``db_path`` from ``sources`` when needed; returns True when it built.

    Side effects: replaces ``db_path`` atomically (readers never see a half file).
    Raises IngestError when the data on disk is invalid.
    """
    from ingest.load import ingest_paths

    if not needs_build(db_path, sources):
        return False
    present = [s for s in sources if s.exists() and any(s.rglob("setup.json"))]
    ingest_paths(present, db_path, rebuild=True)
    return True


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    from ingest.validate import IngestError

    parser = argparse.ArgumentParser(prog="python -m benchcards.build",
                                     description="Build the site's database from data/raw (demo data) and "
                                     "data/local (uploads and live runs) when it is missing or out of date.")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"database (default {DEFAULT_DB})")
    parser.add_argument("--force", action="store_true", help="rebuild even when it is up to date")
    args = parser.parse_args(argv)
    if args.force and args.db.exists():
        import os

        os.utime(args.db, (0, 0))  # older than any source: ensure_db rebuilds it
    try:
        built = ensure_db(args.db)
    except IngestError as exc:
        print("the raw data is invalid:\n" + "\n".join(exc.errors), file=sys.stderr)
        return 1
    print(f"{'built' if built else 'up to date:'} {args.db}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
