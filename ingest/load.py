"""Load validated setup folders into the DuckDB file, all or nothing.

``ingest_paths`` is the whole pipeline:

1. find the setup folders;
2. per folder (in worker processes when there are many): read, validate
   (JSON Schema, then pydantic, then cross-field rules) and compute every figure;
   only small rows travel back;
3. if anything is invalid, raise IngestError listing every problem;
4. otherwise write one new database file: the small rows from Python, the bulk
   per-request and per-item records by DuckDB's own JSON reader straight from the
   validated files (checked unchanged afterwards), and swap it in atomically.

Raw files stay where they are; the database keeps their path, size and SHA-256.
"""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing import get_context
from pathlib import Path

import duckdb
import pyarrow as pa

from benchcards import db, flags, summarize
from ingest.validate import IngestError, SetupFolder, find_setup_folders, read_setup_folder
from schemas.models import FitContract, QualityContract, SpeedContract

#: below this many folders, validation runs in this process (no worker start-up cost)
PARALLEL_MIN = 24


@dataclass
class Report:
    """What an ingest did."""

    new: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    runs: int = 0
    requests: int = 0
    items: int = 0
    warnings: int = 0

    def text(self) -> str:
        return (f"{len(self.new)} new, {len(self.replaced)} replaced, {len(self.unchanged)} unchanged setup(s); "
                f"{self.runs} run(s), {self.requests} request record(s), {self.items} quality item(s), "
                f"{self.warnings} warning(s)")


@dataclass
class Prepared:
    """One validated setup folder, reduced to what the database needs."""

    folder: Path
    setup_id: str
    content_sha256: str
    rows: dict[str, list[tuple]]
    runs: list[tuple[str, str, Path]]  # (run_id, kind, contract path)
    stamps: dict[Path, tuple[int, int]]  # contract path -> (size, mtime_ns) when validated
    n_requests: int
    n_items: int
    n_warnings: int


def _run_order(runs: list) -> dict[str, int]:
    """Order of the runs of a setup, oldest first (later runs win per metric)."""
    keyed = sorted(runs, key=lambda r: (r.contract.finished_at or r.contract.started_at or "", r.contract.run_id))
    return {r.contract.run_id: i for i, r in enumerate(keyed)}


