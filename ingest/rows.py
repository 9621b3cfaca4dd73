"""From a validated setup folder to the rows of every table, as Arrow tables.

The records that were parsed and validated are the records that are stored: no
file is read a second time and no path is ever handed to DuckDB. Bulk records
(requests, quality items) go column by column from the pydantic models into Arrow
arrays typed after the DDL (``schemas.tables``); ``RECORD_COLUMNS`` says which model
field fills which column, and a test checks every such field's bounds against the
column type, so a value the schema admits always fits.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchcards.compute import summarize
from benchcards.domain import flags
from ingest.validate import Run, SetupFolder
from schemas.models import FitContract, QualityContract, QualityItem, ReportedContract, RequestRecord, SpeedContract
from schemas.tables import column_types

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

#: table -> [(column, model, dotted field path)]: columns filled straight from a model field
RECORD_COLUMNS: dict[str, list[tuple[str, type, str]]] = {
    "requests": [
        ("part", RequestRecord, "part"), ("prompt_id", RequestRecord, "prompt_id"),
        ("depth", RequestRecord, "depth"), ("concurrency", RequestRecord, "concurrency"),
        ("round", RequestRecord, "round"), ("warmup", RequestRecord, "warmup"),
        ("prompt_tokens", RequestRecord, "prompt_tokens"), ("output_tokens", RequestRecord, "output_tokens"),
        ("tokens_estimated", RequestRecord, "tokens_estimated"), ("t_send", RequestRecord, "t_send"),
        ("t_first", RequestRecord, "t_first"), ("t_last", RequestRecord, "t_last"),
        ("t_end", RequestRecord, "t_end"), ("finish_reason", RequestRecord, "finish_reason"),
        ("chars", RequestRecord, "chars"), ("words", RequestRecord, "words"),
        ("cache_n", RequestRecord, "timings.cache_n"), ("server_prompt_n", RequestRecord, "timings.prompt_n"),
        ("server_prompt_ms", RequestRecord, "timings.prompt_ms"),
        ("server_prefill_tps", RequestRecord, "timings.prompt_per_second"),
        ("server_predicted_n", RequestRecord, "timings.predicted_n"),
        ("server_predicted_ms", RequestRecord, "timings.predicted_ms"),
        ("server_decode_tps", RequestRecord, "timings.predicted_per_second"),
        ("error", RequestRecord, "error"),
    ],
    "quality_items": [
        ("item_id", QualityItem, "id"), ("right", QualityItem, "right"), ("cut_off", QualityItem, "cut_off"),
        ("tokens", QualityItem, "tokens"), ("seconds", QualityItem, "seconds"), ("task", QualityItem, "task"),
        ("error", QualityItem, "error"),
    ],
}

_ARROW = {"VARCHAR": pa.string(), "JSON": pa.string(), "INTEGER": pa.int32(), "BIGINT": pa.int64(),
          "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us")}


@cache
def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table, in DDL column order and types."""
    return pa.schema([(c, _ARROW[t]) for c, t in column_types()[table].items()])


def to_arrow(table: str, rows: list[tuple]) -> pa.Table:
    """Rows (tuples in DDL column order) as an Arrow table of that table's schema."""
    schema = arrow_schema(table)
    cols = list(zip(*rows)) if rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(cols, schema)], schema=schema)


def _in(value: int | None, bounds: tuple[int, int]) -> int | None:
    """``value`` when it fits the column, else None (settings parsed from a command line)."""
    return value if value is not None and bounds[0] <= value <= bounds[1] else None


@dataclass
class Prepared:
    """One validated setup folder, reduced to what the database needs (picklable: crosses processes)."""

    folder: Path
    setup_id: str
    content_sha256: str
    rows: dict[str, list[tuple]]  # small tables: rows in DDL column order (see ``to_arrow``)
    bulk: dict[str, list[Batch]]  # requests and quality_items: the validated JSON records (see ``bulk_table``)
    runs: list[tuple[str, str, Path]]  # (run_id, kind, contract path)
    n_requests: int
    n_items: int
    n_warnings: int
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # 'setup_id, run: message' of every warning


