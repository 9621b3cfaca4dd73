"""The one file-lock helper: every lock of benchcards (the database writers', uploads', an export folder's,
a measured server's) is an advisory ``flock`` on a small file, freed by the kernel when its holder dies."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from benchcards.domain.errors import BenchcardsError

__all__ = ["LockBusy", "file_lock", "is_held"]


class LockBusy(BenchcardsError):
    """Another process holds the lock (raised only when not waiting)."""


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True, mode: int = 0o644) -> Iterator[int]:
    """Hold an exclusive lock on ``path`` for a block; yields the open file descriptor (a holder may write
    who it is into the file). ``wait=False`` raises ``LockBusy`` at once when another process holds it.

    Side effects: creates ``path`` (never through a symlink) with ``mode`` when it is missing; the lock is
    released and the file closed when the block ends.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise LockBusy(str(path)) from None
        yield fd
    finally:
        os.close(fd)


def is_held(path: Path) -> bool:
    """Whether another process holds the lock on ``path`` now (False when the file is missing)."""
    try:
        with file_lock(path, wait=False):
            return False
    except LockBusy:
        return True
    except OSError:
        return False
