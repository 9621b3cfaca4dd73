"""The Run live page's memory-test mode: the command template shown as the exact argv, the sizes, per-size
progress (starting, loading, answering, stopped) with the time left, Stop (which stops the server), and the
result on the site afterwards. Drives live.fit_job; the page (pages/6_Run_live.py) only calls ``render``."""

from __future__ import annotations

from urllib.parse import quote

import pandas as pd
import streamlit as st

from benchcards.domain import fmt, metrics
from benchcards.read import paths
from live import launcher
from live.fit import RESULT_WORDS, FitConfig, FitEvent, time_left
from live.fit_job import FitBusy, FitJob, current_job
from live.measure import SetupInput, hardware_problems, is_cpu_only
from live.progress import InputError, duration, parse_tokens
from live.settings import FitSettings, SamplingSettings, page_default, page_limits, tokens_text
from ui import common, live_panel
from ui.common import md
from ui.sampling_form import sampling_fields, sampling_settings

PHASE_WORDS = {"starting": "starting the server", "loading": "loading", "answering": "answering",
               "stopped": "stopped"}


def _argv_preview(text: str, allow_remote: bool, sizes: tuple[int, ...]) -> None:
    """The exact argv the first size will run, item by item (benchcards' own items marked)."""
    if not text.strip():
        return
    try:
        t = launcher.ServerTemplate.parse(text, allow_remote=allow_remote)
    except launcher.TemplateError as exc:
        st.error(md(str(exc)))
        return
    for problem in launcher.program_problems(t):  # before anything starts: nothing runs with a missing program
        st.error(md(problem))
    ctx = min(sizes) if sizes else 4096
    argv = t.argv(ctx, t.fixed_port or "(a free port)")
    first_added = len(t.items) - len(t.added)
    rows = [{"#": str(i), "argv item": item, "from": "added by benchcards" if i >= first_added else "your command"}
            for i, item in enumerate(argv)]
    st.markdown(f"**The exact argv for the first size ({fmt.depth(ctx)})** — run as it is, never through a shell; "
                "each size starts it again with its own context:")
    common.table(pd.DataFrame(rows), "fit-argv", download=False)


def _settings() -> tuple[FitConfig | None, SetupInput | None, bool]:
    # the command and sizes sit outside the form, so the argv below follows them as they are typed
    cmd = st.text_input("Server command with {ctx}", key="fit_cmd",
                        placeholder="llama-server -m model.gguf -c {ctx} -np 1 -fa on",
                        help="Write {ctx} where the context size goes; {port} and {host} are optional "
                        "(benchcards picks a free port on 127.0.0.1).")
    sizes_text = st.text_input("Context sizes", tokens_text(page_default(FitSettings, "sizes")), key="fit_sizes",
                               help="Tokens, e.g. 4096, 8192 or 4K, 8K (K = 1,024).")
    sizes: tuple[int, ...] = ()
    problems = []
    try:
        sizes = parse_tokens(sizes_text, "Context sizes")
    except InputError as exc:
        problems.append(str(exc))
    allow_remote = bool(st.session_state.get("fit_allow_remote"))
    _argv_preview(cmd, allow_remote, sizes)
    with st.form("fit", enter_to_submit=False):
        a, b, c, d = st.columns(4)
        fill = a.number_input("Prompt fills (%)", *page_limits(FitSettings, "fill_pct"),
                              page_default(FitSettings, "fill_pct"), key="fit_fill")
        max_tokens = b.number_input("Answer tokens", *page_limits(FitSettings, "max_tokens"),
                                    page_default(FitSettings, "max_tokens"), key="fit_max_tokens")
        keep_going = c.checkbox("Go on after a failure", key="fit_keep_going")
        a, b, c, d = st.columns(4)
        title = a.text_input("Title (optional)", key="fit_title")
        gpu = b.text_input("GPU", key="fit_gpu", placeholder="e.g. RTX 4090, or cpu")
        vram = live_panel.vram_input(c, "fit_vram")
        quant = d.text_input("Quantisation", key="fit_quant")
        allow_remote = st.checkbox("Allow a --host other than this machine", key="fit_allow_remote")
        typed = sampling_fields("fit")
        start = st.form_submit_button("Start the memory test", type="primary",
                                      disabled=bool(current_job() and not current_job().done))  # type: ignore[union-attr]
    if not start:
        return None, None, False
    problems += hardware_problems(gpu or None, vram, gpu_field="GPU", vram_field=live_panel.VRAM_FIELD)
    sampling, bad = sampling_settings(typed)
    problems += bad
    cfg = FitConfig(server_cmd=cmd, sizes=sizes, fill_pct=float(fill), max_tokens=int(max_tokens),
                    keep_going=keep_going, allow_remote=allow_remote, sampling=sampling or SamplingSettings())
    problems += [p for p in cfg.problems() if not (p.startswith("--sizes") and not sizes)]
    if problems:
        st.error("Check the settings:\n\n" + "\n".join(f"- {md(p)}" for p in problems))
        return None, None, False
    user = SetupInput(title=title or None, gpu=gpu or None, vram_gib=None if is_cpu_only(gpu) else vram,
                      quant=quant or None)
    return cfg, user, True


