"""The DuckDB file: its tables, read-only access, and atomic replacement on write.

Concurrency design: DuckDB allows one writing process *or* many readers per file.
Readers (the app, the export, notebooks) open short-lived read-only connections.
A writer never opens the live file read-write: it copies it to a temporary file in
the same folder, writes there, checkpoints, and swaps it in with ``os.replace``
(atomic on POSIX). Readers that are mid-query keep the old inode; the next
connection sees the new file. A lock file serialises writers, so two ingests can
not both copy the same base and lose one another's work.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb

SCHEMA_VERSION = 1

DDL = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE setups (
    setup_id VARCHAR PRIMARY KEY, title VARCHAR, synthetic BOOLEAN, summary_only BOOLEAN,
    provenance VARCHAR, gpu VARCHAR, gpu_count INTEGER, vram_gib DOUBLE, cpu VARCHAR,
    ram_gib DOUBLE, driver VARCHAR, os VARCHAR, engine VARCHAR, engine_version VARCHAR,
    engine_build INTEGER, engine_commit VARCHAR, model VARCHAR, model_repo VARCHAR,
    quant VARCHAR, model_bytes BIGINT, params_total_b DOUBLE, params_active_b DOUBLE,
    architecture VARCHAR, ctx BIGINT, slots INTEGER, kv_type VARCHAR, flash_attn VARCHAR,
    n_cpu_moe INTEGER, thinking BOOLEAN, unified_memory BOOLEAN, measured_by VARCHAR, measured_first VARCHAR,
    measured_last VARCHAR, folder VARCHAR, content_sha256 VARCHAR, ingested_at TIMESTAMP,
    setup_json JSON
);
CREATE TABLE runs (
    run_id VARCHAR PRIMARY KEY, setup_id VARCHAR, kind VARCHAR, summary_only BOOLEAN,
    started_at VARCHAR, finished_at VARCHAR, tool VARCHAR, command VARCHAR,
    engine_version VARCHAR, supplement_of VARCHAR, notes VARCHAR, source VARCHAR,
    contract_path VARCHAR, contract_sha256 VARCHAR, method_json JSON, n_records INTEGER
);
CREATE TABLE parts (
    setup_id VARCHAR, run_id VARCHAR, part VARCHAR, status VARCHAR, reason VARCHAR,
    repeat_run_id VARCHAR, origin VARCHAR
);
CREATE TABLE requests (
    setup_id VARCHAR, run_id VARCHAR, seq INTEGER, part VARCHAR, prompt_id VARCHAR,
    depth INTEGER, concurrency INTEGER, round INTEGER, warmup BOOLEAN,
    prompt_tokens INTEGER, output_tokens INTEGER, tokens_estimated BOOLEAN,
    t_send DOUBLE, t_first DOUBLE, t_last DOUBLE, t_end DOUBLE, finish_reason VARCHAR,
    chars INTEGER, words INTEGER, cache_n INTEGER, server_prompt_n INTEGER,
    server_prompt_ms DOUBLE, server_prefill_tps DOUBLE, server_predicted_n INTEGER,
    server_predicted_ms DOUBLE, server_decode_tps DOUBLE, error VARCHAR,
    ttft_s DOUBLE, decode_tps DOUBLE
);
CREATE TABLE metrics (
    setup_id VARCHAR, run_id VARCHAR, metric VARCHAR, prompt VARCHAR, level BIGINT,
    value DOUBLE, n INTEGER, provenance VARCHAR, run_order INTEGER
);
CREATE TABLE quality_tests (
    setup_id VARCHAR, run_id VARCHAR, test VARCHAR, label VARCHAR, description VARCHAR,
    status VARCHAR, reason VARCHAR, n INTEGER, "right" INTEGER, cut_off INTEGER,
    pct DOUBLE, margin_pp DOUBLE, lo_pct DOUBLE, hi_pct DOUBLE, token_limit INTEGER,
    thinking BOOLEAN, seed BIGINT, in_flight INTEGER, sampling_json JSON,
    median_tokens DOUBLE, median_seconds DOUBLE, asked_again INTEGER, from_items BOOLEAN,
    run_order INTEGER
);
CREATE TABLE quality_tasks (
    setup_id VARCHAR, run_id VARCHAR, test VARCHAR, task VARCHAR, n INTEGER, "right" INTEGER
);
CREATE TABLE quality_items (
    setup_id VARCHAR, run_id VARCHAR, test VARCHAR, seq INTEGER, item_id VARCHAR,
    "right" BOOLEAN, cut_off BOOLEAN, tokens INTEGER, seconds DOUBLE, task VARCHAR, error VARCHAR
);
CREATE TABLE fit_steps (
    setup_id VARCHAR, run_id VARCHAR, ctx BIGINT, prompt_tokens BIGINT, filled_pct DOUBLE,
    ttft_s DOUBLE, prefill_tps DOUBLE, decode_tps DOUBLE, answer_tokens INTEGER,
    peak_gib DOUBLE, result VARCHAR, finish_reason VARCHAR, error VARCHAR
);
CREATE TABLE fit_headline (
    setup_id VARCHAR, run_id VARCHAR, largest_ctx BIGINT, peak_gib DOUBLE, decode_tps DOUBLE,
    first_failed_ctx BIGINT, first_failed_error VARCHAR, run_order INTEGER
);
CREATE TABLE files (
    setup_id VARCHAR, run_id VARCHAR, path VARCHAR, role VARCHAR, sha256 VARCHAR, bytes BIGINT,
    source VARCHAR
);
CREATE TABLE warnings (
    setup_id VARCHAR, run_id VARCHAR, kind VARCHAR, message VARCHAR, stated DOUBLE, computed DOUBLE
);
"""