def _run_order(runs: list[Run]) -> dict[str, int]:
    """Order of the runs of a setup, oldest first (later runs win per metric)."""
    keyed = sorted(runs, key=lambda r: (r.contract.finished_at or r.contract.started_at or "", r.contract.run_id))
    return {r.contract.run_id: i for i, r in enumerate(keyed)}


_DICT = pa.dictionary(pa.int32(), pa.string())
#: columns of the bulk tables that repeat one value per run: dictionary-encoded (small in memory and in transit)
_CONSTANT = {"setup_id", "run_id", "test"}


def bulk_schema(table: str) -> pa.Schema:
    """Arrow schema of a bulk table (requests, quality_items): DDL types, repeated ids dictionary-encoded."""
    return pa.schema([(f.name, _DICT if f.name in _CONSTANT else f.type) for f in arrow_schema(table)])


@cache
def _record_schema(table: str) -> pa.Schema:
    """The shape of one record as parsed from JSON, typed after the columns it fills (nested objects as structs)."""
    types = arrow_schema(table)
    top: list[pa.Field] = []
    nested: dict[str, list[pa.Field]] = {}
    for column, _, path in RECORD_COLUMNS[table]:
        head, _, rest = path.partition(".")
        if rest:
            nested.setdefault(head, []).append(pa.field(rest, types.field(column).type))
        else:
            top.append(pa.field(head, types.field(column).type))
    return pa.schema(top + [pa.field(name, pa.struct(fields)) for name, fields in nested.items()])


def _default(model: type, path: str) -> Any:
    """The model's default of a field when it is a value (filled in where the JSON left the field out)."""
    head, _, rest = path.partition(".")
    if rest:
        return None  # nested objects here have no non-null defaults
    default = model.model_fields[head].default  # type: ignore[attr-defined]
    return default if isinstance(default, (bool, int, float, str)) else None


#: records of one run (or one test of a run) for a bulk table: (setup_id, run_id, test or None, JSON records)
Batch = tuple[str, str, str | None, list[dict]]


def _ids(values: list[str], lens: list[int]) -> pa.DictionaryArray:
    """One id per record, dictionary-encoded: ``values[i]`` repeated ``lens[i]`` times (repeated by numpy, not
    one Python int per record)."""
    codes = {v: i for i, v in enumerate(dict.fromkeys(values))}
    idx = np.repeat(np.fromiter((codes[v] for v in values), dtype=np.int32, count=len(values)), lens)
    return pa.DictionaryArray.from_arrays(pa.array(idx, type=pa.int32()), pa.array(list(codes), type=pa.string()))


def _seq(lens: list[int]) -> pa.Array:
    """0, 1, ..., ``lens[i]`` - 1 for each ``i`` in turn: each run's (or test's) record numbers."""
    counts = np.asarray(lens, dtype=np.int64)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return pa.array((np.arange(int(counts.sum()), dtype=np.int64) - starts).astype(np.int32), type=pa.int32())


def _records(table: str, documents: list[dict], fixed: dict[str, Any]) -> dict[str, Any]:
    """Columns of ``table`` from validated JSON records (Arrow does the conversion, not a Python loop)."""
    schema = _record_schema(table)
    # one pass over the records as structs (a key the schema does not name is left out, a missing one is null)
    records = pa.array(documents, type=pa.struct(list(schema)))
    if isinstance(records, pa.ChunkedArray):
        records = records.combine_chunks()
    src = dict(zip(schema.names, records.flatten()))
    cols: dict[str, Any] = dict(fixed)
    for column, model, path in RECORD_COLUMNS[table]:
        head, _, rest = path.partition(".")
        arr = src[head]
        if rest:
            arr = pc.struct_field(arr, rest)
        default = _default(model, path)
        if default is not None:
            arr = pc.fill_null(arr, default)
        cols[column] = arr
    return cols


