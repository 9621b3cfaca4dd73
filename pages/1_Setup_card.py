"""Setup card: everything measured for one setup."""

import streamlit as st

from benchcards import card as cardmod
from benchcards import charts, flags, queries
from benchcards.stats import fmt
from ui import common

common.page("Setup card", "🗂️")
store = common.store()
if not queries.setup_ids(store):
    st.info("No setups yet: nothing to show a card for.")
    st.stop()
sid = common.setup_picker(store, "Setup", key="setup")
if sid is None:
    st.info("Choose a setup above, or open one from the overview.")
    st.stop()
c = queries.card(store, sid)
s = c.setup
row = c.row

st.title(s.title)
badge = queries.badges(row)
st.markdown(f":{'orange' if badge == 'synthetic' else 'blue' if badge == 'summary only' else 'green'}-badge"
            f"[{badge}]" + (f" &nbsp; {s.provenance}" if s.provenance else ""))
st.caption(f"{row['gpu']} · {s.engine.name} {s.engine.version or ''} · {s.model.name} {s.model.quant or ''} · "
           f"measured {', '.join(s.measured_at) or 'date unknown'}" + (f" by {s.measured_by}" if s.measured_by else ""))
if badge == "summary only":
    st.info("Summary only: these figures were published without their raw records, so benchcards cannot "
            "recompute them. Quality margins are still computed from right / n.")

st.header("Speed")
tiles = cardmod.headline_tiles(c)
for start in range(0, len(tiles), 3):
    for col, t in zip(st.columns(3), tiles[start:start + 3]):
        col.metric(t.label, t.value, help=t.help, border=True)
if c.metrics.empty:
    st.caption("No speed run for this setup.")
else:
    common.table(cardmod.speed_table(c), f"{sid}-speed")
    tasks = cardmod.task_table(c)
    if not tasks.empty:
        st.subheader("Named tasks")
        st.caption("Figures of a tool that measures named tasks, not prompt depths.")
        common.table(tasks, f"{sid}-tasks")
    cvs = cardmod.client_vs_server(c)
    if not cvs.empty:
        st.subheader("Client vs server")
        st.caption("Client figures come from the client's clock (they include HTTP and template overhead); "
                   "server figures from llama-server's own timings.")
        common.table(cvs, f"{sid}-client-vs-server")
    gap = cardmod.ttft_gap_table(c)
    if not gap.empty:
        st.subheader("Time to first token vs the server's prompt time")
        st.caption(cardmod.TTFT_GAP_EXPLAINED)
        common.table(gap, f"{sid}-ttft-gap")
        for note in cardmod.hygiene_notes(c):
            st.markdown(f"- {note}")
    lp = cardmod.long_prompt_table(c)
    if not lp.empty:
        st.subheader("Long prompts")
        common.table(lp, f"{sid}-long-prompts")
    conc = cardmod.conc_table(c)
    if not conc.empty:
        st.subheader("Requests at once")
        slots = c.value("slots") or row.get("slots")
        st.caption(f"Total = all output tokens / wall time of the round; per request = its tokens / its end-to-end "
                   f"time; median over rounds. Server slots: {fmt(slots, 0) if slots else 'unknown'}; "
                   "more requests than slots wait in the queue.")
        common.table(conc, f"{sid}-concurrency")

st.header("Quality")
if c.quality.empty:
    st.caption("No quality run for this setup.")
else:
    common.table(cardmod.quality_table(c), f"{sid}-quality")
    if not c.quality_tasks.empty:
        with st.expander("Sub-tasks"):
            common.table(c.quality_tasks[["test", "task", "right", "n"]], f"{sid}-quality-tasks")

st.header("Memory test")
if c.fit is None:
    st.caption("No memory test for this setup.")
