"""The Run live page's quality mode (pages/6_Run_live.py): settings, an item file, progress per item, Stop.

The page stays thin: the run is ``live.quality_job.QualityJob``; tests, items and limits are parsed by
the same code as ``python -m live quality`` (live/generators.py, live/items.py, live/quality.py).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from benchcards.read.paths import LOCAL
from ingest.limits import LIMITS
from live.client import NotLoopback, check_target
from live.generators import SpecError, parse_tests
from live.items import ItemFileError, parse_item_file
from live.measure import SetupInput, hardware_problems, is_cpu_only, name_problem
from live.quality import DEFAULT_MAX_TOKENS, QualityConfig, parse_max_tokens
from live.quality_job import QualityJob
from live.settings import QualitySettings, TargetSettings, page_default, page_limits
from ui import common, live_panel
from ui.common import md
from ui.sampling_form import sampling_fields, sampling_settings

KEY = "live_quality_job"


def _form() -> tuple[bool, dict]:
    job: QualityJob | None = st.session_state.get(KEY)
    running = job is not None and not job.done
    with st.form("live_quality", enter_to_submit=False):
        c1, c2 = st.columns(2)
        # the defaults and limits are live.settings' (TargetSettings, QualitySettings), as on the command line
        v: dict = {"base_url": c1.text_input("Server address", page_default(TargetSettings, "base_url"),
                                             key="lq_base_url"),
                   "model": c2.text_input("Model id (empty: the server's first model)", key="lq_model")}
        v["tests"] = st.text_input("Generated tests", page_default(QualitySettings, "tests"), key="lq_tests",
                                   help="needle, vartrack, words at a depth (8K = 8,192 tokens, optionally "
                                   ":items); arith, dates, logic with an item count. Empty: only the item file.")
        v["file"] = st.file_uploader("Your item file (JSONL, optional)", type=["jsonl"], key="lq_items",
                                     max_upload_size=LIMITS.items_file_bytes // 2**20,
                                     help="One JSON object per line: id, prompt, scorer (choice, exact, number, "
                                     "regex), answer; see docs/definitions.md#item-files. Nothing is downloaded.")
        a, b, c, d = st.columns(4)
        v["max_tokens"] = a.text_input("Answer limit (tokens)", ",".join(page_default(QualitySettings, "max_tokens")),
                                       key="lq_max_tokens",
                                       help="One number for every test, or per test: 1024, needle=64")
        v["thinking"] = b.selectbox("Thinking", ["off", "on", "leave to the server"], key="lq_thinking",
                                    index=[False, True, None].index(page_default(QualitySettings, "thinking")))
        v["in_flight"] = c.number_input("Requests at once", *page_limits(QualitySettings, "in_flight"),
                                        page_default(QualitySettings, "in_flight"), key="lq_in_flight")
        st.markdown("**The setup** (what the server cannot tell)")
        a, b, c, d = st.columns(4)
        v["title"] = a.text_input("Title (optional)", key="lq_title")
        v["gpu"] = b.text_input("GPU", key="lq_gpu", placeholder="e.g. RTX 4090, or cpu")
        v["vram"] = live_panel.vram_input(c, "lq_vram")
        v["quant"] = d.text_input("Quantisation", key="lq_quant")
        v["server_cmd"] = st.text_input("Exact server command", key="lq_server_cmd")
        v["allow_remote"] = st.checkbox("Allow a server on another machine", key="lq_allow_remote")
        v["sampling"] = sampling_fields("lq")  # its seed is also the seed of the generated items
        start = st.form_submit_button("Start", type="primary", disabled=running)
    return start and not running, v


def read_settings(v: dict) -> tuple[QualityConfig | None, list[str]]:
    """The typed settings as a QualityConfig, or every problem with them (each naming its field)."""
    problems: list[str] = []
    specs, files = [], []
    try:
        specs = parse_tests(v["tests"])
    except SpecError as exc:
        problems.append(f"Generated tests: {exc}".replace("--tests ", ""))
    if v["file"] is not None:
        try:
            files.append(parse_item_file(v["file"].getvalue(), v["file"].name))
        except ItemFileError as exc:
            problems += exc.errors
    problems += hardware_problems(v["gpu"] or None, v["vram"], gpu_field="GPU", vram_field=live_panel.VRAM_FIELD)
    problems += [p for p in (name_problem(v["title"] or None, "Title"),) if p]
    sampling, bad = sampling_settings(v["sampling"])
    problems += bad
    try:
        check_target(v["base_url"], v["allow_remote"])
    except NotLoopback as exc:
        problems.append(f"Server address: {exc}. Tick 'Allow a server on another machine' to measure it anyway.")
    except ValueError as exc:
        problems.append(f"Server address: {exc}")
    try:
        default, per = parse_max_tokens([v["max_tokens"]])
    except ValueError as exc:
        problems.append(f"Answer limit: {exc}".replace("--max-tokens ", ""))
        default, per = None, {}
    if problems or sampling is None:
        return None, problems
    try:
        cfg = QualityConfig(base_url=v["base_url"], model=v["model"] or None, tests=tuple(specs),
                            item_files=tuple(files), thinking={"off": False, "on": True}.get(v["thinking"]),
                            max_tokens=per, default_max_tokens=DEFAULT_MAX_TOKENS if default is None else default,
                            in_flight=int(v["in_flight"]), seed=sampling.seed, allow_remote=v["allow_remote"],
                            sampling=sampling.sent(), sampling_source=sampling.source)
    except ValueError as exc:
        return None, [f"Settings: {exc}"]
    return cfg, []


def _items(job: QualityJob) -> None:
    items = [e for e in job.events if e.kind == "item"]
    if items:
        rows = [{"Test": e.test, "Item": e.item, "Result": "error" if e.error else "cut off" if e.cut_off
                 else "right" if e.right else "wrong", "Seconds": e.seconds} for e in items[-200:]]
        common.table(pd.DataFrame(rows), f"lq-items-{id(job)}-{len(items)}", download=False)
    for line in job.summary:
        st.markdown(f"- {md(line)}")


def _panel(job: QualityJob) -> None:
    items = [e for e in job.events if e.kind == "item"]
    last = items[-1] if items else None
    left = f", about {last.left_s:,.0f} s left" if last and last.left_s is not None else ""
    saved = job.run_dir is not None
    live_panel.panel(job, live_panel.Panel(
        running=f"Asking… {last.done} of {last.total} items{left}" if last else "Building the prompts…",
        ended="Ended", finished=f"{'Stopped' if job.stopping else 'Finished'}: {len(items)} items answered",
        fraction=last.done / last.total if last and last.total else 0.0, body=lambda: _items(job),
        key="lq", stop_label="Stop", stop_toast="Stopping: the requests in flight are cut; answered items will be saved.",
        saved=job.report if saved else None, warnings=tuple(job.ingest_warnings), placed=job.placed,
        link=live_panel.Link("pages/1_Setup_card.py", "Open its card", {"setup": str(job.setup_id)}) if saved else None))


def quality_mode() -> None:
    """Draw the quality mode: form, start, and the progress of this session's run."""
    st.markdown("Ask the server generated long-context and reasoning tests (nothing is downloaded) and your own "
                "item file; answers are scored with their thinking kept apart, a cut-off answer counts wrong.")
    start, v = _form()
    if start:
        cfg, problems = read_settings(v)
        if cfg is None:
            st.error("Check the settings:\n\n" + "\n".join(f"- {md(p)}" for p in problems))
        else:
            user = SetupInput(title=v["title"] or None, gpu=v["gpu"] or None,
                              vram_gib=None if is_cpu_only(v["gpu"]) else v["vram"], quant=v["quant"] or None,
                              server_cmd=v["server_cmd"] or None)
            st.session_state[KEY] = QualityJob(cfg, user, LOCAL, common.db_path()).start()
    live_panel.follow(lambda: st.session_state.get(KEY), _panel)  # type: ignore[arg-type]
