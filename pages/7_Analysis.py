"""Analysis: time to answer for your own sizes, throughput vs per-request speed, speed vs quality per tier, knees."""

import streamlit as st

from benchcards.charts import charts
from benchcards.compute import analysis
from benchcards.read import analysis_inputs
from benchcards.views import analysisview as av
from ui import common
from ui.common import md

common.page("Analysis", "🧭")
store = common.store()
st.title("Analysis")
st.caption(md(av.INTRO))
everything = analysis_inputs.analysis_data(store)
if everything.setups.empty:
    st.info("No setups yet. Load raw setup folders with `python -m ingest FOLDER` or on the Upload page.")
    st.stop()

with st.sidebar:
    st.header("Filters")
    tiers = st.multiselect("Hardware tier", analysis.tiers_present(everything), key="tier", bind="query-params",
                           placeholder="all tiers")
    include_tests = st.toggle("Include method tests", key="tests", bind="query-params",
                              help="Real measurements made to test the method (a tiny random-weight model, a test "
                                   "engine): their figures say nothing about a model's speed.")
data = analysis.filter_tiers(everything, tiers)
left_out: list[str] = []
if not include_tests:
    data, left_out = analysis.without_method_tests(data)
st.write(f"**{len(data.setups)}** of {len(everything.setups)} setups" + (f" · {', '.join(tiers)}" if tiers else ""))
if left_out:
    st.caption("Left out: " + "; ".join(md(t) for t in left_out) + " (method test: shows how benchcards "
               "measures, not how fast a model runs). Switch on *Include method tests* in the sidebar to rank it too.")

answer_tab, tp_tab, quality_tab, knee_tab = st.tabs([v.title for v in av.VIEWS])

with answer_tab:
    st.caption(md(av.TIME_TO_ANSWER.intro))
    c1, c2, c3 = st.columns(3)
    prompt = c1.number_input("Prompt (tokens)", min_value=1, max_value=1_048_576, value=8192, step=1024,
                             key="prompt", bind="query-params")
    words = c2.number_input("Answer (words)", min_value=0, max_value=200_000, value=500, step=100, key="words",
                            bind="query-params")
    tpw = c3.number_input("Tokens per word", min_value=0.2, max_value=10.0, value=None, step=0.1, key="tpw",
                          placeholder="each setup's own", bind="query-params",
                          help="Leave empty to use each setup's own ratio from its decode runs.")
    measured_only = st.toggle("Rank only setups measured at these sizes", key="measured", bind="query-params")
    answers = analysis.time_to_answer(data, int(prompt), float(words), tokens_per_word_override=tpw)
    if measured_only:
        answers = analysis.rank_answers(answers[answers.in_range])
    if answers.total_s.notna().any():
        common.chart(charts.answer_time_chart(answers), key="chart-answer")
    else:
        st.info(av.TIME_TO_ANSWER.empty)
    common.table(analysis.answer_table(answers), "time-to-answer", numeric=analysis.NUMERIC_COLUMNS)
    st.caption(md(av.TIME_TO_ANSWER.rules))

with tp_tab:
    st.caption(md(av.THROUGHPUT.intro))
    tp = analysis.throughput(data)
    if tp.empty:
        st.info(av.THROUGHPUT.empty)
    else:
        common.chart(charts.pareto_chart(tp, charts.setup_colors(tp.setup_id.unique())), key="chart-pareto")
        common.table(analysis.throughput_table(tp), "throughput-vs-per-request", numeric=analysis.NUMERIC_COLUMNS)
        st.caption(md(av.THROUGHPUT.rules))

with quality_tab:
    st.caption(md(av.SPEED_QUALITY.intro))
    tests = analysis.quality_tests(data)
    if not tests:
        st.info(av.SPEED_QUALITY.empty)
    else:
        by_label: dict[str, str] = {}  # labels (not ids) in the URL; the most widely run test wins a tie
        for t, lab in tests:
            by_label.setdefault(lab, t)
        q1, q2 = st.columns(2)
        label = q1.selectbox("Quality test", list(by_label), key="test", bind="query-params")
        speed = q2.selectbox("Speed", list(analysis.SPEED_MEASURES), key="speed", bind="query-params") or "decode"
        test = by_label.get(label or "", tests[0][0])
        sq = analysis.speed_quality(data, test, speed)
        speed_label = analysis.SPEED_MEASURES[speed][0]
        if sq.empty:
            st.info(av.SPEED_QUALITY.empty)
        else:
            order = [t for t in analysis.tiers_present(data) if t in set(sq.tier)]
            for i, t in enumerate(order):  # one chart per tier: each fits the width of a phone
                common.chart(charts.speed_quality_chart(sq[sq.tier == t], speed_label, [t]),
                             key=f"chart-speed-quality-{i}")
            common.table(analysis.speed_quality_table(sq, speed_label), "speed-vs-quality",
                         numeric=(*analysis.NUMERIC_COLUMNS, speed_label))
            st.caption(md(av.SPEED_QUALITY.rules))

with knee_tab:
    st.caption(md(av.KNEES.intro))
    kn = analysis.knees(data)
    ids = data.setups.sort_values(["synthetic", "setup_id"], kind="stable").setup_id.tolist()  # real ones first
    picked = common.setup_picker(store, "Setups on the charts", key="setups", multi=True, options=ids)
    shown = picked or ids[:5]
    if not picked and len(ids) > 5:
        st.caption("Showing the first five setups; choose others above.")
    points = analysis.depth_curves(data.only(shown), tasks=False)
    titles = dict(zip(data.setups.setup_id, data.setups.title))
    points["title"] = points.setup_id.map(titles)
    kn_shown = kn[kn.setup_id.isin(shown)]
    colours = charts.setup_colors(shown)  # each setup's own colour, the same on the three charts
    for kind in (analysis.PREFILL, analysis.DECODE):
        if (points.kind == kind).any():
            common.chart(charts.knee_depth_chart(points, kn_shown, kind, colours), key=f"chart-knee-{kind}")
    tp_shown = analysis.throughput(data.only(shown))
    if not tp_shown.empty:
        common.chart(charts.knee_conc_chart(tp_shown, kn_shown, colours), key="chart-knee-conc")
    common.table(analysis.knee_table(kn), "knees", numeric=analysis.NUMERIC_COLUMNS)
    if kn.empty:
        st.info(av.KNEES.empty)
    st.caption(md(av.KNEES.rules))