def bulk_table(table: str, batches: list[Batch]) -> pa.Table:
    """One Arrow table of ``table`` (requests or quality_items) from the records of many runs at once: the
    validated JSON records go through one conversion; ``seq`` numbers each run's (or test's) records."""
    lens = [len(b[3]) for b in batches]
    fixed: dict[str, Any] = {
        "setup_id": _ids([b[0] for b in batches], lens), "run_id": _ids([b[1] for b in batches], lens),
        "seq": _seq(lens)}
    if table == "quality_items":
        fixed["test"] = _ids([b[2] or "" for b in batches], lens)
    cols = _records(table, list(chain.from_iterable(b[3] for b in batches)), fixed)
    if table == "requests":  # docs/definitions.md#ttft and #decode, per request
        t_send, t_first, t_last, out = cols["t_send"], cols["t_first"], cols["t_last"], cols["output_tokens"]
        cols["ttft_s"] = pc.if_else(pc.greater(t_first, t_send), pc.subtract(t_first, t_send), None)
        span = pc.subtract(t_last, t_first)
        tokens_after_first = pc.subtract(pc.cast(out, pa.float64()), 1.0)
        cols["decode_tps"] = pc.if_else(pc.and_(pc.greater(out, 1), pc.greater(span, 0.0)),
                                        pc.divide(tokens_after_first, span), None)
    schema = bulk_schema(table)
    return pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema)


def _reported_rows(add: Any, sid: str, c: ReportedContract) -> int:
    """The rows of a reported contract (docs/definitions.md#reported): its source, figures and claims, as
    written (no figure is computed); returns how many figures and claims it has."""
    rid, cite = c.run_id, c.citation
    add("reported_sources", (sid, rid, cite.title, cite.author, cite.url, cite.reference, cite.published_at,
                             cite.accessed_at, cite.relayed))
    for i, f in enumerate(c.figures):
        add("reported_figures", (sid, rid, i, f.metric, f.value, f.low, f.high, f.approx, f.as_written, f.depth,
                                 f.note))
    for i, k in enumerate(c.claims):
        add("reported_claims", (sid, rid, i, json.dumps(k.flags), k.from_value, k.to_value, k.metric,
                                k.change_pct, k.low_pct, k.high_pct, k.approx, k.as_written, k.note))
    return len(c.figures) + len(c.claims)


def row_of(table: str, values: dict[str, Any]) -> tuple:
    """A row of ``table`` from its values by column name, in DDL column order. KeyError names a column that
    is missing or one the table does not have: a row can not silently shift a value into the next column."""
    columns = column_types()[table]
    unknown = set(values) - set(columns)
    if unknown:
        raise KeyError(f"{table} has no column(s) {sorted(unknown)}")
    return tuple(values[c] for c in columns)


def setup_row(sf: SetupFolder, *, summary_only: bool, now: datetime) -> tuple:
    """The ``setups`` row of one folder, built by column name (``row_of``)."""
    s = sf.setup
    argv_settings = flags.settings(s.server.argv)
    gpus = s.hardware.gpus
    kv = [argv_settings.get("cache_type_k"), argv_settings.get("cache_type_v")]
    measured = sorted(s.measured_at)
    fa = argv_settings.get("flash_attn")
    return row_of("setups", {
        "setup_id": s.setup_id, "title": s.title, "synthetic": s.synthetic, "summary_only": summary_only,
        "provenance": s.provenance,
        "gpu": " + ".join(f"{g.count}x {g.name}" if g.count > 1 else g.name for g in gpus) or "CPU only",
        "gpu_count": sum(g.count for g in gpus), "vram_gib": sum(g.vram_gib * g.count for g in gpus) if gpus else None,
        "cpu": s.hardware.cpu, "ram_gib": s.hardware.ram_gib, "driver": s.hardware.driver, "os": s.hardware.os,
        "engine": s.engine.name, "engine_version": s.engine.version, "engine_build": s.engine.build_number,
        "engine_commit": s.engine.commit, "model": s.model.name, "model_repo": s.model.repo, "quant": s.model.quant,
        "model_bytes": s.model.file_bytes, "params_total_b": s.model.params_total_b,
        "params_active_b": s.model.params_active_b, "architecture": s.model.architecture,
        "ctx": _in(flags.as_int(argv_settings.get("ctx")), INT64),
        "slots": _in(flags.as_int(argv_settings.get("slots")), INT32),
        "kv_type": "/".join(dict.fromkeys(str(k) for k in kv if k)) or "f16",
        "flash_attn": None if fa is None else ("on" if fa is True else str(fa)),
        "n_cpu_moe": _in(flags.as_int(argv_settings.get("n_cpu_moe")), INT32), "thinking": s.thinking,
        "unified_memory": any(bool(g.unified_memory) for g in gpus), "measured_by": s.measured_by,
        "measured_first": measured[0] if measured else None, "measured_last": measured[-1] if measured else None,
        "folder": str(sf.folder), "content_sha256": sf.content_sha256, "ingested_at": now,
        "setup_json": s.model_dump_json(),
    })


