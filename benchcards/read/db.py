"""The DuckDB file, read side: read-only connections, version check, dumps.

Concurrency design: DuckDB allows one writing process *or* many readers per file.
Readers (the app, the export, notebooks) open read-only connections. The only
writer is ``ingest`` (``ingest.store``): it never opens the live file read-write but
writes a copy and swaps it in with ``os.replace``, so a reader either sees the old
file or the new one. Nothing in ``benchcards`` writes a database.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import duckdb

from benchcards.domain.errors import BenchcardsError
from schemas import tables

#: version of the table layout (defined with the tables in ``schemas.tables``); the writer stamps it, readers check it
SCHEMA_VERSION = tables.VERSION


class DatabaseError(BenchcardsError, RuntimeError):
    """The database file is missing, unreadable or of another schema version."""


def no_database(path: Path) -> str:
    """What a command says when the database file ``path`` is missing, with how to make it."""
    return (f"no database at {path}: build it from the raw folders with `benchcards build`, or load "
            f"folders into it with `benchcards ingest PATH... --db {shlex.quote(str(path))}`")


def connect_ro(path: Path) -> duckdb.DuckDBPyConnection:
    """A new read-only connection. Raises DatabaseError when the file does not exist.

    In a process that also uses ``reading`` (the app, ingest), use ``reading``: DuckDB
    hands a new connection to a path the instance it already holds open, which after a
    swap is the old file. Keep it short-lived: a connection opened before a swap keeps
    reading the old file.
    """
    if not path.exists():
        raise DatabaseError(no_database(path))
    if not path.is_file():
        raise DatabaseError(f"{path} is not a file")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:  # corrupt file, not a DuckDB file, ...
        raise DatabaseError(f"cannot open {path}: {exc}") from exc
    quiet_progress(con)
    if _THREADS:
        con.execute(f"SET threads = {int(_THREADS)}")
    return con


#: threads of the DuckDB instances this process opens from now on (None: DuckDB's default, one per core)
_THREADS: int | None = None


def use_threads(n: int | None) -> None:
    """Open this process's later connections with ``n`` DuckDB threads (a worker process of a pool that already
    has one process per core: its small queries cost a fifth less CPU on one thread)."""
    global _THREADS
    _THREADS = n


def quiet_progress(con: duckdb.DuckDBPyConnection) -> None:
    """No progress bar from DuckDB on stdout (in Jupyter, where DuckDB refuses the setting without
    ipywidgets, it draws no text bar either)."""
    with contextlib.suppress(duckdb.Error):
        con.execute("SET enable_progress_bar = false")


def version(path: Path) -> tuple[int, int]:
    """Which version of the database file ``path`` is there: its inode and modification time, which every
    ingest changes (it swaps a new file in). Raises DatabaseError when there is no file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatabaseError(no_database(path)) from None
    return (st.st_ino, st.st_mtime_ns)


_CACHE: dict[str, tuple[tuple[int, int], duckdb.DuckDBPyConnection]] = {}
_CACHE_LOCK = threading.RLock()
_CACHE_SIZE = 4


@contextlib.contextmanager
def reading(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for one block of queries, reused while the file is unchanged.

    The process keeps one read-only connection per database file and serialises
    its use with a lock. When a writer has swapped the file (its inode or mtime
    changed), the old connection is closed before a new one is opened, so DuckDB's
    per-path instance cache can never hand back the old file.
    """
    key = str(path)
    stamp = version(path)
    with _CACHE_LOCK:
        entry = _CACHE.get(key)
        if entry is not None and entry[0] != stamp:
            entry[1].close()
            del _CACHE[key]
            entry = None
        if entry is None:
            while len(_CACHE) >= _CACHE_SIZE:
                _, (_, old) = _CACHE.popitem()
                old.close()
            entry = (stamp, connect_ro(path))
            _CACHE[key] = entry
        yield entry[1]


def forget(path: Path) -> None:
    """Close this process's cached reader of ``path`` (before deleting or replacing it by hand), and drop what
    ``per_version`` kept of it."""
    with _CACHE_LOCK:
        entry = _CACHE.pop(str(path), None)
        if entry is not None:
            entry[1].close()
        for key in [k for k in _MEMO if k[0] == str(path)]:
            del _MEMO[key]


T = TypeVar("T")
_MEMO: dict[tuple[str, str], tuple[tuple[int, int], object]] = {}
_MEMO_SIZE = 32


def per_version(path: Path, name: str, make: Callable[[], T]) -> T:
    """``make()``, computed once per version of the database file ``path`` and kept in this process.

    For what every page of one database shares, such as the list of setups or the reported figures: a
    version is the file's inode and modification time, which every ingest changes (it swaps in a new
    file), the way ``reading`` tells versions apart. The value is shared by every caller, so it must not
    be changed. Side effect: keeps up to 32 values in memory (the oldest is dropped first).
    """
    stamp, key = version(path), (str(path), name)
    with _CACHE_LOCK:
        hit = _MEMO.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]  # type: ignore[return-value]
    value = make()  # read with the stamp taken before: a swap meanwhile only makes the next call read again
    with _CACHE_LOCK:
        _MEMO.pop(key, None)
        while len(_MEMO) >= _MEMO_SIZE:
            del _MEMO[next(iter(_MEMO))]
        _MEMO[key] = (stamp, value)
    return value


def dump(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, sorted: used to prove a database did not change. The content fingerprint
    in ``meta`` is left out: it is a digest of the other rows, not data of its own."""
    out: dict[str, list[tuple]] = {}
    with reading(path) as con:
        names = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall()]
        for t in names:
            rows = con.execute(f'SELECT * FROM "{t}"').fetchall()
            if t == "meta":
                rows = [r for r in rows if r[0] != tables.FINGERPRINT_KEY]
            out[t] = sorted(rows, key=repr)
    return out


def check(path: Path) -> None:
    """Raise DatabaseError unless ``path`` is a readable benchcards database of this version."""
    with reading(path) as con:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except duckdb.Error as exc:
            raise DatabaseError(f"{path} is not a benchcards database ({exc.__class__.__name__})") from exc
    if row is None or row[0] != str(SCHEMA_VERSION):
        raise DatabaseError(f"{path} has schema version {row and row[0]}, expected {SCHEMA_VERSION}; rebuild it")


def fingerprint(path: Path) -> str:
    """The content fingerprint of the database (``schemas.tables.content_fingerprint``): the one the writer
    recorded in ``meta``, else (a file written before writers recorded it) computed from the rows now."""
    with reading(path) as con:
        row = con.execute("SELECT value FROM meta WHERE key = ?", [tables.FINGERPRINT_KEY]).fetchone()
        return str(row[0]) if row else tables.content_fingerprint(con)
