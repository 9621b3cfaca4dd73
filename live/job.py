"""A live measurement running in a background thread (what the Run live page drives).

No Streamlit here: the page polls ``LiveJob`` for progress; tests drive it directly.

One job per server, process-wide: two runs against one server measure each other's load (five
overlapping runs against a server at 80 tok/s published 39 tok/s), so ``LiveJob.start`` refuses a
second job for a server that already has one running and names the running job. Every session of the
site sees the running jobs through ``running_jobs()``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from live.background import BackgroundRun
from live.measure import (
    Event,
    MeasureConfig,
    ServerLocked,
    SetupInput,
    build_setup,
    hardware_problems,
    measure,
    measured,
    place_setup,
    server_key,
    write_folder,
)

_LOCK = threading.Lock()
_JOBS: dict[str, LiveJob] = {}  # server key -> the newest job against it (running or ended)


class ServerBusy(RuntimeError):
    """A job is already measuring this server; ``job`` is the running one."""

    def __init__(self, job: LiveJob):
        self.job = job
        super().__init__(f"a measurement of {job.cfg.base_url} is already running ({job.describe()}); "
                         "wait for it to finish or stop it before starting another against the same server")


def running_jobs() -> list[LiveJob]:
    """Jobs still measuring, in this process (every session of the site), oldest first."""
    with _LOCK:
        return sorted((j for j in _JOBS.values() if not j.done), key=lambda j: j.started)


@dataclass
class LiveJob(BackgroundRun):
    """One measurement: start it, poll ``events``/``done``, ``stop()`` it.

    When it ends (finished, failed part-way or stopped) whatever finished is
    written to ``out`` as a raw setup folder and ingested into ``db_path``.
    """

    cfg: MeasureConfig
    setup: SetupInput
    out: Path
    db_path: Path
    events: list[Event] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    setup_id: str | None = None
    run_dir: Path | None = None
    report: str | None = None
    #: the ingest's warning lines, shown under the report (its "listed below")
    ingest_warnings: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    owner: str | None = None  # who started it, for the message to others (e.g. "another browser tab")
    #: where the run was stored when not under its own setup id, and why (live.setups.place_setup)
    placed: str | None = None
    #: server info left out because it does not fit (live.measure.read_server_info)
    warnings: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> LiveJob:
        """Register the job as its server's one job and start the measurement thread (returns self).

        Raises ``ServerBusy`` (naming the running job) when another job of this process is measuring
        the same server, ValueError when the GPU is not stated properly; nothing is started then.
        """
        problems = hardware_problems(self.setup.gpu, self.setup.vram_gib, gpu_field="GPU",
                                     vram_field="VRAM per GPU")
        if problems:  # checked before measuring: build_setup would refuse it only after the whole run
            raise ValueError("; ".join(problems))
        key = server_key(self.cfg.base_url)
        with _LOCK:
            other = _JOBS.get(key)
            if other is not None and not other.done:
                raise ServerBusy(other)
            _JOBS[key] = self
            self._spawn(self._run, "benchcards-live")
        return self

    def describe(self) -> str:
        """'started 07:41:02 UTC by another browser tab' — which job this is, for people."""
        at = datetime.fromtimestamp(self.started, UTC).strftime("%H:%M:%S UTC")
        return f"started {at}" + (f" by {self.owner}" if self.owner else "")

    def _run(self) -> None:
        from ingest import IngestError, ingest_paths

        try:
            contract, info, log = measure(self.cfg, self.events.append, self._stop)
            self.warnings = list(info.warnings)
            if not info.reachable:
                self.error = info.error or "the server did not answer"
            if measured(contract):
                # a setup that differs from the stored one of its id becomes its own (place_setup says why)
                setup, self.placed = place_setup(self.out, build_setup(self.setup, info, self.cfg))
                self.setup_id = setup.setup_id
                self.run_dir = write_folder(self.out, setup, contract, log)
                report = ingest_paths([self.run_dir.parent.parent], self.db_path)
                self.report, self.ingest_warnings = report.text(), report.warning_lines()
            elif self.error is None:
                self.error = ("nothing measured, nothing saved: no step produced a figure (every step failed or "
                              "was skipped; the reasons are in the table)")
        except ServerLocked as exc:  # another process (a `python -m live measure`) is measuring it
            self.error = str(exc)
        except IngestError as exc:
            self.error = "the run could not be stored: " + "; ".join(exc.errors[:5])
        except Exception as exc:  # shown on the page, never a traceback
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            self.done = True
