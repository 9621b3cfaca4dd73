"""Incremental writes of the static site: a file is rewritten only when its content changed.

The export folder keeps a manifest (``.benchcards-export.json``): for every file of the
site its SHA-256, size and modification time as written. A new export hashes each file
it would write; when the manifest has the same hash and the file on disk still has the
recorded size and modification time (nobody touched it), or the same size and content
(a copied or checked-out folder has new modification times), the file is left alone, so
its bytes stay as they were. Every write goes to a temporary file in the same folder and
is renamed over the old one (a reader never sees half a page); no write goes through a
symbolic link out of the folder. After the export, the files the last export wrote that
the new site no longer has are removed, and only while their content is still what the
export wrote (same size and SHA-256): a file the export never wrote (a ``.git`` folder, a
``CNAME``, notes), or one listed in an edited manifest, or one changed by hand since, is left
alone. The manifest is replaced the same way.

The folder must be empty, new, or an earlier export (it has a manifest): a folder with
other content is refused, so a wrong path never writes into someone's files. One export
at a time writes a folder (an exclusive lock on ``.benchcards-export.lock``, taken before
the folder is looked at, so a second export is told that another one is writing). The
manifest is bounded (``MANIFEST_LIMIT`` bytes, ``MANIFEST_ENTRIES`` files) and read one entry
at a time; one that cannot be read is a clear error that names it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from benchcards.domain.errors import BenchcardsError
from benchcards.read.locks import LockBusy, file_lock

MANIFEST = ".benchcards-export.json"
LOCK = ".benchcards-export.lock"
FORMAT = 1
#: the largest manifest read (bytes): about 100 bytes a file, so room for some 150,000 files
MANIFEST_LIMIT = 16 * 1024 * 1024
#: the most files a manifest may list (a site of thousands of setups has tens of thousands)
MANIFEST_ENTRIES = 150_000


class ExportFolderError(BenchcardsError, RuntimeError):
    """The output folder cannot be used (not an earlier export, or another export is writing it)."""


def safe_rel(rel: str) -> bool:
    """True for a path the site can have: relative, '/'-separated, no '..', '.', empty or hidden parts (the
    manifest is a file in the folder anyone may edit: its paths never lead out of the folder)."""
    parts = rel.split("/")
    return bool(rel) and "\\" not in rel and "\0" not in rel and all(p and not p.startswith(".") for p in parts)


class Entry(NamedTuple):
    """One file of the site as last written: content hash, size, modification time (ns). A tuple: an export
    holds one per file of the site."""

    sha256: str
    size: int
    mtime_ns: int


class PackedEntries(dict):
    """Entries by path, each kept as 48 packed bytes (hash, size, time) instead of three Python objects: a
    manifest of 150,000 files then takes ~35 MB, not ~100. Reads give ``Entry`` values."""

    _FMT = struct.Struct(">32sqq")

    def __setitem__(self, rel: str, e: Entry) -> None:
        super().__setitem__(rel, self._FMT.pack(bytes.fromhex(e.sha256), e.size, e.mtime_ns))

    def __getitem__(self, rel: str) -> Entry:
        sha, size, mtime = self._FMT.unpack(super().__getitem__(rel))
        return Entry(sha.hex(), size, mtime)

    def get(self, rel: str, default: Any = None) -> Any:  # unpacks (dict.get would not)
        if rel in self:
            return self[rel]
        return default

    def items(self) -> Iterator[tuple[str, Entry]]:  # type: ignore[override]
        return ((k, self[k]) for k in self)

    def values(self) -> Iterator[Entry]:  # type: ignore[override]
        return (self[k] for k in self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and dict(self.items()) == dict(other.items())

    __hash__ = None


@dataclass
class Manifest:
    """What an earlier export recorded: its files and the stamps of what made some of them."""

    files: dict[str, Entry] = field(default_factory=PackedEntries)
    stamps: dict[str, str] = field(default_factory=dict)


def _manifest_error(root: Path, why: str) -> ExportFolderError:
    return ExportFolderError(f"{root / MANIFEST} cannot be read as an export's manifest ({why}): move it away "
                             "and export into an empty or new folder, or restore the file the last export wrote")


_WS = " \t\n\r"


class _Scan:
    """Reads a JSON object one member at a time (the manifest's two big objects never become one tree)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0
        self.decoder = json.JSONDecoder()

    def skip(self) -> str:
        t, n = self.text, len(self.text)
        while self.pos < n and t[self.pos] in _WS:
            self.pos += 1
        return t[self.pos] if self.pos < n else ""

    def expect(self, ch: str) -> None:
        if self.skip() != ch:
            raise ValueError(f"expected {ch!r} at character {self.pos}")
        self.pos += 1

    def value(self) -> Any:
        self.skip()
        v, self.pos = self.decoder.raw_decode(self.text, self.pos)
        return v

    def members(self) -> Iterator[str]:
        """The keys of the object at the position; the caller reads each value with ``value`` or ``members``."""
        self.expect("{")
        if self.skip() == "}":
            self.pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise ValueError(f"a key that is not text at character {self.pos}")
            self.expect(":")
            yield key
            ch = self.skip()
            self.pos += 1
            if ch == "}":
                return
            if ch != ",":
                raise ValueError(f"expected ',' or '}}' at character {self.pos - 1}")


def load_manifest(root: Path) -> Manifest:
    """The manifest of an earlier export of ``root`` (empty when there is none); entries whose path is not one
    the site can have (``safe_rel``) or whose values are not a hash, a size and a time are dropped.
    ExportFolderError when the file is a link, larger than ``MANIFEST_LIMIT``, lists more than
    ``MANIFEST_ENTRIES`` files, or is not such a JSON object (nested too deep, not UTF-8, another format)."""
    path = root / MANIFEST
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return Manifest()
    except OSError as exc:
        raise _manifest_error(root, exc.strerror or "not readable") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _manifest_error(root, "not a regular file")
        if st.st_size > MANIFEST_LIMIT:  # refused before a byte of it is read
            raise _manifest_error(root, f"larger than {MANIFEST_LIMIT // 2**20} MiB")
        data = fh.read(MANIFEST_LIMIT + 1)
    if len(data) > MANIFEST_LIMIT:
        raise _manifest_error(root, f"larger than {MANIFEST_LIMIT // 2**20} MiB")
    try:
        text = data.decode("utf-8")
        del data
        return _parse_manifest(_Scan(text))
    except RecursionError:
        raise _manifest_error(root, "nested too deep") from None
    except (ValueError, TypeError) as exc:
        raise _manifest_error(root, str(exc)[:200]) from None


def _parse_manifest(scan: _Scan) -> Manifest:
    out = Manifest()
    seen_format = None
    for key in scan.members():
        if key == "format":
            seen_format = scan.value()
            if seen_format != FORMAT:
                raise ValueError(f"format {str(seen_format)[:20]}, not {FORMAT}")
        elif key == "files":
            for rel in scan.members():
                v = scan.value()
                if len(out.files) >= MANIFEST_ENTRIES:
                    raise ValueError(f"more than {MANIFEST_ENTRIES:,} files listed")
                if (safe_rel(rel) and isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)
                        and re.fullmatch(r"[0-9a-f]{64}", v[0])
                        and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63 for x in v[1:])):
                    out.files[rel] = Entry(v[0], v[1], v[2])
        elif key == "stamps":
            for rel in scan.members():
                v = scan.value()
                if len(out.stamps) >= MANIFEST_ENTRIES:
                    raise ValueError(f"more than {MANIFEST_ENTRIES:,} stamps listed")
                if isinstance(v, str):
                    out.stamps[rel] = v
        else:
            scan.value()
    if scan.skip():
        raise ValueError(f"text after the object at character {scan.pos}")
    if seen_format is None:
        raise ValueError("no format")
    return out


