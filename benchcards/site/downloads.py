"""The export's machine-readable files and the page that lists them: ``index.json`` with its parts per tier and
per model, the Parquet tables (``benchcards.site.parquet``), and ``downloads.html``: every file with its rows and
size, how to read it, and every Parquet column with its type, unit and meaning."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jinja2
import pandas as pd

from benchcards.domain import fmt
from benchcards.site import parquet
from benchcards.site import urls as site
from benchcards.site.html_table import table
from benchcards.site.render import HOME, render

__all__ = ["PAGE", "READ_HOW", "write_downloads"]

#: the downloads page
PAGE = "downloads.html"

#: how to read the Parquet tables (shown on the page; commands, not data)
READ_HOW: tuple[tuple[str, str], ...] = (
    ("DuckDB", "duckdb -c \"SELECT title, decode_tps FROM 'parquet/setups.parquet' ORDER BY decode_tps DESC LIMIT 10\""),
    ("DuckDB, a join", "duckdb -c \"SELECT s.title, f.level, f.value FROM 'parquet/figures.parquet' f JOIN "
                       "'parquet/setups.parquet' s USING (setup_id) WHERE f.metric = 'prefill' ORDER BY 1, 2\""),
    ("pandas", "pandas.read_parquet('parquet/quality.parquet')"),
    ("polars", "polars.read_parquet('parquet/figures.parquet')"),
)


def _dumps(doc: dict) -> str:
    return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _document(setups: list[dict[str, Any]], texts: dict[int, str], **extra: Any) -> str:
    """``_dumps(site.index_document(setups, **extra))``, its setups from their JSON texts (``setups`` is the
    document's last key: the text is the rest of it, then the list).

    >>> rows = [{"a": 1}, {"b": "é"}]
    >>> _document(rows, {id(r): _dumps(r) for r in rows}, x=2) == _dumps(site.index_document(rows, x=2))
    True
    """
    head = _dumps({k: v for k, v in site.index_document([], **extra).items() if k != "setups"}
                  | {"setups_count": len(setups)})
    return f'{head[:-1]},"setups":[{",".join(texts[id(r)] for r in setups)}]}}'


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 else f"{max(1, round(n / 1024)):,} KB"


def write_downloads(env: jinja2.Environment, write: Callable[[str, Any], Any], setups: list[dict[str, Any]],
                    ov: pd.DataFrame, base: str | None) -> list[str]:
    """Write ``index.json`` (every setup, and the catalogue of its parts), its parts (one file per hardware tier
    and one per model, ``site.index_parts``: a reader of a large site fetches only what it needs), the Parquet
    tables and ``downloads.html``. Returns the page's path."""
    parts, catalogue = site.index_parts(setups, base)
    texts = {id(r): _dumps(r) for r in setups}  # each setup once: it is in index.json and in two of its parts
    index = _document(setups, texts, parts=catalogue).encode("utf-8")
    write("index.json", index)
    for path, rows in parts.items():
        write(path, _document(rows, texts))
    files = parquet.parquet_files(setups, ov)
    for path, data in files.items():
        write(path, data)
    counts = parquet.row_counts(setups)
    listed = [{"File": "index.json", "href": "index.json", "Format": "JSON",
               "Rows": fmt.count(len(setups), "setup"), "Size": _size(len(index)),
               "What": "every setup with its figures, quality and reported figures; the units of every figure; "
                       f"the same split into {fmt.count(len(parts), 'part')} per hardware tier and per model "
                       "(index/tiers/…json, index/models/…json, listed under its parts)"}]
    for t in parquet.TABLES:
        listed.append({"File": t.path, "href": t.path, "Format": "Parquet",
                       "Rows": f"{counts[t.path]:,}", "Size": _size(len(files[t.path])), "What": f"a row: {t.row}"})
    columns = [{"name": t.path, "anchor": site.slug(t.path), "row": t.row,
                "table": table(pd.DataFrame([{"Column": c.name, "Type": c.type, "Unit": c.unit or fmt.DASH,
                                              "What it holds": c.about} for c in t.columns]))}
               for t in parquet.TABLES]
    write(PAGE, render(env, "downloads.html", PAGE, title="Downloads", crumbs=[HOME, site.Crumb("Downloads")],
                       files=table(pd.DataFrame(listed), links={"File": "href"}), how=READ_HOW, tables=columns))
    return [PAGE]
