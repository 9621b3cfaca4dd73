"""Upload page: result files of other tools, detected from their content, with fields for what a
format cannot tell. Thin: detection and conversion live in ``ingest.importers``; converting and storing run
in a worker process (``ingest.worker``) and go through ``ingest.upload`` (staging, validation, ownership,
one atomic swap), like any upload."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import streamlit as st

from ingest.errors import safe
from ingest.importers import FORMATS, MAX_FILES, ImportFailed, Options, Source, detect
from ingest.importers.base import MAX_FILE_BYTES
from ingest.limits import LIMITS
from ui import common, jobs

#: importer advice written for the command line -> the same advice for this form
PHRASES = (
    (r"pass --gpu NAME \(and --vram-gib N\), or --gpu none for a CPU-only run",
     "fill in “GPU name” (and “VRAM per GPU”), or write none there for a CPU-only run"),
    (r"pass --vram-gib N", "fill in “VRAM per GPU”"),
    (r"pass --model NAME", "fill in “Model name”"),
    (r"pass --engine( to name it)?", "fill in “Engine”"),
    (r"(force|choose) one with --from( \{[^}]*\})?", "choose one under “Format”"),
)
FIELD_OF = {"--gpu-count": "“GPUs”", "--gpu": "“GPU name”", "--vram-gib": "“VRAM per GPU”",
            "--server-cmd": "“Server command”", "--engine": "“Engine”", "--model": "“Model name”", "--from": "“Format”"}


def for_form(message: str) -> str:
    """An importer message with its command-line advice said in terms of the form's fields."""
    for pattern, text in PHRASES:
        message = re.sub(pattern, text, message)
    return re.sub(r"--[a-z-]+", lambda m: FIELD_OF.get(m.group(0), m.group(0)), message)


def _sources(picked: list, in_folder: bool) -> tuple[list[Source], list[str]]:
    """The picked files as sources, with the bounds of ``ingest.importers.read_sources``: each file, all
    of them together and their number (the command line's limits, ingest/limits.py)."""
    out, errors = [], []
    budget = LIMITS.inflated_total
    if len(picked) > MAX_FILES:
        return [], [f"{len(picked):,} files: import at most {MAX_FILES:,} at once"]
    for f in picked:
        size = f.size
        if size > MAX_FILE_BYTES:
            errors.append(f"{safe(f.name)}: is {size:,} bytes, more than the {MAX_FILE_BYTES:,} allowed")
            continue
        if size > budget:
            errors.append(f"{safe(f.name)}: the files given hold more than the {LIMITS.inflated_total:,} bytes an "
                          "import reads at once")
            continue
        budget -= size
        out.append(Source(f.name, f.getvalue(), in_folder=in_folder))
    return out, errors


def detected(sources: list[Source]) -> pd.DataFrame:
    """One row per file: its name and the importer that recognises it (or why none does)."""
    rows = []
    for s in sources:
        try:
            fmt, variant = detect(s)
            rows.append({"File": s.name, "Detected as": f"{fmt} ({variant})"})
        except ImportFailed as exc:
            rows.append({"File": s.name, "Detected as": for_form(exc.errors[0].split(": ", 2)[-1])})
    return pd.DataFrame(rows, columns=["File", "Detected as"])


