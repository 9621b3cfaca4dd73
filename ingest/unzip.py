"""Unpacking an uploaded zip archive without trusting it.

Nothing in an archive's headers is believed: the central directory is bounded
before it is parsed, every entry is inflated here (not by ``zipfile``) in small
steps while its real output is counted against the per-file and total limits, and
an entry that inflates to more (or less) than its header says, or whose checksum
differs, is corrupt. Names are checked before anything is written: absolute paths,
``..``, macOS metadata, hidden files and repeated entries are skipped and listed;
links, encrypted entries, unsupported compression methods, a name that is both a
file and a folder, NUL characters and over-long names are errors. Files are only
ever created inside the destination folder (``O_EXCL | O_NOFOLLOW``).
"""

from __future__ import annotations

import io
import os
import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ingest.errors import IngestError, safe
from ingest.files import unprintable_problem
from ingest.limits import LIMITS, Limits

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_LOCAL = b"PK\x03\x04"
_CHUNK = 64 * 1024
_OUT_STEP = 1 << 20
_METHODS = {0: "stored", 1: "shrunk", 6: "imploded", 8: "deflate", 9: "deflate64", 12: "bzip2", 14: "LZMA",
            93: "zstandard", 95: "xz", 98: "PPMd", 99: "AES-encrypted"}
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass
class Entry:
    """One file of the archive, checked and ready to inflate."""

    info: zipfile.ZipInfo
    rel: str  # normalised '/'-separated path inside the archive


def _directory_size(data: bytes) -> int | None:
    """Size of the central directory as the end record states it (None: no end record)."""
    tail_start = max(0, len(data) - (65535 + 22))
    at = data.rfind(_EOCD, tail_start)
    if at < 0 or at + 22 > len(data):
        return None
    (size,) = struct.unpack_from("<I", data, at + 12)
    if size == 0xFFFFFFFF and at >= 20 and data[at - 20:at - 16] == _EOCD64_LOCATOR:
        (rec,) = struct.unpack_from("<Q", data, at - 12)
        if rec + 56 <= len(data) and data[rec:rec + 4] == b"PK\x06\x06":
            (size,) = struct.unpack_from("<Q", data, rec + 40)
    return size


def _name_checks(raw: str, limits: Limits) -> tuple[str | None, str | None, str | None]:
    """(normalised path, reason to skip, error) for an entry name."""
    if "\x00" in raw:
        return None, None, "its name holds a NUL character"
    unprintable = unprintable_problem(raw)  # the rule of a local folder's names too
    if unprintable is not None:
        return None, None, unprintable
    name = raw.replace("\\", "/")
    if name.startswith("/") or _DRIVE.match(name):
        return None, "an absolute path, outside the archive's folder: not extracted", None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts:
        return None, "an empty name: not extracted", None
    if ".." in parts:
        return None, "leads out of the archive's folder (..): not extracted", None
    if parts[0] == "__MACOSX":
        return None, "macOS metadata (__MACOSX): skipped", None
    if any(p.startswith(".") for p in parts):
        return None, "hidden (its name starts with '.'): skipped", None
    rel = "/".join(parts)
    for p in parts:
        if len(p.encode("utf-8", "surrogatepass")) > limits.name_bytes:
            return None, None, f"a name in its path is longer than {limits.name_bytes} bytes"
    if len(rel.encode("utf-8", "surrogatepass")) > limits.path_bytes:
        return None, None, f"its path is longer than {limits.path_bytes} bytes"
    if len(parts) > limits.dir_depth + 2:
        return None, None, f"it is more than {limits.dir_depth + 2} folders deep"
    return rel, None, None


