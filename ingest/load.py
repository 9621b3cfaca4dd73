"""Load validated setup folders into the DuckDB file, all or nothing.

``ingest_paths`` is the whole pipeline:

1. find the setup folders (never following links; see ``ingest.files``);
2. per folder (in worker processes when there are many): read every file once,
   validate (the contract's model, then cross-field rules; ``ingest.validate``) and compute every
   figure and every row as Arrow tables (``ingest.rows``); only those travel back;
3. if anything is invalid, raise IngestError with a capped report of every problem;
4. otherwise write one new database file from those Arrow tables (DuckDB never
   reads a file itself: its file access is off) and swap it in atomically.

Raw files stay where they are; the database keeps their path, size and SHA-256,
and the folders given (``sources``) so that ``python -m ingest.build`` re-reads them.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing import get_context
from pathlib import Path

import duckdb
import pyarrow as pa

from benchcards.domain.errors import ctrl_c_ignored, interrupted
from benchcards.read import paths as bc_paths
from ingest import store
from ingest.errors import ErrorLog
from ingest.files import SETUP_NAME, find_setup_folders
from ingest.limits import LIMITS, Limits
from ingest.rows import Batch, Prepared, arrow_schema, bulk_table, column_types, rows_for, to_arrow
from ingest.validate import read_setup_folder

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
    skipped: list[str] = field(default_factory=list)  # 'path: why' of entries not read (hidden, ...)
    warning_list: list[str] = field(default_factory=list)  # 'setup_id, run ...: message' of every warning

    def text(self) -> str:
        """One line: setups new/replaced/unchanged and what was loaded."""
        said = (f"{self.warnings} warning(s), listed below and on each setup's card" if self.warnings
                else "no warnings")
        return (f"{len(self.new)} new, {len(self.replaced)} replaced, {len(self.unchanged)} unchanged setup(s); "
                f"{self.runs} run(s), {self.requests} request record(s), {self.items} quality item(s), {said}")

    def warning_lines(self, limit: int = 50) -> list[str]:
        """The warnings to print, one a line (at most ``limit``, then how many more and where to see them)."""
        lines = [f"warning: {w}" for w in self.warning_list[:limit]]
        if len(self.warning_list) > limit:
            lines.append(f"... and {len(self.warning_list) - limit:,} more: see the Warnings section of each "
                         "setup's card")
        return lines


@dataclass
class Validated:
    """Every setup folder of an ingest, validated: per setup what the database needs, and
    the rows of all of them per table (Arrow)."""

    setups: list[Prepared]
    tables: dict[str, list[pa.Table]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    _rows: dict[str, list[tuple]] = field(default_factory=dict)
    _bulk: dict[str, list[Batch]] = field(default_factory=dict)

    def add(self, prep: Prepared) -> None:
        """Take one prepared setup (its rows and records move here)."""
        for name, rows in prep.rows.items():
            self._rows.setdefault(name, []).extend(rows)
        for name, batches in prep.bulk.items():
            self._bulk.setdefault(name, []).extend(batches)
        prep.rows, prep.bulk = {}, {}
        self.setups.append(prep)
        self.skipped.extend(prep.skipped)

    def finish(self) -> Validated:
        """Turn the rows and records gathered so far into Arrow tables (one per table); returns self."""
        for name, rows in self._rows.items():
            self.tables.setdefault(name, []).append(to_arrow(name, rows))
        for name, batches in self._bulk.items():
            if batches:
                self.tables.setdefault(name, []).append(bulk_table(name, batches))
        self._rows, self._bulk = {}, {}
        return self


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Validate a batch of folders without the cyclic garbage collector, then collect once: the validated
    models and rows are freed by reference counting, and the collector's passes over the many young objects
    of a batch cost about a fifth of its CPU time (bench/ingest.py)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        gc.collect()


def prepare_folder(folder: Path, now: datetime, limits: Limits = LIMITS) -> tuple[Prepared | None, ErrorLog]:
    """Validate one folder and compute its rows."""
    sf, log = read_setup_folder(folder, limits)
    if sf is None:
        return None, log
    return rows_for(sf, now), log


#: where workers leave their rows for this process when it can: a RAM-backed folder (tmpfs) if there is one
SPOOL_BASE = Path("/dev/shm")  # noqa: S108  (a private folder is made inside it with mkdtemp)


@contextlib.contextmanager
def spool_folder() -> Iterator[Path | None]:
    """A private folder for the workers' Arrow files (removed with what is left in it), or None when none can be
    made (the rows then travel through the workers' pipes).

    A worker writes each batch's rows there as one Arrow file and this process maps it, instead of the rows being
    copied through a pipe: five copies of every batch (Arrow to bytes, pickle, pipe out, pipe in, unpickle)
    become one write and a map. Side effects: makes and removes one folder under ``SPOOL_BASE`` (or the system's
    temporary folder), named with this process's pid, and removes those of ingests killed before they could
    (``sweep_spools``).
    """
    base = SPOOL_BASE if SPOOL_BASE.is_dir() and os.access(SPOOL_BASE, os.W_OK | os.X_OK) else None
    sweep_spools(Path(base or tempfile.gettempdir()))
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-", dir=base))
    except OSError:
        yield None
        return
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: a spool folder's name: this prefix, the pid of the ingest that made it, '-' and mkdtemp's random part
SPOOL_PREFIX = "benchcards-ingest-"
#: a spool folder left this long unchanged by an ingest that is no longer running is removed (RAM it holds)
SPOOL_STALE_S = 60.0


def sweep_spools(base: Path) -> list[str]:
    """Remove the spool folders in ``base`` that ingests killed before their cleanup left behind (SIGKILL): folders
    of this user named by ``spool_folder`` whose ingest's pid no longer runs and that nothing changed for
    ``SPOOL_STALE_S``; a link is never followed. Returns their names. The RAM they hold is freed only so."""
    removed = []
    with contextlib.suppress(OSError), os.scandir(base) as entries:
        for e in entries:
            pid = e.name[len(SPOOL_PREFIX):].partition("-")[0]
            if not (e.name.startswith(SPOOL_PREFIX) and pid.isdigit() and e.is_dir(follow_symlinks=False)):
                continue
            with contextlib.suppress(OSError):
                st = e.stat(follow_symlinks=False)
                if st.st_uid != os.getuid() or time.time() - st.st_mtime < SPOOL_STALE_S or _running(int(pid)):
                    continue
                shutil.rmtree(e.path)
                removed.append(e.name)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


def _spool_file(t: pa.Table, spool: Path) -> str:
    """Write ``t`` as an Arrow file in ``spool``; its path. Raises OSError (a full tmpfs), leaving no file."""
    fd, name = tempfile.mkstemp(suffix=".arrow", dir=spool)
    os.close(fd)
    try:
        with pa.OSFile(name, "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
            w.write_table(t)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return name


def _to_ipc(t: pa.Table, spool: Path | None) -> bytes | str:
    """The rows of ``t`` for this process: the path of an Arrow file in ``spool``, or the bytes of an Arrow
    stream when there is no spool folder or it is full."""
    if spool is not None:
        with contextlib.suppress(OSError):
            return _spool_file(t, spool)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def _from_ipc(rows: bytes | str) -> pa.Table:
    """A table from ``_to_ipc``; its file (mapped, not read) is removed at once: the map keeps it until the table
    is let go."""
    if isinstance(rows, bytes):
        return pa.ipc.open_stream(rows).read_all()
    try:
        return pa.ipc.open_file(pa.memory_map(rows)).read_all()
    finally:
        os.unlink(rows)


def _prepare_chunk(args: tuple[list[Path], datetime, Limits, Path | None]
                   ) -> tuple[list[Prepared], dict[str, bytes | str], ErrorLog]:
    """Worker: validate a chunk of folders; rows travel back as one Arrow file (or stream) per table."""
    folders, now, limits, spool = args
    out = Validated(setups=[])
    log = ErrorLog(limits)
    with collector_paused():  # collects once the records are Arrow tables: far fewer objects to look at
        for f in folders:
            prep, errs = prepare_folder(f, now, limits)
            log.merge(errs)
            if prep is not None:
                out.add(prep)
        blobs = {name: _to_ipc(pa.concat_tables(parts), spool) for name, parts in out.finish().tables.items()}
        out.tables = {}
    return out.setups, blobs, log


#: the smallest batch of folders a worker is given (each batch costs an Arrow stream per table and an insert)
CHUNK_MIN = 16


def _chunks(folders: list[Path], workers: int) -> list[list[Path]]:
    """The folders in batches for ``workers`` processes, each batch a share of those left (large ones first,
    then smaller ones): the workers end at nearly the same time, and the last batch, which this process
    loads while the workers are done, is small."""
    out = []
    rest = folders
    while rest:
        n = max(CHUNK_MIN, len(rest) // (2 * workers))
        out.append(rest[:n])
        rest = rest[n:]
    return out


#: receives each batch of validated setups with their rows, as the batches come in
Sink = Callable[[list[Prepared], dict[str, pa.Table]], None]


def prepare_all(folders: list[Path], now: datetime, limits: Limits = LIMITS,
                sink: Sink | None = None) -> tuple[Validated, ErrorLog]:
    """Validate every folder; in worker processes when there are many and it is safe to fork.

    With ``sink``, each batch's rows go to it as soon as the batch is done (so the caller can
    load them while other batches are still being checked) instead of into ``tables``.
    """
    out = Validated(setups=[])
    log = ErrorLog(limits)
    workers = os.cpu_count() or 1

    def take(preps: list[Prepared], tables: dict[str, pa.Table]) -> None:
        out.setups.extend(preps)
        for p in preps:
            out.skipped.extend(p.skipped)
        if sink is not None:
            sink(preps, tables)
        else:
            for name, t in tables.items():
                out.tables.setdefault(name, []).append(t)

    if len(folders) < PARALLEL_MIN or workers < 2 or threading.active_count() > 1:
        batch = Validated(setups=[])
        with collector_paused():
            for f in folders:
                prep, errs = prepare_folder(f, now, limits)
                log.merge(errs)
                if prep is not None:
                    batch.add(prep)
        take(batch.setups, {n: pa.concat_tables(ts) for n, ts in batch.finish().tables.items()})
        return out, log
    for table in column_types():  # once here, not once per worker
        arrow_schema(table)
    pa.array([0])  # pyarrow imports pandas on its first conversion of Python values: here once, not in each worker
    chunks = _chunks(folders, workers)
    # what this process holds is the workers' too: frozen, their collector never walks it (nor copies its pages)
    gc.freeze()
    try:
        with spool_folder() as spool:
            _in_workers([(c, now, limits, spool) for c in chunks], workers, log, take)
    finally:
        gc.unfreeze()
    return out, log


#: [True] while this process forks its workers: each child then ignores Ctrl-C (``_child_ignores_ctrl_c``)
_FORKING_WORKERS = [False]
#: [True] once ``_child_ignores_ctrl_c`` is registered to run after each fork of this process
_HOOKED = [False]


def _child_ignores_ctrl_c() -> None:
    """In a process just forked as an ingest worker: Ctrl-C (sent to the whole terminal's process group) is the
    parent's to handle; a worker it interrupted could die holding its pool's queue lock, and the parent then
    waited for it for ever (a second Ctrl-C hung the ingest: this stop's hostile test)."""
    if _FORKING_WORKERS[0]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _in_workers(tasks: list[tuple[list[Path], datetime, Limits, Path | None]], workers: int, log: ErrorLog,
                take: Sink) -> None:
    """Run ``_prepare_chunk`` on ``tasks`` in ``workers`` forked processes, giving each batch to ``take`` in order.
    On an interrupt (or any error) the batches not started are cancelled and the running ones waited for: no worker
    is left. A signal whose KeyboardInterrupt was lost (raised inside a fork hook, where Python only prints it) still
    stops the ingest at the next batch (``errors.interrupted``)."""
    if not _HOOKED[0]:
        os.register_at_fork(after_in_child=_child_ignores_ctrl_c)
        _HOOKED[0] = True
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"))
    try:
        _FORKING_WORKERS[0] = True
        try:
            results = pool.map(_prepare_chunk, tasks)  # forks every worker now
        finally:
            _FORKING_WORKERS[0] = False
        for preps, blobs, errs in results:
            if interrupted():
                raise KeyboardInterrupt
            log.merge(errs)
            take(preps, {name: _from_ipc(blob) for name, blob in blobs.items()})
    except BaseException:
        with ctrl_c_ignored():  # a second Ctrl-C must not break off the shutdown: it left the workers waiting
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def validate_paths(paths: list[Path], now: datetime | None = None, limits: Limits = LIMITS,
                   sink: Sink | None = None) -> Validated:
    """Validate every setup folder under ``paths``. Raises IngestError with a capped report of all errors.

    Side effects: none (reads only), apart from what ``sink`` does with each batch of rows.
    """
    now = now or datetime.now(UTC).replace(tzinfo=None)
    folders, problems, skipped = find_setup_folders(paths, limits)
    log = ErrorLog(limits)
    for where, why in problems:
        log.add(where, why)
    out, errs = prepare_all(folders, now, limits, sink)
    log.merge(errs)
    out.skipped[:0] = skipped
    seen_setup: dict[str, Path] = {}
    seen_run: dict[str, Path] = {}
    for p in sorted(out.setups, key=lambda p: str(p.folder)):
        if p.setup_id in seen_setup:
            log.add(p.folder / SETUP_NAME, f"$.setup_id: {p.setup_id!r} is also the setup id of "
                                           f"{seen_setup[p.setup_id] / SETUP_NAME}")
        seen_setup[p.setup_id] = p.folder
        for rid, _, path in p.runs:
            if rid in seen_run:
                log.add(path, f"$.run_id: {rid!r} is also the run id of {seen_run[rid]}")
            seen_run[rid] = path
    if log:
        raise log.error()
    return out


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def roots_to_record(paths: list[Path]) -> list[str]:
    """The folders an ingest was given, as they are recorded for rebuilds: resolved, and
    left out when they lie inside the site's own sources (data/raw, data/local), which
    every build reads anyway."""
    defaults = tuple(p.resolve() for p in bc_paths.SOURCES)
    out = []
    for p in paths:
        r = p.resolve()
        if r.is_file():
            r = r.parent
        if not _inside(r, defaults):
            out.append(str(r))
    return list(dict.fromkeys(out))


class _Loader:
    """The sink of ``validate_paths`` for ``ingest_paths``: loads each batch of validated setups into the private
    copy of the database as it comes in, after checking its ids against the database and the batches before it.

    The copy is opened (made, or copied from the database) with the first batch, so that the workers are
    already validating while it is made. Side effects: takes the writers' lock and makes the copy
    (``store.writing``, entered on ``stack``: closing the stack swaps it in, or discards it on an exception).
    """

    def __init__(self, stack: contextlib.ExitStack, db_path: Path, rebuild: bool, limits: Limits,
                 report: Report) -> None:
        self.stack, self.db_path, self.rebuild, self.report = stack, db_path, rebuild, report
        self.log = ErrorLog(limits)
        self.con: duckdb.DuckDBPyConnection | None = None
        self.existing: dict[str, tuple[str, str]] = {}
        self.owners: dict[str, str] = {}
        self.seen_setups: set[str] = set()
        self.seen_runs: set[str] = set()
        self.refused = False  # set once a batch shows the ingest will be refused

    def open(self) -> duckdb.DuckDBPyConnection:
        """The connection to the copy, opened on first use."""
        if self.con is None:
            con = self.stack.enter_context(store.writing(self.db_path, fresh=self.rebuild))
            self.existing = {sid: (sha, folder) for sid, sha, folder in
                             con.execute("SELECT setup_id, content_sha256, folder FROM setups").fetchall()}
            self.owners = dict(con.execute("SELECT run_id, setup_id FROM runs").fetchall())
            # the worker processes have the cores while batches come in: DuckDB inserts them on one thread, which
            # costs about half the CPU of its threads contending with the workers; the commit has them all again
            con.execute("SET threads = 1")
            self.con = con
        return self.con

    def __call__(self, preps: list[Prepared], tables: dict[str, pa.Table]) -> None:
        con = self.open()
        to_load = self._admit(preps)
        if self.log or self.refused or not to_load:
            return  # the ingest will be refused (or this batch holds nothing new): load nothing more
        everything = len(to_load) == len(preps)
        for table, frame in tables.items():
            if not frame.num_rows:
                continue
            if everything:  # straight from the Arrow table (a registered view cost a millisecond a table)
                con.from_arrow(frame).insert_into(table)
                continue
            con.register("frame", frame)
            con.execute(f"INSERT INTO {table} SELECT * FROM frame WHERE setup_id IN "
                        "(SELECT unnest(?::VARCHAR[]))", [to_load])
            con.unregister("frame")

    def _admit(self, preps: list[Prepared]) -> list[str]:
        """The setup ids of ``preps`` to load (new or changed), counted in the report; ids taken by other folders
        or setups are logged; a changed setup's old rows are deleted."""
        con, report, log = self.open(), self.report, self.log
        to_load: list[str] = []
        for p in preps:
            runs = {rid for rid, _, _ in p.runs}
            if p.setup_id in self.seen_setups or runs & self.seen_runs:
                self.refused = True  # a duplicate id: validate_paths reports it with both files
            self.seen_setups.add(p.setup_id)
            self.seen_runs.update(runs)
            for rid, _, path in p.runs:
                if self.owners.get(rid, p.setup_id) != p.setup_id:
                    log.add(path, f"$.run_id: {rid!r} already belongs to setup {self.owners[rid]!r} in the database")
            if p.setup_id in self.existing:
                sha, folder = self.existing[p.setup_id]
                old = Path(folder)
                if old != p.folder and (old / SETUP_NAME).exists():
                    log.add(p.folder / SETUP_NAME, f"$.setup_id: {p.setup_id!r} already belongs to the setup "
                                                   f"folder {old} in the database; give this setup its own id")
                if sha == p.content_sha256:
                    report.unchanged.append(p.setup_id)
                    continue
                report.replaced.append(p.setup_id)
                for t in store.SETUP_TABLES:
                    con.execute(f"DELETE FROM {t} WHERE setup_id = ?", [p.setup_id])
            else:
                report.new.append(p.setup_id)
            to_load.append(p.setup_id)
            report.runs += len(p.runs)
            report.requests += p.n_requests
            report.items += p.n_items
            report.warnings += p.n_warnings
            report.warning_list.extend(p.warnings)
        return to_load


def ingest_paths(paths: list[Path], db_path: Path, *, rebuild: bool = False, limits: Limits = LIMITS) -> Report:
    """Validate ``paths`` and load them into ``db_path``, all or nothing.

    Side effects: on success the database file is replaced atomically and the folders
    given are recorded as sources (``python -m ingest.build`` re-reads them). On any
    error, raises IngestError (or DatabaseError) and the database file is left
    exactly as it was. With ``rebuild=True`` the new file holds only ``paths``.

    The workers start validating first; the private copy of the database is opened with the first batch of
    validated setups, and each batch is loaded into it while the next ones are being checked (``_Loader``); any
    error anywhere discards the copy, so nothing of a rejected ingest is ever visible.
    """
    report = Report()
    now = datetime.now(UTC).replace(tzinfo=None)
    with contextlib.ExitStack() as stack:
        loader = _Loader(stack, db_path, rebuild, limits, report)
        valid = validate_paths(paths, limits=limits, sink=loader)
        con = loader.open()  # (made here when no batch came)
        if interrupted():  # a signal whose KeyboardInterrupt was lost: nothing is committed
            raise KeyboardInterrupt
        con.execute("RESET threads")
        if loader.log:
            raise loader.log.error()
        report.skipped = valid.skipped
        for root in roots_to_record(paths):
            con.execute("INSERT INTO sources VALUES (?, ?) ON CONFLICT DO NOTHING", [root, now])
    return report
