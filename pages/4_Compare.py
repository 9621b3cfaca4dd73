"""Compare two to four setups: what differs in their configuration, then their figures side by side."""

import streamlit as st

from benchcards import compare, queries
from ui import common

common.page("Compare", "⚖️")
store = common.store()
st.title("Compare setups")
ids = common.setup_picker(store, "Setups (2 to 4)", key="setups", multi=True, max_selections=4)
if len(ids or []) < 2:
    st.info("Choose two to four setups.")
    st.stop()
cards = [queries.card(store, s) for s in ids]
st.header("Configuration: only what differs")
diff = queries.config_diff([c.setup for c in cards])
if diff.empty:
    st.caption("The configurations are identical.")
else:
    common.table(diff.reset_index(names="Field"), "config-diff")
st.header("Speed")
common.table(compare.metrics_side_by_side(cards), "compare-speed",
             empty="None of these setups has speed figures in common.")
st.header("Quality")
common.table(compare.quality_side_by_side(cards), "compare-quality",
             empty="No quality test in common.")
st.header("Memory test")
common.table(compare.fit_side_by_side(cards), "compare-fit", empty="No memory test among these setups.")
st.caption("Differences are relative to the first setup chosen.")