def check_archive(data: bytes, limits: Limits = LIMITS) -> tuple[list[Entry], list[str], list[str]]:
    """Read the directory of an archive: (files to extract, skipped 'name: why', errors 'name: why').

    Side effects: none. Raises IngestError when it is not a readable archive at all.
    """
    if len(data) > limits.upload_bytes:
        raise IngestError([f"the archive is {len(data):,} bytes, more than the {limits.upload_bytes:,} allowed"])
    size = _directory_size(data)
    if size is None:
        raise IngestError(["not a zip archive (no end-of-archive record): upload a .zip file"])
    if size > limits.zip_directory_bytes:
        raise IngestError([f"the archive's directory is {size:,} bytes, more than the {limits.zip_directory_bytes:,} "
                           "allowed: too many entries"])
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except Exception as exc:  # zipfile raises many kinds on crafted input; all mean the same to a user
        raise IngestError([f"not a readable zip archive ({exc.__class__.__name__}: {exc})"]) from None
    if len(infos) > limits.zip_entries:
        raise IngestError([f"the archive has {len(infos):,} entries, more than the {limits.zip_entries:,} allowed"])
    skipped: list[str] = []
    errors: list[str] = []
    files: dict[str, Entry] = {}
    dirs: set[str] = set()
    offsets: dict[int, str] = {}
    declared_total = 0
    for info in infos:
        shown = info.orig_filename  # zipfile cuts a name at a NUL; the check must see all of it
        rel, skip, err = _name_checks(info.orig_filename, limits)
        if err is not None:
            errors.append(f"{safe(shown)}: {err}")
            continue
        if skip is not None:
            skipped.append(f"{shown}: {skip}")
            continue
        assert rel is not None
        kind = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
        if kind == stat.S_IFLNK:
            errors.append(f"{shown}: is a symbolic link; links are refused (put the file itself in the archive)")
            continue
        if info.is_dir() or kind == stat.S_IFDIR:
            dirs.add(rel)
            continue
        if kind not in (0, stat.S_IFREG):
            errors.append(f"{shown}: is not a regular file")
            continue
        if info.flag_bits & 0x1 or info.compress_type == 99:
            errors.append(f"{shown}: is encrypted; upload an archive without a password")
            continue
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = _METHODS.get(info.compress_type, "unknown")
            errors.append(f"{shown}: uses compression method {info.compress_type} ({method}), which is not "
                          "supported; zip it with the standard method (deflate) or none")
            continue
        if rel in files:
            skipped.append(f"{shown}: appears twice in the archive; the first copy was kept")
            continue
        if info.header_offset in offsets:
            errors.append(f"{shown}: shares its data with {offsets[info.header_offset]} (a crafted archive)")
            continue
        offsets[info.header_offset] = shown
        if info.file_size > limits.inflated_file:
            errors.append(f"{shown}: inflates to {info.file_size:,} bytes, more than the {limits.inflated_file:,} "
                          "allowed per file")
            continue
        declared_total += info.file_size
        files[rel] = Entry(info=info, rel=rel)
    for rel in files:
        for parent in PurePosixPath(rel).parents:
            if str(parent) in files:
                errors.append(f"{files[str(parent)].info.filename}: is a file and also a folder of "
                              f"{files[rel].info.filename} in the archive")
    if declared_total > limits.inflated_total:
        errors.append(f"the archive inflates to {declared_total:,} bytes, more than the {limits.inflated_total:,} "
                      "allowed")
    return list(files.values()), skipped, errors


def _data_range(data: bytes, info: zipfile.ZipInfo) -> tuple[int, int]:
    """(start, end) of an entry's compressed bytes, from its local header; raises ValueError."""
    at = info.header_offset
    if at < 0 or at + 30 > len(data) or data[at:at + 4] != _LOCAL:
        raise ValueError("its local header is missing")
    name_len, extra_len = struct.unpack_from("<HH", data, at + 26)
    start = at + 30 + name_len + extra_len
    end = start + info.compress_size
    if end > len(data):
        raise ValueError("its data runs past the end of the archive")
    return start, end


def _write(dest: Path, rel: str) -> int:
    """A new file at ``dest/rel`` (folders made as needed, nothing followed, nothing replaced)."""
    target = dest.joinpath(*rel.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)


