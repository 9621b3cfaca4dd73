"""Widgets and page plumbing shared by app.py and pages/*. Thin: logic lives in benchcards."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from benchcards.db import DatabaseError, check
from benchcards.paths import DEFAULT_DB
from benchcards.queries import Store
from benchcards.sources import Freshness, freshness
from ui import background

#: ASCII punctuation: each is backslash-escaped in text from data shown as Markdown
_PUNCT = frozenset("\\`*_{}[]()<>#+-.!|~:$&=\"'/@%^;,?")
#: GFM turns bare URLs and e-mail addresses into links even when their punctuation is escaped;
#: an invisible word joiner (U+2060) inside "://", "www." and after "@" keeps them plain text
_AUTOLINK = re.compile(r"(?i)(://|www\.|@)")
_WJ = "\u2060"


def md(text: object) -> str:
    """``text`` from data, safe to show inside Markdown: every ASCII punctuation mark escaped
    (no links, images, HTML, colours, maths or emphasis can come from data), bare URLs and
    addresses kept from becoming links, line breaks flattened and control characters shown
    as escapes."""
    s = _AUTOLINK.sub(lambda m: {"://": ":" + _WJ + "//", "@": "@" + _WJ}.get(m.group(0), m.group(0)[:3] + _WJ + "."),
                      str(text))
    out = []
    for c in s:
        if c in _PUNCT:
            out.append("\\" + c)
        elif c in "\r\n\u2028\u2029":
            out.append(" ")
        elif c == _WJ:
            out.append(c)
        elif not c.isprintable() and c != " ":
            out.append(f"\\\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)


def download_name(path: str) -> str:
    """A file name for a download from a path in the data: its last part, with anything but letters,
    digits, '.', '-' and '_' replaced (no quotes, separators or control characters reach a header)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", path.rsplit("/", 1)[-1]).lstrip(".")
    return name[:120] or "file"


def db_path() -> Path:
    """The database the site reads: $BENCHCARDS_DB, else data/benchcards.duckdb."""
    return Path(os.environ.get("BENCHCARDS_DB", DEFAULT_DB))


def page(title: str, icon: str = "📊") -> None:
    """Page config shared by every page."""
    st.set_page_config(page_title=f"{title} · benchcards", page_icon=icon, layout="wide")


#: how often (seconds) a page run looks for raw folders newer than the database
RECHECK_S = 5.0
_CHECKED: dict[str, tuple[float, Freshness]] = {}
BUILD_COMMAND = ".venv/bin/python -m ingest.build"


def _freshness(path: Path) -> Freshness:
    """``benchcards.sources.freshness``, looked up at most every RECHECK_S seconds per process."""
    now = time.monotonic()
    hit = _CHECKED.get(str(path))
    if hit is not None and now - hit[0] < RECHECK_S:
        return hit[1]
    fr = freshness(path)
    _CHECKED[str(path)] = (now, fr)
    return fr


def _command(path: Path) -> str:
    return BUILD_COMMAND + ("" if path == DEFAULT_DB else f" --db {path}")


def _build_panel(path: Path, fr: Freshness) -> Freshness:
    """What a page shows about the database build: the state, the command, a button, the last result.
    Returns the state (looked up again when a build has just finished)."""
    job = background.current(path)
    if job is not None and not job.done:
        st.info("Building the database in the background. The site keeps showing the last good database "
                "meanwhile; reload the page when it is done.", icon=":material/hourglass_top:")
        return fr
    if job is not None and job.done and not job.ok:
        st.error("The last build failed, so nothing was replaced: the site still shows the last good database. "
                 "Fix what it reports and build again.")
        st.code(job.output() or "(no output)", language=None)
    elif job is not None and job.ok and fr.state in ("missing", "unreadable", "stale"):
        _CHECKED.pop(str(path), None)
        fr = _freshness(path)
    if fr.state == "fresh":
        return fr
    if fr.state == "missing":
        st.info("No database yet. Build it from the raw folders (data/raw, data/local and any folder loaded "
                "with `python -m ingest`) with the button below or in a shell:")
    elif fr.state == "unreadable":
        st.error(md(fr.detail) + " Build it again from the raw folders with the button below or in a shell:")
    else:
        st.warning("The raw folders changed after the database was built, so the site may be out of date. "
                   "Build it again with the button below or in a shell:", icon=":material/update:")
    st.code(_command(path), language="bash")
    if st.button("Build the database now", key="bc-build", icon=":material/build:"):
        background.start(path)
        _CHECKED.pop(str(path), None)
        st.rerun()
    return fr


def store() -> Store:
    """The site's Store, read-only. Never builds: when the database is missing, unreadable or
    stale the page says so and offers the build (which runs in the background); a missing or
    unreadable database stops the page, a stale one is still shown."""
    path = db_path()
    fr = _build_panel(path, _freshness(path))
    if fr.state in ("missing", "unreadable") or not path.exists():
        st.stop()
    try:
        check(path)
    except DatabaseError as exc:
        st.error(f"The database cannot be read: {md(exc)}.")
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
