"""benchcards — overview of every measured setup, ranked. Run: streamlit run app.py"""

import streamlit as st

from benchcards.domain import fmt, metrics, tiers
from benchcards.read import overview_rows
from benchcards.views import analysisview, overview_filter
from benchcards.views import tables as views
from ui import common
from ui import html as bc_html

common.page("Overview", "📊")
store = common.store()
df = overview_rows.overview(store)

st.title("benchcards")
st.caption(common.md(analysisview.LEAD) + " Ranked fastest first within each GPU-memory tier; pick yours in the "
           "sidebar.")

if df.empty:
    st.info("No setups yet. Upload a raw setup folder on the **Upload** page, measure your own server on "
            "**Run live**, or load folders with `python -m ingest FOLDER`.")
    st.stop()


def span(col: str, step: float) -> tuple[float, float]:
    """The slider range of a numeric column: from 0 to its largest value, rounded up to ``step``."""
    top = float(df[col].max()) if df[col].notna().any() else step
    return 0.0, max(step, step * -(-top // step))


with st.sidebar:
    st.header("Filters")
    present = [t for t in tiers.TIER_ORDER if t in set(df.tier)]
    tier = st.multiselect("GPU memory tier", present, key="vram", bind="query-params",
                          help="Setups are grouped by the memory of their GPUs; unified-memory machines have their own "
                               "tier.")
    fits = st.number_input("Fits in my GPU memory (GiB)", min_value=0.0, max_value=1024.0, value=None, step=1.0,
                           key="fits", bind="query-params", placeholder="any",
                           help=metrics.get("need_gib").description)
    gpu_only = st.toggle("Only setups without weights in system RAM", key="gpuonly", bind="query-params",
                         help="Leave out setups whose server keeps weights in system RAM (--n-cpu-moe, --cpu-moe, "
                              "-ot …=CPU, or -ngl below the model's layers): their peak GPU memory is only part of "
                              "what they need.")
    lo, hi = span("model_gb", 5.0)
    size = st.slider("Model file (GB)", lo, hi, (lo, hi), step=1.0, key="size", bind="query-params")
    blo, bhi = span("bpw", 1.0)
    bpw = st.slider("Bits per weight", blo, bhi, (blo, bhi), step=0.5, key="bpw", bind="query-params",
                    help="File bits / total parameters: about 4.8 for Q4_K_M, 8.5 for Q8_0.")
    gpu = st.multiselect("GPU", sorted(df.gpu.dropna().unique()), key="gpu", bind="query-params")
    engine = st.multiselect("Engine", sorted(df.engine.dropna().unique()), key="engine", bind="query-params")
    model = st.multiselect("Model", sorted(df.model.dropna().unique()), key="model", bind="query-params")
    quant = st.multiselect("Quantisation", sorted(df.quant.dropna().unique()), key="quant", bind="query-params")
    thinking = st.segmented_control("Thinking", ["any", "on", "off"], default="any", key="thinking",
                                    bind="query-params")
    kinds = st.multiselect("Data", ["verified raw", "summary only", "reported", "synthetic", "method test"],
                           key="data", bind="query-params")
    sort = st.selectbox("Sort by", list(overview_filter.SORTS), format_func=lambda k: overview_filter.SORTS[k][0], key="sort",
                        bind="query-params")

whole = lambda rng, full: None if tuple(rng) == full else tuple(rng)  # an untouched slider filters nothing
flt = overview_filter.OverviewFilter(
    gpu=tuple(gpu), engine=tuple(engine), model=tuple(model), quant=tuple(quant),
    thinking={"on": True, "off": False}.get(thinking or "any"), kinds=tuple(kinds), tiers=tuple(tier),
    fits_gib=fits, gpu_only=bool(gpu_only), model_gb=whole(size, (lo, hi)), bpw=whole(bpw, (blo, bhi)))
# "fits in my GPU memory" makes the tiers moot: one list, sorted across them; else ranked within each tier,
# shown as groups
by_tier = fits is None and (sort or overview_filter.DEFAULT_SORT) != "newest"
shown = overview_filter.sort_overview(flt.apply(df), sort or overview_filter.DEFAULT_SORT, within_tiers=by_tier)
st.write(f"**{len(shown):,}** of {len(df):,} setups")
if shown.empty:
    st.info("No setup matches these filters. Widen them in the sidebar.")
    st.stop()
if fits is not None and shown.offload.notna().any():
    st.warning(f"{int(shown.offload.notna().sum()):,} of these setups fit in {fmt.number(fits, 0)} GiB only because "
               "their server keeps weights in system RAM (marked ⚠ below; their peak GPU memory was measured "
               "that way). Switch on *Only setups without weights in system RAM* to leave them out.",
               icon=":material/memory:")

PAGE_ROWS = 100
if len(shown) > PAGE_ROWS:
    pages = -(-len(shown) // PAGE_ROWS)
    n = st.number_input(f"Page (of {pages:,}, {PAGE_ROWS} setups each)", 1, pages, 1, key="page")
    shown = shown.iloc[(int(n) - 1) * PAGE_ROWS:int(n) * PAGE_ROWS]

display = views.overview_display(shown)
figures = [h for h, _, _ in views.OVERVIEW_FIGURES]
quality = list(views.OVERVIEW_QUALITY)
units = {h: metrics.get(k).unit for h, k, _ in views.OVERVIEW_FIGURES}
with st.container(key="overview"):
    st.html(bc_html.overview(display, figures, quality, units, groups=by_tier))
common.downloads(lambda: views.overview_table(shown), "overview")
st.caption(("Ranked within each GPU-memory tier, one group per tier. " if by_tier else
            "One list across the tiers (they are moot once you say how much memory you have). " if fits is not None
            else "") +
           common.md(analysisview.LEGEND) + " The full title of a setup: under its name on a phone, on hover over "
           "its name on a wider screen.")