def extract(data: bytes, dest: Path, limits: Limits = LIMITS) -> list[str]:
    """Unpack the archive ``data`` into the empty folder ``dest``; returns the skipped entries ('name: why').

    Side effects: writes files under ``dest`` only. Raises IngestError (with the skipped
    entries as notes) for a bad archive; whatever was written stays in ``dest`` for the
    caller to remove.
    """
    entries, skipped, errors = check_archive(data, limits)
    if errors:
        raise IngestError(errors, notes=skipped)
    total = 0
    view = memoryview(data)
    for e in entries:
        info = e.info
        try:
            start, end = _data_range(data, info)
        except ValueError as exc:
            raise IngestError([f"{info.filename}: corrupt archive: {exc}"], notes=skipped) from None
        fd = _write(dest, e.rel)
        produced = 0
        crc = 0
        try:
            with os.fdopen(fd, "wb") as out:
                if info.compress_type == zipfile.ZIP_STORED:
                    for i in range(start, end, _CHUNK):
                        piece = view[i:min(end, i + _CHUNK)]
                        produced += len(piece)
                        crc = zlib.crc32(piece, crc)
                        out.write(piece)
                else:
                    d = zlib.decompressobj(-15)
                    pos = start
                    pending: bytes = b""
                    while not d.eof:
                        if not pending:
                            if pos >= end:
                                break
                            pending = bytes(view[pos:min(end, pos + _CHUNK)])
                            pos += len(pending)
                        chunk = d.decompress(pending, _OUT_STEP)
                        pending = d.unconsumed_tail
                        produced += len(chunk)
                        if produced > info.file_size:
                            raise IngestError([f"{info.filename}: inflates to more than its header says "
                                               f"({info.file_size:,} bytes): a zip bomb or a corrupt archive"],
                                              notes=skipped)
                        if total + produced > limits.inflated_total:
                            raise IngestError([f"{info.filename}: the archive inflates to more than the "
                                               f"{limits.inflated_total:,} bytes allowed"], notes=skipped)
                        crc = zlib.crc32(chunk, crc)
                        out.write(chunk)
                    if not d.eof:
                        raise IngestError([f"{info.filename}: corrupt data (the compressed stream ends early)"],
                                          notes=skipped)
        except zlib.error as exc:
            raise IngestError([f"{info.filename}: corrupt data ({exc})"], notes=skipped) from None
        total += produced
        if produced != info.file_size:
            raise IngestError([f"{info.filename}: corrupt archive: the header says {info.file_size:,} bytes, the "
                               f"entry holds {produced:,}"], notes=skipped)
        if crc != info.CRC:
            raise IngestError([f"{info.filename}: corrupt data (checksum mismatch)"], notes=skipped)
    return skipped


def write_files(files: list[tuple[str, bytes]], dest: Path, limits: Limits = LIMITS) -> list[str]:
    """Write uploaded (name, bytes) files into the empty folder ``dest`` with the same name rules and
    limits as an archive; returns the skipped entries. Raises IngestError for bad names or sizes."""
    if len(files) > limits.zip_entries:
        raise IngestError([f"{len(files):,} files, more than the {limits.zip_entries:,} allowed"])
    skipped: list[str] = []
    errors: list[str] = []
    taken: dict[str, bytes] = {}
    total = 0
    for name, content in files:
        rel, skip, err = _name_checks(name, limits)
        if err is not None:
            errors.append(f"{safe(name)}: {err}")
        elif skip is not None:
            skipped.append(f"{name}: {skip}")
        elif rel in taken:
            skipped.append(f"{name}: appears twice; the first copy was kept")
        elif len(content) > limits.inflated_file:
            errors.append(f"{name}: {len(content):,} bytes, more than the {limits.inflated_file:,} allowed per file")
        else:
            assert rel is not None
            taken[rel] = content
            total += len(content)
    for rel in taken:
        for parent in PurePosixPath(rel).parents:
            if str(parent) in taken:
                errors.append(f"{parent}: is a file and also a folder of {rel}")
    if total > limits.inflated_total:
        errors.append(f"the files hold {total:,} bytes, more than the {limits.inflated_total:,} allowed")
    if errors:
        raise IngestError(errors, notes=skipped)
    for rel, content in taken.items():
        with os.fdopen(_write(dest, rel), "wb") as out:
            out.write(content)
    return skipped