def rows_for(sf: SetupFolder, now: datetime) -> Prepared:
    """Every small row of one setup (all tables but requests and quality_items)."""
    rows: dict[str, list[tuple]] = defaultdict(list)
    add = lambda table, row: rows[table].append(row)
    s = sf.setup
    sid = s.setup_id
    argv_settings = flags.settings(s.server.argv)
    gpus = s.hardware.gpus
    gpu_label = " + ".join(f"{g.count}x {g.name}" if g.count > 1 else g.name for g in gpus) or "CPU only"
    vram = sum(g.vram_gib * g.count for g in gpus) if gpus else None
    kv = [argv_settings.get("cache_type_k"), argv_settings.get("cache_type_v")]
    kv_type = "/".join(dict.fromkeys(str(k) for k in kv if k)) or "f16"
    summary_only = any(r.contract.summary_only for r in sf.runs)
    measured = sorted(s.measured_at)
    fa = argv_settings.get("flash_attn")
    add("setups", (
        sid, s.title, s.synthetic, summary_only, s.provenance, gpu_label, sum(g.count for g in gpus),
        vram, s.hardware.cpu, s.hardware.ram_gib, s.hardware.driver, s.hardware.os, s.engine.name,
        s.engine.version, s.engine.build_number, s.engine.commit, s.model.name, s.model.repo, s.model.quant,
        s.model.file_bytes, s.model.params_total_b, s.model.params_active_b, s.model.architecture,
        flags.as_int(argv_settings.get("ctx")), flags.as_int(argv_settings.get("slots")), kv_type,
        None if fa is None else ("on" if fa is True else str(fa)),
        flags.as_int(argv_settings.get("n_cpu_moe")), s.thinking,
        any(bool(g.unified_memory) for g in gpus), s.measured_by,
        measured[0] if measured else None, measured[-1] if measured else None, str(sf.folder),
        sf.content_sha256, now, s.model_dump_json(),
    ))
    for f in [sf.setup_file, *sf.extra_files]:
        add("files", (sid, None, f.rel, "setup" if f is sf.setup_file else "attachment", f.sha256, f.bytes,
                      str(f.path)))
    order = _run_order(sf.runs)
    n_req = n_items = n_warn = 0

    def warn(run_id: str, w: summarize.Warn) -> None:
        nonlocal n_warn
        n_warn += 1
        add("warnings", (sid, run_id, w.kind, w.message, w.stated, w.computed))

    for problem in flags.problems(s.server.argv):
        n_warn += 1
        add("warnings", (sid, None, "server_command", problem, None, None))
    runs = []
    stamps = {}
    for run in sf.runs:
        c = run.contract
        rid = c.run_id
        ro = order[rid]
        runs.append((rid, c.kind, run.file.path))
        st = run.file.path.stat()
        stamps[run.file.path] = (st.st_size, st.st_mtime_ns)
        add("files", (sid, rid, run.file.rel, "contract", run.file.sha256, run.file.bytes, str(run.file.path)))
        for f in run.attachments:
            add("files", (sid, rid, f.rel, "attachment", f.sha256, f.bytes, str(f.path)))
        if isinstance(c, SpeedContract):
            for p in c.parts:
                add("parts", (sid, rid, p.part, p.status, p.reason, getattr(p, "repeat_run_id", None), "stated"))
            result = summarize.speed(c)
            prov = "summary" if c.summary_only else "raw"
            for m in result.metrics:
                add("metrics", (sid, rid, m.metric, m.prompt, m.level, m.value, m.n, prov, ro))
            for step, reason in result.failed_steps:
                add("parts", (sid, rid, step, "failed", reason, None, "computed"))
            for w in result.warnings:
                warn(rid, w)
            n_records = len(c.requests)
            n_req += n_records
            method = c.method.model_dump_json(exclude_none=True)
        elif isinstance(c, QualityContract):
            n_records = 0
            for t, score, warns in summarize.quality(c):
                add("parts", (sid, rid, t.test, t.status, t.reason, None, "stated"))
                for w in warns:
                    warn(rid, w)
                n_records += len(t.items)
                if score is None:
                    continue
                add("quality_tests", (
                    sid, rid, t.test, t.label or t.test, t.description, t.status, t.reason, score.n, score.right,
                    score.cut_off, score.pct, score.margin_pp, score.lo_pct, score.hi_pct, t.token_limit,
                    t.thinking, t.seed, t.in_flight, t.sampling.model_dump_json(exclude_none=True) if t.sampling
                    else None, score.median_tokens, score.median_seconds, score.asked_again, score.from_items, ro,
                ))
                for task, n, right in score.by_task:
                    add("quality_tasks", (sid, rid, t.test, task, n, right))
            n_items += n_records
            method = None
        else:
            assert isinstance(c, FitContract)
            head, filled, warns = summarize.fit(c)
            for w in warns:
                warn(rid, w)
            for fs, pct in zip(c.steps, filled):
                add("fit_steps", (sid, rid, fs.ctx, fs.prompt_tokens, pct if pct is not None else fs.filled_pct,
                                  fs.ttft_s, fs.prefill_tps, fs.decode_tps, fs.answer_tokens, fs.peak_gib,
                                  fs.result, fs.finish_reason, fs.error))
            add("fit_headline", (sid, rid, head.largest_ctx, head.peak_gib, head.decode_tps,
                                 head.first_failed_ctx, head.first_failed_error, ro))
            for fs in c.steps:  # per-step figures that have no column: rows of the metric registry
                if fs.server_start_s is not None:
                    add("metrics", (sid, rid, "fit_server_start", None, fs.ctx, fs.server_start_s, 1,
                                    "summary" if c.summary_only else "raw", ro))
            n_records = len(c.steps)
            method = json.dumps({"fill_target_pct": c.fill_target_pct})
        add("runs", (rid, sid, c.kind, c.summary_only, c.started_at, c.finished_at, c.tool, c.command,
                     c.engine_version, c.supplement_of, c.notes, c.source, run.file.rel, run.file.sha256,
                     method, n_records))
    return Prepared(folder=sf.folder, setup_id=sid, content_sha256=sf.content_sha256, rows=dict(rows), runs=runs,
                    stamps=stamps, n_requests=n_req, n_items=n_items, n_warnings=n_warn)


