"""The site's database build, run in a background process (no Streamlit here).

The site never builds on a page load. When the database is missing or stale a page
offers a button; it starts ``python -m ingest.build`` as a separate process, while
every page keeps reading the last good file. One build per database file at a
time, shared by every session of the server process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchcards.read.paths import ROOT

#: characters of a build's output kept for the page
OUTPUT_CHARS = 20_000


@dataclass
class BuildJob:
    """One ``python -m ingest.build`` process and its output."""

    db_path: Path
    proc: subprocess.Popen | None = None
    log: Path | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None

    def start(self) -> BuildJob:
        """Start the build process (returns self). Its output goes to a private temporary file."""
        fd, name = tempfile.mkstemp(prefix="benchcards-build-", suffix=".log")
        self.log = Path(name)
        with os.fdopen(fd, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ingest.build", "--db", str(self.db_path), "--force"],
                cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    @property
    def done(self) -> bool:
        if self.proc is None or self.proc.poll() is None:
            return False
        if self.finished is None:
            self.finished = time.time()
        return True

    @property
    def ok(self) -> bool:
        return self.done and self.proc is not None and self.proc.returncode == 0

    def output(self) -> str:
        """The build's output (its end, when long)."""
        if self.log is None:
            return ""
        try:
            with open(self.log, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - OUTPUT_CHARS))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return ("…\n" if size > OUTPUT_CHARS else "") + text

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the build ends (tests); True when it did."""
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
        return self.done


_JOBS: dict[str, BuildJob] = {}
_LOCK = threading.Lock()


def current(db_path: Path) -> BuildJob | None:
    """The latest build of ``db_path`` started by this server process (running or finished)."""
    with _LOCK:
        return _JOBS.get(str(db_path))


def start(db_path: Path) -> BuildJob:
    """Start a build of ``db_path`` unless one is running; returns the running one."""
    with _LOCK:
        job = _JOBS.get(str(db_path))
        if job is None or job.done:
            if job is not None and job.log is not None:
                job.log.unlink(missing_ok=True)  # the previous build's output is replaced
            job = BuildJob(db_path).start()
            _JOBS[str(db_path)] = job
        return job
