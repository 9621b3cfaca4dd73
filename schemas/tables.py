"""The tables of the DuckDB file (DDL) and the version of that layout: defined here once.

The writer (``ingest.store``) creates these tables and stamps ``VERSION`` into ``meta``; the read side
(``benchcards.read.db``) refuses a file of another version. Both import this module (data flows one way:
``schemas`` -> ``ingest`` -> DuckDB -> ``benchcards``; ``benchcards`` never imports ``ingest``).
Change a table here and raise ``VERSION``: an older file then has to be rebuilt.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from typing import Any

#: version of the table layout; the write side stamps it, readers check it
VERSION = 5  # 3: reported_sources, reported_figures, reported_claims; 4: fit_steps and fit_headline: served_ctx,
#              slots, peak_source; 5: quality_tests.generator, generator_version

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
    run_order INTEGER, generator VARCHAR, generator_version VARCHAR
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
    peak_gib DOUBLE, result VARCHAR, finish_reason VARCHAR, error VARCHAR,
    served_ctx BIGINT, slots INTEGER, peak_source VARCHAR
);
CREATE TABLE fit_headline (
    setup_id VARCHAR, run_id VARCHAR, largest_ctx BIGINT, peak_gib DOUBLE, decode_tps DOUBLE,
    first_failed_ctx BIGINT, first_failed_error VARCHAR, run_order INTEGER,
    peak_source VARCHAR, served_ctx BIGINT, slots INTEGER
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

#: every table of ``DDL``, in the order it creates them
TABLES = tuple(re.findall(r"^CREATE TABLE (\w+)", DDL, flags=re.MULTILINE))

_TABLE_TEXT = re.compile(r"^CREATE TABLE (\w+) \((.*?)\);", flags=re.MULTILINE | re.DOTALL)


@cache
def column_types() -> dict[str, dict[str, str]]:
    """table -> column -> DuckDB type name, in ``DDL`` order, read from its text (no column type holds a comma;
    ``tests/test_tables.py`` checks this reading against DuckDB's own, from its ``information_schema``).

    >>> column_types()["sources"]
    {'root': 'VARCHAR', 'added_at': 'TIMESTAMP'}
    """
    out: dict[str, dict[str, str]] = {}
    for table, body in _TABLE_TEXT.findall(DDL):
        out[table] = {name.strip('"'): dtype for name, dtype, *_ in (column.split() for column in body.split(","))}
    return out


#: the ``meta`` key under which the writer records ``content_fingerprint`` of what it wrote
FINGERPRINT_KEY = "content_fingerprint"


def content_fingerprint(con: Any) -> str:
    """A digest of every row of every table but ``meta`` (order-independent: per table its row count and the
    sum of DuckDB's row hashes), with the layout version and the DuckDB version that hashed. Two databases
    with the same rows have the same fingerprint; DuckDB computes it in one scan (about 0.1 s of CPU at 1,000
    setups). ``con``: a DuckDB connection to the database (read-only is enough)."""
    import duckdb

    sql = " UNION ALL ".join(f"SELECT '{t}', count(*), coalesce(sum(hash(r)::HUGEINT), 0)::VARCHAR FROM {t} r"
                             for t in TABLES if t != "meta")
    rows = sorted(con.execute(sql).fetchall())
    text = f"{VERSION}|duckdb {duckdb.__version__}|" + ";".join(f"{t}:{n}:{h}" for t, n, h in rows)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
