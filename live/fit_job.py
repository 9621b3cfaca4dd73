"""A memory test running in a background thread (what the Run live page's memory-test mode drives).

No Streamlit here. One memory test at a time in this process: each one starts and stops engines, and two at
once would measure each other's memory. ``FitJob.stop()`` sets the stop event: the server in flight is
stopped at once (TERM to its group, then KILL) and the sizes that finished are saved.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from live.background import BackgroundRun
from live.fit import FitConfig, FitEvent, fit_setup, given_template, headline, run_fit, write_fit_folder
from live.measure import SetupInput, hardware_problems
from live.setups import place_setup

_LOCK = threading.Lock()
_CURRENT: list[FitJob] = []  # the newest job (running or ended)


class FitBusy(RuntimeError):
    """A memory test is already running in this process."""


def current_job() -> FitJob | None:
    with _LOCK:
        return _CURRENT[0] if _CURRENT else None


@dataclass
class FitJob(BackgroundRun):
    """One memory test: ``start()``, poll ``events`` / ``done``, ``stop()``."""

    cfg: FitConfig
    setup: SetupInput
    out: Path
    db_path: Path
    events: list[FitEvent] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    setup_id: str | None = None
    run_dir: Path | None = None
    report: str | None = None
    #: the ingest's warning lines, shown under the report (its "listed below")
    ingest_warnings: list[str] = field(default_factory=list)
    #: where the run was stored when not under its own setup id, and why (live.setups.place_setup)
    placed: str | None = None
    summary: str | None = None
    started: float = field(default_factory=time.time)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> FitJob:
        """Check the settings and start the thread (returns self). Raises ValueError (every problem, each
        naming its field) or FitBusy; nothing is started then."""
        problems = hardware_problems(self.setup.gpu, self.setup.vram_gib, gpu_field="GPU",
                                     vram_field="VRAM per GPU") + self.cfg.problems()
        if problems:
            raise ValueError("; ".join(problems))
        with _LOCK:
            if _CURRENT and not _CURRENT[0].done:
                raise FitBusy("a memory test is already running on this site; wait for it or stop it")
            _CURRENT[:] = [self]
            self._spawn(self._run, "benchcards-fit")
        return self

    def _run(self) -> None:
        from ingest import IngestError, ingest_paths

        try:
            run = run_fit(self.cfg, self.events.append, self._stop)
            if not any(s.argv for s in run.contract.steps):
                self.error = "stopped before any size finished: nothing to save"
                return
            setup, self.placed = place_setup(self.out, fit_setup(run, self.setup), given_template(run))  # every kind's rule
            self.setup_id = setup.setup_id
            self.run_dir = write_fit_folder(self.out, setup, run)
            self.summary = headline(run.contract)
            report = ingest_paths([self.run_dir.parent.parent], self.db_path)
            self.report, self.ingest_warnings = report.text(), report.warning_lines()
        except IngestError as exc:
            self.error = "the run could not be stored: " + "; ".join(exc.errors[:5])
        except Exception as exc:  # shown on the page, never a traceback
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            self.done = True
