"""The benchcards database as a reader sees it: ``Store`` and the one function every read runs its SQL through.

Every read opens one short-lived read-only connection (see ``benchcards.read.db``), so an ingest that swaps
the file is picked up by the next call. No Streamlit here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from benchcards.read import db
from benchcards.read.paths import DEFAULT_DB
from benchcards.read.rawfiles import RawFileError, find_raw

__all__ = ["TRACE", "Store", "fetch", "trace"]


#: when set to a list, every query run through ``fetch`` (and so ``Store.df``) is appended to it as
#: (sql, params); used by bench/pages.py to replay the same queries on bare DuckDB
TRACE: list[tuple[str, list]] | None = None


@dataclass(frozen=True)
class Store:
    """A benchcards database file. Cheap to create; holds no connection."""

    path: Path = DEFAULT_DB

    def __post_init__(self) -> None:
        # Notebooks pass a string; every method below needs a Path.
        object.__setattr__(self, "path", Path(self.path))

    def exists(self) -> bool:
        return self.path.exists()

    def df(self, sql: str, params: list | None = None) -> pd.DataFrame:
        """Run one query on a fresh read-only connection and return a DataFrame."""
        with db.reading(self.path) as con:
            return fetch(con, sql, params)

    def rows(self, sql: str, params: list | None = None) -> list[tuple]:
        """Run one query on a fresh read-only connection and return its rows as tuples (no DataFrame: for lists
        a page only walks, where building a frame would cost more than the query)."""
        with db.reading(self.path) as con:
            trace(sql, params)
            return con.execute(sql, params or []).fetchall()

    def raw_file(self, sha256: str, where: list[tuple[str, int]] | None = None) -> bytes:
        """Content of an ingested raw file, read from where it was ingested and checked
        against its recorded SHA-256. Raises RawFileError, saying whether it is gone or changed since it
        was ingested (changed bytes are never returned).

        Only a regular file is read (a link put in its place is not followed), and no
        more bytes than were recorded. ``where``: the (source, bytes) rows of that file the
        caller already read (a card has them), else they are looked up.
        """
        if where is None:
            rows = self.df("SELECT DISTINCT source, bytes FROM files WHERE sha256 = ?", [sha256])
            where = list(zip(rows.source, rows.bytes))
        if not where:
            raise RawFileError(f"no raw file with sha256 {sha256}")
        data, why = find_raw(sha256, where)
        if data is None:
            raise RawFileError(f"the raw file at {where[0][0]} {why}")
        return data


def fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pd.DataFrame:
    """Run ``sql`` on ``con`` and return a DataFrame (noted in ``TRACE`` when tracing)."""
    trace(sql, params)
    df = con.execute(sql, params or []).df()
    df.columns = labels(df.columns)
    return df


def labels(columns: Iterable[object]) -> pd.Index:
    """Column labels held as Python strings (an object Index). pandas 3 keeps string labels as Arrow strings,
    and every ``df[name]`` then takes its label out of Arrow again: the card views read their frames' columns
    about a hundred thousand times per thousand cards, and this made a third of that cost. Only the labels
    change, never a value or a dtype of the data."""
    return pd.Index(list(columns), dtype=object)


def trace(sql: str, params: list | None) -> None:
    """Note a query in ``TRACE`` when tracing (bench/pages.py replays them on bare DuckDB); else nothing."""
    if TRACE is not None:
        TRACE.append((sql, list(params or [])))
