"""Widgets and page plumbing shared by app.py and pages/*. Thin: logic lives in benchcards."""

from __future__ import annotations

import os
import time
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from benchcards.build import ensure_db
from benchcards.db import DatabaseError, check
from benchcards.paths import DEFAULT_DB, SOURCES
from benchcards.queries import Store
from ingest.validate import IngestError


def db_path() -> Path:
    """The database the site reads: $BENCHCARDS_DB, else data/benchcards.duckdb."""
    return Path(os.environ.get("BENCHCARDS_DB", DEFAULT_DB))


def page(title: str, icon: str = "📊") -> None:
    """Page config shared by every page."""
    st.set_page_config(page_title=f"{title} · benchcards", page_icon=icon, layout="wide")


#: how often (seconds) a page run looks for raw folders newer than the database
RECHECK_S = 5.0
_CHECKED = [float("-inf")]


def store() -> Store:
    """The site's Store. Builds the default database from data/ when needed; explains
    (instead of a traceback) when it cannot, and stops the page."""
    path = db_path()
    if path == DEFAULT_DB and time.monotonic() - _CHECKED[0] > RECHECK_S:
        _CHECKED[0] = time.monotonic()
        try:
            if ensure_db(path, SOURCES):
                st.toast("Built the database from the raw folders in data/.")
        except IngestError as exc:
            st.error("The database could not be built: some raw files in data/ are invalid.")
            st.code("\n".join(exc.errors[:50]), language=None)
            st.stop()
        except DatabaseError as exc:
            st.error(f"The database could not be built: {exc}")
            st.stop()
    if not path.exists():
        st.info("No database yet. Load raw setup folders with `python -m ingest FOLDER --db "
                f"{path}` or on the Upload page.")
        st.stop()
    try:
        check(path)
    except DatabaseError as exc:
        st.error(f"The database cannot be read: {exc}. Rebuild it with `python -m ingest data/raw --db {path}`.")
        st.stop()
    return Store(path)


def downloads(df: pd.DataFrame, name: str) -> None:
    """CSV and JSON download buttons for a table."""
    c1, c2, _ = st.columns([1, 1, 6])
    c1.download_button("CSV", lambda: df.to_csv(index=False).encode(), file_name=f"{name}.csv", mime="text/csv",
                       key=f"csv-{name}", icon=":material/download:")
    c2.download_button("JSON", lambda: df.to_json(orient="records", indent=1, force_ascii=False).encode(),
                       file_name=f"{name}.json", mime="application/json", key=f"json-{name}",
                       icon=":material/download:")


def table(df: pd.DataFrame, name: str, empty: str = "Nothing to show.", **kwargs) -> None:
    """A table with CSV and JSON downloads, or an explanation when it is empty."""
    if df is None or df.empty:
        st.caption(empty)
        return
    st.dataframe(df, hide_index=True, width="stretch", **kwargs)
    downloads(df, name)


def chart(c: alt.TopLevelMixin, key: str) -> None:
    """An Altair chart from benchcards.charts, with our theme (not Streamlit's)."""
    st.altair_chart(c, theme=None, width="stretch", key=key)


def setup_picker(store: Store, label: str, key: str, multi: bool = False, max_selections: int | None = None,
                 options: list[str] | None = None, default: str | None = None, where=None):
    """Select one or several setups by title; the chosen ids live in the URL (?key=id).

    Ids (not titles) go in the URL so links stay short and stable; a link to an id
    that does not exist is ignored. ``options`` limits the choice, ``default`` is the
    initial single choice, ``where`` is the container (default: the page).
    """
    from benchcards.queries import setup_ids

    where = where or st
    titles = dict(setup_ids(store))
    ids = [s for s in (options if options is not None else list(titles)) if s in titles]
    if multi:
        if key not in st.session_state:
            st.session_state[key] = [s for s in st.query_params.get_all(key) if s in ids][:max_selections]
        value = where.multiselect(label, ids, format_func=lambda s: titles.get(s, s), key=key,
                                  max_selections=max_selections)
        if value:
            st.query_params[key] = value
        else:
            st.query_params.pop(key, None)
        return value
    if key not in st.session_state:
        wanted = st.query_params.get(key)
        st.session_state[key] = wanted if wanted in ids else default
    value = where.selectbox(label, ids, format_func=lambda s: titles.get(s, s), key=key,
                            placeholder="Choose a setup")
    if value:
        st.query_params[key] = value
    else:
        st.query_params.pop(key, None)
    return value
