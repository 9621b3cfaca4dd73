"""Sweeps: server settings measured on fresh boots, each figure's difference from the baseline with its interval.

Logic lives in benchcards.sweeps (records and tables), benchcards.sweepstats (the statistics) and
benchcards.charts.sweep_chart.
"""

from urllib.parse import quote

import streamlit as st

from benchcards import charts, sweeps
from ui import common
from ui.common import md

common.page("Sweeps", "🧪")
store = common.store()
st.title("Sweeps")
st.caption("Each variant is one server setting, booted afresh several times in interleaved order (A B A B …). "
           "Δ is the variant's mean over its boots minus the baseline's, with a 95 % interval from the spread "
           "between boots (Welch; Δ % by Fieller): a difference whose interval crosses zero is within noise. "
           "With one boot per variant noise cannot be told from effect.")
records = sweeps.load_sweeps(store)
if not records:
    st.info("No sweep yet. Run one with `python -m live sweep --server-cmd \"llama-server -m M.gguf -c {ctx}\" "
            "--variant \"f16 KV=\" --variant \"q8_0 KV=-ctk q8_0 -ctv q8_0\" --gpu cpu --ingest`, then rebuild.")
    st.stop()
names = {r.sweep_id: f"{r.sweep_id} · {', '.join(v.name for v in r.variants)}" for r in records}
chosen = st.selectbox("Sweep", list(names), format_func=lambda k: names[k], key="sweep")
rec = next(r for r in records if r.sweep_id == chosen)
st.caption(md(f"Baseline: {rec.baseline} · {rec.repeats} boots per variant asked · context {rec.ctx:,} · parts "
              f"{', '.join(rec.parts)}" + (" · stopped by the user" if rec.stopped else "")))
table = sweeps.sweep_table(store, rec)
if table.empty:
    st.warning("No figure to compare: the baseline or every other variant has no measured boot.")
else:
    common.chart(charts.sweep_chart(table), key="sweep-chart")
    shown = table.drop(columns=["_setup", "_pct", "_lo", "_hi"])
    links = {"Variant": [f"Setup_card?setup={quote(str(s), safe='')}" if s else None for s in table["_setup"]]}
    common.table(shown, f"{rec.sweep_id}-differences", links=links)
st.subheader("Boots, in the order they ran")
common.table(sweeps.boots_table(rec), f"{rec.sweep_id}-boots")
