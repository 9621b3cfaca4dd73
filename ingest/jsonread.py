"""Strict JSON decoding of untrusted documents.

``parse`` accepts exactly: UTF-8 without a byte-order mark, one JSON value, no
duplicate object keys, nesting at most ``Limits.json_depth`` deep, finite numbers
only (no NaN/Infinity, no literal that overflows a 64-bit float, none that is not zero but would be read as
zero), integers of at most 30 digits and no unpaired UTF-16 surrogates in strings. Anything else is a one-line
problem naming where it is (line and column, or the JSON path).

The fast path is orjson plus an iterative walk (depth and key count) and a regex
count of keys in the raw bytes: if the text has more ``"…":`` than the parsed objects
have keys, a key may have been given twice, and the standard library parser (with a
hook that sees every key) decides and names the path. Nothing here recurses in
Python, so deeply nested input can not exhaust the stack.

``parse_unchecked`` checks only the duplicate-key rule, by comparing colon counts, for
callers whose models keep the other rules themselves (``ingest.validate``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from ingest.limits import LIMITS

#: with ``bytes.count(b'":')``: every JSON object key, plus strings holding '":' (an upper bound of the keys)
_LOOSE_KEY = re.compile(rb'"\s+:')
_MAX_INT_DIGITS = 30
#: every literal that is not zero but reads as 0.0 (below 2.5e-324) has an exponent of -100 or less or 100 zeros after
#: its point; a document holding this text anywhere (in a string, too) is read by the exact parser, which decides.
#: Two patterns that start with a literal, and a plain search: one pattern starting with [eE] scanned ~70 times
#: slower (0.1 s for 2.3 MB, 4 times orjson's parse of it)
_NEG_EXPONENTS = (re.compile(rb"e-0*[1-9][0-9][0-9]"), re.compile(rb"E-0*[1-9][0-9][0-9]"))
_HUNDRED_ZEROS = b"." + b"0" * 100


def _may_underflow(data: bytes) -> bool:
    """True when ``data`` may hold a number literal that is not zero but that a 64-bit float reads as 0."""
    return _HUNDRED_ZEROS in data or any(p.search(data) is not None for p in _NEG_EXPONENTS)


class _Dup(dict):
    """An object that had a key twice (the first repeated key is kept)."""

    dup_key: str = ""


class _BadNumber:
    """A number literal that does not fit a 64-bit float or has too many digits."""

    def __init__(self, text: str, too_small: bool = False):
        self.text = text
        self.too_small = too_small  # not zero as written, but below the smallest 64-bit float: it would read as 0


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    seen: set[str] = set()
    dup = _Dup(d)
    for k, _ in pairs:
        if k in seen:
            dup.dup_key = k
            break
        seen.add(k)
    return dup


def _parse_float(text: str) -> Any:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        return _BadNumber(text)
    if x == 0 and re.search(r"[1-9]", re.split(r"[eE]", text, maxsplit=1)[0]):
        return _BadNumber(text, too_small=True)
    return x


def _parse_int(text: str) -> Any:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        return _BadNumber(text)
    return int(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_float=_parse_float, parse_int=_parse_int,
                            parse_constant=_reject_constant)
#: for files other tools wrote with Python's json module, which writes NaN and Infinity for missing figures
_NAN_AS_NULL = json.JSONDecoder(object_pairs_hook=_pairs, parse_float=_parse_float, parse_int=_parse_int,
                                parse_constant=lambda _name: None)


def type_name(value: Any) -> str:
    """The JSON name of a value's type: 'an object', 'an array', 'a string', 'a number', 'boolean', 'null'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else "a number"