#: tables that hold rows of a setup (all have a ``setup_id`` column)
SETUP_TABLES = ("setups", "runs", "parts", "requests", "metrics", "quality_tests", "quality_tasks",
                "quality_items", "fit_steps", "fit_headline", "files", "warnings")


class DatabaseError(RuntimeError):
    """The database file is missing, unreadable or of another schema version."""


def connect_ro(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection. Raises DatabaseError when the file does not exist.

    Keep it short-lived: a writer swaps the file, and a connection opened before the
    swap keeps reading the old one.
    """
    if not path.exists():
        raise DatabaseError(f"no database at {path}")
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:  # corrupt file, not a DuckDB file, ...
        raise DatabaseError(f"cannot open {path}: {exc}") from exc


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
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatabaseError(f"no database at {path}") from None
    stamp = (st.st_ino, st.st_mtime_ns)
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
    """Close this process's cached reader of ``path`` (before deleting or replacing it by hand)."""
    with _CACHE_LOCK:
        entry = _CACHE.pop(str(path), None)
        if entry is not None:
            entry[1].close()


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table in an empty database."""
    con.execute(DDL)
    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])


@contextlib.contextmanager
def writing(path: Path, fresh: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open a read-write copy of ``path`` (or a new database) and swap it in on success.

    With ``fresh=True`` the copy starts empty (a rebuild), still swapped in atomically.

    Side effects: takes ``<path>.lock`` for the whole block; on a clean exit the
    copy replaces ``path`` atomically; on an exception the copy is deleted and
    ``path`` is left byte for byte as it was.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        tmp.unlink()
        con = None
        try:
            if path.exists() and not fresh:
                shutil.copyfile(path, tmp)
                con = duckdb.connect(str(tmp))
                version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                if version is None or version[0] != str(SCHEMA_VERSION):
                    raise DatabaseError(f"{path} has schema version {version and version[0]}, "
                                        f"expected {SCHEMA_VERSION}; rebuild it")
            else:
                con = duckdb.connect(str(tmp))
                create_schema(con)
            con.execute("BEGIN TRANSACTION")
            yield con
            con.execute("COMMIT")
            con.execute("CHECKPOINT")
            con.close()
            con = None
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            if con is not None:
                with contextlib.suppress(Exception):
                    con.close()
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()


def dump(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table, sorted: used to prove a database did not change."""
    out: dict[str, list[tuple]] = {}
    with reading(path) as con:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables ORDER BY table_name").fetchall()]
        for t in tables:
            rows = con.execute(f'SELECT * FROM "{t}"').fetchall()
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