def _rows(job: FitJob) -> pd.DataFrame:
    latest: dict[int, FitEvent] = {}
    for e in job.events:
        latest[e.ctx] = e
    rows = []
    for ctx in job.cfg.sizes:
        e = latest.get(ctx)
        if e is None:
            state = "waiting" if not job.done else "not run"
        elif e.phase == "stopped":
            state = RESULT_WORDS.get(e.result or "", e.result or "")
        else:
            state = PHASE_WORDS[e.phase] + "…"
        rows.append({"Context size": f"{fmt.depth(ctx)} ({fmt.tokens(ctx)})", "State": state,
                     "Ready after": fmt.metric("fit_server_start", e.load_s) if e and e.load_s else fmt.DASH,
                     "Prompt tokens": fmt.number(e.prompt_tokens, 0) if e and e.prompt_tokens else fmt.DASH,
                     "First token": fmt.metric("fit_step_ttft", e.ttft_s) if e and e.ttft_s else fmt.DASH,
                     "Decode": fmt.metric("fit_decode", e.decode_tps) if e and e.decode_tps else fmt.DASH,
                     "Peak memory": peak_text(e),
                     "Each request could use": (metrics.slot_note(ctx, e.served_ctx, e.slots) if e else None)
                     or fmt.DASH,
                     "Reason": fmt.text(e.reason) if e and e.reason and e.result != "answered" else fmt.DASH})
    return pd.DataFrame(rows)


def peak_text(e: FitEvent | None) -> str:
    """A size's peak memory, named for what it measured ('1.20 GiB, process memory (RSS)')."""
    if e is None or not e.peak_gib:
        return fmt.DASH
    return f"{fmt.metric('fit_peak_gib', e.peak_gib)}, {metrics.memory_kind(e.peak_source)}"


def _panel(job: FitJob, mine: bool) -> None:
    finished = sum(1 for e in job.events if e.phase == "stopped")
    total = len(job.cfg.sizes)
    left = None if job.done else time_left(job.cfg.sizes, job.events)
    when = "estimating the time left…" if left is None else f"about {duration(left)} left"
    saved = mine and job.run_dir is not None
    live_panel.panel(job, live_panel.Panel(
        running=f"Memory test: {finished} of {total} sizes · {when}", ended="Memory test ended",
        finished=f"Memory test {'stopped' if job.stopping else 'finished'}: {job.summary or ''}",
        fraction=finished / max(1, total),
        body=lambda: common.table(_rows(job), f"fit-steps-{id(job)}-{len(job.events)}", download=False),
        key="fit", stop_label="Stop (stops the server now)",
        stop_toast="Stopping the server; the sizes that finished will be saved.",
        saved=job.report if saved else None, warnings=tuple(job.ingest_warnings), placed=job.placed,
        link=live_panel.Link("pages/1_Setup_card.py", "Open its card", {"setup": str(job.setup_id)}) if saved else None))


def render() -> None:
    """The memory-test mode of the Run live page."""
    st.markdown("The **memory test** starts the server for each context size with your command, fills about "
                "95 % of the context with one prompt, requires an answer, reads the peak memory, and stops the "
                "server again. It records *answered*, *did not load* (with the engine's own line) or *did not "
                "answer*.")
    cfg, user, start = _settings()
    if start and cfg is not None and user is not None:
        try:
            st.session_state["fit_job"] = FitJob(cfg, user, paths.LOCAL, common.db_path()).start()
        except (FitBusy, ValueError) as exc:
            st.error(md(str(exc)))
    # this session's own run, and another session's only while it runs (live_panel.shown_jobs)
    live_panel.follow_site_job(current_job, "fit_job", _panel, _ended_elsewhere)  # type: ignore[arg-type]


def _ended_elsewhere(job: FitJob) -> None:
    """One line for the site's last memory test when another browser session started it (its results are on
    its card, not shown here as if they were this visitor's)."""
    card = (f": [open its card](Setup_card?setup={quote(job.setup_id, safe='')})"
            if job.run_dir is not None and job.setup_id else "")
    st.caption(f"The last memory test on this site was started in another browser session{card}.")
