"""Scaling curves: prefill, decode and first-token time vs prompt depth; throughput vs requests at once."""

import streamlit as st

from benchcards import charts, queries
from ui import common

common.page("Scaling curves", "📈")
store = common.store()
st.title("Scaling curves")
st.caption("Measured points only, joined by lines; hover a point for its exact value and run count. "
           "Axes switch to log scale when the values span a wide range.")
all_ids = [s for s, _ in queries.setup_ids(store)]
if not all_ids:
    st.info("No setups yet.")
    st.stop()
ids = common.setup_picker(store, "Setups to overlay", key="setups", multi=True)
if not ids:
    st.info("Choose one or more setups to overlay their curves.")
    st.stop()
metrics = ["prefill", "ctx_prefill", "decode_at_depth", "ctx_decode", "ttft", "ctx_ttft", "conc_total",
           "conc_per_request"]
data = queries.series(store, ids, metrics)
if data.empty:
    st.info("These setups have no depth or concurrency measurements (summary-only task figures cannot be "
            "placed on these axes).")
    st.stop()
for kind in ("prefill", "decode", "ttft"):
    pts = charts.depth_points(data, kind)
    if pts.empty:
        st.caption(f"No {charts.CHART_LABELS[kind][1].lower()} for these setups.")
        continue
    common.chart(charts.depth_chart(data, kind), key=f"chart-{kind}")
conc = data[data.metric.isin(["conc_total", "conc_per_request"])]
if conc.empty:
    st.caption("No requests-at-once measurements for these setups.")
else:
    common.chart(charts.conc_chart(data), key="chart-conc")
with st.expander("The measured points"):
    common.table(data, "scaling-points")
