"""Run live: measure a local OpenAI-compatible server (llama-server first) and add it to the site."""

import pandas as pd
import streamlit as st

from benchcards import charts, fmt, metrics
from benchcards.paths import LOCAL
from live.client import NotLoopback, check_target
from live.job import LiveJob
from live.measure import PARTS, MeasureConfig, SetupInput
from live.progress import InputError, estimate, parse_counts, parse_tokens, plan
from ui import common
from ui.common import md

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
    parts = st.multiselect("Parts", list(PARTS), default=["decode", "prefill", "conc"], key="live_parts",
                           format_func=metrics.part_label)
    a, b, c, d = st.columns(4)
    runs = a.number_input("Decode runs per prompt", 1, 20, 2, key="live_runs")
    max_tokens = b.number_input("Decode tokens", 16, 8192, 512, key="live_max_tokens")
    min_tokens = c.number_input("Minimum valid decode run", 1, 8192, 256, key="live_min_tokens")
    thinking = d.selectbox("Thinking", ["off", "on", "leave to the server"], key="live_thinking")
    a, b, c, d = st.columns(4)
    depths = a.text_input("Prefill depths", "2K, 8K, 32K", key="live_depths",
                          help="Prompt lengths in tokens, e.g. 2048, 8192 or 2K, 8K (K = 1,024).")
    levels = b.text_input("Requests at once", "1, 2, 4, 8", key="live_levels", help="Whole numbers, e.g. 1, 2, 4, 8.")
    rounds = c.number_input("Rounds per level", 1, 10, 2, key="live_rounds")
    ctx_depths = d.text_input("Long-prompt depths", "16K, 32K, 64K, 128K", key="live_ctx_depths",
                              help="Prompt lengths in tokens, e.g. 16K, 32K (K = 1,024).")
    st.markdown("**The setup** (what the server cannot tell)")
    a, b, c, d = st.columns(4)
    title = a.text_input("Title (optional)", key="live_title")
    gpu = b.text_input("GPU", key="live_gpu")
    vram = c.number_input("VRAM per GPU (GiB)", 0.0, 1024.0, 0.0, key="live_vram")
    quant = d.text_input("Quantisation", key="live_quant")
    server_cmd = st.text_input("Exact server command (so the card can explain every flag)", key="live_server_cmd")
    allow_remote = st.checkbox("Allow a server on another machine", key="live_allow_remote")
    start = st.form_submit_button("Start", type="primary", disabled=running)


def read_settings() -> tuple[MeasureConfig | None, list[str]]:
    """The typed settings as a MeasureConfig, or every problem with them (each naming its field)."""
    problems: list[str] = []
    values: dict = {}
    for name, text, parse in (("prefill_depths", depths, lambda t: parse_tokens(t, "Prefill depths")),
                              ("conc_levels", levels, lambda t: parse_counts(t, "Requests at once")),
                              ("ctx_depths", ctx_depths, lambda t: parse_tokens(t, "Long-prompt depths"))):
        try:
            values[name] = parse(text)
        except InputError as exc:
            problems.append(str(exc))
    if not parts:
        problems.append("Parts: choose at least one part to measure")
    try:
        check_target(base_url, allow_remote)
    except NotLoopback as exc:
        problems.append(f"Server address: {exc}. Tick 'Allow a server on another machine' to measure it anyway.")
    except ValueError as exc:
        problems.append(f"Server address: {exc}")
    if problems:
        return None, problems
    try:
        cfg = MeasureConfig(base_url=base_url, model=model or None, parts=tuple(parts), runs=int(runs),
                            max_tokens=int(max_tokens), min_decode_tokens=int(min_tokens), conc_rounds=int(rounds),
                            allow_remote=allow_remote, thinking={"off": False, "on": True}.get(thinking), **values)
    except ValueError as exc:
        return None, [f"Settings: {exc}"]
    return cfg, []


if start and not running:
    cfg, problems = read_settings()
    if cfg is None:
        st.error("Check the settings:\n\n" + "\n".join(f"- {md(p)}" for p in problems))
    else:
        user = SetupInput(title=title or None, gpu=gpu or None, vram_gib=vram or None, quant=quant or None,
                          server_cmd=server_cmd or None)
        job = LiveJob(cfg, user, LOCAL, common.db_path()).start()
        st.session_state["live_job"] = job
        running = True


def step_words(job: LiveJob) -> dict[str, str]:
    return {s.label: s.words for s in plan(job.cfg)}


@st.fragment(run_every=1.0 if running else None)
def progress() -> None:
    job: LiveJob | None = st.session_state.get("live_job")
    if job is None:
        return
    steps = [e for e in job.events if e.kind == "step"]
    now = estimate(plan(job.cfg), list(job.events))
    if not job.done:
        label = "Connecting to the server…" if not job.events else f"Measuring… {now.text()}"
        state = "running"
    elif job.error:
        label, state = f"Stopped: {job.error}", "error"
    else:
        label, state = f"Finished: {len(steps)} steps, {now.total:,} requests", "complete"
    with st.status(label, state=state, expanded=True):
        st.progress(now.fraction if not job.done else 1.0, text=now.text() if not job.done else None)
        if steps:
            words = step_words(job)
            table = pd.DataFrame([{"Step": words.get(e.label, e.label), "Part": metrics.part_label(e.part),
                                   "Status": e.status, "Decode (tok/s)": e.decode_tps,
                                   "Server decode": e.server_decode_tps, "Prefill (tok/s)": e.prefill_tps,
                                   "Server prefill": e.server_prefill_tps, "Reason": e.reason}
                                  for e in steps])
            shown = table.assign(**{col: [fmt.value("decode", v) for v in table[col]]
                                    for col in ("Decode (tok/s)", "Server decode", "Prefill (tok/s)",
                                                "Server prefill")},
                                 Reason=[fmt.text(r) for r in table.Reason])
            common.table(shown.rename(columns={"Server decode": "Server decode (tok/s)",
                                               "Server prefill": "Server prefill (tok/s)"}),
                         f"live-steps-{len(steps)}", download=False)
            if table["Decode (tok/s)"].notna().any():
                common.chart(charts.live_steps_chart(table), key=f"live-chart-{len(steps)}")
    if not job.done:
        if st.button("Stop", disabled=job.stopping, key="stop"):
            job.stop()
            st.toast("Stopping after the request in flight; finished steps will be saved.")
    elif job.run_dir is not None:
        st.success(f"Saved and added to the site: {job.report}")
        st.page_link("pages/1_Setup_card.py", label="Open its card", query_params={"setup": job.setup_id},
                     icon=":material/arrow_forward:")
        if job.done and st.session_state.get("live_finished") != id(job):
            st.session_state["live_finished"] = id(job)
            st.rerun(scope="app")  # re-enable the form


progress()
