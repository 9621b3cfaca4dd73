"""Run an upload or import of the Upload page in its worker process (``ingest.worker``) and show its progress:
the page waits while the work runs elsewhere, so other visitors' pages keep rendering."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ingest import worker


def run(kind: str, job: dict[str, Any], what: str) -> worker.Outcome:
    """``worker.run(kind, job)`` with a status box saying what it does and for how long; returns its outcome."""
    with st.status(f"{what}…", expanded=False) as box:
        box.update(label=f"{what}… (in a worker process, stopped after {worker.SECONDS:,.0f} s)")
        out = worker.run(kind, job, lambda stage, secs: box.update(label=f"{stage}… ({secs:,.0f} s)"))
        done = {"ok": "Done", "stopped": "Stopped"}.get(out.status, "Finished with problems")
        box.update(label=f"{done} in {out.seconds:,.1f} s", state="complete" if out.status == "ok" else "error")
    return out
