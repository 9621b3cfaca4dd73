"""Chart specs as plain JSON text, fast: one Altair build per chart shape, then only the data changes.

Building an Altair chart and turning it into a Vega-Lite dict (with its schema validation)
takes tens of milliseconds; the static export draws thousands of charts that differ only
in their data. A chart function of ``benchcards.charts.charts`` that the export uses is split in
two: the frames it plots (computed with pandas) and a *builder* that takes those frames
and a few plain settings. ``spec_json`` calls the builder once per distinct set of
settings with named placeholders (``alt.NamedData``) instead of the frames, keeps the
resulting spec as JSON text, and fills in the frames' rows as ``datasets`` for every
chart of that shape. The app calls the very same builder with the frames themselves, so
both draw one definition (tests compare the two specs).

Values a builder needs that differ from chart to chart but are not rows of a frame (an
axis maximum, a title, a colour domain) are *holes*: the builder gets a unique sentinel in
their place (a number for a number, a string for a string, a one-element list for a list)
and the filled spec gets the value. A hole must be used as it is, never computed with.

Everything returned is safe inside ``<script type="application/json">``: no '<', '>',
'&', U+2028 or U+2029 (see ``script_json``); U+2028/U+2029 in data strings become spaces
(Vega-Lite copies some data values into expressions, which Vega's parser refuses with them).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element: no '<', '>' or '&' (so no
    '</script>' or '<!--'), no line or paragraph separators."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in _SCRIPT_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


class ScriptSafeEncoder(json.JSONEncoder):
    """``json.dumps(..., cls=ScriptSafeEncoder)``: JSON text escaped as ``script_json`` escapes it, for tools
    that put a spec into a ``<script>`` element themselves (Altair's HTML output in a notebook)."""

    def encode(self, o: Any) -> str:
        return "".join(self.iterencode(o))

    def iterencode(self, o: Any, _one_shot: bool = False) -> Iterator[str]:
        # '<', '>', '&' and the separators occur only inside JSON strings, where the escapes mean the same
        for chunk in super().iterencode(o, _one_shot):
            for ch, esc in _SCRIPT_ESCAPES.items():
                chunk = chunk.replace(ch, esc)
            yield chunk


def plain_separators(node: Any) -> Any:
    """``node`` with U+2028/U+2029 in its strings (keys too) turned into spaces."""
    if isinstance(node, str):
        return node.replace("\u2028", " ").replace("\u2029", " ")
    if isinstance(node, dict):
        return {plain_separators(k): plain_separators(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain_separators(v) for v in node]
    return node


def records(df: pd.DataFrame) -> list[dict]:
    """The rows of ``df`` as JSON-ready dicts, as Altair would inline them: NaN, NA and NaT become
    null, numpy numbers plain numbers, timestamps ISO text, separators in text spaces."""
    if df.empty:
        return []
    cols: dict[str, list] = {}
    for name, s in df.items():
        values: list[Any]
        if s.dtype.kind == "f" and isinstance(s.dtype, np.dtype):  # numpy floats: NaN and inf to mend
            # a whole number is written as one ('3', not '3.0'): a column is float or int depending on which
            # other cards share its batch, and a card's bytes must not
            values = [(int(v) if v.is_integer() and -2**53 < v < 2**53 else v) if v - v == 0 else None
                      for v in s.tolist()]
        elif s.dtype.kind in "iu" and isinstance(s.dtype, np.dtype):
            values = s.tolist()
        elif pd.api.types.is_bool_dtype(s.dtype) and not s.isna().any():
            values = [bool(v) for v in s.tolist()]
        elif pd.api.types.is_datetime64_any_dtype(s.dtype):
            values = [None if pd.isna(v) else v.isoformat() for v in s]
        else:
            values = [_plain(v) for v in s.tolist()]
        cols[str(name)] = values
    names = list(cols)
    return [dict(zip(names, row)) for row in zip(*cols.values())]


def rows(columns: Mapping[str, list]) -> list[dict]:
    """``records`` of the frame these columns of plain values would make, made without the frame.

    >>> rows({"x": [1.0, float("nan")], "t": ["a", None]})
    [{'x': 1, 't': 'a'}, {'x': None, 't': None}]
    """
    names = list(columns)
    return [dict(zip(names, (_plain(v) for v in row))) for row in zip(*columns.values())]


def inline_values(data: Any) -> Any:
    """Altair's data transformer with ``records`` for a DataFrame (its default takes the frame apart column by
    column, most of a chart's build time): the same rows and row limit, whole numbers written as such
    (``with alt.data_transformers.enable(INLINE)``: ``benchcards.site.render.Charts.add``)."""
    from altair.utils import data as alt_data

    alt_data.limit_rows(data)
    if isinstance(data, pd.DataFrame):
        return {"values": records(data)}
    return alt_data.to_values(data)


#: the name ``inline_values`` is registered under in Altair's data transformers
INLINE = "benchcards-inline"
alt.data_transformers.register(INLINE, inline_values)


def _plain(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        return int(v) if v.is_integer() and -2**53 < v < 2**53 else v
    if isinstance(v, (str, bool, int)):
        return v.replace("\u2028", " ").replace("\u2029", " ") if isinstance(v, str) else v
    if v is pd.NA or v is pd.NaT:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(v, "item"):  # numpy scalars
        return _plain(v.item())
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


#: sentinel numbers for holes: exact in JSON, never a plausible chart value
_HOLE_BASE = -7.77e307


def _sentinel(i: int, example: Any) -> Any:
    """The stand-in of hole ``i`` of the type of ``example``."""
    if isinstance(example, str):
        return f"\ue001hole:{i}\ue001"
    if isinstance(example, (list, tuple)):
        return [_HOLE_BASE - i * 1e293]
    return _HOLE_BASE - i * 1e293


def _kind(v: Any) -> str:
    return "str" if isinstance(v, str) else "list" if isinstance(v, (list, tuple)) else "num"


@dataclass(frozen=True)
class _Template:
    pieces: tuple[str, ...]  # JSON text between the slots
    slots: tuple[tuple[str, str], ...]  # ("data", name) or ("hole", name), one between each two pieces


_CACHE: dict[Hashable, _Template] = {}
_LOCK = threading.Lock()


def _freeze(v: Any) -> Hashable:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def _template(builder: Callable[..., alt.TopLevelMixin], frames: tuple[str, ...], settings: Mapping[str, Any],
              holes: Mapping[str, Any], width: str | None) -> _Template:
    kinds = tuple((h, _kind(v)) for h, v in holes.items())
    key = (builder.__module__, builder.__qualname__, frames, _freeze(dict(settings)), kinds, width)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    sentinels = {name: _sentinel(i, v) for i, (name, v) in enumerate(holes.items())}
    chart = builder(**{f: alt.NamedData(name=f) for f in frames}, **settings, **sentinels)
    # not validated here (about half of a template's cost, paid per worker process): tests/test_specs.py compares
    # every kind of template with the validated spec Altair builds from the same frames
    spec = plain_separators(chart.to_dict(validate=False))
    if width is not None:
        spec["width"] = width
    marks = {f: f"\ue000data:{f}\ue000" for f in frames}
    spec["datasets"] = dict(marks)
    text = script_json(spec)
    tokens = [(script_json(m), ("data", f)) for f, m in marks.items()]
    tokens += [(script_json(v), ("hole", h)) for h, v in sentinels.items()]
    pieces: list[str] = []
    slots: list[tuple[str, str]] = []
    rest = text
    while True:
        found = [(rest.find(tok), tok, slot) for tok, slot in tokens if tok in rest]
        if not found:
            break
        pos, tok, slot = min(found)
        pieces.append(rest[:pos])
        slots.append(slot)
        rest = rest[pos + len(tok):]
    pieces.append(rest)
    missing = set(holes) - {name for kind, name in slots if kind == "hole"}
    if missing:
        raise ValueError(f"{builder.__qualname__} does not use the holes {sorted(missing)} as given")
    tpl = _Template(tuple(pieces), tuple(slots))
    with _LOCK:
        _CACHE[key] = tpl
    return tpl


def records_by_setup(df: pd.DataFrame, drop_id: bool = False) -> dict[str, list[dict]]:
    """``records`` of each setup's rows of ``df`` (sorted by ``setup_id``; ``drop_id``: without that column),
    made for all setups at once: the same rows as ``records`` of each setup's slice, at a fraction of the cost
    of one call per small slice (a column's checks run once, not once per setup)."""
    if df.empty:
        return {}
    out: dict[str, list[dict]] = {}
    for row in records(df):
        key = str(row["setup_id"])
        if drop_id:
            del row["setup_id"]
        out.setdefault(key, []).append(row)
    return out


def spec_json(builder: Callable[..., alt.TopLevelMixin], frames: Mapping[str, pd.DataFrame | list[dict]],
              settings: Mapping[str, Any] | None = None, holes: Mapping[str, Any] | None = None,
              width: str | None = "container") -> str:
    """The Vega-Lite spec of ``builder(**frames, **settings, **holes)`` as script-safe JSON text, with the
    frames' rows inlined as ``datasets`` named after the frames (a frame may be given as its ``records``
    already made). ``width`` overrides the spec's width (None keeps it). Settings must be hashable once
    lists and dicts are frozen (they key the cache)."""
    settings = dict(settings or {})
    holes = dict(holes or {})
    tpl = _template(builder, tuple(frames), settings, holes, width)
    data = {name: script_json(rows if isinstance(rows, list) else records(rows)) for name, rows in frames.items()}
    values = {name: script_json(plain_separators(list(v) if isinstance(v, tuple) else v))
              for name, v in holes.items()}
    out = [tpl.pieces[0]]
    for (kind, name), piece in zip(tpl.slots, tpl.pieces[1:]):
        out.append(data[name] if kind == "data" else values[name])
        out.append(piece)
    return "".join(out)


def spec_dict(builder: Callable[..., alt.TopLevelMixin], frames: Mapping[str, pd.DataFrame],
              settings: Mapping[str, Any] | None = None, holes: Mapping[str, Any] | None = None,
              width: str | None = "container") -> dict:
    """``spec_json`` parsed (for tests and notebooks)."""
    return json.loads(spec_json(builder, frames, settings, holes, width))


def inline(spec: dict) -> dict:
    """A Vega-Lite dict with every named dataset reference replaced by its rows and ``datasets`` removed:
    two specs that draw the same data the same way compare equal, whatever their datasets are called."""
    datasets = spec.get("datasets", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"name"} and node["name"] in datasets:
                return {"values": datasets[node["name"]]}
            return {k: walk(v) for k, v in node.items() if k != "datasets"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(spec)
