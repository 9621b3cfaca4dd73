"""Incremental writes of the static site: a file is rewritten only when its content changed.

The export folder keeps a manifest (``.benchcards-export.json``): for every file of the
site its SHA-256, size and modification time as written. A new export hashes each file
it would write; when the manifest has the same hash and the file on disk still has the
recorded size and modification time (nobody touched it), or the same size and content
(a copied or checked-out folder has new modification times), the file is left alone, so
its bytes stay as they were. Every write goes to a temporary file in the same folder and
is renamed over the old one (a reader never sees half a page); no write goes through a
symbolic link out of the folder. After the export, the files the last export wrote that
the new site no longer has are removed; files the export never wrote (a ``.git`` folder,
a ``CNAME``, notes) are left alone. The manifest is replaced the same way.

The folder must be empty, new, or an earlier export (it has a manifest): a folder with
other content is refused, so a wrong path never writes into someone's files. One export
at a time writes a folder (an exclusive lock on ``.benchcards-export.lock``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchcards.errors import BenchcardsError
from benchcards.locks import LockBusy, file_lock

MANIFEST = ".benchcards-export.json"
LOCK = ".benchcards-export.lock"
FORMAT = 1


class ExportFolderError(BenchcardsError, RuntimeError):
    """The output folder cannot be used (not an earlier export, or another export is writing it)."""


@dataclass(frozen=True)
class Entry:
    """One file of the site as last written: content hash, size, modification time (ns)."""

    sha256: str
    size: int
    mtime_ns: int


def safe_rel(rel: str) -> bool:
    """True for a path the site can have: relative, '/'-separated, no '..', '.', empty or hidden parts (the
    manifest is a file in the folder anyone may edit: its paths never lead out of the folder)."""
    parts = rel.split("/")
    return bool(rel) and "\\" not in rel and "\0" not in rel and all(p and not p.startswith(".") for p in parts)


def read_manifest(root: Path) -> dict[str, Entry]:
    """The manifest of an earlier export of ``root`` (empty when there is none or it is unreadable); entries
    whose path is not one the site can have (``safe_rel``) are dropped."""
    try:
        raw = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        files = raw["files"] if raw.get("format") == FORMAT else {}
        return {str(k): Entry(str(v[0]), int(v[1]), int(v[2])) for k, v in files.items() if safe_rel(str(k))}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return {}


def read_stamps(root: Path) -> dict[str, str]:
    """What made some files of an earlier export (a generator and its version), by path: a file whose stamp
    is unchanged need not even be generated again (the Vega bundle)."""
    try:
        raw = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in raw.get("stamps", {}).items()} if raw.get("format") == FORMAT else {}
    except (OSError, ValueError, AttributeError):
        return {}


def check_folder(root: Path) -> None:
    """Raise ExportFolderError unless ``root`` is missing, empty or an earlier export."""
    if root.is_symlink():
        raise ExportFolderError(f"{root} is a symbolic link; give the real folder")
    if root.exists() and not root.is_dir():
        raise ExportFolderError(f"{root} is not a folder")
    if root.is_dir() and not (root / MANIFEST).is_file():
        names = sorted(p.name for p in root.iterdir() if p.name != LOCK)
        if names:
            shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
            raise ExportFolderError(f"{root} is not empty and holds no earlier export ({shown}): choose an empty "
                                    "or new folder, or a folder written by an earlier export")


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the export lock of ``root`` (created if missing); ExportFolderError when another export holds it."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        with file_lock(root / LOCK, wait=False):
            yield
    except LockBusy:
        raise ExportFolderError(f"another export is writing {root}") from None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes) -> os.stat_result:
    """Write ``data`` to ``path`` through a temporary file renamed over it (creating its folder); its stat."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return os.stat(path)


