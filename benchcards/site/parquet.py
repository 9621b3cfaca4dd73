"""The export's data as Parquet tables: what ``index.json`` says, in four flat tables that DuckDB, pandas and
polars read directly (``duckdb -c "SELECT * FROM 'parquet/setups.parquet'"``, ``pandas.read_parquet``).

- ``parquet/setups.parquet``: one row per setup (the overview's row: names, hardware, engine, model, the
  headline figures);
- ``parquet/figures.parquet``: every figure of every setup in long form (setup, metric, prompt, level, value,
  unit, runs, source), the values in the metric registry's units, as in ``index.json``;
- ``parquet/quality.parquet``: every quality result (setup, test, percentage, Wilson 95 % margin and interval,
  right, items, cut off);
- ``parquet/reported.parquet``: the figures someone else posted, as in ``index.json``'s ``reported``.

The columns, their types and units are declared once (``TABLES``); docs/definitions.md#parquet lists them.
The rows come from the very list of setups ``index.json`` is written from (``urls.index_setups``), so the two
cannot say different things. DuckDB writes the files (``COPY … TO … (FORMAT parquet)``) from Arrow tables of
exact types, on one thread, in a fixed row order, with fixed compression and row-group size: the same data
gives byte-identical files, so a re-export with nothing changed leaves them untouched (``writer.Writer``).
Text from the data travels as Arrow values, never as SQL.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from benchcards.domain import fmt, metrics

__all__ = ["TABLES", "Column", "Table", "parquet_files", "row_counts", "table_columns"]


@dataclass(frozen=True)
class Column:
    """One column of a Parquet table: name, DuckDB type, unit ('' when none) and what it holds."""

    name: str
    type: str
    unit: str
    about: str


@dataclass(frozen=True)
class Table:
    """One Parquet file of the export: its path in the site, what a row is, and its columns. Rows are ordered by
    ``setup_id``, then as ``index.json`` lists them."""

    path: str
    row: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


def _c(name: str, type_: str, unit: str, about: str) -> Column:
    return Column(name, type_, unit, about)


SETUPS = Table("parquet/setups.parquet", "one setup (the overview's row)", (
    _c("setup_id", "VARCHAR", "", "the setup's id (its card is setups/<setup_id>.html)"),
    _c("url", "VARCHAR", "", "address of the setup's card (absolute with --base-url)"),
    _c("title", "VARCHAR", "", "the setup's title as its setup.json gives it"),
    _c("name", "VARCHAR", "", "short name: model · quant · engine build (and what tells it from its siblings)"),
    _c("tier", "VARCHAR", "", "hardware tier by GPU memory ('16 GB', 'unified memory', 'CPU only')"),
    _c("tier_url", "VARCHAR", "", "address of the tier's page"),
    _c("model_url", "VARCHAR", "", "address of the model's page"),
    _c("gpu", "VARCHAR", "", "GPU model"),
    _c("gpu_count", "INTEGER", "GPUs", "number of GPUs"),
    _c("vram_gib", "DOUBLE", "GiB", "GPU memory in total"),
    _c("unified_memory", "BOOLEAN", "", "the GPU shares the system memory"),
    _c("engine", "VARCHAR", "", "inference engine ('llama.cpp')"),
    _c("engine_version", "VARCHAR", "", "engine version or build"),
    _c("model", "VARCHAR", "", "model name"),
    _c("quant", "VARCHAR", "", "quantisation"),
    _c("model_bytes", "BIGINT", "bytes", "size of the model file(s)"),
    _c("params_total_b", "DOUBLE", "billions", "parameters in total"),
    _c("thinking", "BOOLEAN", "", "thinking (reasoning) mode on"),
    _c("data", "VARCHAR", "", "kind of data: verified raw, summary only, reported, method test, synthetic"),
    _c("measured", "VARCHAR", "", "date of the latest run (as recorded, ISO 8601)"),
    _c("decode_tps", "DOUBLE", "tok/s", "headline decode: generation speed, first token excluded"),
    _c("prefill_8k_tps", "DOUBLE", "tok/s", "prefill at an 8,192-token prompt"),
    _c("ttft_2k_s", "DOUBLE", "s", "time to first token at a 2,048-token prompt"),
    _c("fit_largest_ctx", "BIGINT", "tokens", "largest context the memory test answered at"),
    _c("fit_peak_gib", "DOUBLE", "GiB", "peak memory at that context"),
    _c("warnings", "INTEGER", "warnings", "number of warnings the card lists"),
))

FIGURES = Table("parquet/figures.parquet", "one figure of one setup (index.json's figures)", (
    _c("setup_id", "VARCHAR", "", "the setup (setups.parquet)"),
    _c("metric", "VARCHAR", "", "metric key of the registry (index.json's units name each one's label and unit)"),
    _c("prompt", "VARCHAR", "", "named prompt or test the figure is of (empty for the plain figure)"),
    _c("level", "BIGINT", "tokens or requests", "prompt depth (tokens) or requests at once the figure was measured at"),
    _c("value", "DOUBLE", "the unit column", "the figure, unrounded, in the registry's unit"),
    _c("unit", "VARCHAR", "", "unit of value (from the metric registry)"),
    _c("runs", "INTEGER", "runs", "runs or requests the figure is made of"),
    _c("source", "VARCHAR", "", "'raw records' (computed here) or 'published summary' (figures as stated)"),
))

QUALITY = Table("parquet/quality.parquet", "one quality test of one setup (index.json's quality)", (
    _c("setup_id", "VARCHAR", "", "the setup (setups.parquet)"),
    _c("test", "VARCHAR", "", "test key"),
    _c("label", "VARCHAR", "", "test name as the site shows it"),
    _c("pct", "DOUBLE", "%", "share of items answered right"),
    _c("margin_pp", "DOUBLE", "percentage points", "Wilson score 95 % margin (half the interval's width)"),
    _c("lo_pct", "DOUBLE", "%", "lower end of the Wilson score 95 % interval"),
    _c("hi_pct", "DOUBLE", "%", "upper end of the Wilson score 95 % interval"),
    _c("right", "INTEGER", "items", "items answered right"),
    _c("n", "INTEGER", "items", "items asked"),
    _c("cut_off", "INTEGER", "items", "answers cut off at the token limit (counted wrong)"),
))

REPORTED = Table("parquet/reported.parquet", "one figure someone else posted (index.json's reported)", (
    _c("setup_id", "VARCHAR", "", "the reported setup (setups.parquet)"),
    _c("metric", "VARCHAR", "", "metric key"),
    _c("value", "DOUBLE", "the unit column", "the figure as posted (empty when only a range was)"),
    _c("low", "DOUBLE", "the unit column", "low end of a posted range"),
    _c("high", "DOUBLE", "the unit column", "high end of a posted range"),
    _c("approx", "BOOLEAN", "", "posted as approximate ('~')"),
    _c("as_written", "VARCHAR", "", "the figure as written in the source"),
    _c("unit", "VARCHAR", "", "unit of value, low and high"),
    _c("depth", "BIGINT", "tokens", "prompt depth the figure is of"),
    _c("note", "VARCHAR", "", "note"),
    _c("source_title", "VARCHAR", "", "title of the source"),
    _c("source_author", "VARCHAR", "", "author of the source"),
    _c("source_url", "VARCHAR", "", "address of the source"),
    _c("source_reference", "VARCHAR", "", "reference of a source without an address"),
    _c("source_published", "VARCHAR", "", "date the source was published"),
))

#: every Parquet table of the export, in the order the downloads list them
TABLES: tuple[Table, ...] = (SETUPS, FIGURES, QUALITY, REPORTED)

#: how the files are written: fixed, so that the same rows give the same bytes
COPY_OPTIONS = "FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880"

_ARROW = {"VARCHAR": pa.string(), "DOUBLE": pa.float64(), "BIGINT": pa.int64(), "INTEGER": pa.int32(),
          "BOOLEAN": pa.bool_()}


# --------------------------------------------------------------------------- rows


def _float(v: Any) -> float | None:
    return None if v is None or fmt.missing(v) else float(v)


def _headlines(ov: pd.DataFrame) -> dict[str, tuple[float | None, float | None, float | None]]:
    """Per setup the overview's headline figures (decode, prefill at 8K, first token at 2K), in the registry's
    units (as every figure of ``index.json``)."""
    scale = [metrics.REGISTRY[k].scale for k in ("decode", "prefill", "ttft")]
    out: dict[str, tuple[float | None, float | None, float | None]] = {}
    for sid, *values in zip(ov.setup_id, ov.decode_tps, ov.prefill_8k_tps, ov.ttft_2k_s):
        d, p, t = (None if (x := _float(v)) is None else x * k for v, k in zip(values, scale))
        out[str(sid)] = (d, p, t)
    return out


def table_columns(setups: list[dict[str, Any]], ov: pd.DataFrame) -> dict[str, dict[str, list[Any]]]:
    """Every table's columns (path -> column -> values) from ``urls.index_setups``'s list (what ``index.json``
    holds: plain values, a missing one None) and the overview ``ov`` it was made from (the headline figures)."""
    heads = _headlines(ov)
    none = (None, None, None)
    head = {c: i for i, c in enumerate(("decode_tps", "prefill_8k_tps", "ttft_2k_s"))}
    st: dict[str, list[Any]] = {c: [s.get(c) for s in setups] if c not in head else
                                [heads.get(s["setup_id"], none)[head[c]] for s in setups] for c in SETUPS.names}
    out = {SETUPS.path: st}
    for table, key, renamed in ((FIGURES, "figures", {"source": "from"}), (QUALITY, "quality", {}),
                                (REPORTED, "reported", {})):
        rows = [(s["setup_id"], r) for s in setups for r in s[key]]
        cols: dict[str, list[Any]] = {"setup_id": [sid for sid, _ in rows]}
        for c in table.names[1:]:
            if c.startswith("source_"):
                cols[c] = [r["source"][c[len("source_"):]] for _, r in rows]
            else:
                k = renamed.get(c, c)
                cols[c] = [r[k] for _, r in rows]
        out[table.path] = cols
    return out


def _arrow(table: Table, columns: dict[str, list[Any]]) -> pa.Table:
    """``columns`` as an Arrow table of the declared types, with ``_ordinal`` (each row's position)."""
    arrays = {c.name: pa.array(columns[c.name], type=_ARROW[c.type], from_pandas=True) for c in table.columns}
    arrays["_ordinal"] = pa.array(range(len(columns[table.columns[0].name])), type=pa.int64())
    return pa.table(arrays)


# --------------------------------------------------------------------------- files


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def parquet_files(setups: list[dict[str, Any]], ov: pd.DataFrame) -> dict[str, bytes]:
    """The content of every Parquet table (path -> bytes), written by DuckDB on one in-memory connection with
    one thread (one thread: the row groups, and so the bytes, do not depend on the machine). Side effect: uses
    a temporary folder, removed again."""
    columns = table_columns(setups, ov)
    out: dict[str, bytes] = {}
    con = duckdb.connect(":memory:", config={"threads": 1, "preserve_insertion_order": True})
    try:
        with tempfile.TemporaryDirectory(prefix="benchcards-parquet-") as tmp:
            for i, table in enumerate(TABLES):
                view = f"t{i}"
                con.register(view, _arrow(table, columns[table.path]))
                target = Path(tmp) / f"{i}.parquet"
                cols = ", ".join(f'"{c.name}"' for c in table.columns)
                con.execute(f"COPY (SELECT {cols} FROM {view} ORDER BY setup_id, _ordinal) "
                            f"TO {_sql_text(str(target))} ({COPY_OPTIONS})")
                con.unregister(view)
                out[table.path] = target.read_bytes()
    finally:
        con.close()
    return out


def row_counts(setups: list[dict[str, Any]]) -> dict[str, int]:
    """Rows of every table (by path) for ``setups`` (``urls.index_setups``'s list)."""
    return {SETUPS.path: len(setups), FIGURES.path: sum(len(s["figures"]) for s in setups),
            QUALITY.path: sum(len(s["quality"]) for s in setups),
            REPORTED.path: sum(len(s["reported"]) for s in setups)}