@dataclass
class _Collected:
    """The rows of one setup as they are gathered, with the running counts ``Prepared`` reports."""

    sid: str
    rows: dict[str, list[tuple]] = field(default_factory=lambda: defaultdict(list))
    bulk: dict[str, list[Batch]] = field(default_factory=lambda: defaultdict(list))
    n_req: int = 0
    n_items: int = 0
    n_warn: int = 0
    warn_texts: list[str] = field(default_factory=list)

    def add(self, table: str, row: tuple) -> None:
        self.rows[table].append(row)

    def warn(self, run_id: str, w: summarize.Warn) -> None:
        self.n_warn += 1
        self.warn_texts.append(f"{self.sid}, run {run_id}: {w.message}")
        self.add("warnings", (self.sid, run_id, w.kind, w.message, w.stated, w.computed))


def rows_for(sf: SetupFolder, now: datetime) -> Prepared:
    """Every row of one setup, per table, as Arrow tables."""
    s = sf.setup
    sid = s.setup_id
    out = _Collected(sid)
    out.add("setups", setup_row(sf, summary_only=any(r.contract.summary_only for r in sf.runs), now=now))
    for f in [sf.setup_file, *sf.extra_files]:
        out.add("files", (sid, None, f.rel, "setup" if f is sf.setup_file else "attachment", f.sha256, f.size,
                          str(f.path)))
    order = _run_order(sf.runs)
    # an importer's placeholder ('vllm serve (command not given)', model) is no command to check
    placeholder = bool(s.server.argv) and s.server.argv[0].endswith("(command not given)")
    for problem in [] if placeholder else flags.problems(s.server.argv):
        out.n_warn += 1
        out.warn_texts.append(f"{sid}, server command: {problem}")
        out.add("warnings", (sid, None, "server_command", problem, None, None))
    for problem in flags.deviation_problems([d.what for d in s.deviations], s.server.argv):
        out.n_warn += 1
        out.warn_texts.append(f"{sid}, deviations: {problem}")
        out.add("warnings", (sid, None, "deviation_flag", problem, None, None))
    runs: list[tuple[str, str, Path]] = []
    for run in sf.runs:
        runs.append((run.contract.run_id, run.contract.kind, run.file.path))
        _run_rows(out, run, order[run.contract.run_id])
    return Prepared(folder=sf.folder, setup_id=sid, content_sha256=sf.content_sha256, rows=dict(out.rows),
                    bulk=dict(out.bulk), runs=runs,
                    n_requests=out.n_req, n_items=out.n_items, n_warnings=out.n_warn, skipped=sf.skipped,
                    warnings=out.warn_texts)


def _run_rows(out: _Collected, run: Run, ro: int) -> None:
    """The rows of one run: its files, the rows of its kind, and its row of ``runs``."""
    sid = out.sid
    c = run.contract
    rid = c.run_id
    out.add("files", (sid, rid, run.file.rel, "contract", run.file.sha256, run.file.size, str(run.file.path)))
    for f in run.attachments:
        out.add("files", (sid, rid, f.rel, "attachment", f.sha256, f.size, str(f.path)))
    method: str | None
    if isinstance(c, ReportedContract):
        n_records, method = _reported_rows(out.add, sid, c), None
    elif isinstance(c, SpeedContract):
        n_records, method = _speed_rows(out, run, c, ro)
    elif isinstance(c, QualityContract):
        n_records, method = _quality_rows(out, run, c, ro), None
    else:
        assert isinstance(c, FitContract)
        n_records, method = _fit_rows(out, c, ro)
    out.add("runs", (rid, sid, c.kind, c.summary_only, c.started_at, c.finished_at, c.tool, c.command,
                     c.engine_version, c.supplement_of, c.notes, c.source, run.file.rel, run.file.sha256,
                     method, n_records))


