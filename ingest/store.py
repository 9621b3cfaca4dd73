"""The write side of the DuckDB file: its tables (DDL) and atomic replacement.

Concurrency design: DuckDB allows one writing process *or* many readers per file.
Readers (the app, the export, notebooks; see ``benchcards.db``) open read-only
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

from benchcards.db import SCHEMA_VERSION, DatabaseError, quiet_progress
from benchcards.locks import file_lock
from ingest import crash

DDL = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE sources (root VARCHAR PRIMARY KEY, added_at TIMESTAMP);
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
CREATE TABLE reported_sources (
    setup_id VARCHAR, run_id VARCHAR, title VARCHAR, author VARCHAR, url VARCHAR, reference VARCHAR,
    published_at VARCHAR, accessed_at VARCHAR, relayed BOOLEAN
);
CREATE TABLE reported_figures (
    setup_id VARCHAR, run_id VARCHAR, seq INTEGER, metric VARCHAR, value DOUBLE, lo DOUBLE, hi DOUBLE,
    approx BOOLEAN, as_written VARCHAR, depth BIGINT, note VARCHAR
);
CREATE TABLE reported_claims (
    setup_id VARCHAR, run_id VARCHAR, seq INTEGER, flags JSON, from_value VARCHAR, to_value VARCHAR,
    metric VARCHAR, change_pct DOUBLE, lo_pct DOUBLE, hi_pct DOUBLE, approx BOOLEAN, as_written VARCHAR,
    note VARCHAR
);
"""

#: tables that hold rows of a setup (all have a ``setup_id`` column)
SETUP_TABLES = ("setups", "runs", "parts", "requests", "metrics", "quality_tests", "quality_tasks",
                "quality_items", "fit_steps", "fit_headline", "files", "warnings", "reported_sources",
                "reported_figures", "reported_claims")


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table in an empty database and stamp its schema version."""
    con.execute(DDL)
    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])


def _connect_rw(path: Path) -> duckdb.DuckDBPyConnection:
    """A read-write connection to a private copy: no file access from SQL, no progress bar on stdout."""
    con = duckdb.connect(str(path), config={"enable_external_access": False})
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
