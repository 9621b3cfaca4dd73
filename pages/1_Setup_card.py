"""Setup card: everything measured for one setup, and how to measure it again.

One function per section; the list at the bottom says the order. Logic lives in
benchcards.card (tables and texts) and benchcards.charts.
"""

import streamlit as st

from benchcards import agentic, builds, charts, fmt, queries, reported
from benchcards import card as cardmod
from benchcards.queries import Card
from ui import common
from ui.common import md

common.page("Setup card", "🗂️")
store = common.store()


def header(c: Card) -> None:
    s, row = c.setup, c.row
    st.title(md(s.title), anchor=False)
    badge = queries.card_badge(c)
    colour = {"synthetic": "orange", "summary only": "blue", "method test": "violet",
              "reported": "gray"}.get(badge, "green")
    st.markdown(f":{colour}-badge[{badge}]" + (f" &nbsp; {md(s.provenance)}" if s.provenance else ""))
    st.caption(md(f"{queries.short_name(row)} · {row['gpu']} · {'reported' if badge == 'reported' else 'measured'} "
                  f"{', '.join(s.measured_at) or 'date unknown'}" + (f" by {s.measured_by}" if s.measured_by else "")))
    if badge == "method test":
        st.info("Method test: a real measurement made to show how benchcards measures (a tiny or random-weight "
                "model), not how fast a model runs. Rankings and default selections leave it out.")
    if badge == "summary only":
        st.info("Summary only: these figures were published without their raw records, so benchcards cannot "
                "recompute them. Quality margins are still computed from right / n.")


def reported_figures(c: Card) -> None:
    """A reported setup's figures and sources; on any card, reported figures beside measured ones and reported
    effects of its flags (benchcards.reported)."""
    r = reported.card_section(store, c.setup_id, c.setup.server.argv)
    if r.empty and not r.sources:
        return
    st.header("Reported", anchor="reported")
    if not r.figures.empty:
        st.info(reported.EXPLAINED)
        common.table(r.figures, f"{c.setup_id}-reported")
    for said, url in r.sources:
        st.markdown(f"- Source: {md(said)}" + (f" — {md(url)}" if url else ""))
    if r.beside:
        st.caption(reported.BESIDE_EXPLAINED)
        st.markdown("\n".join(f"- {md(line)}" for line in r.beside))
    if r.claims:
        st.caption(reported.CLAIMS_EXPLAINED)
        st.markdown("\n".join(f"- {md(line)}" for line in r.claims))


def speed(c: Card) -> None:
    st.header("Speed", anchor="speed")
    common.tiles([t for t in cardmod.headline_tiles(c) if t.value != fmt.DASH])
    if c.metrics.empty:
        st.caption("No speed run for this setup.")
        return
    decode_run = c.metrics[(c.metrics.metric == "decode") & c.metrics.prompt.isna() & c.metrics.level.isna()]
    prompt_tokens = (queries.decode_prompt_tokens(store, str(decode_run.run_id.iloc[0]))
                     if not decode_run.empty else None)
    for note in (cardmod.decode_context(c, prompt_tokens), cardmod.headline_source(c)):
        if note:
            st.caption(md(note))
    table = cardmod.speed_table(c)
    if not table.empty:
        slots = c.value("slots") or c.row.get("slots")
        common.table(table, f"{c.setup_id}-speed")
        if slots and not fmt.missing(slots):
            st.caption(f"Requests at once: the server has {fmt.number(slots, 0)} slots; more requests than slots wait "
                       "in its queue. Total = all output tokens / wall time of a round; per request = its tokens / "
                       "its end-to-end time; medians over the rounds.")


def named_tasks(c: Card) -> None:
    tasks = cardmod.task_table(c)
    if tasks.empty:
        return
    st.subheader("Named tasks")
    n = cardmod.task_runs(c)
    st.caption("Figures of a tool that measures named tasks, not prompt depths: mean ± standard deviation over "
               + (f"n = {n} runs per task" if n else "its runs (how many is not recorded)")
               + ", as it reported them (its rates come from the server's own timings)."
               + (" With so few runs the standard deviation is a rough guide only." if n and n < 5 else ""))
    common.table(tasks, f"{c.setup_id}-tasks", numeric=list(tasks.columns[1:]))
    common.table(cardmod.task_overall(c), f"{c.setup_id}-tasks-overall")


