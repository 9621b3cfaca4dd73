"""Run live: measure a local OpenAI-compatible server (llama-server first) and add it to the site."""

import pandas as pd
import streamlit as st

from benchcards import charts
from benchcards.paths import LOCAL
from live.client import NotLoopback, check_target
from live.job import LiveJob
from live.measure import PARTS, MeasureConfig, SetupInput
from ui import common

common.page("Run live", "⏱️")
common.store()
st.title("Run live")
st.markdown("Measure a server running on this machine the same way as every card: decode, prefill at depth, "
            "requests at once, a long answer and long prompts. No GPU here? Start the demo server: "
            "`python -m live demo-server --port 8089` and measure `http://127.0.0.1:8089`.")
st.caption("Only addresses on this machine (127.0.0.1, localhost, ::1) are measured unless you allow others below.")

job: LiveJob | None = st.session_state.get("live_job")
running = job is not None and not job.done

with st.form("live"):
    c1, c2 = st.columns(2)
    base_url = c1.text_input("Server address", "http://127.0.0.1:8089", key="live_base_url")
    model = c2.text_input("Model id (empty: the server's first model)", key="live_model")
    parts = st.multiselect("Parts", list(PARTS), default=["decode", "prefill", "conc"], key="live_parts")
    a, b, c, d = st.columns(4)
    runs = a.number_input("Decode runs per prompt", 1, 20, 2, key="live_runs")
    max_tokens = b.number_input("Decode tokens", 16, 8192, 512, key="live_max_tokens")
    min_tokens = c.number_input("Minimum valid decode run", 1, 8192, 256, key="live_min_tokens")
    thinking = d.selectbox("Thinking", ["off", "on", "leave to the server"], key="live_thinking")
    a, b, c, d = st.columns(4)
    depths = a.text_input("Prefill depths", "2048,8192,32768", key="live_depths")
    levels = b.text_input("Requests at once", "1,2,4,8", key="live_levels")
    rounds = c.number_input("Rounds per level", 1, 10, 2, key="live_rounds")
    ctx_depths = d.text_input("Long-prompt depths", "16384,32768,65536,131072", key="live_ctx_depths")
    st.markdown("**The setup** (what the server cannot tell)")
    a, b, c, d = st.columns(4)
    title = a.text_input("Title (optional)", key="live_title")
    gpu = b.text_input("GPU", key="live_gpu")
    vram = c.number_input("VRAM per GPU (GiB)", 0.0, 1024.0, 0.0, key="live_vram")
    quant = d.text_input("Quantisation", key="live_quant")
    server_cmd = st.text_input("Exact server command (so the card can explain every flag)", key="live_server_cmd")
    allow_remote = st.checkbox("Allow a server on another machine", key="live_allow_remote")
    start = st.form_submit_button("Start", type="primary", disabled=running)

if start and not running:
    try:
        check_target(base_url, allow_remote)
        to_ints = lambda s: tuple(int(x) for x in s.split(",") if x.strip())
        cfg = MeasureConfig(base_url=base_url, model=model or None, parts=tuple(parts), runs=int(runs),
                            max_tokens=int(max_tokens), min_decode_tokens=int(min_tokens),
                            prefill_depths=to_ints(depths), conc_levels=to_ints(levels), conc_rounds=int(rounds),
                            ctx_depths=to_ints(ctx_depths), allow_remote=allow_remote,
                            thinking={"off": False, "on": True}.get(thinking))
    except NotLoopback as exc:
        st.error(f"{common.md(exc)}. Tick 'Allow a server on another machine' to measure it anyway.")
    except ValueError as exc:
        st.error(f"Check the settings: {common.md(exc)}")
    else:
        user = SetupInput(title=title or None, gpu=gpu or None, vram_gib=vram or None, quant=quant or None,
                          server_cmd=server_cmd or None)
        job = LiveJob(cfg, user, LOCAL, common.db_path()).start()
        st.session_state["live_job"] = job
        running = True


@st.fragment(run_every=1.0 if running else None)
def progress() -> None:
    job: LiveJob | None = st.session_state.get("live_job")
    if job is None:
        return
    steps = [e for e in job.events if e.kind == "step"]
    total = steps[-1].total if steps else 0
    state = "running" if not job.done else ("error" if job.error else "complete")
    label = (f"Measuring… {len(steps)}/{total or '?'} steps" if not job.done else
             f"Finished: {len(steps)} steps" if not job.error else f"Stopped: {common.md(job.error)}")
    with st.status(label, state=state, expanded=True):
        if total:
            st.progress(len(steps) / total)
        if steps:
            table = pd.DataFrame([{"Step": e.label, "Status": e.status, "Decode (tok/s)": e.decode_tps,
                                   "Server decode": e.server_decode_tps, "Prefill (tok/s)": e.prefill_tps,
                                   "Server prefill": e.server_prefill_tps, "Reason": e.reason or ""}
                                  for e in steps])
            st.dataframe(table, hide_index=True, width="stretch", key=f"live-table-{len(steps)}")
            if table["Decode (tok/s)"].notna().any():
                common.chart(charts.live_steps_chart(table), key=f"live-chart-{len(steps)}")
    if not job.done:
        if st.button("Stop", disabled=job.stopping, key="stop"):
            job.stop()
            st.toast("Stopping after the request in flight; finished steps will be saved.")
    elif job.run_dir is not None:
        st.success(f"Saved and added to the site: {common.md(job.report)}")
        st.page_link("pages/1_Setup_card.py", label="Open its card", query_params={"setup": job.setup_id},
                     icon=":material/arrow_forward:")
        if job.done and st.session_state.get("live_finished") != id(job):
            st.session_state["live_finished"] = id(job)
            st.rerun(scope="app")  # re-enable the form


progress()