def read_manifest(root: Path) -> dict[str, Entry]:
    """The files of ``load_manifest``."""
    return load_manifest(root).files


def read_stamps(root: Path) -> dict[str, str]:
    """What made some files of an earlier export (a generator and its version), by path: a file whose stamp
    is unchanged need not even be generated again (the Vega bundle)."""
    return load_manifest(root).stamps


def check_path(root: Path) -> None:
    """Raise ExportFolderError when ``root`` cannot be a folder of the site: a symbolic link, a file, or a path
    through a file."""
    if root.is_symlink():
        raise ExportFolderError(f"{root} is a symbolic link; give the real folder")
    for p in (root, *root.parents):
        if p.exists() or p.is_symlink():
            if not p.is_dir():
                raise ExportFolderError(f"{p} is a file, not a folder: give a folder to write the site into "
                                        "(new, empty, or an earlier export)")
            break


def check_folder(root: Path) -> None:
    """Raise ExportFolderError unless ``root`` is missing, empty or an earlier export."""
    check_path(root)
    if root.is_dir() and not (root / MANIFEST).is_file():
        names = sorted(p.name for p in root.iterdir() if p.name != LOCK)
        if names:
            shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
            raise ExportFolderError(f"{root} is not empty and holds no earlier export ({shown}): choose an empty "
                                    "or new folder, or a folder written by an earlier export")