def server_timings(c: Card) -> None:
    cvs = cardmod.client_vs_server(c)
    if cvs.empty:
        return
    st.subheader("Client vs server")
    st.caption("Client figures come from the client's clock (they include HTTP and template overhead); server "
               "figures from llama-server's own timings.")
    common.table(cvs, f"{c.setup_id}-client-vs-server", numeric=["Client (tok/s)", "Server (tok/s)", "Difference"])


def ttft_gap(c: Card) -> None:
    gap = cardmod.ttft_gap_table(c)
    if gap.empty:
        return
    st.subheader("Time to first token vs the server's prompt time")
    st.caption(cardmod.TTFT_GAP_EXPLAINED)
    common.table(gap, f"{c.setup_id}-ttft-gap")
    st.markdown("\n".join(f"- {md(note)}" for note in cardmod.hygiene_notes(c)))


def long_prompts(c: Card) -> None:
    lp = cardmod.long_prompt_table(c)
    if lp.empty:
        return
    st.subheader("Long prompts")
    st.caption("Prompts of exactly this many tokens: a filler first, the task prompt last.")
    common.table(lp, f"{c.setup_id}-long-prompts")


def conc_latency(c: Card) -> None:
    conc = cardmod.conc_table(c)
    if conc.empty or len(conc.columns) <= 4:  # no first-token or between-token times: the speed table has it all
        return
    st.subheader("Requests at once")
    st.caption("Total = all output tokens / wall time of a round; per request = its tokens / its end-to-end time; "
               "first token and gap between tokens are medians over the requests of a level.")
    common.table(conc, f"{c.setup_id}-concurrency")


def agentic_use(c: Card) -> None:
    table = agentic.agent_table(c)
    if table.empty:
        return
    st.subheader("Agentic use (prompt cache)")
    st.caption(agentic.EXPLAINED)
    common.table(table, f"{c.setup_id}-agentic")
    st.markdown("\n".join(f"- {md(line)}" for line in agentic.agent_summary(c)))


def engine_benchmark(c: Card) -> None:
    engine = cardmod.engine_table(c)
    if engine.empty:
        return
    st.subheader("Engine benchmark (llama-bench)")
    st.caption("The engine's own timing of random tokens: no server, HTTP or chat template. Mean of the "
               "repetitions, spread as CV; not comparable one to one with figures measured over HTTP.")
    common.table(engine, f"{c.setup_id}-engine", numeric=["Rate", "Spread (CV)", "Repetitions"])


def server_log(c: Card) -> None:
    logged = cardmod.server_log_table(c)
    if logged.empty:
        return
    st.subheader("From the server's log")
    st.caption("llama-server's per-request timing lines (server clock, no client): there is no time to first token.")
    common.table(logged, f"{c.setup_id}-server-log")


def builds_over_time(c: Card) -> None:
    timeline = builds.timeline(store, c.setup_id)
    if timeline.empty:
        return
    st.subheader("Builds over time")
    st.caption(builds.EXPLAINED)
    common.table(builds.timeline_table(timeline), f"{c.setup_id}-builds")


def speed_charts(c: Card) -> None:
    if c.metrics.metric.isin(["prefill", "ctx_prefill", "conc_total"]).any():
        common.link("pages/2_Scaling_curves.py", "Prefill, decode and throughput of this setup as curves",
                    query_params={"setups": c.setup_id}, icon=":material/show_chart:")


def quality(c: Card) -> None:
    st.header("Quality", anchor="quality")
    if c.quality.empty:
        st.caption("No quality run for this setup.")
        return
    common.table(cardmod.quality_table(c), f"{c.setup_id}-quality")
    st.caption("Result ± half-width of the Wilson 95 % interval, in points. A cut-off answer counts as wrong.")
    if not c.quality_tasks.empty:
        st.subheader("Sub-tasks")
        common.table(cardmod.quality_tasks_table(c), f"{c.setup_id}-quality-tasks")


def memory(c: Card) -> None:
    st.header("Memory test", anchor="memory")
    if c.fit is None:
        st.caption("No memory test for this setup.")
        return
    f = c.fit
    common.tiles(cardmod.fit_tiles(c))
    if not fmt.missing(f.get("first_failed_error")):
        st.caption(md(f"First size that failed: {fmt.depth(f['first_failed_ctx'])} "
                      f"({fmt.tokens(f['first_failed_ctx'])}) — {f['first_failed_error']}"))
    common.table(cardmod.fit_table(c), f"{c.setup_id}-memory")
    st.caption(md(cardmod.fit_note(c)))
    vram = c.row.get("vram_gib")
    common.vega(charts.fit_spec(c.fit_steps, vram_gib=None if fmt.missing(vram) else float(vram)), key="fit-chart")


