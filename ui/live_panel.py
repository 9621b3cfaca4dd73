"""The Run live page's panel for a run in the background (memory test, quality, sweep): one status box with
the run's state, a progress bar, the run's own rows, Stop while it runs, and once it is saved a "saved" line
with a link to its result. One definition used by ui.fit_page, ui.live_quality and ui.sweep_mode; the forms
that start the runs stay with their modes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import streamlit as st

from ui.common import md

__all__ = ["VRAM_FIELD", "Link", "Panel", "RunningJob", "assumed", "follow", "follow_site_job", "panel", "shown_jobs", "state_of", "vram_input"]

State = Literal["running", "complete", "error"]


class RunningJob(Protocol):
    """What the panel reads of a job (live.fit_job.FitJob, live.quality_job.QualityJob, live.sweep_job.SweepJob)."""

    @property
    def done(self) -> bool: ...

    @property
    def stopping(self) -> bool: ...

    @property
    def error(self) -> str | None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Link:
    """Where the "saved" line leads: a page of the app and its query parameters."""

    page: str
    label: str
    query: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    """One mode's words and parts of the panel.

    ``running``: the status line while it runs; ``ended``: what precedes the job's error; ``finished``: the
    status line once it ended without an error; ``fraction``: share done (0 … 1); ``body`` draws the mode's
    own rows inside the box; ``key`` names the Stop button's widget (with the job's id); ``stop_label`` and
    ``stop_toast`` are the button and what it says once pressed; ``saved`` (the job's report), its
    ``warnings``, ``placed`` and ``link`` are shown once the run is saved, None while there is nothing to show.
    """

    running: str
    ended: str
    finished: str
    fraction: float
    body: Callable[[], None]
    key: str
    stop_label: str
    stop_toast: str
    saved: str | None = None
    link: Link | None = None
    #: the ingest's warning lines (what "listed below" in ``saved`` refers to)
    warnings: tuple[str, ...] = ()
    #: where the run was stored when not under its own setup id, and why (live.setups.place_setup)
    placed: str | None = None


def state_of(job: RunningJob, p: Panel) -> tuple[str, State]:
    """(status line, state) of the box: running, ended with the job's error, or finished."""
    if not job.done:
        return p.running, "running"
    if job.error:
        return f"{p.ended}: {job.error}", "error"
    return p.finished, "complete"


def panel(job: RunningJob, p: Panel) -> None:
    """Draw the panel of ``job``. Side effect: a press of Stop calls ``job.stop()`` (the job stops its server)."""
    label, state = state_of(job, p)
    box = st.status(label, state=state, expanded=True)
    with box.container():
        st.progress(1.0 if job.done else min(1.0, max(0.0, p.fraction)))
        assumed(getattr(job, "setup", None))
        p.body()
    if not job.done:
        if st.button(p.stop_label, disabled=job.stopping, key=f"{p.key}-stop-{id(job)}"):
            job.stop()
            st.toast(p.stop_toast)
    elif p.saved is not None:
        saved(p.saved, p.warnings, p.placed)
        if p.link is not None:
            st.page_link(p.link.page, label=p.link.label, query_params=p.link.query or None,
                         icon=":material/arrow_forward:")


#: the page's name of the GPU-memory field (every mode's form)
VRAM_FIELD = "VRAM per GPU (GiB)"


def vram_input(where: object, key: str) -> float | None:
    """Every mode's GPU-memory field in ``where`` (a column): empty by default (no 0 GiB that files a GPU as CPU
    only), and left empty for a GPU whose memory benchcards knows (``live.measure.assumed_vram``)."""
    from live.measure import KNOWN_GPU_TABLE

    value = where.number_input(  # type: ignore[attr-defined]
        VRAM_FIELD, 0.0, 1024.0, None, key=key, placeholder="e.g. 24",
        help=f"Memory of one GPU: the hardware tier comes from it. Leave empty for cpu, or for a GPU in "
             f"{KNOWN_GPU_TABLE} (an RTX 4090 is 24 GiB): the run then says which size it assumed.")
    return None if value is None else float(value)


def assumed(setup: object) -> None:
    """Say the GPU memory a run records when the form left it empty for a GPU of known memory
    (``live.measure.assumed_vram``): the tier comes from it."""
    from live.measure import assumed_vram

    gpu, vram = getattr(setup, "gpu", None), getattr(setup, "vram_gib", None)
    note = assumed_vram(gpu, vram, vram_field=VRAM_FIELD)[1] if setup is not None else None
    if note:
        st.info(md(note[0].upper() + note[1:]), icon=":material/memory:")


def saved(report: str, warnings: list[str] | tuple[str, ...] = (), placed: str | None = None) -> None:
    """The lines of a saved run (every mode of the Run live page): where it went when not under its own id,
    the ingest's report, and the warnings it says are "listed below", one a line."""
    if placed:
        st.info(f"Saved as a separate setup: {md(placed)}")
    st.success(f"Saved and added to the site: {md(report)}")
    if warnings:
        st.warning("\n".join(f"- {md(w)}" for w in warnings))


def follow(current: Callable[[], RunningJob | None], draw: Callable[[RunningJob], None]) -> None:
    """Draw ``draw(job)`` for the current job in a fragment that reruns every second while the job runs, and
    rerun the whole page once it has ended (so that its form is enabled again)."""
    _follow(lambda: [j] if (j := current()) is not None else [], draw)


def _follow(current: Callable[[], list[RunningJob]], draw: Callable[[RunningJob], None]) -> None:
    """``follow`` for several jobs at once, drawn in order."""
    running = any(not j.done for j in current())

    @st.fragment(run_every=1.0 if running else None)
    def progress() -> None:
        jobs = current()
        for j in jobs:
            draw(j)
        if running and all(j.done for j in jobs):
            st.rerun(scope="app")

    progress()


def shown_jobs(mine: RunningJob | None, newest: RunningJob | None) -> tuple[list[RunningJob], RunningJob | None]:
    """(the jobs whose panels a session sees, another session's run that ended) for a mode whose job is one per
    site (memory test, sweep): ``newest`` is the site's newest run, ``mine`` the one this session started.

    A run of another session is shown in full only while it runs (it is why Start is disabled); once it has
    ended it is only named (one line), never shown as if it were this visitor's. This session's own run keeps
    its panel, progress and results, across reruns.
    """
    jobs = [] if newest is None or newest is mine or newest.done else [newest]
    if mine is not None:
        jobs.append(mine)
    ended = newest if newest is not None and newest is not mine and newest.done else None
    return jobs, ended


def follow_site_job(newest: Callable[[], RunningJob | None], key: str, draw: Callable[[RunningJob, bool], None],
                    ended_note: Callable[[RunningJob], None]) -> None:
    """Follow a mode's one-per-site run (``shown_jobs``): this session's own (``st.session_state[key]``) and
    another session's while it runs, each drawn by ``draw(job, mine)``; another session's ended run gets only
    ``ended_note(job)``, one line."""
    _, ended = shown_jobs(st.session_state.get(key), newest())
    if ended is not None:
        ended_note(ended)
    _follow(lambda: shown_jobs(st.session_state.get(key), newest())[0],
            lambda j: draw(j, j is st.session_state.get(key)))