def json_path(parts: Any) -> str:
    """'$.requests[3].output_tokens' from a path sequence."""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _measure(obj: Any, limit: int) -> tuple[int, int]:
    """(deepest level seen, capped at limit + 1; number of object keys)."""
    deepest = 0
    keys = 0
    if type(obj) is not dict and type(obj) is not list:
        return 0, 0
    stack = [(obj, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        o, d = pop()
        if d > deepest:
            deepest = d
            if d > limit:
                return deepest, keys
        if type(o) is dict:
            keys += len(o)
            for v in o.values():
                if type(v) is dict or type(v) is list:
                    push((v, d + 1))
        else:
            for v in o:
                if type(v) is dict or type(v) is list:
                    push((v, d + 1))
    return deepest, keys


def _find(obj: Any, limit: int) -> tuple[str, str] | None:
    """The first problem found walking ``obj``: (JSON path, message) or None.

    Looks for nesting beyond ``limit``, duplicate keys, bad numbers and unpaired
    surrogates (the last three only appear after the standard library parser).
    """
    stack: list[tuple[Any, int, tuple]] = [(obj, 1, ())]
    while stack:
        o, d, path = stack.pop()
        if isinstance(o, (dict, list)) and d > limit:
            where = json_path(path[:8]) + ("…" if len(path) > 8 else "")
            return where, f"nested more than {limit} levels deep"
        if isinstance(o, _BadNumber):
            if o.too_small:
                return json_path(path), (f"number {o.text[:40]} is too small for a 64-bit number (it is not zero "
                                         "but would be stored as 0)")
            if "." in o.text or "e" in o.text.lower():
                return json_path(path), f"number {o.text[:40]} is out of range (not a finite 64-bit number)"
            return json_path(path), f"integer {o.text[:20]}… has more than {_MAX_INT_DIGITS} digits"
        if isinstance(o, str):
            if not _utf8_ok(o):
                return json_path(path), "text holds an unpaired UTF-16 surrogate (\\ud800-\\udfff)"
            continue
        if isinstance(o, dict):
            if isinstance(o, _Dup):
                return json_path(path), f"key {o.dup_key!r} appears twice in this object"
            for k, v in reversed(list(o.items())):
                if not _utf8_ok(k):
                    return json_path(path), "a key holds an unpaired UTF-16 surrogate (\\ud800-\\udfff)"
                stack.append((v, d + 1, (*path, k)))
        elif isinstance(o, list):
            for i in range(len(o) - 1, -1, -1):
                stack.append((o[i], d + 1, (*path, i)))
    return None


def _utf8_ok(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse(data: bytes, max_depth: int = LIMITS.json_depth, exact: bool = False,
          nan_as_null: bool = False) -> tuple[Any, str | None]:
    """Decode one JSON document strictly: (value, None) or (None, problem).

    The problem is a phrase to follow the file name, e.g. 'is not valid JSON: ...' or
    '$.requests[3]: key 'x' appears twice in this object'. The fast path turns an
    integer beyond 64 bits into a float (so the schema still rejects it); with
    ``exact=True`` every number keeps the value written, for precise messages. With
    ``nan_as_null=True`` the literals NaN, Infinity and -Infinity (which Python's json module
    writes) read as null instead of being refused: for other tools' files, never for contracts.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return None, "starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM"
    if not data.strip():
        return None, "is empty"
    if exact:
        return _slow(data, max_depth, nan_as_null)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _slow(data, max_depth, nan_as_null)
    deepest, keys = _measure(obj, max_depth)
    if deepest > max_depth:
        found = _find(obj, max_depth)
        assert found is not None
        return None, f"{found[0]}: {found[1]}"
    if data.count(b'":') + len(_LOOSE_KEY.findall(data)) > keys:  # maybe a key given twice: let the exact parser decide
        return _slow(data, max_depth, nan_as_null)
    if _may_underflow(data):  # maybe a number the fast parser read as 0: let the exact parser decide
        return _slow(data, max_depth, nan_as_null)
    return obj, None


def parse_unchecked(data: bytes) -> Any | None:
    """The value of ``data`` by the fast parser when it is certain that no object in it has a key twice; None
    otherwise (not JSON to the fast parser, a byte-order mark, a key that may be given twice: ``parse`` decides).

    Only the duplicate-key rule (and that no number may have been read as 0 though it is not zero) is checked
    here, not nesting, other numbers or surrogates: keep the value only once a
    model whose reach (``ingest.nesting``) is within those rules has accepted it, and ``parse`` anything else
    (``ingest.validate._parse``). The check needs no walk: the fast parser keeps one value per key, so encoding
    the value again writes one ':' per key it kept, plus the colons of its strings; the text holds one per key
    written, plus the same colons (unless one is written as an escape, \\u003a: then None). Equal counts: no
    key was dropped, so none was given twice.
    """
    if data.startswith(b"\xef\xbb\xbf") or b"\\u003" in data or _may_underflow(data):
        return None
    try:
        obj = orjson.loads(data)
        again = orjson.dumps(obj)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    return obj if data.count(b":") == again.count(b":") else None


def _slow(data: bytes, max_depth: int, nan_as_null: bool = False) -> tuple[Any, str | None]:
    """The standard library parser with hooks: exact about duplicates, numbers and positions."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r})"
    try:
        obj = (_NAN_AS_NULL if nan_as_null else _DECODER).decode(text)
    except RecursionError:
        return None, f"is not valid JSON: nested more than {max_depth} levels deep"
    except ValueError as exc:
        return None, f"is not valid JSON: {exc}"
    found = _find(obj, max_depth)
    if found is not None:
        return None, f"{found[0]}: {found[1]}"
    return obj, None
