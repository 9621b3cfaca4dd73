"""Sweeps: server settings measured on fresh boots, each figure's difference from the baseline with its interval.

Logic lives in benchcards.compute.sweeps (records and tables), benchcards.compute.sweepstats (the statistics) and
benchcards.charts.charts.sweep_chart.
"""

from urllib.parse import quote

import streamlit as st

from benchcards.charts import charts
from benchcards.compute import sweeps
from ui import common
from ui.common import md


def card_link(setup_id: object) -> str | None:
    return f"Setup_card?setup={quote(str(setup_id), safe='')}" if setup_id else None


common.page("Sweeps", "🧪")
store = common.store()
st.title("Sweeps")
st.caption(sweeps.EXPLAINED)
records = sweeps.load_sweeps(store)
if not records:
    st.info("No sweep yet. Run one with `python -m live sweep --server-cmd \"llama-server -m M.gguf -c {ctx}\" "
            "--variant \"f16 KV=\" --variant \"q8_0 KV=-ctk q8_0 -ctv q8_0\" --gpu cpu --ingest`, then rebuild.")
    st.stop()
names = {r.sweep_id: sweeps.label(r) for r in records}
# ?sweep=<id> picks the sweep (a variant's card links here with it); read before the picker, whose URL binding
# would hold its label, not the id
ids, wanted = list(names), st.query_params.get("sweep")
chosen = st.selectbox("Sweep", ids, index=ids.index(wanted) if wanted in names else 0, format_func=lambda k: names[k],
                      key="sweep") or ids[0]
st.query_params["sweep"] = chosen
rec = next(r for r in records if r.sweep_id == chosen)
st.caption(md(sweeps.summary(rec)))
table = sweeps.sweep_table(store, rec)
if table.empty:
    st.warning(sweeps.EMPTY)
else:
    common.chart(charts.sweep_chart(table), key="sweep-chart")
    shown = sweeps.shown_table(table)
    links = {"Variant": [card_link(s) for s in table["_setup"]]}
    common.table(shown, f"{rec.sweep_id}-differences", links=links)
st.subheader("Variants")
variants = sweeps.variants_table(rec)
common.table(variants.drop(columns=["_setup"]), f"{rec.sweep_id}-variants",
             links={"Variant": [card_link(s) for s in variants["_setup"]]})
st.subheader("Boots, in the order they ran")
common.table(sweeps.boots_table(rec), f"{rec.sweep_id}-boots")
