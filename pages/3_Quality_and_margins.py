"""Quality and margins: results with Wilson 95 % intervals; A vs B per test with a paired test when possible."""

import pandas as pd
import streamlit as st

from benchcards.charts import charts
from benchcards.domain import fmt, metrics
from benchcards.read import card_data, quality
from benchcards.views import compare
from benchcards.views import tables as views
from ui import common

common.page("Quality & margins", "🎯")
store = common.store()
st.title("Quality & margins")
st.caption("Each result has the Wilson score interval at 95 %: the ± is its half-width in percentage points; "
           "where the interval is lopsided (few items, or near 0 % or 100 %) it is written out instead, e.g. "
           "100.0 % (51.0–100.0) for 4 of 4. A cut-off answer counts as wrong.")
ids = common.setup_picker(store, "Setups", key="setups", multi=True)
q = quality.quality_table(store, ids or None)
if q.empty:
    st.info("No quality results for these setups yet.")
    st.stop()
shown_ids = list(dict.fromkeys(q.setup_id))
names = dict(zip(shown_ids, compare.names([card_data.card(store, s) for s in shown_ids])))
common.chart(charts.quality_chart(q, names), key="quality-chart")
common.table(views.quality_table(q, names), "quality")

st.header("Compare two setups")
with_q = shown_ids
if len(with_q) < 2:
    st.caption("Choose at least two setups with quality results to compare them.")
    st.stop()
ca, cb = st.columns(2)
a = common.setup_picker(store, "A", key="a", options=with_q, default=with_q[0], where=ca)
b = common.setup_picker(store, "B", key="b", options=with_q, default=with_q[1], where=cb)
if a is None or b is None or a == b:
    st.caption("Choose two different setups as A and B.")
    st.stop()
order = {t: i for i, t in enumerate(metrics.TESTS)}
comps = sorted(quality.compare_quality(store, a, b), key=lambda x: (order.get(x.test, len(order)), x.test))
if not comps:
    st.caption("These two setups have no test in common.")
    st.stop()
labels = dict(zip(q.test, q.label))
rows, verdicts = [], []
for x in comps:
    text, verdict = compare.quality_verdict(x)
    word = ("A better" if x.diff_pp > 0 else "B better") if x.significant else "no significant difference"
    rows.append({"Test": metrics.quality_label(x.test, labels.get(x.test)), "A − B": fmt.points(x.diff_pp),
                 "95 % interval": fmt.signed_interval(x.lo_pp, x.hi_pp), "Method": x.method,
                 "p (McNemar)": fmt.p_value(x.p_value), "Paired items": fmt.number(x.n_pairs, 0),
                 "Verdict": word})
    verdicts.append(verdict)
common.table(pd.DataFrame(rows), "quality-compare", classes={"Verdict": verdicts, "A − B": verdicts})
st.caption("Paired (McNemar's exact test) when both setups answered the same items; otherwise Newcombe's interval "
           "for two independent proportions. *No significant difference*: p ≥ 0.05, or the 95 % interval of the "
           "difference includes 0. Green: A is significantly better; orange: A is significantly worse.")