def _speed_rows(out: _Collected, run: Run, c: SpeedContract, ro: int) -> tuple[int, str]:
    """Parts, metrics, warnings and requests of a speed run: (number of records, method as JSON)."""
    sid, rid = out.sid, c.run_id
    for p in c.parts:
        out.add("parts", (sid, rid, p.part, p.status, p.reason, getattr(p, "repeat_run_id", None), "stated"))
    result = summarize.speed(c)
    prov = "summary" if c.summary_only else "raw"
    for m in result.metrics:
        out.add("metrics", (sid, rid, m.metric, m.prompt, m.level, m.value, m.n, prov, ro))
    for step, reason in result.failed_steps:
        out.add("parts", (sid, rid, step, "failed", reason, None, "computed"))
    for w in result.warnings:
        out.warn(rid, w)
    out.n_req += len(c.requests)
    if c.requests:
        out.bulk["requests"].append((sid, rid, None, run.document["requests"]))
    return len(c.requests) + len(c.bench) + len(c.server_log), c.method.model_dump_json(exclude_none=True)


def _quality_rows(out: _Collected, run: Run, c: QualityContract, ro: int) -> int:
    """Parts, tests, tasks, warnings and items of a quality run: the number of items."""
    sid, rid = out.sid, c.run_id
    n_records = 0
    for t, score, warns in summarize.quality(c):
        out.add("parts", (sid, rid, t.test, t.status, t.reason, None, "stated"))
        for w in warns:
            out.warn(rid, w)
        n_records += len(t.items)
        if score is None:
            continue
        out.add("quality_tests", (
            sid, rid, t.test, t.label or t.test, t.description, t.status, score.stopped or t.reason, score.n, score.right,
            score.cut_off, score.pct, score.margin_pp, score.lo_pct, score.hi_pct, t.token_limit,
            t.thinking, t.seed, t.in_flight, t.sampling.model_dump_json(exclude_none=True) if t.sampling
            else None, score.median_tokens, score.median_seconds, score.asked_again, score.from_items, ro,
            t.generator, t.generator_version,
        ))
        for task, n, right in score.by_task:
            out.add("quality_tasks", (sid, rid, t.test, task, n, right))
    out.bulk["quality_items"].extend((sid, rid, t.test, doc["items"])
                                     for t, doc in zip(c.tests, run.document["tests"]) if t.items)
    out.n_items += n_records
    return n_records


def _fit_rows(out: _Collected, c: FitContract, ro: int) -> tuple[int, str]:
    """Steps, headline, warnings and per-step metrics of a fit run: (number of steps, method as JSON)."""
    sid, rid = out.sid, c.run_id
    head, filled, warns = summarize.fit(c)
    for w in warns:
        out.warn(rid, w)
    for fs, pct in zip(c.steps, filled):
        out.add("fit_steps", (sid, rid, fs.ctx, fs.prompt_tokens, pct if pct is not None else fs.filled_pct,
                              fs.ttft_s, fs.prefill_tps, fs.decode_tps, fs.answer_tokens, fs.peak_gib,
                              fs.result, fs.finish_reason, fs.error, fs.served_ctx, fs.slots, fs.peak_source))
    out.add("fit_headline", (sid, rid, head.largest_ctx, head.peak_gib, head.decode_tps,
                             head.first_failed_ctx, head.first_failed_error, ro, head.peak_source,
                             head.served_ctx, head.slots))
    for fs in c.steps:  # per-step figures that have no column: rows of the metric registry
        if fs.server_start_s is not None:
            out.add("metrics", (sid, rid, "fit_server_start", None, fs.ctx, fs.server_start_s, 1,
                                "summary" if c.summary_only else "raw", ro))
    method = json.dumps({"fill_target_pct": c.fill_target_pct,
                         **({"peak_memory_method": c.peak_memory_method} if c.peak_memory_method else {}),
                         **({"restarted_per_size": c.restarted_per_size}
                            if c.restarted_per_size is not None else {}),
                         **({"server_template": c.server_template} if c.server_template else {}),
                         **({"added_by_benchcards": c.added_by_benchcards} if c.added_by_benchcards
                            else {})})
    return len(c.steps), method
