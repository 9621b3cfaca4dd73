"""Reading raw folders from disk without trusting them.

Only regular files and folders are read. A symbolic link (to anything), a named pipe,
a socket or a device is refused by name, with the reason: nothing is ever followed
out of the folder given. Folders are walked through file descriptors
(``O_NOFOLLOW``), so a link swapped in while the walk runs is refused too, not
followed. Hidden entries (names starting with '.') are skipped and listed.
Every size is bounded (``ingest.limits``): files per setup, folder depth, name
length, JSON document and attachment bytes; sizes are counted while reading, never
taken from ``stat`` alone.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ingest.errors import safe
from ingest.limits import LIMITS, Limits

SETUP_NAME = "setup.json"
CONTRACT_NAME = "contract.json"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


@dataclass
class RawFile:
    """A regular file of a setup folder: where it is, its hash and size (and bytes, for JSON documents)."""

    path: Path
    rel: str  # relative to the setup folder, '/'-separated
    sha256: str
    size: int
    data: bytes | None = None  # held for setup.json and contract.json only


@dataclass
class Listing:
    """Everything found in one setup folder."""

    folder: Path
    files: dict[str, RawFile] = field(default_factory=dict)  # rel -> file
    skipped: list[str] = field(default_factory=list)  # 'path: why' of hidden entries
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


LINK = "is a symbolic link; links are never followed (copy the file itself into the folder)"


def kind_of(mode: int) -> str | None:
    """Why a file of this mode is refused, or None for regular files and folders."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISLNK(mode):
        return LINK
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    return "is not a regular file"


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def unprintable_problem(name: str) -> str | None:
    """Why a name holding a non-printable character (a terminal escape, a newline, a bidi override: shown raw
    on a card or a page) is refused, naming the first such character escaped, or None.

    >>> unprintable_problem("a\\x1bb")
    'its name holds the control character \\\\x1b (U+001B); rename the file with printable characters only'
    """
    if name.isprintable():
        return None
    odd = next(c for c in name if not c.isprintable())
    return (f"its name holds the control character {safe(odd)} (U+{ord(odd):04X}); rename the file with printable "
            "characters only")


def name_problem(name: str, limits: Limits = LIMITS) -> str | None:
    """Why a file or folder name found in an input can not be stored, or None (the rule of an uploaded
    archive's names too: not UTF-8, a non-printable character, too long)."""
    if not _utf8(name):
        return "its name is not valid UTF-8"
    unprintable = unprintable_problem(name)
    if unprintable is not None:
        return unprintable
    if len(name.encode("utf-8")) > limits.name_bytes:
        return f"its name is longer than {limits.name_bytes} bytes"
    return None


