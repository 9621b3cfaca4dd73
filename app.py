"""benchcards — overview of every measured setup. Run: streamlit run app.py"""

import streamlit as st

from benchcards import queries, views
from ui import common

common.page("Overview", "📊")
store = common.store()
df = queries.overview(store)

st.title("benchcards")
st.caption("Local LLM inference setups, measured the same way: decode, prefill at depth, requests at once, "
           "quality with honest margins, and how much context fits.")

if df.empty:
    st.info("No setups yet. Upload a raw setup folder on the **Upload** page, measure your own server on "
            "**Run live**, or load folders with `python -m ingest FOLDER`.")
    st.stop()

with st.sidebar:
    st.header("Filters")
    gpu = st.multiselect("GPU", sorted(df.gpu.dropna().unique()), key="gpu", bind="query-params")
    vmax = float(df.vram_gib.max() or 0) if df.vram_gib.notna().any() else 0.0
    vram = st.slider("VRAM (GiB)", 0.0, max(vmax, 1.0), (0.0, max(vmax, 1.0)), step=1.0, key="vram",
                     bind="query-params")
    engine = st.multiselect("Engine", sorted(df.engine.dropna().unique()), key="engine", bind="query-params")
    model = st.multiselect("Model", sorted(df.model.dropna().unique()), key="model", bind="query-params")
    quant = st.multiselect("Quantisation", sorted(df.quant.dropna().unique()), key="quant", bind="query-params")
    thinking = st.segmented_control("Thinking", ["any", "on", "off"], default="any", key="thinking",
                                    bind="query-params")
    kinds = st.multiselect("Data", ["verified raw", "summary only", "synthetic"], key="data",
                           bind="query-params")
    sort = st.selectbox("Sort by", list(queries.SORTS), key="sort", bind="query-params")

flt = queries.OverviewFilter(gpu=tuple(gpu), vram=tuple(vram), engine=tuple(engine), model=tuple(model),
                             quant=tuple(quant), thinking={"on": True, "off": False}.get(thinking or "any"),
                             kinds=tuple(kinds))
shown = queries.sort_overview(flt.apply(df), sort or "newest")
st.write(f"**{len(shown)}** of {len(df)} setups")
if shown.empty:
    st.info("No setup matches these filters. Widen them in the sidebar.")
    st.stop()

view = views.overview_table(shown, lambda sid: f"Setup_card?setup={sid}")
common.table(view, "overview", column_config={
    "Card": st.column_config.LinkColumn("Card", display_text="open", width="small"),
    "Largest context": st.column_config.NumberColumn(format="%d"),
    "VRAM (GiB)": st.column_config.NumberColumn(format="%.0f"),
})
st.caption("Quality cells: result ± half-width of the Wilson 95 % interval. *summary only*: published figures "
           "without raw records, not recomputable. *synthetic*: generated demo data, not a measurement.")
