"""The write side of the DuckDB file: creating its tables (DDL in ``schemas.tables``) and atomic replacement.

Concurrency design: DuckDB allows one writing process *or* many readers per file.
Readers (the app, the export, notebooks; see ``benchcards.read.db``) open read-only
connections. A writer never opens the live file read-write: it copies it to a
temporary file in the same folder, writes there, checkpoints, and swaps it in with
``os.replace`` (atomic on POSIX). Readers that are mid-query keep the old inode;
the next connection sees the new file. A lock file serialises writers, so two
ingests can not both copy the same base and lose one another's work.

The writing connection has DuckDB's file access switched off: every row arrives
from Python (Arrow), never from a path handed to SQL.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb

from benchcards.read.db import DatabaseError, quiet_progress
from benchcards.read.locks import file_lock
from ingest import crash
from schemas.tables import DDL, FINGERPRINT_KEY, SETUP_TABLES, content_fingerprint
from schemas.tables import VERSION as SCHEMA_VERSION

__all__ = ["DDL", "SETUP_TABLES", "create_schema", "lock", "writing"]


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table in an empty database and stamp its schema version."""
    con.execute(DDL)
    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])


def _connect_rw(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-write connection to a private copy: no file access from SQL, no progress bar on stdout.

    Each full row group of a bulk insert is written out as soon as it is full (DuckDB's default holds five before
    writing them together): written while the ingest's workers still validate, not by the final commit, which
    then takes about a quarter less time (bench/ingest.py), and the file is no larger.
    """
    con = duckdb.connect(str(path), config={"enable_external_access": False, "write_buffer_row_group_count": 1})
    quiet_progress(con)
    return con


@contextlib.contextmanager
def lock(path: Path) -> Iterator[None]:
    """Hold the writers' lock of the database ``path`` (``<path>.lock``) for a block.

    Side effects: creates the lock file (and the folder) when missing; removes temporary
    copies that a killed writer left behind (only a lock holder writes them).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with file_lock(lock_path):
        for leftover in path.parent.glob(glob_escape(path.name) + ".*.tmp*"):
            with contextlib.suppress(OSError):
                leftover.unlink()
        yield


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped, for ``Path.glob`` patterns."""
    return "".join(f"[{c}]" if c in "*?[]" else c for c in name)


@contextlib.contextmanager
def writing(path: Path, fresh: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open a read-write copy of ``path`` (or a new database) and swap it in on success.

    With ``fresh=True`` the copy starts empty (a rebuild), still swapped in atomically.

    Side effects: takes ``<path>.lock`` for the whole block; on a clean exit the
    copy replaces ``path`` atomically; on an exception (or a killed process) the copy
    is deleted and ``path`` is left byte for byte as it was.
    Raises DatabaseError when ``path`` is not a benchcards database of this version.
    """
    with lock(path):
        fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        tmp.unlink()
        con = None
        try:
            if path.exists() and not fresh:
                if not path.is_file():
                    raise DatabaseError(f"{path} is not a file")
                shutil.copyfile(path, tmp)
                try:
                    con = _connect_rw(tmp)
                    version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                except duckdb.Error as exc:
                    raise DatabaseError(f"{path} is not a benchcards database ({exc.__class__.__name__}); "
                                        "rebuild it with `python -m ingest.build` or `python -m ingest PATH... "
                                        "--rebuild`") from None
                if version is None or version[0] != str(SCHEMA_VERSION):
                    raise DatabaseError(f"{path} has schema version {version and version[0]}, "
                                        f"expected {SCHEMA_VERSION}; rebuild it with `python -m ingest.build`")
            else:
                con = _connect_rw(tmp)
                create_schema(con)
            con.execute("BEGIN TRANSACTION")
            yield con
            # what the export compares to learn cheaply that nothing changed (benchcards.read.db.fingerprint)
            con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [FINGERPRINT_KEY, content_fingerprint(con)])
            con.execute("COMMIT")
            con.execute("CHECKPOINT")
            con.close()
            con = None
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            crash.point("store:before-swap")
            os.replace(tmp, path)
        finally:
            if con is not None:
                with contextlib.suppress(Exception):
                    con.close()
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
