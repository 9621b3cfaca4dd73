"""Build the demo database from the raw folders shipped in ``data/raw``."""

from __future__ import annotations

from pathlib import Path

from benchcards.paths import DEFAULT_DB, RAW


def newest_mtime(folder: Path) -> float:
    """Newest modification time of any file under ``folder`` (0 when empty)."""
    return max((p.stat().st_mtime for p in folder.rglob("*") if p.is_file()), default=0.0)


def needs_build(db_path: Path = DEFAULT_DB, raw: Path = RAW) -> bool:
    """True when the database is missing or older than the raw data."""
    return not db_path.exists() or db_path.stat().st_mtime < newest_mtime(raw)


def ensure_demo_db(db_path: Path = DEFAULT_DB, raw: Path = RAW) -> bool:
    """Rebuild ``db_path`` from ``raw`` when needed; returns True when it built.

    Side effects: replaces ``db_path`` atomically (readers never see a half file).
    Raises IngestError when the shipped data is invalid.
    """
    from ingest.load import ingest_paths

    if not needs_build(db_path, raw):
        return False
    ingest_paths([raw], db_path, rebuild=True)
    return True
