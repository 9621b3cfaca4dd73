"""The worker processes that render the setup cards: how many, forked from a server process that has imported
the renderer, warmed while the parent reads."""

from __future__ import annotations

import os
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from benchcards.read.processes import without_script_main
from benchcards.site import writer as sitewrite
from benchcards.site.card_pages import CardJob, render_cards

__all__ = ["CHUNK", "MIN_FOR_WORKERS", "CardPool", "chunk", "workers"]


#: cards per task of a worker process: at most this many (a task reads its cards' rows at once, about 0.1 s
#: whatever its size), and at least four tasks per worker, so that the workers end together
CHUNK = 100
#: below this many setups the cards are rendered in this process (starting workers costs more)
MIN_FOR_WORKERS = 150


def workers(requested: int | None, n_setups: int) -> int:
    """How many processes render ``n_setups`` cards: ``requested``, else one per core (at most 8) for a large site."""
    if requested is not None:
        return max(1, requested)
    if n_setups < MIN_FOR_WORKERS:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def chunk(n_cards: int, n_workers: int) -> int:
    """Cards per task for ``n_cards`` rendered by ``n_workers`` processes.

    >>> chunk(1000, 2), chunk(200, 2), chunk(10, 1)
    (100, 25, 10)
    """
    if n_workers <= 1:
        return max(1, min(n_cards, CHUNK))
    return max(1, min(CHUNK, -(-n_cards // (4 * n_workers))))


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
        self._pool = ProcessPoolExecutor(n_workers, mp_context=_context()) if n_workers > 1 else None
        self._jobs: list[Future] = []

    def warm(self, n_workers: int) -> None:
        """Give each worker its first task (importing the modules) while the parent goes on."""
        if self._pool is not None:
            with without_script_main():  # the pool starts every worker at the first submit
                for _ in range(n_workers):
                    self._pool.submit(_warm)

    def render(self, job: CardJob, writer: sitewrite.Writer) -> None:
        """Render ``job``'s cards: in a worker (merged into the writer by ``collect``), else here and at once."""
        if self._pool is not None:
            with without_script_main():
                self._jobs.append(self._pool.submit(render_cards, job))
        else:
            writer.merge(*render_cards(job))

    def collect(self, writer: sitewrite.Writer) -> None:
        """Merge what the workers rendered into ``writer``, in the order the jobs were given (waits for them)."""
        for fut in self._jobs:
            writer.merge(*fut.result())

    def close(self) -> None:
        """Stop the workers; jobs not started are cancelled."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
