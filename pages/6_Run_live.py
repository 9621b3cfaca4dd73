"""Run live: measure a local OpenAI-compatible server (llama-server first) and add it to the site."""

import shlex

import pandas as pd
import streamlit as st

from benchcards.charts import charts
from benchcards.domain import fmt, metrics
from benchcards.read.paths import LOCAL
from live.client import NotLoopback, check_target
from live.job import LiveJob, ServerBusy, running_jobs
from live.measure import (
    PARTS,
    MeasureConfig,
    SetupInput,
    figures_text,
    hardware_problems,
    is_cpu_only,
    name_problem,
    server_cmd_problem,
)
from live.progress import (
    DEMO_REFUSE_ABOVE,
    InputError,
    demo_command,
    demo_fit_command,
    demo_sweep_command,
    estimate,
    parse_counts,
    parse_tokens,
    plan,
    site_python,
)
from live.settings import SpeedSettings, TargetSettings, page_default, page_limits, tokens_text
from ui import common, live_panel
from ui.common import md
from ui.sampling_form import sampling_fields, sampling_settings

common.page("Run live", "⏱️")
common.store()
DEFAULT_PARTS = page_default(SpeedSettings, "parts")  # the form's defaults and limits are live.settings'
st.title("Run live")
# the suggested demo server has the context per slot that the form's default steps need (none is skipped)
DEMO_COMMAND = shlex.join(demo_command(MeasureConfig(parts=DEFAULT_PARTS)))
mode = st.radio("Measure", ["Speed", "Quality", "Memory test", "Sweep"], horizontal=True, key="live_mode",
                help="Quality scores answers; the memory test starts the server itself, once per context size; a "
                     "sweep starts it afresh for each boot of each server setting.")
# what the chosen mode does, and how to try it without a GPU (the two started modes get a template that starts
# the demo engine itself, run by this site's own Python)
PYTHON = shlex.quote(site_python())
INTRO = {
    "Speed": "Measure a server running on this machine the same way as every card: decode, prefill at depth, "
             "requests at once, a long answer and long prompts. No GPU here? Start the demo server: "
             f"`{DEMO_COMMAND}` and measure `http://127.0.0.1:8089`.",
    "Quality": "Score a server running on this machine on quality tests: every answer is checked, and each test's "
               "result is shown with its 95 % margin. No GPU here? Start the demo server: "
               f"`{DEMO_COMMAND}` and score `http://127.0.0.1:8089` (its answers are generated, not a model's).",
    "Memory test": "How much context fits: benchcards starts the server from your command once per context size, "
                   "fills about 95 % of the window with one prompt, and records the peak memory and whether it "
                   "answered. No GPU here? Give the demo engine as the command: "
                   f"`{' '.join([PYTHON, *demo_fit_command()[1:]])}` (it refuses to load above "
                   f"{fmt.depth(DEMO_REFUSE_ABOVE)}, as llama.cpp does when the KV cache does not fit).",
    "Sweep": "Which server setting is faster: benchcards starts the server afresh for every boot of every variant "
             "and measures each boot the same way; each figure's change against the first variant comes with its "
             "95 % interval. No GPU here? Give the demo engine as the command: "
             f"`{' '.join([PYTHON, *demo_sweep_command()[1:]])}`, with variants of its own options, e.g. "
             "`--decode-tps 60` and `--decode-tps 80`.",
}
st.markdown(INTRO[mode or "Speed"])
st.caption("Only addresses on this machine (127.0.0.1, localhost, ::1) are measured unless you allow others below.")
if mode == "Quality":
    from ui.live_quality import quality_mode

    quality_mode()
    st.stop()
if mode == "Memory test":
    from ui.fit_page import render as memory_test_mode

    memory_test_mode()
    st.stop()
if mode == "Sweep":
    from ui.sweep_mode import render as sweep_mode

    sweep_mode()
    st.stop()

job: LiveJob | None = st.session_state.get("live_job")
# one run at a time on this site: a second run against a busy server measures both runs' load, so Start
# stays disabled while any run (from this or any other tab or visitor) is measuring
busy = running_jobs()
running = bool(busy)
for other in busy:
    if other is not job:
        st.info(f"A measurement of {md(other.cfg.base_url)} is running ({md(other.describe())}); its progress is "
                "shown below. Start is available again when it ends or is stopped.")

# the runs' progress sits above the form, so it is in view right after Start (filled at the end of the page)
progress_area = st.container()

