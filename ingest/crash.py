"""Crash points for the tests that kill a writer half-way (a power cut, ``kill -9``).

``point(name)`` does nothing unless ``$BENCHCARDS_CRASH_AT`` equals ``name``; then the
process kills itself with SIGKILL on the spot: no cleanup handler runs, exactly as
when the machine loses power. The tests use it to prove that a killed upload or
ingest is never published and never damages what was stored.
"""

from __future__ import annotations

import os
import signal

ENV = "BENCHCARDS_CRASH_AT"


def point(name: str) -> None:
    """Die here (SIGKILL) when ``$BENCHCARDS_CRASH_AT`` is ``name``; otherwise nothing."""
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
