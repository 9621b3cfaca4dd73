"""One exception tree and one exit-status convention for every benchcards command.

Every error a user can cause derives from ``BenchcardsError``; a command maps them to exit statuses in one
place (``benchcards_cli``), and the ``python -m`` forms use the same mapping:

- 0 ``EXIT_OK``: done;
- 1 ``EXIT_BAD_INPUT``: bad input or a failed step (the report says which file and field);
- 2 ``EXIT_USAGE``: a bad command line (with the usage line);
- 130 ``EXIT_INTERRUPTED``: stopped with Ctrl-C (or SIGTERM), and what the command says was kept is kept.
"""

from __future__ import annotations

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "BenchcardsError", "UsageError"]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class BenchcardsError(Exception):
    """The root of every error benchcards raises on purpose (bad input, a missing database, a busy folder)."""


class UsageError(BenchcardsError):
    """The command line asks for something that cannot be done (exit status 2, with the usage line)."""