@dataclass
class Writer:
    """Writes files under ``root``, skipping those whose content is unchanged since ``previous``.

    ``entries`` collects every file of the new site (written or kept); ``written`` the ones
    actually written. Paths are relative, with '/' separators.
    """

    root: Path
    previous: dict[str, Entry] = field(default_factory=dict)
    entries: dict[str, Entry] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)

    def unchanged(self, rel: str, digest: str) -> Entry | None:
        """The previous entry of ``rel`` when it has the hash ``digest`` and the file is as it was written."""
        old = self.previous.get(rel)
        if old is None or old.sha256 != digest:
            return None
        try:
            st = os.stat(self.root / rel, follow_symlinks=False)
        except OSError:
            return None
        if st.st_size != old.size:
            return None
        if st.st_mtime_ns != old.mtime_ns:  # copied, checked out or touched: the same bytes?
            try:
                with open(self.root / rel, "rb") as fh:
                    if sha256(fh.read(old.size + 1)) != digest:
                        return None
            except OSError:
                return None
            return Entry(digest, st.st_size, st.st_mtime_ns)
        return old

    def write(self, rel: str, data: bytes | str) -> bool:
        """Write ``data`` to ``root/rel`` unless it is unchanged; True when written."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        digest = sha256(raw)
        return self.write_hashed(rel, raw, digest)

    def write_hashed(self, rel: str, raw: bytes, digest: str) -> bool:
        """``write`` for bytes whose SHA-256 is known."""
        kept = self.unchanged(rel, digest)
        if kept is not None:
            self.entries[rel] = kept
            return False
        st = atomic_write(self.inside(rel), raw)
        self.entries[rel] = Entry(digest, st.st_size, st.st_mtime_ns)
        self.written.append(rel)
        return True

    def inside(self, rel: str) -> Path:
        """``root/rel``; ExportFolderError when a folder on the way is a symbolic link (a write would land
        outside the export folder)."""
        path = self.root / rel
        d = path.parent
        while d != self.root and len(d.parts) > len(self.root.parts):
            if d.is_symlink():
                raise ExportFolderError(f"{d} is a symbolic link: the export writes only inside {self.root}")
            d = d.parent
        return path

    def keep_if_present(self, rel: str, digest: str) -> bool:
        """Record ``rel`` as part of the site without reading its content again when the file is there as
        written with the hash ``digest`` (a raw file named by its hash); False when it must be written."""
        kept = self.unchanged(rel, digest)
        if kept is None:
            return False
        self.entries[rel] = kept
        return True

    def merge(self, entries: dict[str, Entry], written: list[str]) -> None:
        """Add the files another process wrote into the same folder."""
        self.entries.update(entries)
        self.written.extend(written)


def finish(root: Path, entries: dict[str, Entry], stamps: dict[str, str] | None = None,
           previous: dict[str, Entry] | None = None) -> list[str]:
    """Remove the files of the last export (``previous``, its manifest) that the new site (``entries``) does
    not have, and the folders that leaves empty; files the export never wrote stay. Then write the new
    manifest (with ``stamps``, see ``read_stamps``). Returns the removed paths."""
    removed: list[str] = []
    for rel in sorted(set(previous or {}) - set(entries) - {MANIFEST, LOCK}):
        if not safe_rel(rel):
            continue
        path = root / rel
        try:
            inside = not any(p.is_symlink() for p in path.parents if len(p.parts) > len(root.parts))
            if inside and (path.is_file() or path.is_symlink()):
                path.unlink()
                removed.append(rel)
        except OSError:
            continue
        d = path.parent
        while len(d.parts) > len(root.parts):
            try:
                d.rmdir()  # only when empty
            except OSError:
                break
            d = d.parent
    manifest = {"format": FORMAT, "stamps": dict(sorted((stamps or {}).items())),
                "files": {k: [e.sha256, e.size, e.mtime_ns] for k, e in sorted(entries.items())}}
    atomic_write(root / MANIFEST, json.dumps(manifest, separators=(",", ":")).encode())
    return sorted(removed)
