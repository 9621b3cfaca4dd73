"""A live quality run in a background thread (what the Run live page's quality mode drives).

No Streamlit here: the page polls ``QualityJob`` for progress; tests drive it directly. The server lock
(``live.measure.server_lock``) keeps it from running against a server that a speed run (or a command
line run) is measuring: the job then ends with that error and sends nothing.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from live.background import BackgroundRun
from live.measure import ServerLocked, SetupInput, build_setup, hardware_problems
from live.quality import QualityConfig, QualityEvent, demo_items_note, run_quality, write_quality_folder
from live.setups import place_setup

__all__ = ["QualityJob"]


@dataclass
class QualityJob(BackgroundRun):
    """One quality run: ``start()`` it, poll ``events`` / ``done``, ``stop()`` it. When it ends whatever
    was answered is written to ``out`` as a raw setup folder and ingested into ``db_path``."""

    cfg: QualityConfig
    setup: SetupInput
    out: Path
    db_path: Path
    events: list[QualityEvent] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    setup_id: str | None = None
    run_dir: Path | None = None
    report: str | None = None
    #: the ingest's warning lines, shown under the report (its "listed below")
    ingest_warnings: list[str] = field(default_factory=list)
    #: where the run was stored when not under its own setup id, and why (live.setups.place_setup)
    placed: str | None = None
    summary: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> QualityJob:
        """Start the run thread (returns self); ValueError when the GPU is not stated properly."""
        problems = hardware_problems(self.setup.gpu, self.setup.vram_gib, gpu_field="GPU", vram_field="VRAM per GPU")
        if problems:
            raise ValueError("; ".join(problems))
        self._spawn(self._run, "benchcards-live-quality")
        return self

    def _run(self) -> None:
        from benchcards.compute.summarize import quality_test
        from ingest import IngestError, ingest_paths

        try:
            contract, info, log = run_quality(self.cfg, self.events.append, self._stop)
            setup = build_setup(self.setup, info, self.cfg.measure_config())
            if any(t.items for t in contract.tests):  # where it is stored, and why when not under its own id
                setup, self.placed = place_setup(self.out, setup)
            self.setup_id = setup.setup_id
            if not info.reachable:
                self.error = info.error or "the server did not answer"
            note = demo_items_note(self.cfg, info)
            if note:
                self.summary.append(f"Note: {note}")
            for t in contract.tests:
                s, _ = quality_test(t)
                self.summary.append(f"{t.label or t.test}: " + (
                    f"{s.right} / {s.n} right, {s.pct:.1f} % ± {s.margin_pp:.1f}, {s.cut_off} cut off"
                    if s else f"{t.status}" + (f" — {t.reason}" if t.reason else "")))
            if any(t.items for t in contract.tests):
                self.run_dir = write_quality_folder(self.out, setup, contract, log)
                report = ingest_paths([self.run_dir.parent.parent], self.db_path)
                self.report, self.ingest_warnings = report.text(), report.warning_lines()
            elif self.error is None:
                self.error = "no item was answered: nothing to save"
        except ServerLocked as exc:
            self.error = str(exc)
        except IngestError as exc:
            self.error = "the run could not be stored: " + "; ".join(exc.errors[:5])
        except Exception as exc:  # shown on the page, never a traceback
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            self.done = True
