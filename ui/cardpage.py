"""The setup card in Streamlit: draws the sections of ``benchcards.views.cardview`` in their order.

Only how each block looks is decided here (headers, captions, boxes, tables, the raw-file picker); every word
and figure comes from the view, the same list the static export walks.
"""

from __future__ import annotations

import streamlit as st

from benchcards.charts import charts
from benchcards.compute import builds, sweeps
from benchcards.read import card_data, rawfiles, reported
from benchcards.read.card_data import Card
from benchcards.read.store import Store
from benchcards.views import cardview as cv
from ui import common
from ui.common import md

BADGE_COLOURS = {"synthetic": "orange", "summary only": "blue", "method test": "violet", "reported": "gray"}


def inputs(store: Store, c: Card) -> cv.Inputs:
    """What the card shows besides its own rows, read for this one setup."""
    decode_run = c.run_of("decode")
    prompt_tokens = card_data.decode_prompt_tokens(store, decode_run) if decode_run else None
    timeline = builds.timeline(store, c.setup_id)
    return cv.Inputs(prompt_tokens=prompt_tokens,
                     timeline=None if timeline.empty else builds.timeline_table(timeline),
                     reported=reported.card_section(store, c.setup_id, c.setup.server.argv),
                     sweeps=sweeps.of_setup(sweeps.load_sweeps(store), c.setup_id))


def show(store: Store, c: Card) -> None:
    """Every section of the card of ``c``."""
    for section in cv.sections(c, inputs(store, c)):
        heading(section)
        for block in section.blocks:
            draw(store, c, block)
        if section.download:
            name, make = section.download
            common.downloads(make, f"{c.setup_id}-{name}")  # made only when downloaded


def heading(section: cv.Section) -> None:
    if not section.title:
        return
    if section.level == 1:
        st.title(md(section.title), anchor=False)
    elif section.level == 2:  # the view's own words (no data): shown as written
        st.header(section.title, anchor=section.anchor)
    else:
        st.subheader(section.title, anchor=section.anchor)


def text(b: cv.Text) -> None:
    if b.tone == "badge":
        st.markdown(f":{BADGE_COLOURS.get(b.label or '', 'green')}-badge[{md(b.label)}]"
                    + (f" &nbsp; {md(b.text)}" if b.text else ""))
        return
    words = (f"**{md(b.label)}**{md(b.sep)}" if b.label else "") + (b.text if b.own else md(b.text))
    if b.tone == "heading":
        st.markdown(f"**{md(b.text)}**")
    elif b.tone == "note":
        st.caption(words)
    elif b.tone == "info":
        st.info(words)
    elif b.tone == "warning":
        st.warning(words)
    else:
        st.markdown(words)


def draw(store: Store, c: Card, b: object) -> None:
    """One block of a section."""
    if isinstance(b, cv.Text):
        text(b)
    elif isinstance(b, cv.Table):
        if b.df.empty and b.empty is None:
            return
        common.table(b.df, f"{c.setup_id}-{b.key}", empty=b.empty or "Nothing to show.", numeric=list(b.numeric),
                     download=b.download)
    elif isinstance(b, cv.Tiles):
        common.tiles(b.tiles)
    elif isinstance(b, cv.Bullets):
        st.markdown("\n".join(f"- **{md(x[0])}** — {md(x[1])}" if isinstance(x, tuple) else f"- {md(x)}"
                              for x in b.items))
    elif isinstance(b, cv.Sources):
        st.markdown("\n".join(f"- Source: {md(said)}" + (f" — {md(url)}" if url else "") for said, url in b.items))
    elif isinstance(b, cv.Code):
        if b.caption:
            st.caption(md(b.caption))
        # st.code keeps its copy button; unwrapped, a long command scrolls inside its box and no flag is split
        st.code(b.text, language="bash", wrap_lines=False)
    elif isinstance(b, cv.Facts):
        st.markdown("\n".join(f"- **{md(k)}**: {md(v)}" for k, v in b.rows))
    elif isinstance(b, cv.Details):
        with st.expander(b.summary):
            for inner in b.blocks:
                draw(store, c, inner)
    elif isinstance(b, cv.Chart):
        chart(c, b)
    elif isinstance(b, cv.Link):
        if b.app:
            common.link(b.app, b.text, query_params=b.params, icon=":material/show_chart:")
    elif isinstance(b, cv.Files):
        files(store, c, b)


def chart(c: Card, b: cv.Chart) -> None:
    """The memory test's chart; the curves are on Scaling curves (the section's link)."""
    if b.id == "fit" and c.fit is not None:
        common.vega(charts.fit_spec(c.fit_steps, vram_gib=c.vram_gib), key="fit-chart")


def files(store: Store, c: Card, b: cv.Files) -> None:
    """The raw files, and a picker that downloads one."""
    table = b.df
    st.caption(md(b.note))
    common.table(table, f"{c.setup_id}-{b.key}")
    choice = st.selectbox("Download a raw file", table.index, format_func=lambda i: f"{table.Run[i]} / "
                          f"{table.File[i]} ({table.Bytes[i]} bytes)", key="rawfile")
    try:
        data, note = raw_file(store, c, table["SHA-256"][choice])
    except rawfiles.RawFileError as exc:
        st.warning(f"Not available: {md(exc)}. Only the bytes that were ingested are offered.")
        return
    if note:
        st.warning(md(note))
    st.download_button("Download", data, file_name=table.File[choice].split("/")[-1], key="rawdl",
                       icon=":material/download:")


def raw_file(store: Store, c: Card, sha: str) -> tuple[bytes, str]:
    """``Store.raw_file`` from where this card's rows say the file is (no query), and ''; from every setup's
    record of the same file when those are gone or changed, and a note saying so (never silently). Raises
    RawFileError, saying why, when no copy is the file that was ingested."""
    mine = list(dict.fromkeys((str(src), int(n)) for src, n, h in zip(c.files.source, c.files.bytes, c.files.sha256)
                              if h == sha))
    try:
        return store.raw_file(sha, mine), ""
    except rawfiles.RawFileError as exc:
        mine_failed = exc
    try:
        data = store.raw_file(sha)
    except rawfiles.RawFileError:
        raise mine_failed from None
    return data, (f"This card's copy: {mine_failed}. The download is the file as it was ingested, from another "
                  "setup's copy with the same SHA-256.")
