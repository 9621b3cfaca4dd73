"""Load validated setup folders into the DuckDB file, all or nothing.

``ingest_paths`` is the whole pipeline: find folders, validate everything, and
only when every file is valid, write one new database file and swap it in.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from benchcards import db, flags, stats, summarize
from benchcards.paths import blob_dir
from ingest.validate import IngestError, RawFile, SetupFolder, find_setup_folders, read_setup_folder
from schemas.models import FitContract, QualityContract, SpeedContract


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


def validate_paths(paths: list[Path]) -> list[SetupFolder]:
    """Validate every setup folder under ``paths``. Raises IngestError with all errors."""
    folders, errors = find_setup_folders(paths)
    parsed: list[SetupFolder] = []
    for f in folders:
        sf, errs = read_setup_folder(f)
        errors.extend(errs)
        if sf is not None:
            parsed.append(sf)
    seen_setup: dict[str, Path] = {}
    seen_run: dict[str, Path] = {}
    for sf in parsed:
        sid = sf.setup.setup_id
        if sid in seen_setup:
            errors.append(f"{sf.setup_file.path}: $.setup_id: {sid!r} is also the setup id of "
                          f"{seen_setup[sid] / 'setup.json'}")
        seen_setup[sid] = sf.folder
        for r in sf.runs:
            rid = r.contract.run_id
            if rid in seen_run:
                errors.append(f"{r.file.path}: $.run_id: {rid!r} is also the run id of {seen_run[rid]}")
            seen_run[rid] = r.file.path
    if errors:
        raise IngestError(errors)
    return parsed


def _store_blob(root: Path, f: RawFile) -> None:
    target = root / f.sha256[:2] / f.sha256
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(f.data)
    os.replace(tmp, target)


def _none_if_empty(d: dict | list | None) -> str | None:
    return json.dumps(d) if d else None


class _Rows:
    """Column-oriented rows per table, inserted in bulk at the end."""

    def __init__(self) -> None:
        self.tables: dict[str, list[tuple]] = defaultdict(list)

    def add(self, table: str, row: tuple) -> None:
        self.tables[table].append(row)


def _run_order(runs: list) -> dict[str, int]:
    """Order of the runs of a setup, oldest first (later runs win per metric)."""
    keyed = sorted(runs, key=lambda r: (r.contract.finished_at or r.contract.started_at or "", r.contract.run_id))
    return {r.contract.run_id: i for i, r in enumerate(keyed)}


def rows_for(sf: SetupFolder, rows: _Rows, now: datetime) -> tuple[int, int, int]:
    """Add every row of one setup; returns (requests, items, warnings)."""
    s = sf.setup
    sid = s.setup_id
    argv_settings = flags.settings(s.server.argv)
    gpus = s.hardware.gpus
    gpu_label = " + ".join(f"{g.count}x {g.name}" if g.count > 1 else g.name for g in gpus) or "CPU only"
    vram = sum(g.vram_gib * g.count for g in gpus) if gpus else None
    kv = [argv_settings.get("cache_type_k"), argv_settings.get("cache_type_v")]
    kv_type = "/".join(str(k) for k in kv if k) or "f16"
    summary_only = any(r.contract.summary_only for r in sf.runs)
    measured = sorted(s.measured_at)
    rows.add("setups", (
        sid, s.title, s.synthetic, summary_only, s.provenance, gpu_label, sum(g.count for g in gpus),
        vram, s.hardware.cpu, s.hardware.ram_gib, s.hardware.driver, s.hardware.os, s.engine.name,
        s.engine.version, s.engine.build_number, s.engine.commit, s.model.name, s.model.repo, s.model.quant,
        s.model.file_bytes, s.model.params_total_b, s.model.params_active_b, s.model.architecture,
        flags.as_int(argv_settings.get("ctx")), flags.as_int(argv_settings.get("slots")), kv_type,
        None if argv_settings.get("flash_attn") is None else str(argv_settings.get("flash_attn")),
        flags.as_int(argv_settings.get("n_cpu_moe")), s.thinking, s.measured_by,
        measured[0] if measured else None, measured[-1] if measured else None, str(sf.folder),
        sf.content_sha256, now, s.model_dump_json(),
    ))
    rows.add("files", (sid, None, sf.setup_file.rel, "setup", sf.setup_file.sha256, sf.setup_file.bytes))
    for f in sf.extra_files:
        rows.add("files", (sid, None, f.rel, "attachment", f.sha256, f.bytes))
    order = _run_order(sf.runs)
    n_req = n_items = n_warn = 0

    def warn(run_id: str, w: summarize.Warn) -> None:
        nonlocal n_warn
        n_warn += 1
        rows.add("warnings", (sid, run_id, w.kind, w.message, w.stated, w.computed))

    for run in sf.runs:
        c = run.contract
        rid = c.run_id
        ro = order[rid]
        n_records = 0
        rows.add("files", (sid, rid, run.file.rel, "contract", run.file.sha256, run.file.bytes))
        for f in run.attachments:
            rows.add("files", (sid, rid, f.rel, "attachment", f.sha256, f.bytes))
        if isinstance(c, SpeedContract):
            for p in c.parts:
                rows.add("parts", (sid, rid, p.part, p.status, p.reason, getattr(p, "repeat_run_id", None), "stated"))
            result = summarize.speed(c)
            prov = "summary" if c.summary_only else "raw"
            for m in result.metrics:
                rows.add("metrics", (sid, rid, m.metric, m.prompt, m.level, m.value, m.n, prov, ro))
            for step, reason in result.failed_steps:
                rows.add("parts", (sid, rid, step, "failed", reason, None, "computed"))
            for w in result.warnings:
                warn(rid, w)
            for i, r in enumerate(c.requests):
                t = r.timings
                ttft = r.t_first - r.t_send if r.t_first is not None else None
                dec = (stats.decode_rate(r.output_tokens or 0, r.t_first, r.t_last)
                       if r.t_first is not None and r.t_last is not None else None)
                rows.add("requests", (
                    sid, rid, i, r.part, r.prompt_id, r.depth, r.concurrency, r.round, r.warmup,
                    r.prompt_tokens, r.output_tokens, r.tokens_estimated, r.t_send, r.t_first, r.t_last,
                    r.t_end, r.finish_reason, r.chars, r.words,
                    t.cache_n if t else None, t.prompt_n if t else None, t.prompt_ms if t else None,
                    t.prompt_per_second if t else None, t.predicted_n if t else None,
                    t.predicted_ms if t else None, t.predicted_per_second if t else None, r.error, ttft, dec,
                ))
            n_records = len(c.requests)
            method = c.method.model_dump_json(exclude_none=True)
        elif isinstance(c, QualityContract):
            for t, score, warns in summarize.quality(c):
                rows.add("parts", (sid, rid, t.test, t.status, t.reason, None, "stated"))
                for w in warns:
                    warn(rid, w)
                for i, it in enumerate(t.items):
                    rows.add("quality_items", (sid, rid, t.test, i, it.id, it.right, it.cut_off, it.tokens,
                                               it.seconds, it.task, it.error))
                n_records += len(t.items)
                if score is None:
                    continue
                rows.add("quality_tests", (
                    sid, rid, t.test, t.label or t.test, t.description, t.status, t.reason, score.n, score.right,
                    score.cut_off, score.pct, score.margin_pp, score.lo_pct, score.hi_pct, t.token_limit,
                    t.thinking, t.seed, t.in_flight, t.sampling.model_dump_json(exclude_none=True) if t.sampling
                    else None, score.median_tokens, score.median_seconds, score.asked_again, score.from_items, ro,
                ))
                for task, n, right in score.by_task:
                    rows.add("quality_tasks", (sid, rid, t.test, task, n, right))
            n_items += n_records
            method = None
        else:
            assert isinstance(c, FitContract)
            head, filled, warns = summarize.fit(c)
            for w in warns:
                warn(rid, w)
            for st, pct in zip(c.steps, filled):
                rows.add("fit_steps", (sid, rid, st.ctx, st.prompt_tokens, pct if pct is not None else st.filled_pct,
                                       st.ttft_s, st.prefill_tps, st.decode_tps, st.answer_tokens, st.peak_gib,
                                       st.result, st.finish_reason, st.error))
            rows.add("fit_headline", (sid, rid, head.largest_ctx, head.peak_gib, head.decode_tps,
                                      head.first_failed_ctx, head.first_failed_error, ro))
            n_records = len(c.steps)
            method = json.dumps({"fill_target_pct": c.fill_target_pct})
        n_req += n_records if isinstance(c, SpeedContract) else 0
        rows.add("runs", (rid, sid, c.kind, c.summary_only, c.started_at, c.finished_at, c.tool, c.command,
                          c.engine_version, c.supplement_of, c.notes, c.source, run.file.rel, run.file.sha256,
                          method, n_records))
    return n_req, n_items, n_warn


def ingest_paths(paths: list[Path], db_path: Path, *, rebuild: bool = False) -> Report:
    """Validate ``paths`` and load them into ``db_path``, all or nothing.

    Side effects: on success, raw files are copied into the blob folder beside the
    database and the database file is replaced atomically. On any error, raises
    IngestError (or DatabaseError) and the database file is left exactly as it was.
    With ``rebuild=True`` the new file holds only ``paths`` (setups not given are dropped).
    """
    parsed = validate_paths(paths)
    report = Report()
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with db.writing(db_path, fresh=rebuild) as con:
        existing = dict(con.execute("SELECT setup_id, content_sha256 FROM setups").fetchall())
        owners = dict(con.execute("SELECT run_id, setup_id FROM runs").fetchall())
        errors = []
        for sf in parsed:
            for r in sf.runs:
                owner = owners.get(r.contract.run_id)
                if owner is not None and owner != sf.setup.setup_id:
                    errors.append(f"{r.file.path}: $.run_id: {r.contract.run_id!r} already belongs to setup "
                                  f"{owner!r} in the database")
        if errors:
            raise IngestError(errors)
        rows = _Rows()
        to_replace: list[str] = []
        for sf in parsed:
            sid = sf.setup.setup_id
            if existing.get(sid) == sf.content_sha256:
                report.unchanged.append(sid)
                continue
            (report.replaced if sid in existing else report.new).append(sid)
            if sid in existing:
                to_replace.append(sid)
            n_req, n_items, n_warn = rows_for(sf, rows, now)
            report.runs += len(sf.runs)
            report.requests += n_req
            report.items += n_items
            report.warnings += n_warn
        if to_replace:
            con.execute("CREATE TEMP TABLE gone AS SELECT unnest(?::VARCHAR[]) AS setup_id", [to_replace])
            for t in db.SETUP_TABLES:
                con.execute(f"DELETE FROM {t} WHERE setup_id IN (SELECT setup_id FROM gone)")
            con.execute("DROP TABLE gone")
        for table, data in rows.tables.items():
            cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
            frame = pd.DataFrame.from_records(data, columns=cols)
            con.register("frame", frame)
            con.execute(f"INSERT INTO {table} SELECT * FROM frame")
            con.unregister("frame")
        blobs = blob_dir(db_path)
        for sf in parsed:
            if sf.setup.setup_id in report.unchanged:
                continue
            for f in [sf.setup_file, *sf.extra_files, *(x for r in sf.runs for x in (r.file, *r.attachments))]:
                _store_blob(blobs, f)
    return report
