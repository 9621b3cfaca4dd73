"""Paths anchored on the repository, never on the working directory."""

from __future__ import annotations

from pathlib import Path

ROOT: Path = Path(__file__).resolve().parent.parent
DATA: Path = ROOT / "data"
RAW: Path = DATA / "raw"
DEFAULT_DB: Path = DATA / "benchcards.duckdb"
SCHEMAS: Path = ROOT / "schemas"
ARTIFACTS: Path = ROOT / "test-artifacts"


def blob_dir(db_path: Path) -> Path:
    """Folder that holds the raw attachments of the database at ``db_path``.

    Attachments are stored content-addressed (``<sha256>``), so writing one never
    changes what an older database file refers to.
    """
    return db_path.parent / (db_path.name + ".blobs")