def _open_file(name: str, dir_fd: int) -> tuple[int | None, int, str | None]:
    """(descriptor, size stated by ``fstat``, None) of the regular file ``name`` in ``dir_fd``, or (None, 0, why)."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, 0, kind_of(stat.S_IFLNK)
        return None, 0, f"can not be read ({exc.strerror})"
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None, 0, kind_of(st.st_mode)
    return fd, st.st_size, None


def read_bounded(name: str, dir_fd: int, limit: int, keep: bool) -> tuple[str, int, bytes | None, str | None]:
    """(sha256, size, bytes when ``keep``, problem) of the regular file ``name`` in ``dir_fd``.

    Reads at most ``limit`` + ``_CHUNK`` bytes; a larger file is a problem (its size is counted while reading,
    not taken from stat alone: a file that grows while it is read is caught). A kept file is read in one piece
    of its stated size (and one byte more, to see its end), so that it is never held twice; others in chunks.
    """
    fd, declared, problem = _open_file(name, dir_fd)
    if fd is None:
        return "", 0, None, problem
    h = hashlib.sha256()
    size = 0
    parts: list[bytes] = []
    try:
        if declared > limit:
            return "", declared, None, f"is {declared:,} bytes, more than the {limit:,} allowed"
        while True:
            want = declared + 1 - size if size <= declared else _CHUNK
            chunk = os.read(fd, want if keep else min(want, _CHUNK))
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                return "", size, None, f"is more than the {limit:,} bytes allowed"
            h.update(chunk)
            if keep:
                parts.append(chunk)
    except OSError as exc:
        return "", size, None, f"can not be read ({exc.strerror})"
    finally:
        os.close(fd)
    data = (parts[0] if len(parts) == 1 else b"".join(parts)) if keep else None
    return h.hexdigest(), size, data, None


def is_json_document(rel: str) -> bool:
    """setup.json at the top of a setup folder, or any contract.json below it."""
    return rel == SETUP_NAME or rel.endswith("/" + CONTRACT_NAME)


def list_setup_folder(folder: Path, limits: Limits = LIMITS) -> Listing:
    """Walk one setup folder (never following links) and read every file once.

    JSON documents are kept in memory (bounded by ``contract_bytes``/``setup_bytes``);
    attachments are hashed in chunks. Problems are returned, not raised.
    """
    out = Listing(folder=folder)
    try:
        root = os.open(folder, _DIR_FLAGS)
    except OSError as exc:
        reason = LINK if exc.errno == errno.ELOOP else f"can not be opened ({exc.strerror})"
        out.problems.append((str(folder), reason))
        return out
    count = 0
    stack: list[tuple[int, str, int]] = [(root, "", 0)]
    try:
        while stack:
            dfd, prefix, depth = stack.pop()
            try:
                count = _list_dir(folder, dfd, prefix, depth, count, stack, out, limits)
            finally:
                os.close(dfd)
            if count > limits.files_per_setup:
                break
    finally:
        for dfd, _, _ in stack:
            os.close(dfd)
    return out


def _list_dir(folder: Path, dfd: int, prefix: str, depth: int, count: int, stack: list[tuple[int, str, int]],
              out: Listing, limits: Limits) -> int:
    """Read the entries of one folder of a setup folder; returns the running count of entries."""
    try:
        with os.scandir(dfd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        out.problems.append((str(folder / prefix), f"can not be listed ({exc.strerror})"))
        return count
    for e in entries:
        rel = prefix + e.name
        shown = f"{folder}/{rel}"
        if e.name.startswith("."):
            out.skipped.append(f"{shown}: hidden, skipped")
            continue
        bad = name_problem(e.name, limits)
        if bad is None and len(rel.encode("utf-8")) > limits.path_bytes:
            bad = f"its path is longer than {limits.path_bytes} bytes"
        if bad is not None:
            out.problems.append((shown, bad))
            continue
        count += 1
        if count > limits.files_per_setup:
            out.problems.append((str(folder), f"holds more than {limits.files_per_setup:,} files and folders; "
                                              "split it or leave out what is not needed"))
            return count
        try:  # the type from the listing itself where the file system gives it (no stat per entry)
            mode = (stat.S_IFDIR if e.is_dir(follow_symlinks=False) else
                    stat.S_IFREG if e.is_file(follow_symlinks=False) else e.stat(follow_symlinks=False).st_mode)
        except OSError as exc:
            out.problems.append((shown, f"can not be read ({exc.strerror})"))
            continue
        if stat.S_ISDIR(mode):
            if e.name in (SETUP_NAME, CONTRACT_NAME):
                out.problems.append((shown, "is a folder; expected a file"))
                continue
            if depth + 1 > limits.dir_depth:
                out.problems.append((shown, f"is more than {limits.dir_depth} folder levels deep"))
                continue
            try:
                sub = os.open(e.name, _DIR_FLAGS, dir_fd=dfd)
            except OSError as exc:
                why = kind_of(stat.S_IFLNK) if exc.errno == errno.ELOOP else f"can not be opened ({exc.strerror})"
                out.problems.append((shown, why or ""))
                continue
            stack.append((sub, rel + "/", depth + 1))
            continue
        why = kind_of(mode)
        if why is not None:
            out.problems.append((shown, why))
            continue
        json_doc = is_json_document(rel)
        if json_doc:
            limit = limits.setup_bytes if rel == SETUP_NAME else limits.contract_bytes
        else:
            limit = limits.attachment_bytes
        sha, size, data, why = read_bounded(e.name, dfd, limit, keep=json_doc)
        if why is not None:
            out.problems.append((shown, why))
            continue
        out.files[rel] = RawFile(path=folder / rel, rel=rel, sha256=sha, size=size, data=data)
    return count


def has_setup_file(folder: Path) -> bool:
    """True when ``folder`` holds a setup.json entry (of any type: a link named setup.json counts, and is
    then refused by the walk)."""
    try:
        os.lstat(folder / SETUP_NAME)
    except OSError:
        return False
    return True


def find_setup_folders(paths: list[Path], limits: Limits = LIMITS) -> tuple[list[Path], list[tuple[str, str]],
                                                                            list[str]]:
    """Setup folders named by ``paths`` (a setup folder, or a folder of them, at any depth).

    Returns (folders, problems as (path, why), skipped 'path: why'). The paths given are
    resolved (a site's own folders, data/local, may be links; ``python -m ingest`` refuses a
    link given on its command line before this); below them no link is followed: a linked
    folder is a problem, not a silent gap. Names below them follow ``name_problem``; the name
    of a path given is the user's own, shown escaped.
    """
    folders: list[Path] = []
    problems: list[tuple[str, str]] = []
    skipped: list[str] = []
    for given in paths:
        try:
            p = given.resolve(strict=True)
        except (OSError, RuntimeError):
            problems.append((str(given), "no such file or folder"))
            continue
        if not _utf8(str(p)):
            problems.append((str(given), "its path is not valid UTF-8"))
            continue
        if p.is_file():
            if p.name == SETUP_NAME:
                folders.append(p.parent)
            else:
                problems.append((str(given), f"give the setup folder (the one with {SETUP_NAME}), not a single file"))
            continue
        if not p.is_dir():
            problems.append((str(given), kind_of(p.stat().st_mode) or "is not a folder"))
            continue
        if has_setup_file(p):
            folders.append(p)
            continue
        found = _scan_for_setups(p, limits, problems, skipped)
        if not found and not any(q == str(p) or q.startswith(str(p) + "/") for q, _ in problems):
            problems.append((str(given), f"no {SETUP_NAME} found (an empty folder or not a setup folder)"))
        folders.extend(found)
    return list(dict.fromkeys(folders)), problems, skipped


def _scan_for_setups(root: Path, limits: Limits, problems: list[tuple[str, str]], skipped: list[str]) -> list[Path]:
    """Setup folders below ``root`` (not following links); a setup folder is not entered."""
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append((str(folder), f"can not be listed ({exc.strerror})"))
            continue
        subdirs = []
        for e in entries:
            path = folder / e.name
            if e.name.startswith("."):
                skipped.append(f"{path}: hidden, skipped")
                continue
            bad = name_problem(e.name, limits)
            if bad is not None:
                problems.append((str(path), bad))
                continue
            try:
                mode = e.stat(follow_symlinks=False).st_mode
            except OSError as exc:
                problems.append((str(path), f"can not be read ({exc.strerror})"))
                continue
            if stat.S_ISDIR(mode):
                subdirs.append(path)
            elif stat.S_ISLNK(mode):
                problems.append((str(path), kind_of(mode) or ""))
            elif stat.S_ISREG(mode):
                skipped.append(f"{path}: not inside a setup folder, skipped")
            else:
                skipped.append(f"{path}: {kind_of(mode)}, skipped")
        for sub in reversed(subdirs):
            if has_setup_file(sub):
                found.append(sub)
            elif depth + 1 < limits.dir_depth:
                stack.append((sub, depth + 1))
            else:
                problems.append((str(sub), f"is more than {limits.dir_depth} folder levels below {root}"))
    return sorted(found)
