"""One exception tree and one exit-status convention for every benchcards command (and one spelling of each
command in its own help: ``examples_as``).

Every error a user can cause derives from ``BenchcardsError``; a command maps them to exit statuses in one
place (``benchcards_cli``), and the ``python -m`` forms use the same mapping:

- 0 ``EXIT_OK``: done;
- 1 ``EXIT_BAD_INPUT``: bad input or a failed step (the report says which file and field);
- 2 ``EXIT_USAGE``: a bad command line (with the usage line);
- 130 ``EXIT_INTERRUPTED``: stopped with Ctrl-C (or SIGTERM), and what the command says was kept is kept.
"""

from __future__ import annotations

import contextlib
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "BenchcardsError", "UsageError",
           "ctrl_c_ignored", "examples_as", "interrupted", "interrupts_end_quietly", "interrupts_raise", "run_as_command",
           "terminate_as_interrupt"]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def examples_as(text: str, form: str, prog: str) -> str:
    r"""A command's help ``text`` with each example line that runs ``form`` (its ``python -m`` spelling) spelled as
    the command was run, ``prog``: ``benchcards ingest x`` under ``benchcards ingest``, unchanged under
    ``python -m ingest``. Only lines that start with ``form`` (after their indentation) change: a server command
    quoted inside an example keeps its words.

    >>> examples_as("e.g.:\n  python -m live measure --x\n  --cmd 'python -m live demo-server'", "python -m live",
    ...             "benchcards")
    "e.g.:\n  benchcards measure --x\n  --cmd 'python -m live demo-server'"
    >>> examples_as("  python -m ingest.build", "python -m ingest", "benchcards ingest")
    '  python -m ingest.build'
    """
    return re.sub(rf"(?m)^([ \t]*){re.escape(form)}(?= |$)", lambda m: m.group(1) + prog, text)


class BenchcardsError(Exception):
    """The root of every error benchcards raises on purpose (bad input, a missing database, a busy folder)."""


class UsageError(BenchcardsError):
    """The command line asks for something that cannot be done (exit status 2, with the usage line)."""


def _end_interrupted(_signum: int, _frame: FrameType | None) -> None:
    print("interrupted", file=sys.stderr)
    raise SystemExit(EXIT_INTERRUPTED)


def interrupts_end_quietly() -> None:
    """Side effect: until ``interrupts_raise()``, Ctrl-C ends this process with the word 'interrupted' and
    status 130 instead of a traceback. The first line of each ``python -m`` entry module, whose imports take up
    to two seconds before its ``main`` (which handles Ctrl-C itself) runs; nothing that needs stopping has
    started yet. Never called on import by the library (a notebook or the app keeps its own handler)."""
    signal.signal(signal.SIGINT, _end_interrupted)


def interrupts_raise() -> None:
    """Side effect: Ctrl-C raises KeyboardInterrupt again (Python's own handler), for ``main`` to handle."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


#: set when ``terminate_as_interrupt``'s handler has raised KeyboardInterrupt
_SIGNALLED = threading.Event()


def _raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
    _SIGNALLED.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside, SIGTERM and SIGHUP stop the command as Ctrl-C does (KeyboardInterrupt: its ``finally`` blocks run,
    the worker processes it started are stopped, status 130); the handlers before are put back after. An error
    that a library made of such an interrupt is the interrupt too (DuckDB stops a query it is running and raises
    RuntimeError('Query interrupted') instead: the command said 'unexpected RuntimeError', status 1). Side
    effect: sets the process's signal handlers (the main thread of a command, never the app's)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = [signal.SIGTERM, signal.SIGHUP]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Ctrl-C raises here: noted as well
        signals.append(signal.SIGINT)
    _SIGNALLED.clear()
    before = {sig: signal.signal(sig, _raise_interrupt) for sig in signals}
    try:
        yield
    except Exception as exc:
        if _SIGNALLED.is_set():
            raise KeyboardInterrupt from exc
        raise
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _SIGNALLED.clear()  # what came in is said inside (``interrupted``); none is pending after


def interrupted() -> bool:
    """True once ``terminate_as_interrupt``'s handler has turned a signal into KeyboardInterrupt (an error a library
    made of it, DuckDB's 'Query interrupted', is the interrupt too: a command says 'interrupted', status 130)."""
    return _SIGNALLED.is_set()


def run_as_command(main: Callable[[], int]) -> NoReturn:
    """Run a command's ``main`` as its ``python -m`` form does, as ``benchcards`` runs it: Ctrl-C, SIGTERM and SIGHUP
    stop it as an interrupt (its cleanup runs; 'interrupted', status 130, when main lets it through). Side
    effects: sets the process's signal handlers; exits the process with main's status."""
    interrupts_raise()  # main handles Ctrl-C from here on
    try:
        with terminate_as_interrupt():
            status = main()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        status = EXIT_INTERRUPTED
    sys.exit(status)


@contextlib.contextmanager
def ctrl_c_ignored() -> Iterator[None]:
    """Inside, Ctrl-C is ignored by this process and by the processes it starts (which keep ignoring it): for the
    cleanup of a command that is already stopping (a second Ctrl-C broke off a pool's shutdown and left its workers
    waiting for ever) and for starting helper processes the command stops itself. The handler before is put back
    after. Only in the main thread; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
