"""Compare two to four setups: what differs in their configuration, then their figures side by side."""

import streamlit as st

from benchcards.read import card_data, quality, reported
from benchcards.views import compare
from ui import common
from ui.common import md

common.page("Compare", "⚖️")
store = common.store()
st.title("Compare setups")
ids = common.setup_picker(store, "Setups (2 to 4)", key="setups", multi=True, max_selections=4)
if len(ids or []) < 2:
    st.info("Choose two to four setups.")
    st.stop()
cards = [card_data.card(store, s) for s in ids]
names = compare.names(cards)
st.caption(md("Every difference is relative to the first setup chosen: " + names[0] + "."))

st.header("Configuration: only what differs")
groups = compare.config_diff([c.setup for c in cards], names)
if not groups:
    st.caption("The configurations are the same (ports, addresses and model names for clients are not compared).")
for group, table in groups:
    st.subheader(group)
    common.table(table, f"config-{group.lower().replace(' ', '-')}", download=False)

st.header("Speed")
speed = compare.metrics_side_by_side(cards, names)
common.table(speed.table, "compare-speed", empty="None of these setups has speed figures in common.",
             classes=speed.verdicts, numeric=names)
st.caption(compare.SPEED_NOTE)

said = reported.compare_lines(store, list(ids), names)
if said:  # reported figures stay out of the side-by-side table: they are not measured (docs/definitions.md#reported)
    st.subheader("Reported figures")
    st.markdown("\n".join(f"- {md(line)}" for line in said))

st.header("Quality")
qual = compare.quality_side_by_side(cards, lambda a, b: quality.compare_quality(store, a, b), names)
common.table(qual.table, "compare-quality", empty="No quality test in common.", classes=qual.verdicts)
st.caption("Significant: McNemar's exact test (p < 0.05) when both answered the same items, otherwise the 95 % "
           "interval of the difference (Newcombe) excludes 0.")

st.header("Memory test")
fit = compare.fit_side_by_side(cards, names)
common.table(fit.table, "compare-fit", empty="No memory test among these setups.", classes=fit.verdicts,
             numeric=names)
if not fit.empty:
    st.caption("Peak GPU memory and decode at each setup's largest context that answered. A server that keeps "
               "expert weights in system RAM (--n-cpu-moe and the like) needs that RAM too: its peak is only "
               "what the GPU held.")
