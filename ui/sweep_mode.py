"""The Run live page's sweep mode: the variants as rows of a small table (the first is the baseline), boots per
variant, per-boot progress in the order they run (A B A B …), Stop (which stops the server in flight), and a link
to the sweep's differences afterwards. Drives live.sweep_job; the page (pages/6_Run_live.py) only calls ``render``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from benchcards.domain import fmt
from benchcards.read import paths
from live import launcher
from live.measure import MeasureConfig, SetupInput, is_cpu_only
from live.progress import InputError, parse_tokens
from live.settings import SWEEP_SPEED, SpeedSettings, SweepSettings, page_default, page_limits, tokens_text
from live.sweep import BootEvent, SweepConfig
from live.sweep_job import SweepBusy, SweepJob, current_job, variants_from_rows
from ui import common, live_panel
from ui.common import md
from ui.sampling_form import sampling_fields, sampling_settings

#: the table a new sweep starts from (the KV-cache type, a claim the community posts make)
START_ROWS = [{"Name": "f16 KV", "Arguments": ""}, {"Name": "q8_0 KV", "Arguments": "-ctk q8_0 -ctv q8_0"}]
#: the speed parts a sweep can measure on each boot
PARTS = ("decode", "prefill", "conc")
STAGE_WORDS = {"starting": "starting the server", "loading": "loading", "measuring": "measuring"}
STATUS_WORDS = {"ok": "measured", "failed": "failed", "no_load": "did not load", "stopped": "stopped"}


def _settings() -> tuple[SweepConfig | None, SetupInput | None, bool]:
    cmd = st.text_input("Server command with {ctx}", key="sweep_cmd",
                        placeholder="llama-server -m model.gguf -c {ctx} -np 1",
                        help="Each variant's arguments are added to this command; benchcards picks a free port on "
                             "127.0.0.1 and starts the server afresh for every boot.")
    st.caption("Variants, one a row; the first is the baseline the others are compared with. Arguments are split "
               "like a shell would, never run through one.")
    # the rows it starts from: START_ROWS, or those a caller put in session_state["sweep_start_rows"]
    rows = st.data_editor(pd.DataFrame(st.session_state.get("sweep_start_rows", START_ROWS),
                                       columns=["Name", "Arguments"]), num_rows="dynamic", key="sweep_variants", hide_index=True,
                          column_config={"Name": st.column_config.TextColumn("Name", max_chars=200),
                                         "Arguments": st.column_config.TextColumn("Arguments", max_chars=2000)})
    with st.form("sweep", enter_to_submit=False):
        a, b, c, d = st.columns(4)
        # the defaults and limits are live.settings' (SweepSettings, SWEEP_SPEED), as on the command line
        repeats = a.number_input("Boots per variant", *page_limits(SweepSettings, "repeats"),
                                 page_default(SweepSettings, "repeats"), key="sweep_repeats")
        ctx_text = b.text_input("Context", tokens_text([page_default(SweepSettings, "ctx")]), key="sweep_ctx",
                                help="Tokens, e.g. 8192 or 8K.")
        parts = c.multiselect("Measure", list(PARTS), list(SWEEP_SPEED["parts"]), key="sweep_parts")
        runs = d.number_input("Runs per boot", *page_limits(SpeedSettings, "runs"), page_default(SpeedSettings, "runs"),
                              key="sweep_runs")
        a, b, c, d = st.columns(4)
        title = a.text_input("Title (optional)", key="sweep_title")
        gpu = b.text_input("GPU", key="sweep_gpu", placeholder="e.g. RTX 4090, or cpu")
        vram = live_panel.vram_input(c, "sweep_vram")
        quant = d.text_input("Quantisation", key="sweep_quant")
        typed = sampling_fields("sweep")
        job = current_job()
        start = st.form_submit_button("Start the sweep", type="primary", disabled=bool(job and not job.done))
    if not start:
        return None, None, False
    variants, problems = variants_from_rows(rows.to_dict("records"))
    ctx = 0
    try:
        sizes = parse_tokens(ctx_text, "Context")
        if len(sizes) != 1:
            raise InputError("Context: give one number of tokens (every boot starts with it)")
        ctx = sizes[0]
    except InputError as exc:
        problems.append(str(exc))
    if not parts:
        problems.append("Measure: choose at least one part")
    sampling, bad = sampling_settings(typed)
    problems += bad
    sent = {"sampling": sampling.sent(), "sampling_source": sampling.source} if sampling is not None else {}
    cfg = SweepConfig(server_cmd=cmd, variants=variants, repeats=int(repeats), ctx=ctx or 8192,
                      measure=MeasureConfig(**{**SWEEP_SPEED, "parts": tuple(parts), "runs": int(runs), **sent}))
    if variants and len(variants) >= 2:
        problems += cfg.problems()
        for v in variants:
            try:
                cfg.template(v)
            except launcher.TemplateError as exc:
                problems.append(f"{v.name}: {exc}")
                break
    if problems:
        st.error("Check the settings:\n\n" + "\n".join(f"- {md(p)}" for p in problems))
        return None, None, False
    user = SetupInput(title=title or None, gpu=gpu or None, vram_gib=None if is_cpu_only(gpu) else vram,
                      quant=quant or None)
    return cfg, user, True


def boot_rows(job: SweepJob) -> pd.DataFrame:
    """Order | Variant | Boot | State | Server pid | Reason — every planned boot, in the order they run."""
    latest: dict[int, BootEvent] = {ev.order: ev for ev in job.events}
    plan = [(r, v.name) for r in range(1, job.cfg.repeats + 1) for v in job.cfg.variants]
    rows = []
    for k, (r, name) in enumerate(plan, start=1):
        e: BootEvent | None = latest.get(k)
        if e is None:
            state = "not run" if job.done else "waiting"
        elif e.stage == "done":
            state = STATUS_WORDS.get(e.status or "", e.status or "")
        else:
            state = STAGE_WORDS.get(e.stage, e.stage) + "…"
        rows.append({"Order": str(k), "Variant": name, "Boot": str(r), "State": state,
                     "Server pid": str(e.pid) if e and e.pid else fmt.DASH,
                     "Reason": fmt.text(e.reason) if e and e.reason else fmt.DASH})
    return pd.DataFrame(rows)


def _panel(job: SweepJob, mine: bool) -> None:
    finished = sum(1 for e in job.events if e.stage == "done")
    total = job.cfg.repeats * len(job.cfg.variants)
    saved = mine and job.sweep_id is not None
    live_panel.panel(job, live_panel.Panel(
        running=f"Sweep: {finished} of {total} boots", ended="Sweep ended",
        finished=f"Sweep {'stopped' if job.stopping else 'finished'}: {finished} of {total} boots",
        fraction=finished / max(1, total),
        body=lambda: common.table(boot_rows(job), f"sweep-boots-{id(job)}-{len(job.events)}", download=False),
        key="sweep", stop_label="Stop (stops the server now)",
        stop_toast="Stopping the server; the boots that finished will be saved.",
        saved=job.report if saved else None, warnings=tuple(job.ingest_warnings),
        link=live_panel.Link("pages/8_Sweeps.py", "Open the sweep's differences") if saved else None))


def render() -> None:
    """The sweep mode of the Run live page."""
    st.markdown("A **sweep** starts the server afresh for every boot of every variant, in interleaved order "
                "(A B A B …), measures each boot, and stops the server again. Each variant is stored as its own "
                "setup; the Sweeps page shows every figure's difference from the baseline with its 95 % interval.")
    cfg, user, start = _settings()
    if start and cfg is not None and user is not None:
        try:
            st.session_state["sweep_job"] = SweepJob(cfg, user, paths.LOCAL, common.db_path()).start()
        except (SweepBusy, ValueError, launcher.TemplateError) as exc:
            st.error(md(str(exc)))
    # this session's own run, and another session's only while it runs (live_panel.shown_jobs)
    live_panel.follow_site_job(current_job, "sweep_job", _panel, _ended_elsewhere)  # type: ignore[arg-type]


def _ended_elsewhere(job: SweepJob) -> None:
    """One line for the site's last sweep when another browser session started it (its differences are on the
    Sweeps page, not shown here as if they were this visitor's)."""
    where = ": its differences are on the [Sweeps](Sweeps) page" if job.sweep_id else ""
    st.caption(f"The last sweep on this site was started in another browser session{where}.")