def prepare_folder(folder: Path, now: datetime) -> tuple[Prepared | None, list[str]]:
    """Validate one folder and compute its rows (runs in a worker process)."""
    sf, errors = read_setup_folder(folder)
    if sf is None:
        return None, errors
    return rows_for(sf, now), []


def _prepare_chunk(args: tuple[list[Path], datetime]) -> list[tuple[Prepared | None, list[str]]]:
    folders, now = args
    return [prepare_folder(f, now) for f in folders]


def prepare_all(folders: list[Path], now: datetime) -> list[tuple[Prepared | None, list[str]]]:
    """Validate every folder; in worker processes when there are many and it is safe to fork."""
    workers = os.cpu_count() or 1
    if len(folders) < PARALLEL_MIN or workers < 2 or threading.active_count() > 1:
        return [prepare_folder(f, now) for f in folders]
    chunks = [folders[i::workers * 4] for i in range(workers * 4)]
    out: list[tuple[Prepared | None, list[str]]] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork")) as pool:
        for part in pool.map(_prepare_chunk, [(c, now) for c in chunks]):
            out.extend(part)
    return out


def validate_paths(paths: list[Path], now: datetime | None = None) -> list[Prepared]:
    """Validate every setup folder under ``paths``. Raises IngestError with all errors."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    folders, errors = find_setup_folders(paths)
    parsed: list[Prepared] = []
    for prep, errs in prepare_all(folders, now):
        errors.extend(errs)
        if prep is not None:
            parsed.append(prep)
    seen_setup: dict[str, Path] = {}
    seen_run: dict[str, Path] = {}
    for p in sorted(parsed, key=lambda p: str(p.folder)):
        if p.setup_id in seen_setup:
            errors.append(f"{p.folder / 'setup.json'}: $.setup_id: {p.setup_id!r} is also the setup id of "
                          f"{seen_setup[p.setup_id] / 'setup.json'}")
        seen_setup[p.setup_id] = p.folder
        for rid, _, path in p.runs:
            if rid in seen_run:
                errors.append(f"{path}: $.run_id: {rid!r} is also the run id of {seen_run[rid]}")
            seen_run[rid] = path
    if errors:
        raise IngestError(errors)
    return parsed


def _sql_list(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


_REQUEST_STRUCT = (
    "STRUCT(part VARCHAR, prompt_id VARCHAR, depth BIGINT, concurrency BIGINT, \"round\" BIGINT, "
    "warmup BOOLEAN, prompt_tokens BIGINT, output_tokens BIGINT, tokens_estimated BOOLEAN, t_send DOUBLE, "
    "t_first DOUBLE, t_last DOUBLE, t_end DOUBLE, finish_reason VARCHAR, chars BIGINT, words BIGINT, "
    "timings STRUCT(cache_n BIGINT, prompt_n BIGINT, prompt_ms DOUBLE, prompt_per_second DOUBLE, "
    "predicted_n BIGINT, predicted_ms DOUBLE, predicted_per_second DOUBLE), error VARCHAR)[]"
)
_ITEM_STRUCT = ("STRUCT(test VARCHAR, items STRUCT(id VARCHAR, \"right\" BOOLEAN, cut_off BOOLEAN, tokens BIGINT, "
                "seconds DOUBLE, task VARCHAR, error VARCHAR)[])[]")


def _bulk_records(con: duckdb.DuckDBPyConnection, speed: list[Path], quality: list[Path]) -> None:
    """Insert per-request and per-item records with DuckDB's JSON reader (files already validated)."""
    opts = "format='unstructured', maximum_object_size=268435456"
    if speed:
        con.execute(f"""
            INSERT INTO requests
            WITH c AS (
                SELECT setup_id, run_id, unnest(requests) AS r, generate_subscripts(requests, 1) - 1 AS seq
                FROM read_json({_sql_list(speed)}, {opts},
                               columns={{setup_id: 'VARCHAR', run_id: 'VARCHAR', requests: '{_REQUEST_STRUCT}'}}))
            SELECT setup_id, run_id, seq, r.part, r.prompt_id, r.depth, r.concurrency, coalesce(r."round", 0),
                   coalesce(r.warmup, false), r.prompt_tokens, r.output_tokens, coalesce(r.tokens_estimated, false),
                   r.t_send, r.t_first, r.t_last, r.t_end, r.finish_reason, r.chars, r.words,
                   r.timings.cache_n, r.timings.prompt_n, r.timings.prompt_ms, r.timings.prompt_per_second,
                   r.timings.predicted_n, r.timings.predicted_ms, r.timings.predicted_per_second, r.error,
                   CASE WHEN r.t_first > r.t_send THEN r.t_first - r.t_send END,
                   CASE WHEN r.output_tokens > 1 AND r.t_last > r.t_first
                        THEN (r.output_tokens - 1) / (r.t_last - r.t_first) END
            FROM c
        """)
    if quality:
        con.execute(f"""
            INSERT INTO quality_items
            WITH t AS (
                SELECT setup_id, run_id, unnest(tests) AS t
                FROM read_json({_sql_list(quality)}, {opts},
                               columns={{setup_id: 'VARCHAR', run_id: 'VARCHAR', tests: '{_ITEM_STRUCT}'}})),
            i AS (SELECT setup_id, run_id, t.test AS test, unnest(t.items) AS it,
                         generate_subscripts(t.items, 1) - 1 AS seq FROM t)
            SELECT setup_id, run_id, test, seq, it.id, it."right", coalesce(it.cut_off, false), it.tokens,
                   it.seconds, it.task, it.error
            FROM i
        """)


