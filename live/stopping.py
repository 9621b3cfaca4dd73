"""Stopping a live run from the terminal: Ctrl-C, SIGTERM and SIGHUP all stop it the same way.

The first signal sets the run's stop event (the requests in flight are cut, what finished is written, the
command exits 130); a second Ctrl-C raises KeyboardInterrupt to leave at once. Every live command (measure,
fit, quality, sweep) uses it; the handlers are installed only in the main thread and the previous ones are put back on the way out.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["STOP_SIGNALS", "stop_on_signals"]

#: the signals that stop a live run like the Run live page's Stop
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event, what: str) -> Iterator[None]:
    """While inside, a stop signal sets ``stop`` and prints 'stopping (SIGTERM): ``what``' to stderr."""

    def interrupt(signum: int, frame: object) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        print(f"stopping ({signal.Signals(signum).name}): {what}", file=sys.stderr, flush=True)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for s in STOP_SIGNALS:
            previous[s] = signal.signal(s, interrupt)
    try:
        yield
    finally:
        for s, h in previous.items():
            with contextlib.suppress(Exception):
                signal.signal(s, h)
