"""The analysis views in Streamlit: draws the sections of ``benchcards.views.analysisview`` in their order.

Only how each block looks is decided here (sub-headers, captions, boxes, tables, charts); every word and figure
comes from the view, the same lists the static export walks (``benchcards.site.analysis_pages``).
"""

from __future__ import annotations

import streamlit as st

from benchcards.charts import charts
from benchcards.site import urls
from benchcards.views import analysisview as av
from benchcards.views import cardview as cv
from ui import cardpage, common
from ui.common import md


def show(sections: list[cv.Section]) -> None:
    """Draw every section of one analysis view (its title as a sub-header, then its blocks).
    Side effects: Streamlit elements on the current page or container."""
    for section in sections:
        anchor = urls.tier_slug(section.anchor)
        if section.level <= 2:
            st.subheader(md(section.title), anchor=anchor)
        else:
            st.markdown(f"#### {md(section.title)}")
        for i, block in enumerate(section.blocks):
            draw(block, f"{anchor}-{i}")


def draw(b: object, key: str) -> None:
    """One block of a section (``key``: unique on the page, for its widgets)."""
    if isinstance(b, cv.Text):
        cardpage.text(b)
    elif isinstance(b, av.Plot):
        common.chart(charts.analysis_chart(b), key=f"chart-{key}")
        if b.caption:
            st.caption(md(b.caption))
    elif isinstance(b, av.Table):
        if not b.df.empty:
            # notes under their row, across the table: a Notes column beside a dozen figures was squeezed to
            # a word a line at 1440 px (a row 450 px tall)
            common.table(b.df, b.key, numeric=b.numeric, below=("Notes",))
    elif isinstance(b, av.TierLinks):
        pass  # the tab's tier picker offers these tiers (the export links a page per tier)