def ingest_paths(paths: list[Path], db_path: Path, *, rebuild: bool = False) -> Report:
    """Validate ``paths`` and load them into ``db_path``, all or nothing.

    Side effects: on success the database file is replaced atomically. On any
    error, raises IngestError (or DatabaseError) and the database file is left
    exactly as it was. With ``rebuild=True`` the new file holds only ``paths``.
    """
    parsed = validate_paths(paths)
    report = Report()
    with db.writing(db_path, fresh=rebuild) as con:
        existing = dict(con.execute("SELECT setup_id, content_sha256 FROM setups").fetchall())
        owners = dict(con.execute("SELECT run_id, setup_id FROM runs").fetchall())
        errors = [f"{path}: $.run_id: {rid!r} already belongs to setup {owners[rid]!r} in the database"
                  for p in parsed for rid, _, path in p.runs if owners.get(rid, p.setup_id) != p.setup_id]
        if errors:
            raise IngestError(errors)
        tables: dict[str, list[tuple]] = defaultdict(list)
        to_replace: list[str] = []
        speed_files: list[Path] = []
        quality_files: list[Path] = []
        stamps: dict[Path, tuple[int, int]] = {}
        for p in parsed:
            if existing.get(p.setup_id) == p.content_sha256:
                report.unchanged.append(p.setup_id)
                continue
            (report.replaced if p.setup_id in existing else report.new).append(p.setup_id)
            if p.setup_id in existing:
                to_replace.append(p.setup_id)
            for table, rows in p.rows.items():
                tables[table].extend(rows)
            for _, kind, path in p.runs:
                if kind == "speed":
                    speed_files.append(path)
                elif kind == "quality":
                    quality_files.append(path)
            stamps.update(p.stamps)
            report.runs += len(p.runs)
            report.requests += p.n_requests
            report.items += p.n_items
            report.warnings += p.n_warnings
        if to_replace:
            con.execute("CREATE TEMP TABLE gone AS SELECT unnest(?::VARCHAR[]) AS setup_id", [to_replace])
            for t in db.SETUP_TABLES:
                con.execute(f"DELETE FROM {t} WHERE setup_id IN (SELECT setup_id FROM gone)")
            con.execute("DROP TABLE gone")
        for table, data in tables.items():
            cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
            frame = pa.Table.from_pydict({c: list(v) for c, v in zip(cols, zip(*data))})
            con.register("frame", frame)
            con.execute(f"INSERT INTO {table} SELECT * FROM frame")
            con.unregister("frame")
        _bulk_records(con, speed_files, quality_files)
        changed = [str(path) for path, (size, mtime) in stamps.items()
                   if (lambda st: (st.st_size, st.st_mtime_ns))(path.stat()) != (size, mtime)]
        if changed:
            raise IngestError([f"{c}: changed while it was being loaded; run the ingest again" for c in changed])
    return report