else:
    f = c.fit
    m1, m2, m3 = st.columns(3)
    m1.metric("Largest size that answered", "none" if f["largest_ctx"] is None or f["largest_ctx"] != f["largest_ctx"]
              else f"{int(f['largest_ctx']):,} tokens", border=True)
    m2.metric("Peak memory", f"{fmt(f['peak_gib'], 2)} GiB" if f["peak_gib"] == f["peak_gib"] else "—", border=True)
    m3.metric("Decode at that size", f"{fmt(f['decode_tps'])} tok/s" if f["decode_tps"] == f["decode_tps"] else "—",
              border=True)
    if isinstance(f.get("first_failed_error"), str):
        st.caption(f"First size that failed: {int(f['first_failed_ctx']):,} tokens — {f['first_failed_error']}")
    common.table(cardmod.fit_table(c), f"{sid}-memory")
    common.chart(charts.fit_chart(c.fit_steps), key="fit-chart")

st.header("Server command")
if s.server.argv[0].endswith("(command not given)"):
    st.caption("The exact server command was not recorded for this setup.")
else:
    st.code(flags.shell_join(s.server.argv, s.server.env), language="bash")
with st.expander("What each part means", expanded=False):
    common.table(cardmod.flags_table(c), f"{sid}-flags")
for label, value in (("Slots", s.server.slots_source), ("Context", s.server.ctx_source)):
    if value:
        st.caption(f"{label}: {value}")

st.header("Sampling and thinking")
samp = {k: v for k, v in s.sampling.model_dump().items() if v is not None}
st.write(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in samp.items()) or "not recorded")
st.write("Thinking: " + {True: "on", False: "off", None: "not recorded"}[s.thinking])

if s.deviations or s.notes:
    st.header("Deviations and notes")
    for d in s.deviations:
        st.markdown(f"- **{d.what}** — {d.why}")
    if s.notes:
        st.write(s.notes)

st.header("Runs")
common.table(cardmod.runs_table(c), f"{sid}-runs")

st.header("Warnings")
if c.warnings.empty:
    st.caption("No warnings: every stated figure agrees with the raw records.")
else:
    for w in c.warnings.itertuples():
        st.warning(f"**{w.kind.replace('_', ' ')}** ({w.run_id}): {w.message}")

st.header("Hardware, engine and model")
hw = s.hardware
st.markdown("\n".join(f"- **{k}**: {v}" for k, v in (
    ("GPUs", ", ".join(f"{g.count}x {g.name} ({g.vram_gib:g} GiB{', ' + g.backend if g.backend else ''})"
                       for g in hw.gpus) or "none"),
    ("CPU", hw.cpu), ("RAM", f"{hw.ram_gib:g} GiB" if hw.ram_gib else None), ("Driver", hw.driver), ("OS", hw.os),
    ("Engine", " ".join(str(x) for x in (s.engine.name, s.engine.version, s.engine.commit and f"@{s.engine.commit}",
                                          s.engine.package and f"({s.engine.package})") if x)),
    ("Model", f"{s.model.name} ({s.model.repo or 'repo not given'}"
              f"{' @' + s.model.revision[:8] if s.model.revision else ''})"),
    ("File", " · ".join(str(x) for x in (s.model.file, s.model.quant,
                                          s.model.file_bytes and f"{s.model.file_bytes:,} bytes",
                                          s.model.sha256 and f"sha256 {s.model.sha256}") if x)),
    ("Parameters", f"{s.model.params_total_b:g}B total / {s.model.params_active_b:g}B active"
     if s.model.params_total_b and s.model.params_active_b else None),
    ("Hardware notes", hw.notes)) if v))

st.header("Raw files")
files = cardmod.files_table(c)
common.table(files, f"{sid}-files")
if not files.empty:
    choice = st.selectbox("Download a raw file", files.index, format_func=lambda i: f"{files.Run[i]} / "
                          f"{files.File[i]} ({files.Bytes[i]:,} bytes)", key="rawfile")
    try:
        data = store.raw_file(files["SHA-256"][choice])
        st.download_button("Download", data, file_name=files.File[choice].split("/")[-1], key="rawdl",
                           icon=":material/download:")
    except queries.RawFileError as exc:
        st.warning(f"Not available: {exc}")
