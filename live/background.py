"""What every background run of the Run live page shares (speed, quality, memory test): start a thread, ask it
to stop, wait for it. The runs keep their own state; this holds only the thread and the stop event."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["BackgroundRun"]


class BackgroundRun:
    """Mixin for a dataclass with ``_stop: threading.Event``, ``_thread: threading.Thread | None`` and
    ``done: bool`` fields (a dataclass cannot inherit fields before its own required ones)."""

    _stop: threading.Event
    _thread: threading.Thread | None
    done: bool

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        """Start ``target`` in a daemon thread named ``name`` (side effect: the thread runs the job)."""
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the run to stop: what is in flight is cut or stopped, what finished is kept and saved."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run ends (or ``timeout`` seconds pass); True when it ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.done
