"""Raw files as they were ingested: read back from where they came from, only when still the same bytes.

Only a regular file is read (a link put in its place is not followed), and no more bytes than were recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchcards.domain.errors import BenchcardsError

if TYPE_CHECKING:
    from benchcards.read.store import Store

__all__ = ["RawFileError", "find_raw", "looks_readable", "raw_sources"]


class RawFileError(BenchcardsError, LookupError):
    """A raw file is not available any more."""


def raw_sources(store: Store) -> dict[str, list[tuple[str, int]]]:
    """Every raw file of the database: sha256 -> [(where it was ingested from, its size)] (one query)."""
    rows = store.df("SELECT DISTINCT sha256, source, bytes FROM files ORDER BY sha256, source")
    out: dict[str, list[tuple[str, int]]] = {}
    for sha, source, size in zip(rows.sha256.tolist(), rows.source.tolist(), rows.bytes.tolist()):
        out.setdefault(str(sha), []).append((str(source), int(size)))
    return out


def find_raw(sha256: str, sources: list[tuple[str, int]]) -> tuple[bytes | None, str]:
    """(the bytes, '') of the first of ``sources`` that is still the file that was ingested (a regular file of its
    size with the hash ``sha256``; no link is followed), or
    (None, why not, in words, for the first source: 'changed since it was ingested …', 'is no longer there', …).
    Changed bytes are never returned."""
    import hashlib

    why = "is not recorded anywhere"
    for i, (source, size) in enumerate(sources):
        data, problem = _read_regular(Path(source), int(size))
        if data is not None and hashlib.sha256(data).hexdigest() != sha256:
            data, problem = None, "changed since it was ingested: its bytes no longer match the recorded SHA-256"
        if data is not None:
            return data, ""
        if i == 0:
            why = problem
    return None, why


def looks_readable(sources: list[tuple[str, int]]) -> str:
    """'' when one of ``sources`` looks like the file that was ingested (a regular file of its size, reached
    without following a link), without reading it; else why not for the first source, in ``find_raw``'s words.
    ``find_raw`` says the same unless a file changes in between or keeps its size but not its bytes."""
    why = "is not recorded anywhere"
    for i, (source, size) in enumerate(sources):
        problem = _check_regular(Path(source), int(size))
        if not problem:
            return ""
        if i == 0:
            why = problem
    return why


def _check_regular(path: Path, size: int) -> str:
    """'' when ``path`` is a regular file of ``size`` bytes (no link followed); else why not, in words."""
    import os
    import stat

    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return "is no longer there"
    except OSError:
        return "can no longer be read as it was ingested (it is a link or cannot be opened)"
    if stat.S_ISLNK(st.st_mode):
        return "can no longer be read as it was ingested (it is a link or cannot be opened)"
    if not stat.S_ISREG(st.st_mode):
        return "is no longer a regular file"
    if st.st_size != size:
        return f"changed since it was ingested: it holds {st.st_size:,} bytes, not {size:,}"
    if not os.access(path, os.R_OK):
        return "can no longer be read as it was ingested (it is a link or cannot be opened)"
    return ""


def _read_regular(path: Path, size: int) -> tuple[bytes | None, str]:
    """(the bytes of the regular file ``path``, '') when it holds exactly ``size`` bytes; else (None, why not)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, "is no longer there"
    except OSError:
        return None, "can no longer be read as it was ingested (it is a link or cannot be opened)"
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None, "is no longer a regular file"
        if st.st_size != size:
            return None, f"changed since it was ingested: it holds {st.st_size:,} bytes, not {size:,}"
        data = fh.read(size + 1)
    if len(data) != size:
        return None, "changed since it was ingested: it changed while it was read"
    return data, ""
