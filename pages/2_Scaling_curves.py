"""Scaling curves: prefill, decode and first-token time vs prompt depth; throughput vs requests at once."""

import streamlit as st

from benchcards.charts import charts
from benchcards.domain import fmt
from benchcards.read import card_data, curves
from benchcards.views import compare
from ui import common
from ui.common import md

common.page("Scaling curves", "📈")
store = common.store()
st.title("Scaling curves")
st.caption("How speed changes as prompts get longer and as more requests run at once. Measured points only, "
           "joined by lines; hover a point for its exact value and run count.")
if not card_data.setup_ids(store):
    st.info("No setups yet.")
    st.stop()
ids = common.setup_picker(store, "Setups to overlay", key="setups", multi=True, max_selections=8,
                          default=curves.curve_setups(store))
if not ids:
    st.info("Choose one or more setups to overlay their curves.")
    st.stop()
cards = [card_data.card(store, s) for s in ids]
names = dict(zip(ids, compare.names(cards)))
metrics = ["prefill", "ctx_prefill", "decode_at_depth", "ctx_decode", "ttft", "ctx_ttft", "task_prefill",
           "task_decode", "task_ttft", "conc_total", "conc_per_request", "bench_prefill", "bench_decode"]
data = curves.series(store, ids, metrics)
colours = charts.setup_colors(ids)  # each setup's own colour on every chart of the page (and in the export)


def missing_note(have: set[str], what: str) -> None:
    """Name the chosen setups that have no points on this chart."""
    lacking = [names[s] for s in ids if s not in have]
    if lacking:
        st.caption(md(f"No {what} for: " + "; ".join(lacking) + "."))


st.header("Prompt depth")
st.caption("Each line joins a setup's prefill steps (2K to 32K prompts, circles) and its long-prompt steps (16K to "
           "128K, a filler then the task, squares): both measure the same thing, the long-prompt steps go deeper. "
           "Triangles: named tasks of another tool, at their own prompt lengths. Diamonds: llama-bench's engine tests "
           "(pp512 @ d8192: 512 tokens timed after 8,192 untimed ones, at x = the context at the test's end), one line "
           "per test. Decode at depth is the mean of the "
           "prompts' medians, as the headline decode. Setups that only test the method (a tiny random-weight "
           "model) are not chosen by default.")
for kind in ("prefill", "decode", "ttft"):
    pts = charts.depth_points(data, kind, names)
    if pts.empty:
        st.caption(f"No {charts.CHART_LABELS[kind][1].lower()} for these setups.")
        continue
    common.chart(charts.depth_chart(data, kind, names, colors=colours), key=f"chart-{kind}")
    missing_note(set(pts.setup_id), charts.CHART_LABELS[kind][1].lower())

st.header("Requests at once")
st.caption("Total: all output tokens of a round / its wall time. Per request: one request's tokens / its "
           "end-to-end time. More requests than the server's slots wait in its queue.")
for rate, metric in (("total", "conc_total"), ("per_request", "conc_per_request")):
    pts = charts.conc_points(data, rate, names)
    if pts.empty:
        st.caption("No requests-at-once measurements for these setups.")
        break
    common.chart(charts.conc_chart(data, rate, names, colors=colours), key=f"chart-{metric}")
    if rate == "total":  # one note for both charts
        missing_note(set(pts.setup_id), "requests-at-once measurements")
with st.expander("The measured points"):
    table = data.assign(
        Setup=[names[s] for s in data.setup_id], Figure=[fmt.label(m, p, lv) for m, p, lv in
                                                         zip(data.metric, data.prompt, data.level)],
        Value=[fmt.metric(m, v) for m, v in zip(data.metric, data.value)],
        Runs=[fmt.number(n, 0) for n in data.n],
        From=["raw records" if p == "raw" else "published summary" for p in data.provenance])
    common.table(table[["Setup", "Figure", "Value", "Runs", "From"]], "scaling-points")
