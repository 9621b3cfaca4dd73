"""The worker processes that render the setup cards: how many, forked from a server process that has imported
the renderer, warmed while the parent reads."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from benchcards.domain.errors import ctrl_c_ignored
from benchcards.read import db
from benchcards.read.processes import without_script_main
from benchcards.site import card_pages
from benchcards.site import writer as sitewrite
from benchcards.site.card_pages import CardJob, render_cards

T = TypeVar("T")

__all__ = ["CHUNK", "MAX_WORKERS", "MIN_FOR_WORKERS", "CardPool", "chunk", "workers"]


#: cards per task of a worker process: at most this many (a task reads its cards' rows at once, about 0.1 s
#: whatever its size), and at least six tasks per worker, so that the workers, and the parent that takes back
#: the tasks not started once its own pages are done, end together
CHUNK = 100
#: the most processes an export may be asked for (each holds a few hundred MB)
MAX_WORKERS = 32
#: below this many setups the cards are rendered in this process (starting workers costs more)
MIN_FOR_WORKERS = 150


def workers(requested: int | None, n_setups: int) -> int:
    """How many processes render ``n_setups`` cards: ``requested``, else one per core (at most 8) for a large site."""
    if requested is not None:
        return max(1, min(requested, MAX_WORKERS))
    if n_setups < MIN_FOR_WORKERS:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def chunk(n_cards: int, n_workers: int) -> int:
    """Cards per task for ``n_cards`` rendered by ``n_workers`` processes.

    >>> chunk(1000, 2), chunk(200, 2), chunk(10, 1)
    (84, 17, 10)
    """
    if n_workers <= 1:
        return max(1, min(n_cards, CHUNK))
    return max(1, min(CHUNK, -(-n_cards // (6 * n_workers))))


def _in_worker() -> None:
    """Set up a worker process: one DuckDB thread (the pool has a process per core), its reader kept between
    jobs (``card_pages.render_cards``: the worker ends with the export), and Altair's checks of each chart part as
    it is made left to the app (the same charts; a tenth of the analysis pages' time)."""
    import signal

    from altair.utils import schemapi

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the pool (no traceback here)
    db.use_threads(1)
    card_pages.KEEP_READER = True
    schemapi.DEBUG_MODE = False  # Altair checks each chart part as it is made, to explain a mistake: the app does


def _warm() -> int:
    """Nothing: a first task that makes a worker import the export's modules while the parent works."""
    return os.getpid()


def _context() -> Any:
    """Workers forked from a server process that has imported the card renderer once (spawned workers imported it
    each, about a second of CPU apiece; forked from the caller, they would copy its threads: DuckDB's, a web
    server's). Spawned where there is no fork server. A server already started by another part of benchcards
    with other modules serves as well: each worker then imports what it lacks."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["benchcards.site.card_pages", "benchcards.site.pool"])
    return ctx


class CardPool:
    """Renders card jobs in ``n_workers`` processes, or in this one when ``n_workers`` is 1.

    Side effects: starts the processes at once (from a fork server: ``_context``) and gives each a first task that imports
    the export's modules while the parent reads the database; ``close`` stops them, cancelling what has not
    started."""

    def __init__(self, n_workers: int) -> None:
        context = _context() if n_workers > 1 else None
        self._pool = ProcessPoolExecutor(n_workers, mp_context=context, initializer=_in_worker) if context else None
        self._forkserver = context is not None and context.get_start_method() == "forkserver"
        self._jobs: list[tuple[Future, CardJob]] = []
        self._starting: threading.Thread | None = None
        self._start_error: BaseException | None = None

    def warm(self, n_workers: int) -> None:
        """Start the workers and give each its first task, from a thread: starting them waits for the fork server
        to import the renderer (most of a second), while the parent reads the database meanwhile."""
        if self._pool is not None:
            if self._forkserver:  # started here, ignoring Ctrl-C as its workers do: the export stops them all
                from multiprocessing import forkserver

                with ctrl_c_ignored(), without_script_main():
                    forkserver.ensure_running()
            self._starting = threading.Thread(target=self._start, args=(n_workers,), name="benchcards-export-pool",
                                              daemon=True)
            self._starting.start()

    def _start(self, n_workers: int) -> None:
        try:
            with without_script_main():  # the pool starts every worker at the first submit
                for _ in range(n_workers):
                    assert self._pool is not None
                    self._pool.submit(_warm)
        except BaseException as exc:  # raised in the caller's thread by _started
            self._start_error = exc

    def _started(self) -> None:
        if self._starting is not None:
            self._starting.join()
            self._starting = None
            if self._start_error is not None:
                raise self._start_error

    def render(self, job: CardJob, writer: sitewrite.Writer) -> None:
        """Render ``job``'s cards: in a worker (merged into the writer by ``collect``), else here and at once."""
        if self._pool is not None:
            self._started()
            with without_script_main():
                self._jobs.append((self._pool.submit(render_cards, job), job))
        else:
            writer.merge(*render_cards(job))

    def run(self, fn: Callable[[Any], T], job: Any) -> Callable[[], T]:
        """Start ``fn(job)`` in a worker, before the card jobs given after it; returns what waits for its result
        (here, at once, without workers)."""
        if self._pool is None:
            done = fn(job)
            return lambda: done
        self._started()
        with without_script_main():
            fut = self._pool.submit(fn, job)
        return fut.result

    def collect(self, writer: sitewrite.Writer) -> int:
        """Merge what the workers rendered into ``writer`` (waits for them). Card jobs no worker has started yet
        are taken back and rendered here, the last first: the caller has finished its own pages and would
        otherwise wait. Returns how many were taken back."""
        taken: dict[int, tuple[dict[str, sitewrite.Entry], list[str]]] = {}
        for i in range(len(self._jobs) - 1, -1, -1):
            fut, job = self._jobs[i]
            if fut.cancel():
                taken[i] = render_cards(job)
        for i, (fut, _) in enumerate(self._jobs):
            writer.merge(*(taken[i] if i in taken else fut.result()))
        return len(taken)

    def close(self) -> None:
        """Stop the workers; jobs not started are cancelled. A second Ctrl-C does not break it off (that left the
        workers waiting and the export hung)."""
        with ctrl_c_ignored():
            if self._starting is not None:
                self._starting.join()
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
