"""Zip archives built byte by byte, so a test can make every header say what it likes (sizes that lie,
methods nobody supports, encryption flags, links, entries that share their data)."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

STORED, DEFLATED = 0, 8


@dataclass
class Raw:
    """One entry as it will be written: ``data`` is the payload as stored (already compressed)."""

    name: str | bytes
    data: bytes = b""
    method: int = STORED
    crc: int | None = None  # default: CRC of ``plain``
    usize: int | None = None  # default: len(plain)
    plain: bytes | None = None  # the inflated content (for the defaults); default: data
    flags: int = 0
    unix_mode: int | None = None  # st_mode kept in the external attributes (create_system 3)
    share_with: int | None = None  # central entry points at the local header of this earlier entry


def deflate(plain: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(plain) + c.flush()


def deflate_zeros(n: int, chunk: int = 1 << 20) -> bytes:
    """A raw deflate stream of ``n`` zero bytes, made fast: after a full flush the compressor starts
    afresh, so the block for one chunk of zeros can simply be repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(chunk)) + c.flush(zlib.Z_FULL_FLUSH)
    q, r = divmod(n, chunk)
    return block * q + c.compress(bytes(r)) + c.flush()


def build(entries: list[Raw], comment: bytes = b"", cd_size: int | None = None) -> bytes:
    """The archive bytes (local headers and data, central directory, end record)."""
    out = bytearray()
    offsets: list[int] = []
    central = bytearray()
    flag_utf8 = 0x800
    for e in entries:
        name = e.name.encode("utf-8", "surrogatepass") if isinstance(e.name, str) else e.name
        plain = e.plain if e.plain is not None else e.data
        crc = e.crc if e.crc is not None else zlib.crc32(plain)
        usize = e.usize if e.usize is not None else len(plain)
        flags = e.flags | flag_utf8
        if e.share_with is None:
            offset = len(out)
            out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, flags, e.method, 0, 0x21, crc, len(e.data),
                               usize, len(name), 0) + name + e.data
        else:
            offset = offsets[e.share_with]
        offsets.append(offset)
        system, attrs = (3, (e.unix_mode << 16)) if e.unix_mode is not None else (0, 0)
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", (system << 8) | 20, 20, flags, e.method, 0,
                               0x21, crc, len(e.data), usize, len(name), 0, 0, 0, 0, attrs, offset) + name
    cd_offset = len(out)
    out += central
    n = len(entries)
    out += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                       cd_size if cd_size is not None else len(central), cd_offset, len(comment)) + comment
    return bytes(out)


def tiny_entries(n: int) -> bytes:
    """An archive of ``n`` empty files (fast: no zlib, no zipfile)."""
    local = bytearray()
    central = bytearray()
    crc = 0
    for i in range(n):
        name = f"s/f{i}.txt".encode()
        off = len(local)
        local += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0x21, crc, 0, 0, len(name), 0) + name
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, crc, 0, 0, len(name),
                               0, 0, 0, 0, 0, off) + name
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), len(central),
                      len(local), 0)
    return bytes(local + central + end)
