"""Analysis: time to answer for your own sizes, throughput vs per-request speed, speed vs quality per tier, knees.

Each tab draws one view of ``benchcards.views.analysisview`` (the sections the export's analysis pages show too)
for the inputs chosen here."""

import streamlit as st

from benchcards.compute import analysis
from benchcards.domain import fmt
from benchcards.read import analysis_inputs
from benchcards.views import analysisview as av
from ui import analysis_page, common
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
scope = av.scope_text(tiers)
st.write(f"**{len(data.setups)}** of {len(everything.setups)} setups" + (f" · {', '.join(tiers)}" if tiers else ""))
if left_out:  # counted here for every tab; named once, by the time-to-answer view (as on the export's page)
    st.caption(f"{fmt.count(len(left_out), 'method test')} not ranked on any tab (named under Time to answer). "
               "Switch on *Include method tests* in the sidebar to rank them too.")

answer_tab, tp_tab, quality_tab, knee_tab = st.tabs([v.title for v in av.VIEWS])

with answer_tab:
    c1, c2, c3 = st.columns(3)
    prompt = c1.number_input("Prompt (tokens)", min_value=1, max_value=1_048_576, value=av.ANSWER_PROMPT, step=1024,
                             key="prompt", bind="query-params")
    words = c2.number_input("Answer (words)", min_value=0, max_value=200_000, value=av.ANSWER_WORDS, step=100,
                            key="words", bind="query-params")
    tpw = c3.number_input("Tokens per word", min_value=0.2, max_value=10.0, value=None, step=0.1, key="tpw",
                          placeholder="each setup's own", bind="query-params",
                          help="Leave empty to use each setup's own ratio from its decode runs.")
    measured_only = st.toggle("Rank only setups measured at these sizes", key="measured", bind="query-params")
    analysis_page.show(av.time_to_answer_sections(data, int(prompt), float(words), tokens_per_word=tpw,
                                                  measured_only=measured_only, left_out=left_out))

with tp_tab:
    analysis_page.show(av.throughput_sections(data, scope))

with quality_tab:
    tests = analysis.quality_tests(data)
    if not tests:
        st.caption(md(av.SPEED_QUALITY.intro))
        st.info(av.SPEED_QUALITY.empty)
    else:
        by_label = av.test_choices(tests)  # labels (not ids) in the URL; a shared label names its id too
        q1, q2, q3 = st.columns(3)
        label = q1.selectbox("Quality test", list(by_label), key="test", bind="query-params")
        speed = q2.selectbox("Speed", list(analysis.SPEED_MEASURES), key="speed", bind="query-params") or "decode"
        test = by_label.get(label or "", tests[0][0])
        sq = analysis.speed_quality(data, test, speed)
        # one tier at a time, as the export's page per tier (the URL keeps the tier's label, as the test's)
        # opening on the tier with the most setups (the smallest tier may hold one point)
        counts = dict(av.speed_quality_tiers(sq))
        in_tiers = list(counts)
        most = max(range(len(in_tiers)), key=lambda i: counts[in_tiers[i]]) if in_tiers else 0
        # (no format_func: a bound selectbox writes the formatted label into the URL)
        tier = q3.selectbox("Hardware tier", in_tiers, index=most, key="quality_tier",
                            bind="query-params") if in_tiers else None
        analysis_page.show(av.speed_quality_sections(data, test, label or tests[0][1], speed, tier=tier, rows=sq))

with knee_tab:
    ids = data.setups.sort_values(["synthetic", "setup_id"], kind="stable").setup_id.tolist()  # real ones first
    picked = common.setup_picker(store, "Setups on the charts (the fastest five unless chosen)", key="setups",
                                 multi=True, options=ids)
    analysis_page.show(av.knee_sections(data, scope=scope, chosen=picked or ()))
