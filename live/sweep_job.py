"""A sweep running in a background thread (what the Run live page's sweep mode drives).

No Streamlit here. One engine-starting job at a time in this process: a sweep is refused while another sweep or
a memory test runs (two would measure each other). ``SweepJob.stop()`` sets the stop event: the server in flight
is stopped at once and the boots that finished are written and added to the site.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from live.measure import SetupInput, hardware_problems
from live.sweep import BootEvent, SweepConfig, run_sweep, write_sweep

__all__ = ["SweepBusy", "SweepJob", "current_job", "variants_from_rows"]

_LOCK = threading.Lock()
_CURRENT: list[SweepJob] = []  # the newest job (running or ended)


class SweepBusy(RuntimeError):
    """A sweep or a memory test is already running in this process."""


def current_job() -> SweepJob | None:
    with _LOCK:
        return _CURRENT[0] if _CURRENT else None


def variants_from_rows(rows: list[dict]) -> tuple[list, list[str]]:
    """The variants of the page's table (rows of 'Name' and 'Arguments'; empty rows skipped), and every
    problem, each naming its row (``live.sweep.parse_variant`` reads each row: shlex, never a shell)."""
    from live.sweep import parse_variant

    out, problems = [], []
    for i, row in enumerate(rows, start=1):
        name = str(row.get("Name") or "").strip()
        args = str(row.get("Arguments") or "").strip()
        if not name and not args:
            continue
        try:
            out.append(parse_variant(f"{name}={args}"))
        except ValueError as exc:
            problems.append(f"Variants, row {i}: {str(exc).replace('--variant: ', '')}")
    if len(out) < 2 and not problems:
        problems.append("Variants: give at least two rows (the first is the baseline)")
    return out, problems


@dataclass
class SweepJob:
    """One sweep: ``start()``, poll ``events`` / ``done``, ``stop()``."""

    cfg: SweepConfig
    setup: SetupInput
    out: Path
    db_path: Path
    events: list[BootEvent] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    sweep_id: str | None = None
    setup_ids: list[str] = field(default_factory=list)
    report: str | None = None
    #: the ingest's warning lines, shown under the report (its "listed below")
    ingest_warnings: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> SweepJob:
        """Check the settings and start the thread (returns self). Raises ValueError (every problem, each
        naming its field), launcher.TemplateError or SweepBusy; nothing is started then."""
        from live import fit_job

        problems = hardware_problems(self.setup.gpu, self.setup.vram_gib, gpu_field="GPU",
                                     vram_field="VRAM per GPU") + self.cfg.problems()
        if problems:
            raise ValueError("; ".join(problems))
        for v in self.cfg.variants:
            self.cfg.template(v)
        fit = fit_job.current_job()
        with _LOCK:
            if (_CURRENT and not _CURRENT[0].done) or (fit is not None and not fit.done):
                raise SweepBusy("a sweep or a memory test is already running on this site; wait for it or stop it")
            _CURRENT[:] = [self]
            self._thread = threading.Thread(target=self._run, name="benchcards-sweep", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the server in flight now; the boots that finished are written."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.done

    def _run(self) -> None:
        from ingest import IngestError, ingest_paths

        try:
            result = run_sweep(self.cfg, self.out / ".sweep-logs", self.events.append, self._stop)
            if not any(b.status == "ok" for b in result.record.boots):
                self.error = ("stopped before any boot measured: nothing to save" if self.stopping
                              else "no boot measured: nothing to save (see each boot's reason)")
                return
            record, setups = write_sweep(self.out, result, self.setup, self.cfg.measure)
            self.sweep_id, self.setup_ids = record.sweep_id, [s.setup_id for s in setups]
            report = ingest_paths([self.out], self.db_path)
            self.report, self.ingest_warnings = report.text(), report.warning_lines()
        except IngestError as exc:
            self.error = "the sweep could not be stored: " + "; ".join(exc.errors[:5])
        except Exception as exc:  # shown on the page, never a traceback
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            self.done = True
