"""The worker processes that render the setup cards: how many, started with spawn, warmed while the parent
reads."""

from __future__ import annotations

import os
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from benchcards.read.processes import without_script_main
from benchcards.site import writer as sitewrite
from benchcards.site.card_pages import CardJob, render_cards

__all__ = ["CHUNK", "MIN_FOR_WORKERS", "CardPool", "workers"]


#: cards per task of a worker process
CHUNK = 50
#: below this many setups the cards are rendered in this process (starting workers costs more)
MIN_FOR_WORKERS = 150


def workers(requested: int | None, n_setups: int) -> int:
    """How many processes render ``n_setups`` cards: ``requested``, else one per core (at most 8) for a large site."""
    if requested is not None:
        return max(1, requested)
    if n_setups < MIN_FOR_WORKERS:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def _warm() -> int:
    """Nothing: a first task that makes a worker import the export's modules while the parent works."""
    return os.getpid()


def _spawn() -> Any:
    import multiprocessing

    return multiprocessing.get_context("spawn")


class CardPool:
    """Renders card jobs in ``n_workers`` processes, or in this one when ``n_workers`` is 1.

    Side effects: starts the processes at once (spawned, not forked) and gives each a first task that imports
    the export's modules while the parent reads the database; ``close`` stops them, cancelling what has not
    started."""

    def __init__(self, n_workers: int) -> None:
        self._pool = ProcessPoolExecutor(n_workers, mp_context=_spawn()) if n_workers > 1 else None
        self._jobs: list[Future] = []

    def warm(self, n_workers: int) -> None:
        """Give each worker its first task (importing the modules) while the parent goes on."""
        if self._pool is not None:
            with without_script_main():  # spawn starts every worker at the first submit
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
