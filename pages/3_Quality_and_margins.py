"""Quality and margins: results with Wilson 95 % intervals; A vs B per test with a paired test when possible."""

import pandas as pd
import streamlit as st

from benchcards import charts, queries, views
from ui import common

common.page("Quality & margins", "🎯")
store = common.store()
st.title("Quality & margins")
st.caption("Each result has the Wilson score interval at 95 %: the ± is its half-width in percentage points. "
           "A cut-off answer counts as wrong.")
ids = common.setup_picker(store, "Setups", key="setups", multi=True)
q = queries.quality_table(store, ids or None)
if q.empty:
    st.info("No quality results for these setups yet.")
    st.stop()
common.chart(charts.quality_chart(q), key="quality-chart")
view = views.quality_table(q)
common.table(view, "quality")

st.header("Compare two setups")
with_q = list(dict.fromkeys(q.setup_id))
if len(with_q) < 2:
    st.caption("Choose at least two setups with quality results to compare them.")
    st.stop()
ca, cb = st.columns(2)
a = common.setup_picker(store, "A", key="a", options=with_q, default=with_q[0], where=ca)
b = common.setup_picker(store, "B", key="b", options=with_q, default=with_q[1], where=cb)
if a == b:
    st.caption("A and B are the same setup.")
    st.stop()
comps = queries.compare_quality(store, a, b)
if not comps:
    st.caption("These two setups have no test in common.")
    st.stop()
labels = dict(zip(q.test, q.label))
table = pd.DataFrame([{
    "Test": labels.get(x.test, x.test), "A − B (points)": f"{x.diff_pp:+.1f}",
    "95 % interval": f"{x.lo_pp:+.1f} to {x.hi_pp:+.1f}", "Method": x.method,
    "p (McNemar)": "" if x.p_value is None else f"{x.p_value:.3f}", "Paired items": x.n_pairs or "",
    "Verdict": ("A better" if x.diff_pp > 0 else "B better") if x.significant else "not significant",
} for x in comps])
common.table(table, "quality-compare")
st.caption("Paired (McNemar's exact test) when both setups answered the same items; otherwise Newcombe's interval "
           "for two independent proportions. *not significant*: the 95 % interval includes 0.")