# Enter in a field must not start a measurement: only the Start button does
with st.form("live", enter_to_submit=False):
    c1, c2 = st.columns(2)
    base_url = c1.text_input("Server address", page_default(TargetSettings, "base_url"), key="live_base_url")
    model = c2.text_input("Model id (empty: the server's first model)", key="live_model")
    parts = st.multiselect("Parts", list(PARTS), default=list(DEFAULT_PARTS), key="live_parts",
                           format_func=metrics.part_label)
    a, b, c, d = st.columns(4)
    runs = a.number_input("Decode runs per prompt", *page_limits(SpeedSettings, "runs"),
                          page_default(SpeedSettings, "runs"), key="live_runs")
    max_tokens = b.number_input("Decode tokens", *page_limits(SpeedSettings, "max_tokens"),
                                page_default(SpeedSettings, "max_tokens"), key="live_max_tokens")
    min_tokens = c.number_input("Minimum valid decode run", *page_limits(SpeedSettings, "min_decode_tokens"),
                                page_default(SpeedSettings, "min_decode_tokens"), key="live_min_tokens")
    thinking = d.selectbox("Thinking", ["off", "on", "leave to the server"], key="live_thinking",
                           index=[False, True, None].index(page_default(SpeedSettings, "thinking")))
    a, b, c, d = st.columns(4)
    depths = a.text_input("Prefill depths", tokens_text(page_default(SpeedSettings, "prefill_depths")), key="live_depths",
                          help="Prompt lengths in tokens, e.g. 2048, 8192 or 2K, 8K (K = 1,024).")
    levels = b.text_input("Requests at once", ", ".join(map(str, page_default(SpeedSettings, "conc_levels"))),
                          key="live_levels", help="Whole numbers, e.g. 1, 2, 4, 8.")
    rounds = c.number_input("Rounds per level", *page_limits(SpeedSettings, "conc_rounds"),
                            page_default(SpeedSettings, "conc_rounds"), key="live_rounds")
    ctx_depths = d.text_input("Long-prompt depths", tokens_text(page_default(SpeedSettings, "ctx_depths")),
                              key="live_ctx_depths",
                              help="Prompt lengths in tokens, e.g. 16K, 32K (K = 1,024).")
    typed_sampling = sampling_fields("live")
    st.markdown("**The setup** (what the server cannot tell)")
    a, b, c, d = st.columns(4)
    title = a.text_input("Title (optional)", key="live_title")
    gpu = b.text_input("GPU", key="live_gpu", placeholder="e.g. RTX 4090, or cpu",
                       help="The GPU's name, with its memory in the next field; write cpu for a machine without a "
                       "GPU.")
    vram = live_panel.vram_input(c, "live_vram")
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
    problems += hardware_problems(gpu or None, vram, gpu_field="GPU", vram_field=live_panel.VRAM_FIELD)
    sampling, bad = sampling_settings(typed_sampling)
    problems += bad
    problems += [p for p in (name_problem(title or None, "Title"), name_problem(quant or None, "Quantisation"),
                             server_cmd_problem(server_cmd, "Exact server command")) if p]
    try:
        check_target(base_url, allow_remote)
    except NotLoopback as exc:
        problems.append(f"Server address: {exc}. Tick 'Allow a server on another machine' to measure it anyway.")
    except ValueError as exc:
        problems.append(f"Server address: {exc}")
    if problems or sampling is None:
        return None, problems
    try:
        cfg = MeasureConfig(base_url=base_url, model=model or None, parts=tuple(parts), runs=int(runs),
                            max_tokens=int(max_tokens), min_decode_tokens=int(min_tokens), conc_rounds=int(rounds),
                            allow_remote=allow_remote, thinking={"off": False, "on": True}.get(thinking),
                            sampling=sampling.sent(), sampling_source=sampling.source, **values)
    except ValueError as exc:
        return None, [f"Settings: {exc}"]
    return cfg, []


# a Start pressed on a page drawn before another tab's run began starts nothing: the rerun draws Start
# disabled (so it reads as not pressed) and the note above names the running run
if start and not running:
    cfg, problems = read_settings()
    if cfg is None:
        st.error("Check the settings:\n\n" + "\n".join(f"- {md(p)}" for p in problems))
    else:
        user = SetupInput(title=title or None, gpu=gpu or None,
                          vram_gib=None if is_cpu_only(gpu) else vram, quant=quant or None,
                          server_cmd=server_cmd or None)
        try:
            job = LiveJob(cfg, user, LOCAL, common.db_path()).start()
        except ServerBusy as exc:  # another tab started one in the meantime
            st.error(md(str(exc)))
        else:
            st.session_state["live_job"] = job
            # draw the page again at once: Start disabled, the progress in view (this run drew the form enabled)
            st.rerun()


