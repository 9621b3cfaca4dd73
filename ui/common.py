"""Widgets and page plumbing shared by app.py and pages/*. Thin: logic lives in benchcards."""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from benchcards.read import paths
from benchcards.read.db import DatabaseError, check, version
from benchcards.read.sources import Freshness, freshness
from benchcards.read.store import Store
from ui import background

#: ASCII punctuation: each is backslash-escaped in text from data shown as Markdown
_PUNCT = frozenset("\\`*_{}[]()<>#+-.!|~:$&=\"'/@%^;,?")
#: GFM turns bare URLs and e-mail addresses into links even when their punctuation is escaped; a word that
#: holds one of these is shown as inline code instead, which is never a link and copies as it was written
_AUTOLINK = re.compile(r"(?i)(://|www\.|@)")
_WORDS = re.compile(r"(\s+)")


def md(text: object) -> str:
    """``text`` from data, safe to show inside Markdown: every ASCII punctuation mark escaped
    (no links, images, HTML, colours, maths or emphasis can come from data), a word that GFM would turn
    into a link (a URL, ``www.``, an address) shown as inline code, line breaks flattened and control
    characters shown as escapes.

    >>> md("see http://127.0.0.1:8080/v1 *now*")
    'see `http://127.0.0.1:8080/v1` \\\\*now\\\\*'
    >>> md("a`b@c")
    '``a`b@c``'
    >>> md("served at http://127.0.0.1:8089: ok (see www.x.org).")
    'served at `http://127.0.0.1:8089`\\\\: ok \\\\(see `www.x.org`\\\\)\\\\.'
    """
    words = _WORDS.split("" if text is None else str(text))
    return "".join(" " if w.isspace() else _linkish(w) if _AUTOLINK.search(w) else _escaped(w) for w in words)


#: punctuation around a URL that belongs to the sentence, not to the address ("at http://x:8089:")
_AROUND = re.compile(r"^([(\[\"'“‘]*)(.*?)([.,:;!?)\]\"'”’]*)$", re.S)


def _linkish(word: str) -> str:
    """A word holding a URL or an address: the address as inline code, the sentence's punctuation around it
    escaped outside the code span."""
    before, core, after = _AROUND.match(word).groups()  # type: ignore[union-attr]
    if not _AUTOLINK.search(core):
        before, core, after = "", word, ""
    return _escaped(before) + _code_span(core) + _escaped(after)


def _visible(c: str) -> str:
    return f"\\u{ord(c):04x}" if not c.isprintable() and c != " " else c


def _escaped(word: str) -> str:
    return "".join("\\" + c if c in _PUNCT else "\\" + _visible(c) if _visible(c) != c else c for c in word)


