"""Paths anchored on the repository, never on the working directory."""

from __future__ import annotations

import os
from pathlib import Path

ROOT: Path = Path(__file__).resolve().parent.parent.parent
DATA: Path = ROOT / "data"
RAW: Path = DATA / "raw"
#: the checkout's own database file, the default when $BENCHCARDS_DB is not set
REPO_DB: Path = DATA / "benchcards.duckdb"
#: the database every command (each --db default, --ingest) and the app use: $BENCHCARDS_DB overrides it
DEFAULT_DB: Path = Path(os.environ.get("BENCHCARDS_DB") or REPO_DB)
SCHEMAS: Path = ROOT / "schemas"
ARTIFACTS: Path = ROOT / "test-artifacts"
#: what is slow to make and the same every time (the export's Vega bundle), kept between runs
CACHE: Path = ROOT / ".cache"
#: the checkout's own folder of setups added on this machine, the default when $BENCHCARDS_LOCAL is not set
REPO_LOCAL: Path = DATA / "local"
#: setups added on this machine (uploads and live runs); $BENCHCARDS_LOCAL overrides it
LOCAL: Path = Path(os.environ.get("BENCHCARDS_LOCAL") or REPO_LOCAL)
SOURCES: tuple[Path, ...] = (RAW, LOCAL)


def default_db() -> Path:
    """The database as the environment says now: $BENCHCARDS_DB, else data/benchcards.duckdb (``DEFAULT_DB`` is
    this as the process started)."""
    return Path(os.environ.get("BENCHCARDS_DB") or REPO_DB)


def default_sources(local: Path | None = None) -> tuple[Path, ...]:
    """The folders every site build reads: data/raw and the local folder (``LOCAL`` as it is now)."""
    return (RAW, local if local is not None else LOCAL)


def shown(path: Path) -> str:
    """``path`` as help text shows it: relative to the checkout when inside it, so that ``--help`` (and
    the README's CLI reference made from it) reads the same in every clone.

    >>> shown(ROOT / "data" / "local")
    'data/local'
    >>> shown(Path("/elsewhere/x.duckdb"))
    '/elsewhere/x.duckdb'
    """
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def staging_for(local: Path) -> Path:
    """Where uploads are unpacked and checked before they move into ``local``: a hidden sibling of it,
    so no build ever scans it (and a rename into ``local`` stays on one file system)."""
    return local.parent / f".{local.name}-staging"
