"""Uploads and imports of the Upload page, each in a process of its own, bounded in time.

The page's own thread only starts the worker and waits for it (sleeping, so it holds no lock another visitor
needs): a file that takes an importer long (a super-linear case, a huge archive) stalls neither the pages of
other visitors nor the server, and one that takes more than ``SECONDS`` is stopped (SIGKILL) and reported.
A stopped worker leaves its staging folder to ``ingest.upload.recover``, which the next upload or build runs,
exactly as for any killed upload: nothing of it is published.

The job (the uploaded bytes) goes to the worker in a private temporary file, never through a pipe; what comes
back is plain data (``Outcome``): the report, or the errors exactly as the same call in the page's process
would have raised them.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchcards.read.processes import without_script_main
from ingest.errors import IngestError, safe
from ingest.upload import UploadReport

__all__ = ["SECONDS", "Outcome", "run"]

#: longest an upload or import may run before it is stopped (the hostile review's slowest case took 204 s)
SECONDS = 300.0
#: how often the waiting page is told what the worker does
TICK = 0.5


@dataclass
class Outcome:
    """What a worker did: ``status`` 'ok' with ``report`` (and, for an import, each input's summary and notes);
    'rejected' (IngestError: the upload's files), 'not imported' (ImportFailed: an input file), 'failed' (any
    other error, said in one line), or 'stopped' (over the time limit, or the worker died)."""

    status: str
    report: UploadReport | None = None
    errors: list[str] = field(default_factory=list)
    count: int = 0
    notes: list[str] = field(default_factory=list)
    summaries: list[tuple[str, list[str]]] = field(default_factory=list)  # (summary, notes) per import result
    seconds: float = 0.0


# --------------------------------------------------------------------------- in the worker


def _do(kind: str, job: dict[str, Any], say: Callable[[str], None]) -> tuple[UploadReport, list]:
    """The upload or import itself (runs in the worker)."""
    from ingest import upload

    db, local = Path(job["db"]), Path(job["local"])
    if kind == "zip":
        say("Unpacking and checking every file")
        return upload.accept_zip(job["data"], db, label=job["label"], local=local), []
    if kind == "files":
        say("Checking every file")
        return upload.accept_files(job["files"], db, label=job["label"], local=local), []
    from ingest.importers import convert
    from ingest.importers.store import save

    say(f"Converting {len(job['sources']):,} file(s)")
    results = convert(job["sources"], job["options"], force=job["force"])
    say("Checking and storing the converted setups")
    report = save(results, db, local, label="import")
    return report, [(r.summary(), list(r.notes)) for r in results]


def _main(kind: str, job_file: str, messages: Any) -> None:
    """Worker entry point: read the job, run it, send ('stage', text) lines and one ('done', Outcome)."""
    from ingest.importers import ImportFailed

    with open(job_file, "rb") as fh:
        job = pickle.load(fh)  # noqa: S301 - written by the page's process into its own 0600 temporary folder
    os.unlink(job_file)
    try:
        report, summaries = _do(kind, job, lambda text: messages.put(("stage", text)))
        out = Outcome("ok", report=report, summaries=summaries)
    except ImportFailed as exc:
        out = Outcome("not imported", errors=exc.errors, count=exc.count, notes=exc.notes)
    except IngestError as exc:
        out = Outcome("rejected", errors=exc.errors, count=exc.count, notes=exc.notes)
    except Exception as exc:  # the database, the disk: one clear line, never a traceback
        out = Outcome("failed", errors=[safe(exc) or type(exc).__name__], count=1)
    messages.put(("done", out))


# --------------------------------------------------------------------------- in the page's process


def _context() -> Any:
    """Workers are forked from a server process of their own that has imported the write side once (a fork of
    the web server's threads is never made, and a worker starts in a moment instead of importing it all)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ingest.worker", "ingest.upload", "ingest.importers", "ingest.importers.store"])
    return ctx


def run(kind: str, job: dict[str, Any], progress: Callable[[str, float], None] | None = None,
        seconds: float | None = None) -> Outcome:
    """Run an upload (``kind`` 'zip': data, label; 'files': files, label) or an import ('import': sources,
    options, force) of ``job`` (with ``db`` and ``local``) in a new process and wait for it, calling
    ``progress(stage, seconds so far)`` about every ``TICK`` seconds.

    Side effects: those of ``ingest.upload.accept_zip``/``accept_files`` or ``ingest.importers.store.save``,
    in the worker; a private temporary file holds the job until the worker has read it. A worker still
    running after ``seconds`` (default ``SECONDS``) is killed, and the outcome says so.
    """
    limit = SECONDS if seconds is None else seconds
    ctx = _context()
    messages = ctx.Queue()
    tmp = Path(tempfile.mkdtemp(prefix="benchcards-job-"))
    job_file = tmp / "job.pickle"
    try:
        with open(os.open(job_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as fh:
            pickle.dump({**job, "db": str(job["db"]), "local": str(job["local"])}, fh, protocol=5)
        # not daemonic: a large upload's validation may start worker processes of its own (ingest.load)
        proc = ctx.Process(target=_main, args=(kind, str(job_file), messages), name=f"benchcards-{kind}")
        start = time.monotonic()
        with without_script_main():  # a page's script is never run again in the worker
            proc.start()
        out = _wait(proc, messages, start, limit, progress)
        out.seconds = time.monotonic() - start
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        messages.close()


def _wait(proc: Any, messages: Any, start: float, limit: float,
          progress: Callable[[str, float], None] | None) -> Outcome:
    """The worker's outcome; kills it once it has run ``limit`` seconds."""
    stage = "Starting"
    while True:
        elapsed = time.monotonic() - start
        if progress is not None:
            progress(stage, elapsed)
        try:
            what, value = messages.get(timeout=TICK)
        except queue.Empty:
            if elapsed > limit:
                proc.kill()
                proc.join()
                return Outcome("stopped", count=1, errors=[
                    f"stopped after {limit:,.0f} s: checking these files took longer than an upload may; nothing "
                    "was stored (split the input, or import it with `python -m ingest FILE` in a shell)"])
            if not proc.is_alive() and messages.empty():
                proc.join()
                return Outcome("stopped", count=1, errors=[
                    f"the worker ended without a result (exit status {proc.exitcode}); nothing was stored"])
            continue
        if what == "stage":
            stage = value
        else:
            proc.join()
            return value
