"""CSV and JSON downloads of the site's tables: data, not the text on the screen.

A display table (``benchcards.views.tables``, ``benchcards.views.card_tables``) holds text made by ``benchcards.domain.fmt``:
"2,989.6", "57.3 % ± 4.8", "—". A download turns each column back into what it says:

- a column whose every cell is a number (thousands separators, a minus sign, one unit such as
  "tok/s", "s", "GiB" or "%") becomes numbers, its unit in the header when the header lacks one;
- "57.3 % ± 4.8" becomes two columns, the result (%) and its margin (± points); "52.4 – 62.0 %"
  the interval's low and high ends; "229 / 400" right and n;
- "—" (missing) becomes empty: an empty CSV cell, ``null`` in JSON;
- everything else stays text; in CSV a text cell that a spreadsheet would run as a formula
  (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is written after a ``'``.

Links are the setup id (a column ``setup_id``), never a page address relative to the app.
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any

import pandas as pd

from benchcards.domain import fmt, metrics

__all__ = ["csv_bytes", "data_frame", "json_bytes"]

_NUM = r"[−-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_NUMBER = re.compile(rf"^(?P<num>[+]?{_NUM})(?:\s?(?P<unit>%|[A-Za-z/µ]+))?$")
#: units a number cell may carry (those of the metric registry and a few of the card's texts); "2K" is a depth,
#: not 2 of a unit, and stays text
UNITS = frozenset({d.unit for d in metrics.REGISTRY.values() if d.unit} | {"%", "s", "ms", "GiB", "GB", "MiB",
                                                                            "tokens", "bytes", "pts", "points"})
_QUALITY = re.compile(rf"^(?P<pct>{_NUM}) % ± (?P<margin>{_NUM})$")
_INTERVAL = re.compile(rf"^(?P<lo>{_NUM}) – (?P<hi>{_NUM})(?: (?P<unit>\S+))?$")
_RIGHT_OF = re.compile(rf"^(?P<right>{_NUM}) / (?P<n>{_NUM})$")
_HAS_UNIT = re.compile(r"\([^()]*\)\s*$")
#: first characters that make a spreadsheet read a cell as a formula
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _num(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-").lstrip("+"))


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip() in ("", fmt.DASH)) or (not isinstance(v, str) and fmt.missing(v))


def _split(col: pd.Series, pattern: re.Pattern) -> list[dict | None] | None:
    """Each cell's groups under ``pattern`` (None for a missing cell), or None when a cell does not match."""
    out: list[dict | None] = []
    seen = False
    for v in col.tolist():
        if _missing(v):
            out.append(None)
            continue
        if not isinstance(v, str):
            return None
        m = pattern.match(v.strip())
        if m is None:
            return None
        out.append(m.groupdict())
        seen = True
    return out if seen else None


def _numbers(groups: list[dict | None], key: str) -> list[float | None]:
    return [None if g is None else _num(g[key]) for g in groups]


def _with_unit(header: str, unit: str | None) -> str:
    if not unit or _HAS_UNIT.search(header):
        return header
    return f"{header} ({unit})"


def _plain_header(header: str) -> str:
    """'Result (95 % margin)' -> 'Result'."""
    return _HAS_UNIT.sub("", header).strip() or header


def _column(name: str, col: pd.Series) -> dict[str, list]:
    """The data column(s) of one display column."""
    if not (pd.api.types.is_object_dtype(col.dtype) or pd.api.types.is_string_dtype(col.dtype)):
        return {name: [None if _missing(v) else v for v in col.tolist()]}
    if (g := _split(col, _QUALITY)) is not None:
        base = _plain_header(name)
        return {f"{base} (%)": _numbers(g, "pct"), f"{base} margin (± points)": _numbers(g, "margin")}
    if (g := _split(col, _INTERVAL)) is not None:
        units = {x["unit"] for x in g if x is not None}
        unit = units.pop() if len(units) == 1 else None
        base = _plain_header(name)
        return {_with_unit(f"{base} low", unit): _numbers(g, "lo"), _with_unit(f"{base} high", unit): _numbers(g, "hi")}
    if (g := _split(col, _RIGHT_OF)) is not None:
        return {"Right": _numbers(g, "right"), "n": _numbers(g, "n")}
    if (g := _split(col, _NUMBER)) is not None:
        units = {x["unit"] for x in g if x is not None}
        if len(units) == 1 and (units <= {None} or units <= UNITS):
            return {_with_unit(name, units.pop()): _numbers(g, "num")}
    return {name: [None if _missing(v) else v for v in col.tolist()]}


def data_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The display table ``df`` as data (see the module docstring): numbers as float columns (whole-number
    columns as nullable integers), missing values as missing."""
    cols: dict[str, list] = {}
    for name, col in df.items():
        for k, values in _column(str(name), col).items():
            while k in cols:
                k += " "
            cols[k] = values
    out = pd.DataFrame(cols, index=range(len(df)))
    for k in out.columns:
        values = cols[k]
        if values and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values) \
                and any(v is not None for v in values):
            nums = pd.to_numeric(pd.Series(values, dtype="object"), errors="coerce").astype("float64")
            finite = nums.dropna()
            whole = all(float(v).is_integer() and abs(v) < 2**53 for v in finite)
            out[k] = nums.astype("Int64") if whole and not any(isinstance(v, float) and not v.is_integer()
                                                                for v in values if v is not None) else nums
    return out


def _safe_cell(v: Any) -> Any:
    if isinstance(v, str) and v.startswith(FORMULA_START):
        return "'" + v
    return v


def csv_bytes(df: pd.DataFrame) -> bytes:
    """``data_frame(df)`` as CSV (UTF-8): empty cells for missing values, no cell a spreadsheet runs."""
    data = data_frame(df)
    for k in data.columns:
        if not pd.api.types.is_numeric_dtype(data[k].dtype):
            data[k] = pd.Series([_safe_cell(v) for v in data[k].tolist()], index=data.index, dtype="object")
    buf = io.StringIO()
    data.to_csv(buf, index=False)
    return buf.getvalue().encode("utf-8")


def _json_value(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if hasattr(v, "item"):
        return _json_value(v.item())
    return v


def json_bytes(df: pd.DataFrame) -> bytes:
    """``data_frame(df)`` as a JSON list of records: numbers as numbers, ``null`` for missing values."""
    data = data_frame(df)
    names = [str(c) for c in data.columns]
    rows = [dict(zip(names, (_json_value(v) for v in row))) for row in data.itertuples(index=False, name=None)]
    return json.dumps(rows, ensure_ascii=False, indent=1, allow_nan=False).encode("utf-8")