def step_words(job: LiveJob) -> dict[str, str]:
    return {s.label: s.words for s in plan(job.cfg)}


def shown_jobs() -> list[LiveJob]:
    """This session's run, every run still measuring (from any tab) and the runs this session stopped for
    another tab (kept in view until saved, so whoever pressed Stop sees where its rows went), oldest first."""
    mine: LiveJob | None = st.session_state.get("live_job")
    jobs = running_jobs()
    for job in [mine, *st.session_state.get("live_stopped_here", [])]:
        if job is not None and job not in jobs:
            jobs.append(job)
    return jobs


def stopped_here(job: LiveJob) -> bool:
    """True when this session pressed Stop on ``job``, another tab's run."""
    return any(j is job for j in st.session_state.get("live_stopped_here", []))


def panel(job: LiveJob, mine: bool) -> None:
    steps = [e for e in job.events if e.kind == "step"]
    now = estimate(plan(job.cfg), list(job.events))
    # steps that sent requests: not skipped, not stopped before they started
    ran = sum(1 for e in steps if e.status in ("ok", "failed") or
              (e.status == "stopped" and "before it started" not in (e.reason or "")))
    where = "" if mine else f" of {job.cfg.base_url}"
    if not job.done:  # one count on screen: the bar's ("12 of 46 requests"); the label names the step
        label = f"Connecting to the server{where}…" if not job.events else \
            f"Measuring{where}… now: {now.now or 'the last step'}"
        state = "running"
    elif job.error:
        label, state = f"Ended{where}: {md(job.error)}", "error"
    else:
        how = "Stopped" if job.stopping else "Finished"
        label = f"{how}{where}: {ran} of {len(plan(job.cfg))} steps ran, {now.done:,} requests"
        state = "complete"
    # no ``with`` on the status: leaving its block marks it complete (a ✓) while the run still measures
    box = st.status(label, state=state, expanded=True)
    with box.container():
        st.progress(now.fraction if not job.done else 1.0, text=now.text(now=False) if not job.done else None)
        live_panel.assumed(job.setup)
        for e in job.events:
            if e.kind == "info" and e.reason:  # server info that did not fit: not given, said so
                st.warning(f"Server info not given: {md(e.reason)}")
        if steps:
            words = step_words(job)
            table = pd.DataFrame([{"Step": words.get(e.label, e.label), "Part": metrics.part_label(e.part),
                                   "Status": e.status, "Result": figures_text(e.figures) or fmt.DASH,
                                   "Decode (tok/s)": e.decode_tps, "Server decode": e.server_decode_tps,
                                   "Server prefill": e.server_prefill_tps, "Reason": e.reason}
                                  for e in steps])
            shown = table.assign(**{col: [fmt.value("decode", v) for v in table[col]]
                                    for col in ("Server decode", "Server prefill")},
                                 Reason=[fmt.text(r) for r in table.Reason])
            common.table(shown.drop(columns=["Decode (tok/s)"]).rename(columns={
                "Server decode": "Server's own decode (tok/s)", "Server prefill": "Server's own prefill (tok/s)"}),
                f"live-steps-{id(job)}-{len(steps)}", download=False)
            if table["Decode (tok/s)"].notna().any():
                common.chart(charts.live_steps_chart(table), key=f"live-chart-{id(job)}-{len(steps)}")
    if not job.done:
        if st.button("Stop", disabled=job.stopping, key=f"stop-{id(job)}"):
            job.stop()
            if not mine:
                st.session_state["live_stopped_here"] = [*st.session_state.get("live_stopped_here", [])[-4:], job]
            st.toast("Stopping after the request in flight; finished steps will be saved.")
    elif (mine or stopped_here(job)) and job.run_dir is not None:
        live_panel.saved(job.report or "", job.ingest_warnings, job.placed)
        st.page_link("pages/1_Setup_card.py", label="Open its card", query_params={"setup": job.setup_id},
                     icon=":material/arrow_forward:")


@st.fragment(run_every=1.0 if running else None)
def progress() -> None:
    mine: LiveJob | None = st.session_state.get("live_job")
    jobs = shown_jobs()
    for job in jobs:
        panel(job, job is mine)
    if running and not running_jobs():
        st.rerun(scope="app")  # the run ended: re-enable the form


with progress_area:
    progress()