def section(db_path: Path, local: Path) -> None:
    """The whole import section: converted setups are checked and stored into ``db_path`` and ``local`` by a
    worker process (``ingest.worker``: bounded in time; the page only waits), like any upload."""
    st.markdown(
        "Upload **result files of another tool**: `llama-bench` output (`-o json`, `jsonl`, `csv`, `sql` or `md`), a "
        "`llama-server` log, a `vllm bench serve` result, a GuideLLM JSON report, or lm-evaluation-harness "
        "`results_*.json` (with its `samples_*.jsonl`). The format is detected from the content; every value the "
        "file does not hold is taken from the fields below and recorded as such, and every field that cannot be "
        "carried over is listed on the card. The original files are kept with their SHA-256.")
    as_folder = st.toggle("A whole folder of result files (files no importer recognises are skipped)", key="imp-dir")
    picked = st.file_uploader("Result files", accept_multiple_files="directory" if as_folder else True,
                              key="imp-folder" if as_folder else "imp-files", max_upload_size=LIMITS.file_mib())
    sources, size_errors = _sources(list(picked or []), bool(as_folder))
    if sources:
        common.table(detected(sources), "import-detected", download=False)  # escaped: names are data
    with st.form("imp-options"):
        st.caption("Only what the files cannot tell; leave a field empty to use the file or the default.")
        c1, c2, c3 = st.columns([3, 1, 1])
        gpu = c1.text_input("GPU name", placeholder="e.g. NVIDIA GeForce RTX 4090 — or none for CPU only", key="imp-gpu")
        count = c2.number_input("GPUs", min_value=1, max_value=64, value=1, step=1, key="imp-count")
        vram = c3.number_input("VRAM per GPU (GiB)", min_value=0.0, max_value=2048.0, value=None, step=1.0,
                               placeholder="from the GPU name",
                               help="Empty: the size of cards sold in one size, else the import asks",
                               key="imp-vram")
        cmd = st.text_input("Server command", placeholder="e.g. llama-server -m model.gguf -c 32768 -np 2 "
                            "(default: rebuilt from the file, or recorded as not given)", key="imp-cmd")
        c4, c5, c6 = st.columns(3)
        engine = c4.text_input("Engine", placeholder="e.g. vLLM",
                               help="When the file does not say which engine ran (vLLM, SGLang, llama.cpp …)",
                               key="imp-engine")
        model = c5.text_input("Model name", placeholder="default: from the file", key="imp-model")
        fmt = c6.selectbox("Format", ["detect from the content", *FORMATS], key="imp-format")
        submitted = st.form_submit_button("Import and add", type="primary", disabled=not sources)
    if not submitted:
        return
    errors = list(size_errors)
    try:
        server_cmd = shlex.split(cmd) if cmd.strip() else None
    except ValueError as exc:
        errors.append(f"Server command: {exc}")
        server_cmd = None
    if errors:
        st.error("Nothing was imported.")
        st.code("\n".join(errors), language=None)
        return
    opts = Options(gpu=gpu.strip() or None, gpu_count=int(count) if gpu.strip() and count > 1 else None,
                   vram_gib=float(vram) if vram else None, server_cmd=server_cmd,
                   engine=engine.strip() or None, model=model.strip() or None)
    out = jobs.run("import", {"sources": sources, "options": opts, "force": None if fmt.startswith("detect") else fmt,
                              "db": db_path, "local": local}, "Converting and checking every file")
    if out.status == "not imported":
        st.error(f"Not imported: {out.count:,} problem(s). Nothing was stored.")
        st.code("\n".join(for_form(e) for e in out.errors), language=None, wrap_lines=True)
        return
    if out.status == "rejected":  # validation of the converted folders, or a setup id another source owns
        st.error(f"Rejected: {out.count:,} problem(s). Nothing was stored.")
        st.code("\n".join(out.errors), language=None, wrap_lines=True)
        return
    if out.report is None:  # the database, or the time limit: the same clear report, never a traceback
        st.error(f"Not stored: {out.errors[0] if out.errors else 'the import did not finish'}")
        return
    report = out.report
    if report.report is None:
        st.info("Unchanged: exactly this is already stored. Nothing was stored again.")
    else:
        st.success(f"Imported: {report.report.text()}")
    for summary, notes in out.summaries:
        st.caption(common.md(summary))
        if notes:
            with st.expander("What could not be carried over, and other notes"):
                st.code("\n".join(safe(n) for n in notes), language=None, wrap_lines=True)
    for sid, what in report.setups.items():
        st.page_link("pages/1_Setup_card.py", label=f"Open the card of {common.md(sid)} ({what})",
                     query_params={"setup": sid}, icon=":material/arrow_forward:")