def _code_span(word: str) -> str:
    """``word`` as one inline code span: its fence one backtick longer than any run of backticks inside,
    padded with a space where the word starts or ends with a backtick (CommonMark strips one each side)."""
    shown = "".join(_visible(c) for c in word)
    fence = "`" * (max((len(r) for r in re.findall(r"`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def db_path() -> Path:
    """The database the site reads: $BENCHCARDS_DB, else data/benchcards.duckdb (``paths.default_db``)."""
    return paths.default_db()


ROOT = Path(__file__).resolve().parent.parent
#: sidebar names and icons of the pages (others are named after their file)
NAV: dict[str, tuple[str, str]] = {
    "app.py": ("Overview", ":material/leaderboard:"),
    "pages/1_Setup_card.py": ("Setup card", ":material/description:"),
    "pages/2_Scaling_curves.py": ("Scaling curves", ":material/show_chart:"),
    "pages/3_Quality_and_margins.py": ("Quality & margins", ":material/target:"),
    "pages/4_Compare.py": ("Compare", ":material/compare_arrows:"),
    "pages/5_Upload.py": ("Upload", ":material/upload:"),
    "pages/6_Run_live.py": ("Run live", ":material/timer:"),
}


def nav_entries() -> list[tuple[str, str, str]]:
    """(script path, label, icon) of the overview and every page in pages/, in file order."""
    out = [("app.py", *NAV["app.py"])]
    for p in sorted((ROOT / "pages").glob("*.py")):
        rel = f"pages/{p.name}"
        words = p.stem.split("_", 1)[-1] if p.stem.split("_", 1)[0].isdigit() else p.stem
        out.append((rel, *NAV.get(rel, (words.replace("_", " "), ":material/article:"))))
    return out


def page(title: str, icon: str = "📊") -> None:
    """Page config shared by every page: title, wide layout, the site's table styles, and the sidebar
    navigation (Streamlit's own is off in .streamlit/config.toml so the overview can be called 'Overview')."""
    from ui import html

    st.set_page_config(page_title=f"{title} · benchcards", page_icon=icon, layout="wide")
    st.html(f"<style>{html.CSS}</style>")
    from streamlit.errors import StreamlitAPIException

    with st.sidebar:
        try:
            for path, label, icon in nav_entries():
                st.page_link(path, label=label, icon=icon)
        except StreamlitAPIException:  # a page run as its own entry point (a test, a benchmark) has no site
            pass


def link(page_path: str, label: str, query_params: dict | None = None, icon: str | None = None) -> None:
    """A link to another page of the site (same tab); nothing when the page runs on its own, outside the site."""
    from streamlit.errors import StreamlitAPIException

    try:
        st.page_link(page_path, label=label, query_params=query_params, icon=icon)
    except StreamlitAPIException:
        pass


#: how often (seconds) a page run looks for raw folders newer than the database: the look walks every raw file
#: (0.7 s of CPU at 1,000 setups), so at most once a minute, behind the page (``_freshness``)
RECHECK_S = 60.0
_CHECKED: dict[str, tuple[float, Freshness, tuple[int, int] | None]] = {}  # when, answer, database's stamp
_RECHECKING: set[str] = set()
_RECHECK_LOCK = threading.Lock()
BUILD_COMMAND = ".venv/bin/python -m ingest.build"


def _freshness(path: Path) -> Freshness:
    """``benchcards.read.sources.freshness``, looked up at most every RECHECK_S seconds per process.

    Only the first look (or a look after the database file itself changed) runs in the page: later ones run
    in a background thread while the page shows the last answer, so no page view waits for a walk of every
    raw folder (0.7 s at 1,000 setups). A change of the raw folders shows on a page run after the next look.
    """
    key = str(path)
    hit = _CHECKED.get(key)
    if hit is None or hit[2] != _db_stamp(path):
        return _check_now(path)
    if time.monotonic() - hit[0] >= RECHECK_S:
        with _RECHECK_LOCK:
            start = key not in _RECHECKING
            _RECHECKING.add(key)
        if start:
            threading.Thread(target=_recheck, args=(path,), name="bc-freshness", daemon=True).start()
    return hit[1]


def _db_stamp(path: Path) -> tuple[int, int] | None:
    """``benchcards.read.db.version`` of ``path``, or None when there is no file."""
    try:
        return version(path)
    except DatabaseError:
        return None


def _check_now(path: Path) -> Freshness:
    stamp = _db_stamp(path)  # taken before: a swap meanwhile only makes the next page run look again
    fr = freshness(path)
    _CHECKED[str(path)] = (time.monotonic(), fr, stamp)
    return fr


def _recheck(path: Path) -> None:
    """``_check_now`` in the background (any error is the next page run's to show: it looks again itself)."""
    try:
        _check_now(path)
    except Exception:  # a failed look leaves no answer: the next page run looks again, in the page
        _CHECKED.pop(str(path), None)
    finally:
        with _RECHECK_LOCK:
            _RECHECKING.discard(str(path))


def _command(path: Path) -> str:
    """The build command a person pastes into a shell to bring ``path`` up to date: the same database and the
    same local folder as this site (a shell without the site's $BENCHCARDS_* settings builds another one)."""
    local = paths.LOCAL
    env = "" if local == paths.REPO_LOCAL else f"BENCHCARDS_LOCAL={shlex.quote(str(local))} "
    return env + BUILD_COMMAND + ("" if path == paths.REPO_DB else f" --db {shlex.quote(str(path))}")


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
        what = "; ".join(f"**{label}**: " + ", ".join(md(n) for n in names[:20])
                         + (f" and {len(names) - 20:,} more" if len(names) > 20 else "")
                         for label, names in (("new", fr.new), ("changed", fr.changed), ("removed", fr.removed))
                         if names)
        st.warning("The raw folders changed after the database was built, so the site may be out of date"
                   + (f" — setup folders {what}." if what else f" (the newest change: {md(fr.newest)}).")
                   + " Build it again with the button below or in a shell:", icon=":material/update:")
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


def downloads(df: pd.DataFrame | Callable[[], pd.DataFrame], name: str) -> None:
    """CSV and JSON downloads of a table as data (``benchcards.views.downloads``: numbers as numbers, units in the
    headers, empty for missing), behind one small button. ``df`` may be a function that makes the table: it
    then runs only when someone downloads."""
    from benchcards.views import downloads as dl

    make = df if callable(df) else (lambda: df)
    with st.popover("Download", icon=":material/download:"):
        st.download_button("CSV", lambda: dl.csv_bytes(make()), file_name=f"{name}.csv",
                           mime="text/csv", key=f"csv-{name}", icon=":material/table:")
        st.download_button("JSON", lambda: dl.json_bytes(make()),
                           file_name=f"{name}.json", mime="application/json", key=f"json-{name}",
                           icon=":material/data_object:")


def table(df: pd.DataFrame | None, name: str, empty: str = "Nothing to show.", *, download: bool = True,
          links: dict | None = None, titles: dict | None = None, classes: dict | None = None,
          numeric: tuple[str, ...] | list[str] = (), below: tuple[str, ...] = (), grid: bool = False,
          **grid_options) -> None:
    """A table shown whole (no inner scroll box), with CSV and JSON downloads; or an explanation when empty.

    A table of text (cells made by ``benchcards.domain.fmt``) is escaped HTML that wraps to the page, see
    ``ui.html.table`` for ``links``, ``titles``, ``classes``, ``numeric`` and ``below``. A table that still holds raw
    numbers, or is asked to be one (``grid=True``, or ``column_config`` and the like in ``grid_options``),
    stays a sortable data grid, tall enough for all its rows.
    """
    from ui import html

    if df is None or df.empty:
        st.caption(empty)
        return
    text_only = all(pd.api.types.is_object_dtype(t) or pd.api.types.is_string_dtype(t) for t in df.dtypes)
    if text_only and not grid and not grid_options:
        with st.container(key=f"table-{name}"):
            st.html(html.table(df, links=links, titles=titles, classes=classes, numeric=numeric, label=name,
                               below=below))
    else:
        st.dataframe(df, hide_index=True, width="stretch", height=min(38 + 35 * len(df), 1800), **grid_options)
    if download:
        downloads(df, name)


def tiles(items: list) -> None:
    """Headline figures (``benchcards.views.card_tables.Tile``): three a row, two on a phone; the meaning on hover."""
    from ui import html

    st.html(html.tiles([(t.label, t.value, t.help) for t in items]))


def chart(c: alt.TopLevelMixin, key: str) -> None:
    """An Altair chart from benchcards.charts.charts, with our theme (not Streamlit's)."""
    st.altair_chart(c, theme=None, width="stretch", key=key)


def vega(spec: dict, key: str) -> None:
    """A Vega-Lite dict from benchcards.charts.charts (a ``*_spec`` function), with our theme (not Streamlit's)."""
    st.vega_lite_chart(spec=spec, theme=None, width="stretch", key=key)


def setup_picker(store: Store, label: str, key: str, multi: bool = False, max_selections: int | None = None,
                 options: list[str] | None = None, default: str | list[str] | None = None, where=None):
    """Select one or several setups by their one name (``overview_rows.names`` with the GPU: as the overview
    and the analysis name them), in the order of those names; the chosen ids live in the URL (?key=id).

    Ids (not titles) go in the URL so links stay short and stable; a link to an id
    that does not exist shows a warning naming it and is otherwise ignored. ``options``
    limits the choice, ``default`` is the initial choice when the URL has none (a list
    when ``multi``), ``where`` is the container (default: the page).
    """
    from benchcards.read.overview_rows import names

    where = where or st
    titles = names(store, with_gpu=True)
    ids = [s for s in (options if options is not None else sorted(titles, key=lambda s: titles[s].lower()))
           if s in titles]
    if key not in st.session_state:
        unknown = [s for s in st.query_params.get_all(key) if s not in titles]
        if unknown:  # named, but bounded: a 100,000-character id is shown cut (a setup id is at most 128)
            shown = [s if len(s) <= 80 else f"{s[:80]}… ({len(s):,} characters)" for s in unknown[:5]]
            st.warning("No setup with the id " + ", ".join(f"“{md(s)}”" for s in shown)
                       + (f" (and {len(unknown) - 5:,} more)" if len(unknown) > 5 else "")
                       + " is in this site's data. Choose one below, or start from the overview.")
    if multi:
        if key not in st.session_state:
            wanted = [s for s in st.query_params.get_all(key) if s in ids]
            if not st.query_params.get_all(key) and isinstance(default, list):
                wanted = [s for s in default if s in ids]
            st.session_state[key] = wanted[:max_selections]
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