def method(c: Card) -> None:
    from ui import html

    st.header("How it was measured", anchor="method")
    runs = cardmod.method_by_run(c)
    if not runs:
        st.caption("No method settings were recorded.")
        return
    st.html("".join(f"<p><strong>{html.esc(heading)}</strong></p>{html.table(table, label=heading)}"
                    for heading, table in runs))
    common.downloads(lambda: cardmod.method_table(c), f"{c.setup_id}-method")  # made only when downloaded


def reproduce(c: Card) -> None:
    s = c.setup
    st.header("Reproduce", anchor="reproduce")
    r = cardmod.reproduce(c)
    for step in r.steps:
        st.markdown(f"**{md(step.title)}** — {md(step.detail)}")
        for caption, cmd in step.commands:
            if caption:
                st.caption(md(caption))
            st.code(cmd, language="bash", wrap_lines=True)
        if step.title.startswith("2.") and step.commands:
            with st.expander("What each part of the server command means"):
                st.caption(md(f"For {cardmod.engine_build(c).text}."))
                common.table(cardmod.flags_table(c), f"{c.setup_id}-flags")
            for label, value in (("Slots", s.server.slots_source), ("Context", s.server.ctx_source)):
                if value:
                    st.caption(md(f"{label}: {value}"))
    for note in r.notes:
        st.caption(md(note))


def sampling(c: Card) -> None:
    s = c.setup
    st.header("Sampling and thinking", anchor="sampling")
    st.write(md(cardmod.sampling_text(c)))
    st.write("Thinking: " + {True: "on", False: "off", None: "not recorded"}[s.thinking])


def deviations(c: Card) -> None:
    s = c.setup
    if not (s.deviations or s.notes):
        return
    st.header("Deviations and notes", anchor="deviations")
    for d in s.deviations:
        st.markdown(f"- **{md(d.what)}** — {md(d.why)}")
    if s.notes:
        st.write(md(s.notes))


def runs(c: Card) -> None:
    st.header("Runs", anchor="runs")
    common.table(cardmod.runs_table(c), f"{c.setup_id}-runs")


def warnings(c: Card) -> None:
    st.header("Warnings", anchor="warnings")
    found = cardmod.warnings_list(c)
    if not found:
        st.caption("No warnings: every stated figure agrees with the raw records and the server command parses.")
    for what, run, message in found:
        st.warning(f"**{md(what)}** ({md(run)}): {md(message)}")


def machine(c: Card) -> None:
    st.header("Hardware, engine and model", anchor="machine")
    st.markdown("\n".join(f"- **{md(k)}**: {md(v)}" for k, v in cardmod.machine_rows(c)))


def raw_files(c: Card) -> None:
    st.header("Raw files", anchor="files")
    files = cardmod.files_table(c)
    common.table(files, f"{c.setup_id}-files")
    if files.empty:
        return
    choice = st.selectbox("Download a raw file", files.index, format_func=lambda i: f"{files.Run[i]} / "
                          f"{files.File[i]} ({files.Bytes[i]} bytes)", key="rawfile")
    try:
        data = store.raw_file(files["SHA-256"][choice])
        st.download_button("Download", data, file_name=files.File[choice].split("/")[-1], key="rawdl",
                           icon=":material/download:")
    except queries.RawFileError as exc:
        st.warning(f"Not available: {md(exc)}")


SECTIONS = [header, reported_figures, speed, named_tasks, server_timings, ttft_gap, long_prompts, conc_latency, agentic_use,
            engine_benchmark, server_log, builds_over_time, speed_charts, quality, memory, method, reproduce, sampling, deviations, runs,
            warnings, machine, raw_files]

if not queries.setup_ids(store):
    st.info("No setups yet: nothing to show a card for.")
    st.stop()
sid = common.setup_picker(store, "Setup", key="setup")
if sid is None:
    st.info("Choose a setup above, or open one from the overview.")
    st.stop()
card = queries.card(store, sid)
for section in SECTIONS:
    section(card)