@dataclass
class Session:
    """One export holding the lock of its folder: ``writer`` is the writer of the site, once made."""

    root: Path
    writer: Writer | None = None


#: the name ``atomic_write`` gives its temporary files (eight characters: ``_temp_name``)
_TEMP_NAME = re.compile(r"\.tmp-[A-Za-z0-9_]{8}(\.[A-Za-z0-9]{1,8})?")


def sweep_temporary(root: Path) -> list[str]:
    """Remove the temporary files an interrupted export left in the export folder ``root`` (regular files named
    as ``atomic_write`` names them; links are neither followed nor removed); returns their paths. Only run
    under the folder's lock, on a folder with a manifest: no other export is writing, and it is an export's."""
    removed = []
    for folder, _dirs, files in os.walk(root):  # os.walk does not follow links to folders
        for name in files:
            path = Path(folder) / name
            if _TEMP_NAME.fullmatch(name) and path.is_file() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path.relative_to(root).as_posix())
    return removed


@contextlib.contextmanager
def locked(root: Path) -> Iterator[Session]:
    """Hold the export lock of ``root`` (the folder and the lock file are created if missing; both are removed
    again when this made them and the folder holds nothing else); ExportFolderError when another export holds
    it or the path cannot be a folder (``check_path``).

    Side effects: removes the temporary files an interrupted export left (``sweep_temporary``). When a first
    export into the folder stops before its end (an error, Ctrl-C), the files its ``Session.writer`` wrote are
    recorded in a manifest, so that the next export takes the folder for what it is, an earlier export, and
    finishes it, instead of refusing a folder that is not empty."""
    check_path(root)
    made = not root.exists()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportFolderError(f"{root} cannot be made a folder: {exc.strerror}") from None
    lock = root / LOCK
    had_lock = lock.exists()
    session = Session(root)
    try:
        with file_lock(lock, wait=False):
            if (root / MANIFEST).is_file():
                sweep_temporary(root)
            try:
                yield session
            except BaseException:
                if session.writer is not None and not (root / MANIFEST).exists():
                    # no stamps: every card is made again next time; and the folder (checked, then written into,
                    # by worker processes too) is an earlier export the next one takes
                    finish(root, session.writer.entries)
                raise
            finally:
                if not had_lock and not (root / MANIFEST).exists():
                    # a refused or failed first export leaves no lock file behind in someone's folder
                    with contextlib.suppress(OSError):
                        lock.unlink()
                    if made:
                        with contextlib.suppress(OSError):
                            root.rmdir()
    except LockBusy:
        raise ExportFolderError(f"another export is writing {root}: wait for it to finish") from None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
#: (pid, prefix, counter) of this process's temporary names
_temp_names: list = [None, "", 0]


def _temp_name(suffix: str) -> str:
    """A temporary file name as ``_TEMP_NAME`` matches: three random characters per process and a count (``mkstemp``
    cost a fifth of a millisecond a file, most of the static export's time writing its thousands of raw files).
    Unique within the process; ``O_EXCL`` guards against any other."""
    if _temp_names[0] != os.getpid():  # a new or forked process: its own prefix
        _temp_names[:] = [os.getpid(), "".join(secrets.choice(_DIGITS) for _ in range(3)), 0]
    n = _temp_names[2] = _temp_names[2] + 1
    count = ""
    for _ in range(5):
        n, d = divmod(n, 36)
        count = _DIGITS[d] + count
    return f".tmp-{_temp_names[1]}{count}{suffix if _TEMP_SUFFIX.fullmatch(suffix) else ''}"


_TEMP_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,8}")


