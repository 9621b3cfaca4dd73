"""Raw files as they were ingested: read back from where they came from, only when still the same bytes.

Only a regular file is read (a link put in its place is not followed), and no more bytes than were recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchcards.domain.errors import BenchcardsError

if TYPE_CHECKING:
    from benchcards.read.store import Store

__all__ = ["RawFileError", "raw_sources", "read_raw"]


class RawFileError(BenchcardsError, LookupError):
    """A raw file is not available any more."""


def raw_sources(store: Store) -> dict[str, list[tuple[str, int]]]:
    """Every raw file of the database: sha256 -> [(where it was ingested from, its size)] (one query)."""
    rows = store.df("SELECT DISTINCT sha256, source, bytes FROM files ORDER BY sha256, source")
    out: dict[str, list[tuple[str, int]]] = {}
    for sha, source, size in zip(rows.sha256.tolist(), rows.source.tolist(), rows.bytes.tolist()):
        out.setdefault(str(sha), []).append((str(source), int(size)))
    return out


def read_raw(sha256: str, sources: list[tuple[str, int]]) -> bytes | None:
    """The bytes of the first of ``sources`` that is still a regular file of its size with the hash
    ``sha256`` (no link is followed), or None."""
    import hashlib

    for source, size in sources:
        data = _read_regular(Path(source), int(size))
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data
    return None


def _read_regular(path: Path, size: int) -> bytes | None:
    """The bytes of the regular file ``path`` when it holds exactly ``size`` bytes (None otherwise)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return None
        data = fh.read(size + 1)
    return data if len(data) == size else None
