"""A live measurement running in a background thread (what the Run live page drives).

No Streamlit here: the page polls ``LiveJob`` for progress; tests drive it directly.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from live.measure import Event, MeasureConfig, SetupInput, build_setup, measure, write_folder


@dataclass
class LiveJob:
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
    started: float = field(default_factory=time.time)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> LiveJob:
        """Start the measurement thread (returns self)."""
        self._thread = threading.Thread(target=self._run, name="benchcards-live", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the run to stop after the request in flight; finished steps are kept and saved."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job ends; True when it did."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.done

    def _run(self) -> None:
        from ingest import IngestError, ingest_paths

        try:
            contract, info, log = measure(self.cfg, self.events.append, self._stop)
            setup = build_setup(self.setup, info, self.cfg)
            self.setup_id = setup.setup_id
            if not info.reachable:
                self.error = info.error or "the server did not answer"
            if any(r.output_tokens for r in contract.requests):
                self.run_dir = write_folder(self.out, setup, contract, log)
                report = ingest_paths([self.run_dir.parent.parent], self.db_path)
                self.report = report.text()
            elif self.error is None:
                self.error = "no request produced any output: nothing to save"
        except IngestError as exc:
            self.error = "the run could not be stored: " + "; ".join(exc.errors[:5])
        except Exception as exc:  # shown on the page, never a traceback
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            self.done = True