def atomic_write(path: Path, data: bytes, *, folder_made: bool = False, new: bool = False) -> os.stat_result:
    """Write ``data`` to ``path`` through a temporary file renamed over it (creating its folder unless
    ``folder_made``); its stat. With ``new`` (the first export into an empty folder, which no one reads yet), a
    file not there yet is written in place (``_write_new``), and one already there through a temporary file."""
    folder = path.parent
    if not folder_made and not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
    if new and (st := _write_new(path, data, folder_made)) is not None:
        return st
    while True:
        tmp = os.path.join(folder, _temp_name(path.suffix))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
        except FileNotFoundError:
            if not folder_made:
                raise
            folder.mkdir(parents=True, exist_ok=True)  # removed since this export made it: made again
            folder_made = False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o644)
            st = os.fstat(fh.fileno())  # the renamed file's size and time: a rename changes neither
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return st


def _write_new(path: Path, data: bytes, folder_made: bool) -> os.stat_result | None:
    """Write ``data`` into a new file ``path`` (never over a file or a link already there: None then); its stat.
    A file written in place costs half what a temporary file and its rename cost (a first export writes thousands
    of raw files). A write that fails or is interrupted removes what it had written."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return None
    except FileNotFoundError:
        if not folder_made:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)  # removed since this export made it: made again
        fd = os.open(path, flags, 0o600)
    try:
        view, done = memoryview(data), 0
        while done < len(data):
            done += os.write(fd, view[done:])
        os.fchmod(fd, 0o644)
        return os.fstat(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)


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
    #: the folder held nothing before this export: a file not there yet is written in place (``atomic_write``)
    new: bool = False
    #: folders this writer has written into (made already: a write checks them for links all the same)
    _folders: set[Path] = field(default_factory=set, repr=False)

    def unchanged(self, rel: str, digest: str) -> Entry | None:
        """The previous entry of ``rel`` when it has the hash ``digest`` and the file is as it was written."""
        old = self.previous.get(rel)
        if old is None or old.sha256 != digest:
            return None
        self.inside(rel)  # a folder on the way made a link: refused, as a write there is
        try:
            st = os.stat(self.root / rel, follow_symlinks=False)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size != old.size:  # a link or a FIFO in its place: written anew
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
        path = self.inside(rel)
        st = atomic_write(path, raw, folder_made=path.parent in self._folders, new=self.new)
        self._folders.add(path.parent)
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


def all_as_written(root: Path, entries: dict[str, Entry]) -> bool:
    """True when every file of ``entries`` (a manifest) is under ``root`` with its recorded size and
    modification time (one ``stat`` each, no read): nobody touched the site since it was written."""
    if not entries:
        return False
    folders = {root / rel.rpartition("/")[0] for rel in entries if "/" in rel}
    if any(p.is_symlink() for f in folders for p in (f, *f.parents) if len(p.parts) > len(root.parts)):
        return False  # a folder of the site made a link: the export looks at every file (and refuses it)
    for rel, e in entries.items():
        try:
            st = os.stat(root / rel, follow_symlinks=False)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_size != e.size or st.st_mtime_ns != e.mtime_ns:
            return False
    return True


def still_written(path: Path, entry: Entry) -> bool:
    """True when ``path`` is a regular file (not a link) with the size and SHA-256 of ``entry``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO never blocks
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry.size:
            return False
        h = hashlib.sha256()
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() == entry.sha256


def finish(root: Path, entries: dict[str, Entry], stamps: dict[str, str] | None = None,
           previous: dict[str, Entry] | None = None) -> list[str]:
    """Remove the files of the last export (``previous``, its manifest) that the new site (``entries``) does
    not have and whose content is still what the export wrote (``still_written``), and the folders that
    leaves empty; every other file stays (one the export never wrote, one listed by an edited manifest, one
    changed by hand). Then write the new manifest (with ``stamps``, see ``read_stamps``). Returns the removed
    paths."""
    removed: list[str] = []
    prev = previous or {}
    for rel in sorted(set(prev) - set(entries) - {MANIFEST, LOCK}):
        if not safe_rel(rel):
            continue
        path = root / rel
        try:
            inside = not any(p.is_symlink() for p in path.parents if len(p.parts) > len(root.parts))
            if inside and still_written(path, prev[rel]):
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
